"""Issue 22 items 1, 2, 3, 7, 8 on the local executor: each case ends as delta-spark 4.4.0 left it
(values written by hand in :mod:`tests.merge_model.regressions`), and the model agrees with delta-spark.

Also UPDATE (no schema evolution there): a struct value must have exactly the column's fields.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import MergeError, SchemaMismatchError
from tests.merge_model.model import Expected, Refused, expected
from tests.merge_model.regressions import REGRESSIONS
from tests.merge_model.run import arrow_table, make_target, model_schema

if TYPE_CHECKING:
    from pathlib import Path


def _rows(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=list) for r in rows)


@pytest.mark.parametrize("name", list(REGRESSIONS))
def test_the_local_executor_gives_delta_spark_results(tmp_path: Path, name: str) -> None:
    case, outcome = REGRESSIONS[name]
    location = str(tmp_path / "t")
    make_target(case, location)
    source = arrow_table(case.source_schema, case.source_rows)
    if outcome[0] == "refused":
        with pytest.raises(MergeError) as info:
            DeltaTable(location).merge_sql(case.statement(), source)
        assert outcome[1].lower() in str(info.value).lower()
        assert info.value.clause is not None
        assert DeltaTable(location).version == 1
        return
    DeltaTable(location).merge_sql(case.statement(), source)
    table = DeltaTable(location)
    assert model_schema(json.loads(table.schema.to_json())) == outcome[0]
    assert _rows(table.to_arrow().to_pylist()) == _rows(outcome[1])


@pytest.mark.parametrize("name", list(REGRESSIONS))
def test_the_model_gives_delta_spark_results(name: str) -> None:
    case, outcome = REGRESSIONS[name]
    want = expected(case)
    if outcome[0] == "refused":
        assert isinstance(want, Refused)
        assert outcome[1].lower() in {c.lower() for c in want.columns}
        return
    assert isinstance(want, Expected)
    assert (want.schema, _rows(want.rows)) == (outcome[0], _rows(outcome[1]))


# -- UPDATE: structs by name, exactly the column's fields (delta-spark 4.4.0 refuses the others with
#    DELTA_UPDATE_SCHEMA_MISMATCH_EXPRESSION) ----------------------------------------------------------

ABC = pa.struct([("a", pa.int32()), ("b", pa.int32()), ("c", pa.int32())])
CBA = pa.struct([("c", pa.int32()), ("b", pa.int32()), ("a", pa.int32())])
TABLE = pa.table(
    {
        "k": [1, 2],
        "x": pa.array([{"a": 1, "b": 10, "c": 100}] * 2, ABC),
        "y": pa.array([{"a": 0, "c": 0}, None], pa.struct([("a", pa.int32()), ("c", pa.int32())])),
        "z": pa.array([{"c": 3, "b": 2, "a": 1}, None], CBA),
    }
)


@pytest.mark.parametrize(("column", "value", "field"), [("x", "y", "x.b"), ("y", "x", "y.b")])
def test_update_refuses_a_struct_value_without_the_columns_fields(
    tmp_path: Path, column: str, value: str, field: str
) -> None:
    t = DeltaTable.create(str(tmp_path / "t"), TABLE.schema)
    t.append(TABLE)
    with pytest.raises(SchemaMismatchError, match=field.replace(".", r"\.")):
        t.update(set={column: value})
    assert DeltaTable(t.location).version == 1


def test_update_stores_a_struct_by_field_name(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path / "t"), TABLE.schema)
    t.append(TABLE)
    t.update(set={"x": "z"})
    assert [r["x"] for r in DeltaTable(t.location).to_arrow().to_pylist()] == [{"a": 1, "b": 2, "c": 3}, None]

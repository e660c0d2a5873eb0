"""Issue 22 items 1, 2, 3, 7, 8 on the local executor: each case ends as delta-spark 4.4.0 left it
(values written by hand in :mod:`tests.merge_model.regressions`), and the model agrees with delta-spark.

Also UPDATE (no schema evolution there): a struct value must have exactly the column's fields; and appends
align structs by name as delta-spark 4.4.0 does (no change was needed there).
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


# -- appends share the by-name alignment: the results delta-spark 4.4.0 gave for the same appends
#    (DataFrameWriter append, mergeSchema false / true) --------------------------------------------------

I32 = pa.int32()


def _struct(*names: str) -> pa.StructType:
    return pa.struct([(n, I32) for n in names])


def _appended(tmp_path: Path, target: pa.Table, data: pa.Table, mode: str | None) -> DeltaTable:
    t = DeltaTable.create(str(tmp_path / "t"), target.schema)
    t.append(target)
    t.append(data, schema_mode=mode)  # type: ignore[arg-type]
    return DeltaTable(t.location)


def _by_key(t: DeltaTable) -> list[dict[str, Any]]:
    return sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"])


TARGET_ABC = pa.table(
    {"k": pa.array([1], I32), "x": pa.array([{"a": 1, "b": 10, "c": 100}], _struct("a", "b", "c"))}
)


def test_an_append_without_a_nested_field_writes_null_for_it_and_keeps_null_structs(tmp_path: Path) -> None:
    data = pa.table({"k": pa.array([2, 3], I32), "x": pa.array([{"a": 0, "c": 0}, None], _struct("a", "c"))})
    t = _appended(tmp_path, TARGET_ABC, data, None)
    assert t.schema.find_path(("x",)).type.simple_string() == "struct<a:integer,b:integer,c:integer>"
    assert _by_key(t) == [
        {"k": 1, "x": {"a": 1, "b": 10, "c": 100}},
        {"k": 2, "x": {"a": 0, "b": None, "c": 0}},
        {"k": 3, "x": None},
    ]


def test_a_merge_schema_append_adds_the_nested_field_at_the_end(tmp_path: Path) -> None:
    data = pa.table(
        {"k": pa.array([2, 3], I32), "x": pa.array([{"a": 0, "c": 0, "d": 1}, None], _struct("a", "c", "d"))}
    )
    t = _appended(tmp_path, TARGET_ABC, data, "merge")
    assert (
        t.schema.find_path(("x",)).type.simple_string() == "struct<a:integer,b:integer,c:integer,d:integer>"
    )
    assert _by_key(t) == [
        {"k": 1, "x": {"a": 1, "b": 10, "c": 100, "d": None}},
        {"k": 2, "x": {"a": 0, "b": None, "c": 0, "d": 1}},
        {"k": 3, "x": None},
    ]


def test_a_merge_schema_append_of_arrays_of_structs_keeps_null_elements(tmp_path: Path) -> None:
    target = pa.table(
        {"k": pa.array([1], I32), "x": pa.array([[{"a": 1, "b": 10}]], pa.list_(_struct("a", "b")))}
    )
    data = pa.table(
        {"k": pa.array([2], I32), "x": pa.array([[None, {"a": 0, "d": 1}]], pa.list_(_struct("a", "d")))}
    )
    t = _appended(tmp_path, target, data, "merge")
    assert _by_key(t) == [
        {"k": 1, "x": [{"a": 1, "b": 10, "d": None}]},
        {"k": 2, "x": [None, {"a": 0, "b": None, "d": 1}]},
    ]


def test_an_append_with_an_extra_nested_field_is_refused_without_merge_schema(tmp_path: Path) -> None:
    target = pa.table({"k": pa.array([1], I32), "x": pa.array([{"a": 1}], _struct("a"))})
    data = pa.table({"k": pa.array([2], I32), "x": pa.array([{"a": 0, "d": 1}], _struct("a", "d"))})
    with pytest.raises(SchemaMismatchError, match=r"x\.d"):
        _appended(tmp_path, target, data, None)

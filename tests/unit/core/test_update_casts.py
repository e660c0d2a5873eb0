"""UPDATE casts its values as Delta does (``castIfNeeded``: Spark's ANSI store assignment), like MERGE.

Expected values are Spark's answers (see ``tests/unit/core/schema/test_store_assignment.py``); a value
that fails the cast fails the command and leaves the table at its version.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.exceptions import CastError, SchemaMismatchError

if TYPE_CHECKING:
    from pathlib import Path

DATA = pa.table({
    "id": pa.array([1, 2], pa.int64()), "n": pa.array([10, 20], pa.int64()), "flag": [False, False],
    "day": pa.array([0, 0], pa.date32()), "price": pa.array([Decimal(0), Decimal(0)], pa.decimal128(4, 2)),
})


def make(tmp_path: Path) -> DeltaTable:
    table = DeltaTable.create(str(tmp_path / "t"), DATA.schema)
    table.append(DATA)
    return table


def test_update_casts_text_into_number_boolean_date_and_decimal_columns(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.update("id = 1", {"n": "' 42 '", "flag": "'yes'", "day": "'2024-1-2'", "price": "'1.255'"})
    got = {r["id"]: r for r in DeltaTable(table.location).to_arrow().to_pylist()}
    assert got[1] == {"id": 1, "n": 42, "flag": True, "day": dt.date(2024, 1, 2), "price": Decimal("1.26")}
    assert got[2]["n"] == 20


@pytest.mark.parametrize(("column", "value", "match"), [
    ("n", "'abc'", "CAST_INVALID_INPUT"),
    ("flag", "'on'", "CAST_INVALID_INPUT"),
    ("price", "'123.45'", "CAST_OVERFLOW"),
    ("n", "1e19", "CAST_OVERFLOW"),
])
def test_a_value_that_fails_the_cast_fails_the_update_and_commits_nothing(
    tmp_path: Path, column: str, value: str, match: str
) -> None:
    table = make(tmp_path)
    with pytest.raises(CastError, match=match) as info:
        table.update("id = 1", {column: value})
    assert info.value.column == column
    assert DeltaTable(table.location).version == 1


def test_a_pair_spark_cannot_cast_is_refused_before_any_file_is_read(tmp_path: Path) -> None:
    table = make(tmp_path)
    with pytest.raises(SchemaMismatchError, match="'n' has type bigint, the value has type date"):
        table.update("id = 1", {"n": "DATE'2024-01-01'"})
    assert DeltaTable(table.location).version == 1

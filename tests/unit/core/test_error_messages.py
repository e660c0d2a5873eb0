"""Error messages a user reads in a task log: the table is named, a predicate's mistake is in SQL terms."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.expressions import parse_predicate
from airflow_provider_delta.exceptions import ConcurrentAppendException, PredicateError, SchemaMismatchError

if TYPE_CHECKING:
    from pathlib import Path

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])


def test_a_conflict_names_the_table_and_the_operation(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    table = DeltaTable.create(path, SCHEMA, partition_by=["part"])
    table.append(pa.table({"id": [1], "part": ["a"]}, schema=SCHEMA))
    stale = DeltaTable(path)
    loser = stale.transaction(operation="UPDATE", isolation_level="Serializable")
    loser.read_files()
    for f in stale.files():
        loser.remove(f)
    DeltaTable(path).append(pa.table({"id": [2], "part": ["a"]}, schema=SCHEMA))
    with pytest.raises(ConcurrentAppendException) as info:
        loser.commit()
    assert str(info.value).startswith(
        f"Cannot commit UPDATE to table {path!r}: transaction 2 (WRITE) added files while this transaction "
        "read the whole table after this transaction read version 1."
    )


def test_a_column_the_table_lacks_is_refused_naming_the_table(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    DeltaTable.create(path, SCHEMA)
    rows = pa.table({"id": [1], "part": ["a"], "channel": ["web"]})
    with pytest.raises(SchemaMismatchError) as info:
        DeltaTable(path).append(rows)
    assert str(info.value) == f"Cannot write to table {path!r}: column 'channel' is not in the table schema"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("id >", "'>' at position 4 has no value on its right"),
        ("id > 1 AND", "'AND' at position 8 has no value on its right"),
        ("x == ", "'==' at position 3 has no value on its right"),
        ("> 3", "'>' at position 1 has no value on its left"),
        ("id BETWEEN 1", "'BETWEEN' at position 4 needs '<low> AND <high>'"),
        ("(id > 1", "a '(' is not closed: expected ')' after position 7"),
        ("day = '2024-01-01", "the string starting at position 7 is not closed (add the closing ')"),
        ("id > 1 2", "unexpected '2' at position 8"),
    ],
)
def test_predicate_parse_errors_say_what_is_wrong_and_where(text: str, reason: str) -> None:
    with pytest.raises(PredicateError) as info:
        parse_predicate(text)
    assert str(info.value) == f"Cannot parse predicate {text!r}: {reason}"
    assert "sqlglot" not in str(info.value) and "Required keyword" not in str(info.value)

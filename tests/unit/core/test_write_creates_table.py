"""A write that creates its table: one commit (version 0) holds protocol, metadata and the rows.

As Delta on Spark and delta-rs do for a write to a new path. A concurrent creation of the same table
wins version 0 and the write fails with a concurrent-modification error, leaving the winner's table as
it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import deltalake
import pyarrow as pa
import pytest

from airflow_provider_delta.core.commands.create import create_table, table_before_creation
from airflow_provider_delta.core.commands.write import write
from airflow_provider_delta.core.storage import storage_for
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import DeltaConcurrentModificationException

if TYPE_CHECKING:
    from pathlib import Path

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "day": ["a", "a", "b"]})


def test_a_write_to_a_new_table_is_one_commit_read_by_delta_rs(tmp_path: Path) -> None:
    location = str(tmp_path / "t")
    snapshot = table_before_creation(
        storage_for(location),
        location,
        ROWS.schema,
        partition_by=["day"],
        properties={"delta.enableChangeDataFeed": "true"},
    )
    result = write(snapshot, ROWS)
    assert result.version == 0
    assert sorted(p.name for p in (tmp_path / "t" / "_delta_log").glob("*.json")) == [
        "00000000000000000000.json"
    ]
    table = DeltaTable(location)
    assert table.partition_columns == ("day",)
    assert table.configuration["delta.enableChangeDataFeed"] == "true"
    assert [(c["version"], c["operation"]) for c in table.history()] == [(0, "WRITE")]
    assert sorted(table.to_arrow()["id"].to_pylist()) == [1, 2, 3]
    assert sorted(deltalake.DeltaTable(location).to_pyarrow_table()["id"].to_pylist()) == [1, 2, 3]
    inserted = table.changes(starting_version=0)
    assert sorted(zip(inserted["id"].to_pylist(), inserted["_change_type"].to_pylist(), strict=True)) == [
        (1, "insert"),
        (2, "insert"),
        (3, "insert"),
    ]


def test_a_concurrent_creation_wins_and_the_write_commits_nothing(tmp_path: Path) -> None:
    location = str(tmp_path / "t")
    snapshot = table_before_creation(storage_for(location), location, ROWS.schema)
    create_table(storage_for(location), location, pa.schema([("other", pa.string())]))  # the winner
    with pytest.raises(DeltaConcurrentModificationException):
        write(snapshot, ROWS)
    table = DeltaTable(location)
    assert (table.version, table.schema.names) == (0, ("other",))
    assert table.to_arrow().num_rows == 0

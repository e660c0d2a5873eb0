"""REORG TABLE ... APPLY (PURGE): deleted rows and dropped columns are rewritten away.

Rules from ``../shared/specs/maintenance.md`` section 2a (``DeltaReorgTableCommand``,
``DeltaReorgSuite``). Tables with deletion vectors written by Delta Lake on Spark come from the
conformance corpus; delta-rs (the oracle) reads every table after the purge with our rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.exceptions import PredicateError
from tests.interop import assert_delta_rs_reads_identically
from tests.maintenance_tables import (
    assert_same_rows_as_delta_rs,
    rows_of,
    small_files_table,
    with_deletion_vector,
)

if TYPE_CHECKING:
    from collections.abc import Callable

pytestmark = pytest.mark.interop

DV_TABLES = [
    "golden/dv-partitioned-with-checkpoint",
    "extra/delta-kernel-java/basic-dv-no-checkpoint",
    "extra/kernel-rs/with-short-dv",
]


def _info(location: str, version: int) -> dict[str, Any]:
    text = (Path(location) / "_delta_log" / f"{version:020d}.json").read_text()
    return next(json.loads(line)["commitInfo"] for line in text.splitlines() if "commitInfo" in line)


@pytest.fixture
def dv_table(tmp_path: Path) -> DeltaTable:
    """Two partitions of three small files; two files of p='a' and one of p='b' have soft-deleted rows."""
    t = small_files_table(tmp_path / "t", appends=3, properties={"delta.enableDeletionVectors": "true"})
    a_files = sorted((f for f in t.files() if f.partition_values["p"] == "a"), key=lambda f: f.path)
    b_file = next(f for f in t.files() if f.partition_values["p"] == "b")
    with_deletion_vector(t, a_files[0], [0, 5])
    with_deletion_vector(t, a_files[1], [1])
    with_deletion_vector(t, b_file, [2, 3, 4])
    return t.refresh()


def test_purge_rewrites_files_with_deleted_rows_and_combines_small_ones(dv_table: DeltaTable) -> None:
    before = rows_of(dv_table.to_arrow())
    result = dv_table.reorg()
    assert result["numDeletionVectorsRemoved"] == 3 and result["numRemovedFiles"] == 3
    # p='a': the two purged files are combined into one; p='b': its one purged file is rewritten alone.
    assert result["numAddedFiles"] == 2 and result["numBins"] == 2
    assert not any(f.deletion_vector for f in dv_table.files())
    assert rows_of(dv_table.to_arrow()) == before
    info = _info(dv_table.location, result["version"])
    assert info["operation"] == "REORG"
    assert info["operationParameters"] == {"predicate": "[]", "applyPurge": "true"}
    assert info["isolationLevel"] == "SnapshotIsolation"
    assert_delta_rs_reads_identically(dv_table.location)


def test_a_second_purge_finds_nothing_and_commits_nothing(dv_table: DeltaTable) -> None:
    dv_table.reorg()
    version = dv_table.version
    again = dv_table.reorg()
    assert again["version"] is None and again["numRemovedFiles"] == 0
    assert DeltaTable.latest_version(dv_table.location) == version


def test_purge_of_a_table_without_deletion_vectors_is_a_no_op(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=2)
    assert t.reorg()["version"] is None and t.version == 2


def test_where_limits_the_purge_to_partitions(dv_table: DeltaTable) -> None:
    result = dv_table.reorg("p = 'b'")
    assert result["numDeletionVectorsRemoved"] == 1
    assert _info(dv_table.location, result["version"])["operationParameters"]["predicate"] == "[\"p = 'b'\"]"
    assert sum(1 for f in dv_table.files() if f.deletion_vector) == 2
    with pytest.raises(PredicateError, match="DELTA_NON_PARTITION_COLUMN_REFERENCE"):
        dv_table.reorg("id = 1")


def test_a_dv_without_num_records_is_purged(tmp_path: Path) -> None:
    t = small_files_table(
        tmp_path / "t", appends=1, partitions=("a",), properties={"delta.enableDeletionVectors": "true"}
    )
    add = t.files()[0]
    stats = json.loads(add.stats or "{}")
    stats.pop("numRecords")
    with t.transaction(operation="WRITE") as txn:
        txn.remove(add)
        txn.add(add._replace(stats=json.dumps(stats)))
    with_deletion_vector(t, t.refresh().files()[0], [])
    t = t.refresh()
    assert t.reorg()["numDeletionVectorsRemoved"] == 1


@pytest.mark.parametrize("name", DV_TABLES)
def test_purge_of_spark_written_tables_keeps_every_row(copy_table: Callable[[str], Path], name: str) -> None:
    location = str(copy_table(name))
    t = DeltaTable(location)
    before = rows_of(t.to_arrow())
    dv_files = sum(1 for f in t.files() if f.deletion_vector and f.deletion_vector.get("cardinality"))
    assert dv_files
    result = t.reorg()
    assert result["numDeletionVectorsRemoved"] == dv_files
    assert not any(f.deletion_vector for f in t.files())
    assert rows_of(t.to_arrow()) == before
    assert_same_rows_as_delta_rs(location)
    assert t.reorg()["version"] is None


def test_purge_removes_columns_dropped_under_column_mapping_but_not_renamed_ones(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=2, properties={"delta.columnMapping.mode": "name"})
    t.alter("ALTER TABLE t RENAME COLUMN x TO x2")
    assert t.reorg()["version"] is None  # a rename keeps the physical column: nothing to purge
    t.alter("ALTER TABLE t DROP COLUMN name")
    old_files = [f.path for f in t.files()]
    before = rows_of(t.to_arrow())
    result = t.reorg()
    assert result["numRemovedFiles"] == 4 and result["numAddedFiles"] == 2
    assert rows_of(t.to_arrow()) == before
    for f in t.files():
        names = pq.read_schema(Path(t.location) / f.path).names
        assert len(names) == 2  # id and the renamed x: the dropped column's data is gone
        assert f.path not in old_files
    assert t.reorg()["version"] is None
    assert_delta_rs_reads_identically(t.location)


def test_reorg_reads_rows_with_nulls_for_columns_added_later(tmp_path: Path) -> None:
    t = small_files_table(
        tmp_path / "t", appends=1, partitions=("a",), properties={"delta.enableDeletionVectors": "true"}
    )
    t.alter("ALTER TABLE t ADD COLUMNS (extra STRING)")
    with_deletion_vector(t, t.files()[0], [0])
    t = t.refresh()
    before = rows_of(t.to_arrow())
    t.reorg()
    assert rows_of(t.to_arrow()) == before
    assert pa.types.is_string(pq.read_schema(Path(t.location) / t.files()[0].path).field("extra").type)


def test_reorg_records_no_change_data(tmp_path: Path) -> None:
    t = small_files_table(
        tmp_path / "t",
        appends=2,
        properties={"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"},
    )
    with_deletion_vector(t, t.files()[0], [0])
    version = DeltaTable(t.location).reorg()["version"]
    assert version is not None and DeltaTable(t.location).changes(version, version).num_rows == 0

"""OPTIMIZE and ZORDER BY in the engine: Delta's candidate and bin rules, the commit, errors.

Rules from ``../shared/specs/maintenance.md`` section 2 (``OptimizeTableCommand``). After every
rewrite delta-rs (the oracle) reads the table with our rows, files and history.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.commands.optimize.layout import range_ids, zorder_permutation
from airflow_provider_delta.exceptions import PredicateError, SchemaError
from tests.interop import assert_delta_rs_reads_identically
from tests.maintenance_tables import SCHEMA, batch, rows_of, small_files_table, with_deletion_vector

pytestmark = pytest.mark.interop

DELTA_METRICS = {
    "numAddedFiles",
    "numRemovedFiles",
    "numAddedBytes",
    "numRemovedBytes",
    "minFileSize",
    "p25FileSize",
    "p50FileSize",
    "p75FileSize",
    "maxFileSize",
    "numDeletionVectorsRemoved",
}


def _actions(location: str, version: int) -> list[dict[str, Any]]:
    text = (Path(location) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _info(location: str, version: int) -> dict[str, Any]:
    return next(a["commitInfo"] for a in _actions(location, version) if "commitInfo" in a)


@pytest.fixture
def table(tmp_path: Path) -> DeltaTable:
    """Six appends of one small file into each of p='a' and p='b' (12 files, 240 rows)."""
    return small_files_table(tmp_path / "t")


def test_compaction_packs_each_partition_into_one_file_with_a_delta_commit(table: DeltaTable) -> None:
    before = rows_of(table.to_arrow())
    result = table.optimize()
    assert result["numRemovedFiles"] == 12 and result["numAddedFiles"] == 2
    assert result["partitionsOptimized"] == 2 and result["numBins"] == 2
    assert sorted(len([f for f in table.files() if f.partition_values["p"] == p]) for p in "ab") == [1, 1]
    assert rows_of(table.to_arrow()) == before
    info = _info(table.location, result["version"])
    assert info["operation"] == "OPTIMIZE"
    assert info["operationParameters"] == {
        "predicate": "[]",
        "zOrderBy": "[]",
        "clusterBy": "[]",
        "auto": "false",
    }
    assert set(info["operationMetrics"]) == DELTA_METRICS
    assert info["isolationLevel"] == "SnapshotIsolation" and info["isBlindAppend"] is False
    actions = _actions(table.location, result["version"])
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]
    assert {a["dataChange"] for a in adds} == {False} and {r["dataChange"] for r in removes} == {False}
    assert len({r["deletionTimestamp"] for r in removes}) == 1
    sizes = sorted(a["size"] for a in adds)
    assert info["operationMetrics"]["minFileSize"] == str(sizes[0])
    assert info["operationMetrics"]["maxFileSize"] == str(sizes[-1])
    assert info["operationMetrics"]["numRemovedBytes"] == str(sum(r["size"] for r in removes))
    assert_delta_rs_reads_identically(table.location)


def test_compaction_is_idempotent_and_commits_nothing_the_second_time(table: DeltaTable) -> None:
    table.optimize()
    version = table.version
    again = table.optimize()
    assert again["version"] is None and again["numRemovedFiles"] == 0 and again["totalFilesSkipped"] == 2
    assert DeltaTable.latest_version(table.location) == version


def test_bins_close_at_the_target_size_and_single_file_bins_are_left_alone(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=5, partitions=("a",))
    sizes = sorted(f.size for f in t.files())
    target = sizes[0] + sizes[1] + sizes[2] // 2  # two files fit, the third would not
    result = t.optimize(target_file_size=target)
    # 5 files sorted by size: [f0 f1] [f2 f3] [f4] -> the last bin has one file and stays as it is.
    assert result["numBins"] == 2 and result["numRemovedFiles"] == 4 and result["numAddedFiles"] == 2
    assert len(t.files()) == 3
    assert_delta_rs_reads_identically(t.location)


def test_files_at_or_above_the_target_are_not_candidates(table: DeltaTable) -> None:
    smallest = min(f.size for f in table.files())
    result = table.optimize(target_file_size=smallest)
    assert result["version"] is None and result["totalConsideredFiles"] == 12


def test_the_tables_target_file_size_applies(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=3, properties={"delta.targetFileSize": "1"})
    assert t.optimize()["version"] is None  # every file is above a 1-byte target


def test_where_on_partition_columns_selects_partitions(table: DeltaTable) -> None:
    result = table.optimize("p = 'a'")
    assert result["numRemovedFiles"] == 6 and result["totalConsideredFiles"] == 6
    assert len([f for f in table.files() if f.partition_values["p"] == "b"]) == 6
    assert _info(table.location, result["version"])["operationParameters"]["predicate"] == "[\"p = 'a'\"]"


@pytest.mark.parametrize(
    ("where", "column"), [("id > 3", "id"), ("p = 'a' AND x = 1", "x"), ("name IS NULL", "name")]
)
def test_where_on_a_data_column_is_refused_in_deltas_words(
    table: DeltaTable, where: str, column: str
) -> None:
    version = table.version
    with pytest.raises(PredicateError, match=rf"DELTA_NON_PARTITION_COLUMN_REFERENCE.*'{column}'.*\[p\]"):
        table.optimize(where)
    assert DeltaTable.latest_version(table.location) == version


def test_where_on_an_unknown_column_is_refused(table: DeltaTable) -> None:
    with pytest.raises(PredicateError, match="nope"):
        table.optimize("nope = 1")


def test_dv_files_over_the_deleted_ratio_are_compacted_and_their_dvs_dropped(tmp_path: Path) -> None:
    t = small_files_table(
        tmp_path / "t", appends=2, partitions=("a",), properties={"delta.enableDeletionVectors": "true"}
    )
    big = max(f.size for f in t.files())
    with_deletion_vector(t, t.files()[0], [0, 1, 2])
    t = t.refresh()
    before = rows_of(t.to_arrow())
    result = t.optimize(target_file_size=big * 4)
    assert result["numDeletionVectorsRemoved"] == 1 and result["numAddedFiles"] == 1
    assert rows_of(t.to_arrow()) == before and not any(f.deletion_vector for f in t.files())
    assert_delta_rs_reads_identically(t.location)


def test_optimize_records_no_change_data(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=3, properties={"delta.enableChangeDataFeed": "true"})
    version = t.optimize()["version"]
    assert t.changes(version, version).num_rows == 0
    assert not (Path(t.location) / "_change_data").exists()


def test_optimize_of_an_append_only_table_is_allowed(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=2, properties={"delta.appendOnly": "true"})
    assert t.optimize()["numAddedFiles"] == 2


def test_optimize_of_a_column_mapped_table(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=3, properties={"delta.columnMapping.mode": "name"})
    t.alter("ALTER TABLE t RENAME COLUMN name TO label")
    before = rows_of(t.to_arrow())
    assert t.optimize()["numAddedFiles"] == 2
    assert rows_of(t.to_arrow()) == before
    assert_delta_rs_reads_identically(t.location)


def test_optimize_of_an_empty_table_commits_nothing(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"])
    assert t.optimize()["version"] is None and t.optimize(zorder_by=["x"])["version"] is None


# -- ZORDER BY --------------------------------------------------------------------------------------------


def test_zorder_rewrites_every_file_of_each_partition_even_a_single_one(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=1)
    before = rows_of(t.to_arrow())
    result = t.optimize(zorder_by=["x", "id"])
    assert result["numRemovedFiles"] == 2 and result["numAddedFiles"] == 2
    info = _info(t.location, result["version"])
    assert info["operationParameters"]["zOrderBy"] == '["x","id"]'
    assert rows_of(t.to_arrow()) == before
    # ZORDER is not idempotent: it rewrites again.
    assert t.optimize(zorder_by=["x", "id"])["numRemovedFiles"] == 2
    assert_delta_rs_reads_identically(t.location)


def test_zorder_writes_rows_in_z_curve_order_cut_into_target_sized_files(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=8, partitions=("a",), rows=50)
    total = sum(f.size for f in t.files())
    result = t.optimize(zorder_by=["x", "id"], target_file_size=total // 3)
    assert result["numAddedFiles"] == 3
    files = sorted(t.files(), key=lambda f: f.path)
    parts = [pq.read_table(Path(t.location) / f.path) for f in files]
    assert sum(p.num_rows for p in parts) == 400 and all(132 <= p.num_rows <= 134 for p in parts)
    # Each file is a contiguous, ordered run of the curve (keys are unique here: ids are distinct).
    combined = pa.concat_tables(parts)
    rank = np.empty(combined.num_rows, dtype=np.int64)
    rank[zorder_permutation(combined, ["x", "id"])] = np.arange(combined.num_rows)
    start = 0
    for part in parts:
        assert np.all(np.diff(rank[start : start + part.num_rows]) == 1)
        start += part.num_rows


def test_zorder_by_a_nested_field(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int64()), ("b", pa.string())]))])
    t = DeltaTable.create(str(tmp_path / "t"), schema)
    for k in range(3):
        rows = {"id": [k * 2, k * 2 + 1], "s": [{"a": 5 - k, "b": "x"}, {"a": k, "b": None}]}
        t.append(pa.table(rows, schema=schema))
    assert t.optimize(zorder_by=["S.A"])["zOrderBy"] == ["s.a"]
    assert_delta_rs_reads_identically(t.location)


@pytest.mark.parametrize(
    ("columns", "match"),
    [
        (["p"], r"DELTA_ZORDERING_ON_PARTITION_COLUMN.*p is a partition column"),
        (["x", "missing"], r"DELTA_ZORDERING_COLUMN_DOES_NOT_EXIST.*missing does not exist"),
        (["x", "X"], "listed twice"),
    ],
)
def test_bad_zorder_columns_are_refused_before_anything(
    table: DeltaTable, columns: list[str], match: str
) -> None:
    version = table.version
    with pytest.raises(SchemaError, match=match):
        table.optimize(zorder_by=columns)
    assert DeltaTable.latest_version(table.location) == version


def test_range_ids_give_each_distinct_value_its_range_below_a_thousand_nulls_zero() -> None:
    ids = range_ids(pa.array([5, None, 1, 5, 3, None, 9, 7, 2, 8]))
    assert ids.tolist() == [3, 0, 0, 3, 2, 0, 6, 4, 1, 5]
    assert range_ids(pa.array(["b", "a", "c"])).tolist() == [1, 0, 2]


def test_range_ids_cut_many_distinct_values_into_a_thousand_equal_ranges() -> None:
    values = pa.array([*list(range(5000)), None])
    ids = range_ids(values)
    assert ids[:5000].tolist() == [i // 5 for i in range(5000)] and ids[5000] == 0
    assert np.bincount(ids[:5000].astype(np.int64)).tolist() == [5] * 1000
    assert range_ids(pa.array([], pa.int64())).tolist() == []
    with pytest.raises(SchemaError, match="no order"):
        range_ids(pa.array([{"a": 1}]))


def test_the_z_curve_interleaves_the_columns_bits() -> None:
    # Two columns with 4 values each: the curve visits (0,0) (0,1) (1,0) (1,1) before (0,2)...
    xs, ys = [], []
    for x in range(4):
        for y in range(4):
            xs.append(x)
            ys.append(y)
    rows = pa.table({"x": xs, "y": ys})
    order = zorder_permutation(rows, ["x", "y"])
    visited = [(xs[i], ys[i]) for i in order]
    assert visited[:4] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert visited[4:8] == [(0, 2), (0, 3), (1, 2), (1, 3)]


def test_zorder_of_many_columns_uses_more_than_one_key_word() -> None:
    rows = pa.table({f"c{i}": list(range(20))[:: (1 if i % 2 else -1)] for i in range(8)})
    order = zorder_permutation(rows, [f"c{i}" for i in range(8)])
    assert sorted(order.tolist()) == list(range(20))


def test_zorder_keeps_rows_from_partitions_apart(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=2, partitions=("a", "b", "c"))
    t.optimize(zorder_by=["name"])
    for f in t.files():
        part = pq.read_table(Path(t.location) / f.path)
        assert part.num_rows == 40
    assert {f.partition_values["p"] for f in t.files()} == {"a", "b", "c"}
    assert batch([0], "a").schema == SCHEMA


@pytest.mark.parametrize("command", ["optimize", "zorder", "reorg"])
def test_a_table_needing_an_unknown_writer_feature_is_refused_even_with_nothing_to_do(
    tmp_path: Path, command: str
) -> None:
    from airflow_provider_delta.exceptions import UnsupportedFeatureError

    t = small_files_table(tmp_path / "t", appends=1)
    commit = Path(t.location) / "_delta_log" / f"{t.version + 1:020d}.json"
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": [],
        "writerFeatures": ["someFutureFeature"],
    }
    commit.write_text(json.dumps({"protocol": protocol}) + "\n")
    t = DeltaTable(t.location)
    with pytest.raises(UnsupportedFeatureError, match="someFutureFeature"):
        if command == "reorg":
            t.reorg()
        else:
            t.optimize(zorder_by=["x"] if command == "zorder" else None)
    assert DeltaTable.latest_version(t.location) == t.version

"""Table operations on the local engine: create, append, overwrite, delete, update.

What each writes to the log (actions, commitInfo, metrics), the rows it leaves, null semantics of
predicates, idempotent writes with (appId, version), the smallest protocol at creation, and automatic
checkpoints. Interop with delta-rs lives in tests/interop; conflicts in test_conflicts.py.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core import ConcurrentTransactionException, DeltaTable
from airflow_provider_delta.core.commands.write import append as append_op

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])


def _data(ids: list[int], ps: list[str | None], vs: list[int | None]) -> pa.Table:
    return pa.Table.from_pydict({"id": ids, "p": ps, "v": vs}, schema=SCHEMA)


def _rows(t: DeltaTable | str) -> list[tuple[Any, ...]]:
    table = DeltaTable(t) if isinstance(t, str) else t
    return sorted((r["id"], r["p"], r["v"]) for r in table.to_arrow().to_pylist())


def _actions(location: str, version: int) -> list[dict[str, Any]]:
    text = (Path(location) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _kind(actions: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [a[kind] for a in actions if kind in a]


def _info(location: str, version: int) -> dict[str, Any]:
    (info,) = _kind(_actions(location, version), "commitInfo")
    return info


def _metrics(location: str, version: int) -> dict[str, int]:
    return {k: int(v) for k, v in _info(location, version)["operationMetrics"].items()}


def _parquet_files(location: str) -> set[str]:
    return {
        str(p.relative_to(location)) for p in Path(location).rglob("*.parquet") if "_delta_log" not in p.parts
    }


@pytest.fixture
def table(tmp_path) -> DeltaTable:
    """Partitioned by p: a = {1, 2, 3}, b = {4, 5}, null = {6}; v has nulls."""
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"])
    t.append(_data([1, 2, 3, 4, 5, 6], ["a", "a", "a", "b", "b", None], [10, None, 30, 40, None, 60]))
    return t


# -- create: the smallest protocol -----------------------------------------------------------------

NTZ = pa.timestamp("us")


@pytest.mark.parametrize(
    ("schema", "properties", "reader", "writer", "reader_features", "writer_features"),
    [
        pytest.param(SCHEMA, {}, 1, 2, None, None, id="plain"),
        pytest.param(SCHEMA, {"delta.appendOnly": "true"}, 1, 2, None, None, id="append-only"),
        pytest.param(SCHEMA, {"delta.constraints.pos": "v > 0"}, 1, 3, None, None, id="check-constraint"),
        pytest.param(SCHEMA, {"delta.enableChangeDataFeed": "true"}, 1, 4, None, None, id="change-data-feed"),
        pytest.param(
            SCHEMA, {"delta.columnMapping.mode": "name"}, 2, 5, None, None, id="column-mapping-name"
        ),
        pytest.param(SCHEMA, {"delta.columnMapping.mode": "id"}, 2, 5, None, None, id="column-mapping-id"),
        pytest.param(
            SCHEMA,
            {"delta.columnMapping.mode": "name", "delta.enableChangeDataFeed": "true"},
            2,
            5,
            None,
            None,
            id="column-mapping-and-cdf",
        ),
        pytest.param(
            pa.schema([("t", NTZ)]), {}, 3, 7, {"timestampNtz"}, {"timestampNtz"}, id="timestamp-ntz"
        ),
        pytest.param(
            pa.schema([("s", pa.struct([("t", NTZ)]))]),
            {},
            3,
            7,
            {"timestampNtz"},
            {"timestampNtz"},
            id="nested-timestamp-ntz",
        ),
        pytest.param(
            pa.schema([("a", pa.list_(NTZ))]),
            {},
            3,
            7,
            {"timestampNtz"},
            {"timestampNtz"},
            id="timestamp-ntz-in-array",
        ),
        pytest.param(
            pa.schema([("m", pa.map_(pa.string(), NTZ))]),
            {},
            3,
            7,
            {"timestampNtz"},
            {"timestampNtz"},
            id="timestamp-ntz-in-map",
        ),
        pytest.param(
            pa.schema([("t", NTZ)]),
            {"delta.columnMapping.mode": "name"},
            3,
            7,
            {"timestampNtz", "columnMapping"},
            {"timestampNtz", "columnMapping"},
            id="timestamp-ntz-and-column-mapping",
        ),
        pytest.param(
            SCHEMA,
            {"delta.enableInCommitTimestamps": "true"},
            1,
            7,
            None,
            {"inCommitTimestamp"},
            id="in-commit-timestamps",
        ),
        pytest.param(
            SCHEMA,
            {"delta.enableDeletionVectors": "true"},
            3,
            7,
            {"deletionVectors"},
            {"deletionVectors"},
            id="deletion-vectors",
        ),
        pytest.param(
            SCHEMA,
            {"delta.enableTypeWidening": "true"},
            3,
            7,
            {"typeWidening"},
            {"typeWidening"},
            id="type-widening",
        ),
    ],
)
def test_create_uses_the_smallest_protocol_its_features_need(
    tmp_path, schema, properties, reader, writer, reader_features, writer_features
):
    t = DeltaTable.create(str(tmp_path / "t"), schema, properties=properties)
    protocol = t.protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (reader, writer)
    assert (
        set(protocol.reader_features) if protocol.reader_features is not None else None
    ) == reader_features
    if writer_features is None:
        assert protocol.writer_features is None
    else:
        # writer 7 lists each feature; legacy features a v7 table may also carry are allowed
        assert writer_features <= set(protocol.writer_features or ())
        assert set(protocol.writer_features or ()) - writer_features <= {"appendOnly", "invariants"}
    (raw,) = _kind(_actions(t.location, 0), "protocol")
    assert raw["minReaderVersion"] == reader
    assert raw["minWriterVersion"] == writer
    assert ("readerFeatures" in raw) == (reader == 3)
    assert ("writerFeatures" in raw) == (writer == 7)


def test_create_writes_commit_info_protocol_and_metadata_with_partition_columns(tmp_path):
    t = DeltaTable.create(
        str(tmp_path / "t"),
        SCHEMA,
        partition_by=["P"],
        properties={"owner": "etl"},
        name="events",
        description="test table",
    )
    actions = _actions(t.location, 0)
    assert [next(iter(a)) for a in actions] == ["commitInfo", "protocol", "metaData"]
    (md,) = _kind(actions, "metaData")
    assert md["partitionColumns"] == ["p"], "partition columns take the schema's spelling"
    assert md["configuration"] == {"owner": "etl"}
    assert (md["name"], md["description"]) == ("events", "test table")
    assert md["format"] == {"provider": "parquet", "options": {}}
    uuid.UUID(md["id"])
    info = _info(t.location, 0)
    assert info["operation"] == "CREATE TABLE"
    assert json.loads(info["operationParameters"]["partitionBy"]) == ["p"]
    assert "readVersion" not in info
    assert t.version == 0
    assert t.to_arrow().num_rows == 0


def test_column_mapping_assigns_ids_and_physical_names_and_max_column_id(tmp_path):
    schema = pa.schema([("a", pa.int64()), ("s", pa.struct([("x", pa.int32()), ("y", pa.string())]))])
    t = DeltaTable.create(str(tmp_path / "t"), schema, properties={"delta.columnMapping.mode": "name"})
    ids, names = [], set()
    for _, f in t.schema.walk():
        ids.append(int(f.metadata["delta.columnMapping.id"]))
        names.add(f.metadata["delta.columnMapping.physicalName"])
    assert sorted(ids) == [1, 2, 3, 4]
    assert len(names) == 4
    assert t.configuration["delta.columnMapping.maxColumnId"] == "4"


# -- commitInfo on every commit ----------------------------------------------------------------------

REQUIRED_INFO = {
    "timestamp",
    "operation",
    "operationParameters",
    "operationMetrics",
    "isolationLevel",
    "isBlindAppend",
    "engineInfo",
    "txnId",
}


def test_every_commit_records_commit_info_with_read_version_isolation_and_blind_append(table):
    loc = table.location
    table.append(_data([7], ["c"], [70]), "job", 1)
    table.overwrite(_data([8], ["c"], [80]), "p = 'c'")
    table.delete("id = 1")
    table.update("p = 'b'", {"v": "v + 1"})
    table.overwrite(_data([9], ["d"], [90]))
    with table.transaction(operation="OPTIMIZE") as txn:
        txn.read_whole_table()
    expected = [
        ("CREATE TABLE", True),
        ("WRITE", True),
        ("WRITE", True),
        ("WRITE", False),
        ("DELETE", False),
        ("UPDATE", False),
        ("WRITE", False),
        ("OPTIMIZE", False),
    ]
    latest = DeltaTable.latest_version(loc)
    assert latest == len(expected) - 1
    txn_ids, previous = set(), 0
    for version in range(latest + 1):
        actions = _actions(loc, version)
        assert next(iter(actions[0])) == "commitInfo", "commitInfo comes first"
        info = _info(loc, version)
        assert set(info) >= REQUIRED_INFO
        assert (info["operation"], info["isBlindAppend"]) == expected[version]
        assert info["engineInfo"].startswith("airflow-provider-delta/")
        assert all(isinstance(v, str) or v is None for v in info["operationParameters"].values())
        assert all(isinstance(v, str) for v in info["operationMetrics"].values())
        assert info["timestamp"] >= previous
        previous = info["timestamp"]
        txn_ids.add(str(uuid.UUID(info["txnId"])))
        if version:
            assert info["readVersion"] == version - 1
            assert info["isolationLevel"] == (
                "SnapshotIsolation" if info["operation"] == "OPTIMIZE" else "WriteSerializable"
            )
    assert len(txn_ids) == latest + 1
    history = DeltaTable(loc).history()
    assert [h["version"] for h in history] == list(range(latest, -1, -1))
    assert [h["operation"] for h in reversed(history)] == [op for op, _ in expected]


def test_operation_parameters_record_mode_partitioning_and_predicate(table):
    loc = table.location
    v1 = table.append(_data([7], ["c"], [70]))
    v2 = table.overwrite(_data([8], ["c"], [80]), "p = 'c'")
    v3 = table.delete("v > 50")
    v4 = table.update("id = 2", {"v": "0"})
    assert _info(loc, v1)["operationParameters"] == {"mode": "Append", "partitionBy": '["p"]'}
    assert _info(loc, v2)["operationParameters"] == {
        "mode": "Overwrite",
        "partitionBy": '["p"]',
        "predicate": "[\"p = 'c'\"]",
    }
    assert json.loads(_info(loc, v3)["operationParameters"]["predicate"]) == ["v > 50"]
    assert json.loads(_info(loc, v4)["operationParameters"]["predicate"]) == ["id = 2"]


def test_serializable_table_records_serializable_isolation(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.isolationLevel": "Serializable"})
    v = t.append(_data([1], ["a"], [1]))
    assert _info(t.location, v)["isolationLevel"] == "Serializable"


def test_in_commit_timestamps_are_strictly_increasing_and_used_by_history(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.enableInCommitTimestamps": "true"})
    for i in range(4):
        t.append(_data([i], ["a"], [i]))
    t.delete("id = 0")
    stamps = [_info(t.location, v)["inCommitTimestamp"] for v in range(t.version + 1)]
    assert all(b > a for a, b in itertools.pairwise(stamps)), stamps
    assert [h["timestamp"] for h in reversed(DeltaTable(t.location).history())] == stamps


# -- append -----------------------------------------------------------------------------------------------


def test_append_writes_one_file_per_partition_with_metrics_and_returns_the_version(table):
    loc = table.location
    v = table.append(_data([7, 8, 9], ["x", "y", "x"], [1, 2, 3]))
    assert v == table.version == 2
    adds = _kind(_actions(loc, v), "add")
    assert sorted(a["partitionValues"]["p"] for a in adds) == ["x", "y"]
    assert all(a["dataChange"] is True for a in adds)
    assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == 3
    assert _metrics(loc, v) == {
        "numFiles": 2,
        "numOutputRows": 3,
        "numOutputBytes": sum(a["size"] for a in adds),
    }
    assert _kind(_actions(loc, v), "remove") == []


def test_append_null_filled_missing_nullable_columns_and_matches_names_ignoring_case(table):
    table.append(pa.table({"ID": pa.array([7], pa.int64()), "P": ["a"]}))
    assert (7, "a", None) in _rows(table)


def test_append_of_no_rows_commits_an_empty_blind_append(table):
    before = _rows(table)
    v = table.append(SCHEMA.empty_table())
    assert _kind(_actions(table.location, v), "add") == []
    assert _rows(table) == before


# -- idempotent writes ------------------------------------------------------------------------------------


def test_idempotent_append_is_skipped_when_the_same_app_version_already_landed(table):
    loc = table.location
    v = table.append(_data([7], ["a"], [7]), app_id="dag.task", app_version=5)
    assert v == 2
    (txn,) = _kind(_actions(loc, v), "txn")
    assert (txn["appId"], txn["version"]) == ("dag.task", 5)
    assert isinstance(txn["lastUpdated"], int)
    rows = _rows(table)
    assert table.append(_data([7], ["a"], [7]), app_id="dag.task", app_version=5) is None
    assert table.append(_data([7], ["a"], [7]), app_id="dag.task", app_version=4) is None, "older runs too"
    assert DeltaTable.latest_version(loc) == 2
    assert _rows(table) == rows
    assert DeltaTable(loc).snapshot.app_transaction_version("dag.task") == 5


def test_idempotent_append_with_a_newer_version_or_another_app_id_writes(table):
    table.append(_data([7], ["a"], [7]), app_id="dag.task", app_version=5)
    assert table.append(_data([8], ["a"], [8]), app_id="dag.task", app_version=6) == 3
    assert table.append(_data([9], ["a"], [9]), app_id="other", app_version=1) == 4
    snapshot = DeltaTable(table.location).snapshot
    assert snapshot.app_transaction_version("dag.task") == 6
    assert snapshot.app_transaction_version("other") == 1
    assert snapshot.app_transaction_version("never") is None


def test_idempotent_append_that_lost_a_race_to_the_same_app_id_is_skipped_on_retry(table):
    stale = DeltaTable(table.location).snapshot
    assert table.append(_data([7], ["a"], [7]), app_id="job", app_version=1) == 2
    # the same run, retried by a second worker that read the table before the first one committed
    with pytest.raises(ConcurrentTransactionException, match="'job'"):
        append_op(stale, _data([7], ["a"], [7]), app_id="job", app_version=1)
    assert table.append(_data([7], ["a"], [7]), app_id="job", app_version=1) is None
    assert [r for r in _rows(table) if r[0] == 7] == [(7, "a", 7)]


def test_app_transaction_survives_a_checkpoint(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.checkpointInterval": "2"})
    t.append(_data([1], ["a"], [1]), app_id="job", app_version=3)
    t.append(_data([2], ["a"], [2]))  # version 2: checkpoint
    copy = _without_commits_before(t.location, 2, tmp_path / "copy")
    assert DeltaTable(copy).append(_data([1], ["a"], [1]), app_id="job", app_version=3) is None
    assert DeltaTable(copy).snapshot.app_transaction_version("job") == 3


# -- overwrite --------------------------------------------------------------------------------------------


def test_overwrite_without_predicate_replaces_every_row(table):
    loc = table.location
    files = len(table.files())
    v = table.overwrite(_data([100], ["z"], [1]))
    assert _rows(table) == [(100, "z", 1)]
    actions = _actions(loc, v)
    assert len(_kind(actions, "remove")) == files
    assert all(r["dataChange"] for r in _kind(actions, "remove"))
    m = _metrics(loc, v)
    assert (m["numRemovedFiles"], m["numFiles"], m["numOutputRows"]) == (files, 1, 1)


def test_overwrite_with_a_partition_predicate_replaces_only_that_partition_without_rewriting(table):
    loc = table.location
    before = _parquet_files(loc)
    b_files = {f.path for f in table.files() if f.partition_values["p"] == "b"}
    v = table.overwrite(_data([40, 41], ["b", "b"], [0, 0]), "p = 'b'")
    assert _rows(table) == [
        (1, "a", 10),
        (2, "a", None),
        (3, "a", 30),
        (6, None, 60),
        (40, "b", 0),
        (41, "b", 0),
    ]
    actions = _actions(loc, v)
    assert {r["path"] for r in _kind(actions, "remove")} == b_files
    assert len(_parquet_files(loc) - before) == 1, "only the new data was written"
    m = _metrics(loc, v)
    assert (m["numRemovedFiles"], m["numDeletedRows"], m["numCopiedRows"], m["numOutputRows"]) == (1, 2, 0, 2)


def test_overwrite_with_a_data_predicate_keeps_the_other_rows_of_rewritten_files(table):
    loc = table.location
    v = table.overwrite(_data([30], ["a"], [300]), "v >= 30 AND p = 'a'")
    assert _rows(table) == [
        (1, "a", 10),
        (2, "a", None),
        (4, "b", 40),
        (5, "b", None),
        (6, None, 60),
        (30, "a", 300),
    ]
    m = _metrics(loc, v)
    assert (m["numDeletedRows"], m["numCopiedRows"], m["numOutputRows"]) == (1, 2, 1)


def test_overwrite_with_a_predicate_and_no_rows_deletes_the_matching_rows(table):
    table.overwrite(SCHEMA.empty_table(), "p = 'a'")
    assert _rows(table) == [(4, "b", 40), (5, "b", None), (6, None, 60)]


# -- delete -----------------------------------------------------------------------------------------------


def test_partition_only_delete_removes_whole_files_without_rewriting(table):
    loc = table.location
    before = _parquet_files(loc)
    a_files = {f.path: f for f in table.files() if f.partition_values["p"] == "a"}
    v = table.delete("p = 'a'")
    actions = _actions(loc, v)
    assert _kind(actions, "add") == []
    removes = _kind(actions, "remove")
    assert {r["path"] for r in removes} == set(a_files)
    for r in removes:
        assert r["dataChange"] is True
        assert r["extendedFileMetadata"] is True
        assert r["partitionValues"] == {"p": "a"}
        assert r["size"] == a_files[r["path"]].size
        assert r["deletionTimestamp"] >= _info(loc, v)["timestamp"] - 60_000
    assert _parquet_files(loc) == before, "no data file was written"
    m = _metrics(loc, v)
    assert (m["numRemovedFiles"], m["numAddedFiles"], m["numDeletedRows"], m["numCopiedRows"]) == (1, 0, 3, 0)
    assert _rows(table) == [(4, "b", 40), (5, "b", None), (6, None, 60)]


def test_delete_on_a_data_column_rewrites_only_the_files_with_matching_rows(table):
    loc = table.location
    b_file = next(f.path for f in table.files() if f.partition_values["p"] == "b")
    v = table.delete("v = 30")
    actions = _actions(loc, v)
    removed = {r["path"] for r in _kind(actions, "remove")}
    assert b_file not in removed
    assert len(removed) == 1
    (add,) = _kind(actions, "add")
    assert add["partitionValues"] == {"p": "a"}
    assert json.loads(add["stats"])["numRecords"] == 2
    m = _metrics(loc, v)
    assert (m["numRemovedFiles"], m["numAddedFiles"], m["numDeletedRows"], m["numCopiedRows"]) == (1, 1, 1, 2)


def test_delete_without_predicate_removes_every_file(table):
    files = len(table.files())
    v = table.delete()
    assert len(_kind(_actions(table.location, v), "remove")) == files
    assert _rows(table) == []


def test_delete_that_matches_nothing_returns_none_and_commits_nothing(table):
    assert table.delete("v > 1000") is None
    assert table.delete("p = 'zzz'") is None
    assert DeltaTable.latest_version(table.location) == 1
    empty = DeltaTable.create(str(Path(table.location).parent / "empty"), SCHEMA)
    assert empty.delete() is None


# -- null semantics -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("predicate", "deleted"),
    [
        pytest.param("v > 20", {3, 4, 6}, id="comparison-skips-nulls"),
        pytest.param("v <> 10", {3, 4, 6}, id="not-equal-skips-nulls"),
        pytest.param("NOT (v = 10)", {3, 4, 6}, id="negation-skips-nulls"),
        pytest.param("v IS NULL", {2, 5}, id="is-null"),
        pytest.param("v IS NOT NULL AND v < 40", {1, 3}, id="is-not-null"),
        pytest.param("v = NULL", set(), id="equals-null-matches-nothing"),
        pytest.param("v <=> NULL", {2, 5}, id="null-safe-equality"),
        pytest.param("v IN (10, NULL)", {1}, id="in-with-null"),
        pytest.param("NOT (v IN (10, 30))", {4, 6}, id="not-in-skips-nulls"),
        pytest.param("coalesce(v, 0) = 0", {2, 5}, id="coalesce"),
        pytest.param("p IS NULL", {6}, id="null-partition"),
        pytest.param("p <> 'a'", {4, 5}, id="partition-not-equal-skips-null-partition"),
        pytest.param("NOT (p = 'b')", {1, 2, 3}, id="partition-negation-skips-null-partition"),
        pytest.param("p = 'b' OR v IS NULL", {2, 4, 5}, id="mixed-or"),
        pytest.param("p = 'a' AND v IS NULL", {2}, id="mixed-and"),
    ],
)
def test_delete_follows_sql_null_semantics(table, predicate, deleted):
    before = _rows(table)
    result = table.delete(predicate)
    assert (result is None) == (not deleted)
    assert _rows(table) == [r for r in before if r[0] not in deleted]
    assert sorted(
        r["id"] for r in DeltaTable(table.location, version=1).to_arrow(filter=predicate).to_pylist()
    ) == sorted(deleted), "delete and read agree on which rows match"


def test_update_leaves_rows_whose_predicate_is_null_untouched(table):
    v = table.update("v <> 10", {"v": "0"})
    assert _rows(table) == [
        (1, "a", 10),
        (2, "a", None),
        (3, "a", 0),
        (4, "b", 0),
        (5, "b", None),
        (6, None, 0),
    ]
    m = _metrics(table.location, v)
    assert m["numUpdatedRows"] == 3


def test_update_expression_over_null_gives_null(table):
    table.update("p = 'b'", {"v": "v + 1"})
    assert [r for r in _rows(table) if r[1] == "b"] == [(4, "b", 41), (5, "b", None)]


def test_update_can_set_null_and_replace_null(table):
    table.update("id = 1", {"v": "NULL"})
    table.update("v IS NULL", {"v": "-1"})
    assert sorted(r[2] for r in _rows(table)) == [-1, -1, -1, 30, 40, 60]


# -- update -------------------------------------------------------------------------------------------------


def test_update_rewrites_matching_files_with_metrics_and_keeps_other_files(table):
    loc = table.location
    b_file = next(f.path for f in table.files() if f.partition_values["p"] == "b")
    v = table.update("id = 1 OR id = 6", {"v": "v * 2", "id": "id + 100"})
    assert _rows(table) == [
        (2, "a", None),
        (3, "a", 30),
        (4, "b", 40),
        (5, "b", None),
        (101, "a", 20),
        (106, None, 120),
    ]
    actions = _actions(loc, v)
    assert b_file not in {r["path"] for r in _kind(actions, "remove")}
    m = _metrics(loc, v)
    assert (m["numUpdatedRows"], m["numCopiedRows"], m["numRemovedFiles"], m["numAddedFiles"]) == (2, 2, 2, 2)


def test_update_assignments_see_the_old_row_values(table):
    # SET a = b, b = a swaps: both right-hand sides read the row before the update
    table.update("id = 1", {"id": "v", "v": "id"})
    assert (10, "a", 1) in _rows(table)


def test_update_of_a_partition_column_moves_rows_to_the_new_partition(table):
    loc = table.location
    v = table.update("id = 1 OR id = 6", {"p": "'moved'"})
    assert _rows(table) == [
        (1, "moved", 10),
        (2, "a", None),
        (3, "a", 30),
        (4, "b", 40),
        (5, "b", None),
        (6, "moved", 60),
    ]
    adds = _kind(_actions(loc, v), "add")
    moved = [a for a in adds if a["partitionValues"]["p"] == "moved"]
    assert moved
    assert all(a["path"].startswith("p=moved/") for a in moved)
    assert sum(json.loads(a["stats"])["numRecords"] for a in moved) == 2
    assert not [f for f in DeltaTable(loc).files() if f.partition_values["p"] is None]
    assert DeltaTable(loc).to_arrow(filter="p = 'moved'").num_rows == 2


def test_update_of_a_partition_column_to_null_moves_rows_to_the_default_partition(table):
    table.update("p = 'b'", {"p": "NULL"})
    files = DeltaTable(table.location).files()
    assert {f.partition_values["p"] for f in files} == {"a", None}
    assert next(f.path for f in files if f.partition_values["p"] is None).startswith(
        "p=__HIVE_DEFAULT_PARTITION__/"
    )
    assert DeltaTable(table.location).to_arrow(filter="p IS NULL").num_rows == 3


def test_update_that_matches_nothing_returns_none_and_commits_nothing(table):
    assert table.update("v > 1000", {"v": "0"}) is None
    assert DeltaTable.latest_version(table.location) == 1


def test_operations_advance_the_handle_to_the_committed_version(table):
    assert table.version == 1
    table.update("id = 1", {"v": "0"})
    assert table.version == 2
    assert table.delete("id = 2") == 3
    assert table.version == 3
    assert table.files() == DeltaTable(table.location).files()


# -- transactions ---------------------------------------------------------------------------------------------


def test_transaction_context_manager_commits_on_clean_exit_and_discards_on_error(table):
    files = table.files()

    def fail_inside_transaction() -> None:
        with table.transaction(operation="DELETE") as txn:
            txn.remove(files[0])
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fail_inside_transaction()
    assert DeltaTable.latest_version(table.location) == 1
    with table.transaction(operation="DELETE") as txn:
        txn.remove(files[0])
    assert DeltaTable.latest_version(table.location) == 2
    assert len(DeltaTable(table.location).files()) == len(files) - 1


# -- automatic checkpoints ---------------------------------------------------------------------------------


def _without_commits_before(location: str, version: int, dest: Path) -> str:
    """A copy of the table keeping only the checkpoint at ``version`` and the commits after it."""
    shutil.copytree(location, dest)
    for v in range(version + 1):
        (dest / "_delta_log" / f"{v:020d}.json").unlink()
    return str(dest)


def test_automatic_checkpoint_every_ten_commits_by_default(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"])
    log = Path(t.location) / "_delta_log"
    for i in range(1, 10):
        t.append(_data([i], [str(i % 3)], [i]), app_id="job", app_version=i)
    assert not list(log.glob("*.checkpoint.parquet"))
    assert not (log / "_last_checkpoint").exists()
    t.append(_data([10], ["1"], [10]), app_id="job", app_version=10)
    t.update("id = 3", {"v": "33"})
    assert sorted(p.name for p in log.glob("*.checkpoint.parquet")) == [
        "00000000000000000010.checkpoint.parquet"
    ]
    last = json.loads((log / "_last_checkpoint").read_text())
    assert last["version"] == 10
    assert last["size"] == 1 + 1 + 10 + 1  # protocol, metaData, 10 adds, 1 txn
    assert DeltaTable.latest_version(t.location) == 11

    copy = _without_commits_before(t.location, 10, tmp_path / "from-checkpoint")
    from_checkpoint = DeltaTable(copy)
    assert from_checkpoint.version == 11
    assert _rows(from_checkpoint) == _rows(t)
    assert from_checkpoint.snapshot.app_transaction_version("job") == 10
    assert from_checkpoint.metadata == DeltaTable(t.location).metadata
    assert from_checkpoint.protocol == DeltaTable(t.location).protocol


def test_checkpoint_interval_property_sets_the_cadence(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.checkpointInterval": "3"})
    for i in range(7):
        t.append(_data([i], ["a"], [i]))
    log = Path(t.location) / "_delta_log"
    assert sorted(int(p.name[:20]) for p in log.glob("*.checkpoint.parquet")) == [3, 6]
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 6


def test_explicit_checkpoint_then_commits_read_back_identically(table):
    table.delete("id = 1")
    assert table.checkpoint() == 2
    table.append(_data([9], ["z"], [9]))
    copy = _without_commits_before(table.location, 2, Path(table.location).parent / "copy")
    assert _rows(copy) == _rows(table)


# -- time travel after writes -------------------------------------------------------------------------------


def test_every_written_version_stays_readable_by_version_and_timestamp(table):
    # Commit-file times have millisecond resolution; Delta makes equal times strictly increasing,
    # so keep the commits apart for the timestamp lookup to name exactly version 3.
    time.sleep(0.01)
    table.delete("p = 'a'")
    time.sleep(0.01)
    table.update("p = 'b'", {"v": "0"})
    assert _rows(DeltaTable(table.location, version=1)) == [
        (1, "a", 10),
        (2, "a", None),
        (3, "a", 30),
        (4, "b", 40),
        (5, "b", None),
        (6, None, 60),
    ]
    assert _rows(DeltaTable(table.location, version=2)) == [(4, "b", 40), (5, "b", None), (6, None, 60)]
    # without in-commit timestamps a version's time is its commit file's modification time
    mtime_ms = (Path(table.location) / "_delta_log" / f"{3:020d}.json").stat().st_mtime_ns // 1_000_000
    ts = dt.datetime.fromtimestamp(mtime_ms / 1000, tz=dt.timezone.utc)
    assert DeltaTable(table.location, timestamp=ts).version == 3


def test_metadata_action_is_untouched_by_data_operations(table):
    md = table.metadata
    table.append(_data([9], ["a"], [9]))
    table.update("id = 9", {"v": "0"})
    table.delete("id = 9")
    table.overwrite(_data([1], ["a"], [1]), "p = 'a'")
    for v in range(2, DeltaTable.latest_version(table.location) + 1):
        assert _kind(_actions(table.location, v), "metaData") == []
        assert _kind(_actions(table.location, v), "protocol") == []
    assert dataclasses.asdict(DeltaTable(table.location).metadata) == dataclasses.asdict(md)

"""Checkpoint writing: classic parquet checkpoints and ``_last_checkpoint``.

Oracles: delta-rs (it must load the same version, files and rows from a log whose early commits are
gone, so only our checkpoint can have told it the state), the checkpoint schema Delta Lake on Spark
writes (a Spark-written checkpoint of the conformance corpus), and this engine's own reader.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core.log.checkpoint_write import (
    CheckpointInfo,
    build_checkpoint_table,
    retention_property,
    should_checkpoint,
    write_checkpoint,
)
from airflow_provider_delta.core.log.paths import checkpoint_path, commit_path
from airflow_provider_delta.core.properties import InvalidPropertyError
from airflow_provider_delta.core.snapshot import Snapshot, load_snapshot
from airflow_provider_delta.core.storage import LocalStorage
from airflow_provider_delta.core.table import DeltaTable
from tests.snapshot_state import comparable_state

DAY_MS = 86_400_000
SPECIAL = ["a b", "c/d", "é=ü", "100%", "x:y#z", None]


# --------------------------------------------------------------------------- helpers


def _load(path: Path, version: int | None = None) -> Snapshot:
    return load_snapshot(LocalStorage(str(path)), str(path), version)


def _delta_rs_table(path: Path) -> Path:
    """A delta-rs table: appends over two partition columns with special characters, then deletes."""
    for i in range(8):
        n = 6
        batch = pa.table(
            {
                "x": pa.array(range(i * n, i * n + n), pa.int64()),
                "s": pa.array([f"row-{i}-{j}" for j in range(n)]),
                "p1": pa.array([SPECIAL[(i + j) % len(SPECIAL)] for j in range(n)], pa.string()),
                "p2": pa.array([None if j == 0 else (i + j) % 3 for j in range(n)], pa.int32()),
            }
        )
        deltalake.write_deltalake(str(path), batch, mode="append", partition_by=["p1", "p2"])
        if i == 3:
            deltalake.DeltaTable(str(path)).delete("x > 20 AND x < 23")
        if i == 6:
            deltalake.DeltaTable(str(path)).delete("p2 = 1")
    return path


def _without_commits_before(src: Path, dst: Path, version: int) -> Path:
    """A copy of ``src`` whose commits below ``version`` (and older checkpoints) are gone."""
    shutil.copytree(src, dst)
    log = dst / "_delta_log"
    for name in os.listdir(log):
        prefix = name.split(".", 1)[0]
        if prefix.isdigit() and int(prefix) < version:
            os.unlink(log / name)
    return dst


def _delta_rs_files(path: Path) -> set[str]:
    root = str(path).rstrip("/") + "/"
    return {
        unquote(u[len(root) :]) if u.startswith(root) else unquote(u)
        for u in deltalake.DeltaTable(str(path)).file_uris()
    }


def _delta_rs_rows(path: Path) -> list[dict[str, Any]]:
    """Rows as delta-rs reads them (its SQL engine applies deletion vectors and column mapping)."""
    dt = deltalake.DeltaTable(str(path))
    return _sorted_rows(
        pa.table(deltalake.QueryBuilder().register("t", dt).execute("select * from t").read_all())
    )


def _sorted_rows(table: pa.Table) -> list[dict[str, Any]]:
    rows = table.select(sorted(table.column_names)).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.fixture(scope="module")
def rs_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _delta_rs_table(tmp_path_factory.mktemp("rs") / "table")


@pytest.fixture
def rs_copy(rs_table: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(rs_table, tmp_path / "table"))


# --------------------------------------------------------------------------- should_checkpoint / retention


@pytest.mark.parametrize(
    ("version", "configuration", "expected"),
    [
        (0, {}, False),
        (9, {}, False),
        (10, {}, True),
        (20, {}, True),
        (5, {"delta.checkpointInterval": "5"}, True),
        (10, {"delta.checkpointInterval": "3"}, False),
        (1, {"delta.checkpointInterval": "1"}, True),
        (10, {"delta.checkpointInterval": "bogus"}, True),
        (10, {"delta.checkpointInterval": "0"}, True),
    ],
)
def test_should_checkpoint_every_interval_versions(
    version: int, configuration: dict[str, str], expected: bool
):
    assert should_checkpoint(version, configuration) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("interval 7 days", timedelta(days=7)),
        ("interval 1 week", timedelta(weeks=1)),
        ("30 days", timedelta(days=30)),
        ("INTERVAL 168 HOURS", timedelta(hours=168)),
        ("interval 90 minutes", timedelta(minutes=90)),
    ],
)
def test_retention_property_parses_delta_intervals(text: str, expected: timedelta):
    assert retention_property({"k": text}, "k", timedelta(0)) == expected


def test_retention_property_defaults_when_unset():
    assert retention_property({}, "delta.logRetentionDuration", timedelta(days=30)) == timedelta(days=30)


def test_retention_property_rejects_a_non_interval_naming_the_key():
    with pytest.raises(InvalidPropertyError, match=r"delta\.deletedFileRetentionDuration"):
        retention_property(
            {"delta.deletedFileRetentionDuration": "a while"},
            "delta.deletedFileRetentionDuration",
            timedelta(0),
        )


# --------------------------------------------------------------------------- delta-rs tables


def test_checkpoint_file_and_last_checkpoint_describe_the_snapshot(rs_copy: Path):
    snapshot = _load(rs_copy)
    info = write_checkpoint(snapshot)

    assert isinstance(info, CheckpointInfo)
    assert info.path == checkpoint_path(snapshot.version)
    ck = rs_copy / info.path
    assert ck.is_file()
    assert info.size_in_bytes == ck.stat().st_size
    table = pq.read_table(ck)
    assert info.size == table.num_rows
    assert info.num_add_files == snapshot.num_files == pc.sum(pc.is_valid(table["add"])).as_py()
    hint = json.loads((rs_copy / "_delta_log" / "_last_checkpoint").read_bytes())
    assert hint == {
        "version": snapshot.version,
        "size": info.size,
        "sizeInBytes": info.size_in_bytes,
        "numOfAddFiles": info.num_add_files,
    }
    # No temporary files are left behind in the log.
    assert not [n for n in os.listdir(rs_copy / "_delta_log") if n.endswith(".tmp")]


def test_delta_rs_reads_the_same_table_from_our_checkpoint(rs_copy: Path, tmp_path: Path):
    version = _load(rs_copy).version
    write_checkpoint(_load(rs_copy))
    forced = _without_commits_before(rs_copy, tmp_path / "forced", version)

    expected = deltalake.DeltaTable(str(rs_copy))
    got = deltalake.DeltaTable(str(forced))
    assert got.version() == expected.version() == version
    assert _delta_rs_files(forced) == _delta_rs_files(rs_copy)
    assert _sorted_rows(got.to_pyarrow_table()) == _sorted_rows(expected.to_pyarrow_table())
    assert got.metadata().partition_columns == ["p1", "p2"]
    assert got.protocol().min_writer_version == expected.protocol().min_writer_version


def test_our_reader_loads_the_same_state_from_our_checkpoint(rs_copy: Path, tmp_path: Path):
    before = _load(rs_copy)
    write_checkpoint(before, now_ms=0)  # now=0: no tombstone has expired
    forced = _without_commits_before(rs_copy, tmp_path / "forced", before.version)

    after = _load(forced)
    assert after.segment.checkpoint is not None
    assert after.segment.checkpoint.version == before.version
    assert comparable_state(after) == comparable_state(before)
    assert after.tombstones()  # the deletes' removes were kept
    assert _sorted_rows(DeltaTable(str(forced)).to_arrow()) == _sorted_rows(
        DeltaTable(str(rs_copy)).to_arrow()
    )


def test_checkpoint_at_an_older_version_serves_time_travel(rs_copy: Path, tmp_path: Path):
    old = _load(rs_copy, 4)
    write_checkpoint(old, now_ms=0)
    forced = _without_commits_before(rs_copy, tmp_path / "forced", 4)

    assert comparable_state(_load(forced, 4)) == comparable_state(old)
    assert comparable_state(_load(forced)) == comparable_state(_load(rs_copy))
    assert deltalake.DeltaTable(str(forced), version=6).to_pyarrow_table().num_rows == (
        deltalake.DeltaTable(str(rs_copy), version=6).to_pyarrow_table().num_rows
    )


def test_last_checkpoint_never_moves_back_to_an_older_version(rs_copy: Path):
    latest = write_checkpoint(_load(rs_copy))
    older = write_checkpoint(_load(rs_copy, 3))

    assert (rs_copy / older.path).is_file()
    hint = json.loads((rs_copy / "_delta_log" / "_last_checkpoint").read_bytes())
    assert hint["version"] == latest.version


def test_expired_tombstones_are_dropped_and_live_ones_kept(rs_copy: Path):
    snapshot = _load(rs_copy)
    newest_delete = max(r.deletion_timestamp or 0 for r in snapshot.tombstones())
    week_ms = 7 * DAY_MS

    kept = build_checkpoint_table(snapshot, now_ms=newest_delete + week_ms - 1)
    dropped = build_checkpoint_table(snapshot, now_ms=newest_delete + week_ms)

    assert pc.sum(pc.is_valid(kept["remove"])).as_py() >= 1
    assert pc.sum(pc.is_valid(dropped["remove"])).as_py() == 0
    assert dropped.num_rows == 2 + snapshot.num_files  # protocol, metaData and the adds


def test_tombstone_retention_follows_deleted_file_retention_duration(rs_copy: Path):
    dt = deltalake.DeltaTable(str(rs_copy))
    dt.alter.set_table_properties({"delta.deletedFileRetentionDuration": "interval 1 days"})
    snapshot = _load(rs_copy)
    newest_delete = max(r.deletion_timestamp or 0 for r in snapshot.tombstones())

    table = build_checkpoint_table(snapshot, now_ms=newest_delete + DAY_MS)

    assert pc.sum(pc.is_valid(table["remove"])).as_py() == 0


def test_checkpoint_adds_are_not_data_changes(rs_copy: Path):
    table = build_checkpoint_table(_load(rs_copy), now_ms=0)
    for column in ("add", "remove"):
        values = table[column].combine_chunks()
        live = values.filter(pc.is_valid(values))
        assert live.field("dataChange").to_pylist() == [False] * len(live)


# --------------------------------------------------------------------------- schema


SPARK_CHECKPOINT = "golden/dv-partitioned-with-checkpoint"


def _assert_types_match(ours: pa.DataType, spark: pa.DataType, where: str) -> None:
    if pa.types.is_struct(ours):
        assert pa.types.is_struct(spark), where
        spark_fields = {f.name: f for f in spark}
        for f in ours:
            if f.name in spark_fields:
                _assert_types_match(f.type, spark_fields[f.name].type, f"{where}.{f.name}")
        return
    if pa.types.is_map(ours):
        assert pa.types.is_map(spark), where
        assert ours.key_type == spark.key_type, where
        assert ours.item_type == spark.item_type, where
        return
    assert ours == spark, f"{where}: ours {ours}, Spark {spark}"


def test_checkpoint_schema_matches_the_one_delta_spark_writes(rs_copy: Path, conformance_dir: Path):
    info = write_checkpoint(_load(rs_copy))
    ours = pq.read_schema(rs_copy / info.path)
    spark_file = next(
        (conformance_dir / "tables" / SPARK_CHECKPOINT / "_delta_log").glob("*.checkpoint.parquet")
    )
    spark = pq.read_schema(spark_file)

    assert ours.names == ["txn", "add", "remove", "metaData", "protocol", "domainMetadata"]
    assert set(ours.names) <= set(spark.names)
    for name in ours.names:
        _assert_types_match(ours.field(name).type, spark.field(name).type, name)
    # Every field Spark writes for these actions is there too (partitionValues_parsed is optional).
    for name in ours.names:
        ours_fields = {f.name for f in ours.field(name).type}
        spark_fields = {f.name for f in spark.field(name).type} - {"partitionValues_parsed", "stats_parsed"}
        assert spark_fields <= ours_fields, name


def test_checkpoint_schema_uses_standard_parquet_nesting(rs_copy: Path):
    info = write_checkpoint(_load(rs_copy))
    schema = str(pq.ParquetFile(rs_copy / info.path).schema).replace("field_id=-1 ", "")
    assert "repeated group key_value" in schema  # maps: MAP / key_value / key, value
    assert "optional binary element (String)" in schema  # lists: LIST / list / element
    assert "optional int32 minReaderVersion" in schema
    assert "optional int32 offset" in schema
    assert "optional int32 sizeInBytes" in schema


def test_legacy_protocol_writes_null_feature_lists(rs_copy: Path):
    snapshot = _load(rs_copy)
    assert snapshot.protocol.min_writer_version < 7
    table = build_checkpoint_table(snapshot, now_ms=0)
    protocol = table["protocol"].combine_chunks()
    row = protocol.filter(pc.is_valid(protocol)).to_pylist()
    assert row == [
        {
            "minReaderVersion": snapshot.protocol.min_reader_version,
            "minWriterVersion": snapshot.protocol.min_writer_version,
            "readerFeatures": None,
            "writerFeatures": None,
        }
    ]


# --------------------------------------------------------------------------- hand-written logs


def _write_log(root: Path, commits: list[list[dict[str, Any]]]) -> Path:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    for version, actions in enumerate(commits):
        (log / Path(commit_path(version)).name).write_bytes(
            b"\n".join(json.dumps(a).encode() for a in actions)
        )
    return root


_SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)


def test_txn_domain_metadata_and_v2_checkpoint_metadata_are_checkpointed(tmp_path: Path):
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["v2Checkpoint"],
        "writerFeatures": ["v2Checkpoint", "domainMetadata"],
    }
    metadata = {
        "id": "t",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": _SCHEMA,
        "partitionColumns": ["p"],
        "configuration": {"delta.checkpointPolicy": "v2"},
        "createdTime": 1,
    }
    add = {
        "path": "p=a/f1.parquet",
        "partitionValues": {"p": "a"},
        "size": 10,
        "modificationTime": 5,
        "dataChange": True,
        "tags": {"k": "v"},
        "clusteringProvider": "liquid",
    }
    root = _write_log(
        tmp_path / "t",
        [
            [{"protocol": protocol}, {"metaData": metadata}, {"add": add}],
            [
                {"txn": {"appId": "app-1", "version": 3, "lastUpdated": 7}},
                {"txn": {"appId": "app-2", "version": 1}},
                {"domainMetadata": {"domain": "user.a", "configuration": "{}", "removed": False}},
                {"domainMetadata": {"domain": "user.b", "configuration": '{"x":1}', "removed": False}},
            ],
            [
                {"domainMetadata": {"domain": "user.a", "configuration": "{}", "removed": True}},
                {"txn": {"appId": "app-1", "version": 4, "lastUpdated": 9}},
            ],
        ],
    )
    before = _load(root)
    info = write_checkpoint(before)
    table = pq.read_table(root / info.path)

    assert "checkpointMetadata" in table.column_names
    cm = table["checkpointMetadata"].combine_chunks()
    assert cm.filter(pc.is_valid(cm)).to_pylist() == [{"version": 2, "tags": None}]
    dm = table["domainMetadata"].combine_chunks()
    assert dm.filter(pc.is_valid(dm)).to_pylist() == [
        {"domain": "user.b", "configuration": '{"x":1}', "removed": False}
    ]
    assert info.size == 2 + 2 + 1 + 1 + 1  # protocol, metaData, 2 txn, 1 domain, 1 add, checkpointMetadata
    forced = _without_commits_before(root, tmp_path / "forced", 2)
    after = _load(forced)
    assert comparable_state(after) == comparable_state(before)
    assert after.files()[0].clustering_provider == "liquid"
    assert after.app_transaction_version("app-1") == 4


def test_set_transaction_retention_drops_stale_txns(tmp_path: Path):
    metadata = {
        "id": "t",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": _SCHEMA,
        "partitionColumns": [],
        "configuration": {"delta.setTransactionRetentionDuration": "interval 1 days"},
    }
    root = _write_log(
        tmp_path / "t",
        [
            [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, {"metaData": metadata}],
            [
                {"txn": {"appId": "old", "version": 1, "lastUpdated": 1_000}},
                {"txn": {"appId": "new", "version": 1, "lastUpdated": 5 * DAY_MS}},
                {"txn": {"appId": "undated", "version": 1}},
            ],
        ],
    )
    table = build_checkpoint_table(_load(root), now_ms=5 * DAY_MS + 1)
    txn = table["txn"].combine_chunks()
    assert sorted(r["appId"] for r in txn.filter(pc.is_valid(txn)).to_pylist()) == ["new", "undated"]


def test_empty_table_checkpoint_has_protocol_and_metadata_only(tmp_path: Path):
    metadata = {
        "id": "t",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": _SCHEMA,
        "partitionColumns": [],
        "configuration": {},
    }
    root = _write_log(
        tmp_path / "t",
        [[{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, {"metaData": metadata}]],
    )
    info = write_checkpoint(_load(root))
    assert (info.version, info.size, info.num_add_files) == (0, 2, 0)
    (root / "_delta_log" / "00000000000000000000.json").unlink()
    assert _load(root).metadata.id == "t"
    assert deltalake.DeltaTable(str(root)).version() == 0


# --------------------------------------------------------------------------- conformance tables


def test_checkpoint_of_a_table_with_deletion_vectors(copy_table: Any, tmp_path: Path):
    table = copy_table("golden/dv-partitioned-with-checkpoint")
    before = _load(table)
    assert any(f.deletion_vector for f in before.files())
    info = write_checkpoint(before, now_ms=0)
    forced = _without_commits_before(table, tmp_path / "forced", info.version)

    after = _load(forced)
    assert comparable_state(after) == comparable_state(before)
    expected_rows = _sorted_rows(DeltaTable(str(table)).to_arrow())
    assert len(expected_rows) == 35
    assert _sorted_rows(DeltaTable(str(forced)).to_arrow()) == expected_rows
    assert deltalake.DeltaTable(str(forced)).version() == info.version
    assert _delta_rs_files(forced) == _delta_rs_files(table)
    assert _delta_rs_rows(forced) == _delta_rs_rows(table)
    assert len(_delta_rs_rows(forced)) == 35


@pytest.mark.parametrize(
    "name", ["extra/kernel-rs/partition_cm__name", "extra/kernel-rs/cdf-column-mapping-name-mode"]
)
def test_checkpoint_of_a_column_mapping_table(copy_table: Any, tmp_path: Path, name: str):
    table = copy_table(name)
    before = _load(table)
    assert before.configuration.get("delta.columnMapping.mode") == "name"
    info = write_checkpoint(before, now_ms=0)
    expected_rows = _sorted_rows(DeltaTable(str(table)).to_arrow())
    # Keep only the checkpoint's own commit, then delete that too: the checkpoint alone holds the state.
    forced = _without_commits_before(table, tmp_path / "forced", info.version)
    (forced / "_delta_log" / Path(commit_path(info.version)).name).unlink()

    after = _load(forced)
    assert after.segment.checkpoint is not None
    assert not after.segment.commits
    assert comparable_state(after) == comparable_state(before)
    assert _sorted_rows(DeltaTable(str(forced)).to_arrow()) == expected_rows
    assert deltalake.DeltaTable(str(forced)).version() == info.version
    assert _delta_rs_files(forced) == _delta_rs_files(table)
    assert _delta_rs_rows(forced) == _delta_rs_rows(table)
    assert len(_delta_rs_rows(forced)) == len(expected_rows)


def test_non_dict_mappings_in_actions_are_converted():
    from types import MappingProxyType

    from airflow_provider_delta.core.actions import AddFile
    from airflow_provider_delta.core.log.checkpoint_write import _adds_array

    add = AddFile(
        path="p=a/f.parquet",
        partition_values=MappingProxyType({"p": "a"}),
        size=1,
        modification_time=2,
        deletion_vector=MappingProxyType(
            {"storageType": "u", "pathOrInlineDv": "x", "sizeInBytes": 1, "cardinality": 1}
        ),
    )

    row = _adds_array([add]).to_pylist()[0]

    assert row["partitionValues"] == [("p", "a")]
    assert row["deletionVector"]["pathOrInlineDv"] == "x"

"""Everything the engine does to a table, on a real S3 server: writes, reads, MERGE, checkpoints, log
cleanup, time travel, CDF, sensing (requests per poke counted on the wire), and delta-rs interop both ways.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import deltalake
import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.log.sensing import current_version, new_commits

if TYPE_CHECKING:
    from tests.s3_fixtures import S3Env

SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.string()), ("amount", pa.float64())])


def _rows(ids: range, country: str = "FR") -> pa.Table:
    return pa.table(
        {"id": list(ids), "country": [country] * len(ids), "amount": [float(i) for i in ids]}, schema=SCHEMA
    )


def _sorted(table: pa.Table) -> list[dict[str, object]]:
    return sorted(table.to_pylist(), key=lambda r: (r["id"], r["country"]))


def test_create_append_read_and_time_travel(s3: S3Env) -> None:
    t = DeltaTable.create(s3.uri, SCHEMA, partition_by=["country"], storage_options=s3.options)
    assert t.append(_rows(range(3))) == 1
    assert t.append(_rows(range(3, 5), "DE")) == 2
    again = DeltaTable(s3.uri, storage_options=s3.options)
    assert again.version == 2
    assert again.to_arrow(filter="country = 'DE'").column("id").to_pylist() == [3, 4]
    assert DeltaTable(s3.uri, version=1, storage_options=s3.options).to_arrow().num_rows == 3
    assert again.load_version(1).to_arrow().num_rows == 3
    assert [h["operation"] for h in again.history()] == ["WRITE", "WRITE", "CREATE TABLE"]
    assert DeltaTable.latest_version(s3.uri, storage_options=s3.options) == 2
    # Data files are under the table's prefix, in Hive-style partition folders.
    assert {f.path.split("/")[0] for f in again.files()} == {"country=FR", "country=DE"}


def test_delete_update_overwrite_and_merge(s3: S3Env) -> None:
    t = DeltaTable.create(
        s3.uri, SCHEMA, storage_options=s3.options, properties={"delta.enableChangeDataFeed": "true"}
    )
    t.append(_rows(range(10)))
    t.delete("id < 2")
    t.update("id = 5", set={"amount": "amount * 10"})
    source = pa.table({"id": [5, 20], "country": ["FR", "FR"], "amount": [-1.0, 20.0]}, schema=SCHEMA)
    metrics = (
        t.merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert metrics["numTargetRowsUpdated"] == 1 and metrics["numTargetRowsInserted"] == 1
    rows = {
        r["id"]: r["amount"] for r in DeltaTable(s3.uri, storage_options=s3.options).to_arrow().to_pylist()
    }
    assert sorted(rows) == [2, 3, 4, 5, 6, 7, 8, 9, 20] and rows[5] == -1.0
    changes = t.changes(4, 4).to_pylist()  # the MERGE's change rows, read back from _change_data/
    assert {(c["id"], c["_change_type"]) for c in changes} >= {(5, "update_postimage"), (20, "insert")}
    t.overwrite(_rows(range(100, 102), "IT"))
    assert DeltaTable(s3.uri, storage_options=s3.options).to_arrow().column("id").to_pylist() == [100, 101]


def test_checkpoints_and_log_cleanup(s3: S3Env) -> None:
    props = {"delta.checkpointInterval": "5", "delta.logRetentionDuration": "interval 0 seconds"}
    t = DeltaTable.create(s3.uri, SCHEMA, properties=props, storage_options=s3.options)
    for i in range(12):
        t.append(_rows(range(i, i + 1)))
    t = DeltaTable(s3.uri, storage_options=s3.options)
    log = {f.name for f in t.storage.list_dir("_delta_log")}
    assert "00000000000000000010.checkpoint.parquet" in log and "_last_checkpoint" in log
    assert t.snapshot.segment.checkpoint is not None and t.snapshot.segment.checkpoint.version == 10
    t.checkpoint()
    deleted = t.cleanup_log()
    assert "_delta_log/00000000000000000000.json" in deleted or "00000000000000000000.json" in str(deleted)
    left = {f.name for f in t.storage.list_dir("_delta_log")}
    assert "00000000000000000000.json" not in left and "00000000000000000012.checkpoint.parquet" in left
    reloaded = DeltaTable(s3.uri, storage_options=s3.options)
    assert reloaded.version == 12 and sorted(reloaded.to_arrow().column("id").to_pylist()) == list(range(12))
    assert deltalake.DeltaTable(s3.uri, storage_options=s3.direct_options).version() == 12


def test_load_after_a_checkpoint_lists_the_log_once_from_the_checkpoint(s3: S3Env) -> None:
    t = DeltaTable.create(
        s3.uri, SCHEMA, properties={"delta.checkpointInterval": "10"}, storage_options=s3.options
    )
    for i in range(14):
        t.append(_rows(range(i, i + 1)))
    s3.proxy.reset()
    loaded = DeltaTable(s3.uri, storage_options=s3.options)
    assert loaded.version == 14
    counts = s3.proxy.snapshot()
    # _last_checkpoint (GET), one LIST from version 10, the checkpoint (GET), commits 11..14 (GETs).
    assert counts["list"] == 1 and counts["head"] == 0
    assert counts["get"] == 1 + 1 + 4
    listed = [path for method, path in s3.proxy.log if "list-type" in path]
    assert "start-after" in listed[0]


def test_poke_costs_one_request_when_nothing_changed(s3: S3Env) -> None:
    t = DeltaTable.create(s3.uri, SCHEMA, storage_options=s3.options)
    for i in range(3):
        t.append(_rows(range(i, i + 1)))
    s3.proxy.reset()
    idle = new_commits(s3.uri, 3, storage_options=s3.options)
    assert not idle.has_new_version
    assert sum(s3.proxy.snapshot().values()) == 1  # one LIST starting after version 3
    t.append(_rows(range(10, 11)))
    t.append(_rows(range(11, 12)))
    s3.proxy.reset()
    news = new_commits(s3.uri, 3, storage_options=s3.options)
    assert [c.version for c in news.commits] == [4, 5] and news.commits[0].operation == "WRITE"
    assert s3.proxy.snapshot() == {"list": 1, "get": 2}  # the LIST, then each new commit's commitInfo
    assert current_version(s3.uri, storage_options=s3.options) == 5


def test_sensing_a_location_without_a_table_waits(s3: S3Env) -> None:
    assert current_version(s3.uri, storage_options=s3.options) == -1
    assert not new_commits(s3.uri, None, storage_options=s3.options).has_new_version


def test_delta_rs_reads_our_table_and_we_read_and_append_to_its(s3: S3Env) -> None:
    ours = DeltaTable.create(s3.uri, SCHEMA, partition_by=["country"], storage_options=s3.options)
    ours.append(_rows(range(5)))
    ours.append(_rows(range(5, 8), "DE"))
    rs = deltalake.DeltaTable(s3.uri, storage_options=s3.direct_options)
    assert rs.version() == 2
    assert _sorted(rs.to_pyarrow_table()) == _sorted(ours.to_arrow())

    theirs = s3.new_uri("rs")
    deltalake.write_deltalake(
        theirs, _rows(range(3)), partition_by=["country"], storage_options=s3.direct_options
    )
    deltalake.write_deltalake(
        theirs, _rows(range(3, 4), "DE"), mode="append", storage_options=s3.direct_options
    )
    t = DeltaTable(theirs, storage_options=s3.options)
    assert t.version == 1 and sorted(t.to_arrow().column("id").to_pylist()) == [0, 1, 2, 3]
    assert t.append(_rows(range(4, 6), "IT")) == 2
    t.delete("id = 0")
    rs = deltalake.DeltaTable(theirs, storage_options=s3.direct_options)
    assert rs.version() == 3
    assert sorted(rs.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("checkpoint_interval", ["2"])
def test_delta_rs_checkpoint_is_read_on_s3(s3: S3Env, checkpoint_interval: str) -> None:
    deltalake.write_deltalake(
        s3.uri,
        _rows(range(2)),
        storage_options=s3.direct_options,
        configuration={"delta.checkpointInterval": checkpoint_interval},
    )
    for i in range(2, 5):
        deltalake.write_deltalake(
            s3.uri, _rows(range(i, i + 1)), mode="append", storage_options=s3.direct_options
        )
    deltalake.DeltaTable(s3.uri, storage_options=s3.direct_options).create_checkpoint()
    t = DeltaTable(s3.uri, storage_options=s3.options)
    assert t.snapshot.segment.checkpoint is not None
    assert sorted(t.to_arrow().column("id").to_pylist()) == [0, 1, 2, 3, 4]

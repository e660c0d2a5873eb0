"""export_changes into Parquet and JSON Lines sinks: the rows of DeltaTable.changes(), exactly once."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import orjson
import pyarrow as pa
import pyarrow.dataset as pads
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.commands.cdf_export import LocalExportEngine, export_changes
from tests.unit.core.cdf_export.helpers import (
    CDF,
    SCHEMA,
    busy_table,
    manifests,
    read_file_sink,
    rows,
    tree,
)

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_parquet_export_equals_changes_row_for_row(tmp_path: Path, partitioned: bool) -> None:
    t = busy_table(tmp_path / "src", partitioned=partitioned)
    result = export_changes(str(tmp_path / "src"), str(tmp_path / "out"))
    expected = t.changes(0, t.version)
    assert (result.start, result.end, result.versions, result.skipped) == (0, 5, 6, False)
    assert result.rows == expected.num_rows
    got = read_file_sink(tmp_path / "out")
    assert got.to_pylist() == expected.to_pylist()  # same rows, same order, same timestamps
    counts = expected.group_by("_change_type").aggregate([("id", "count")]).to_pylist()
    assert result.row_counts == {r["_change_type"]: r["id_count"] for r in counts}


def test_parquet_files_are_partitioned_by_commit_version_and_readable_as_a_dataset(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src")
    export_changes(str(tmp_path / "src"), str(tmp_path / "out"))
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.name.startswith("_commit_version="))[
        :2
    ] == ["_commit_version=1", "_commit_version=2"]
    # Directories starting with "_" are skipped by pyarrow's defaults (Spark reads key=value ones).
    partitioning = pads.partitioning(pa.schema([("_commit_version", pa.int64())]), flavor="hive")
    dataset = pads.dataset(
        str(tmp_path / "out"),
        format="parquet",
        partitioning=partitioning,
        ignore_prefixes=["."],
        exclude_invalid_files=True,
    )
    table = dataset.to_table()
    assert table.num_rows == t.changes(0).num_rows


def test_every_version_gets_a_manifest_written_after_its_files(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src")
    export_changes(str(tmp_path / "src"), str(tmp_path / "out"))
    found = manifests(tmp_path / "out")
    assert sorted(found) == list(range(t.version + 1))
    assert found[0]["files"] == [] and found[0]["rows"] == 0  # CREATE TABLE: no data change, still a version
    v1 = found[1]
    assert v1["rowCounts"] == {"insert": 4}
    assert [f["path"] for f in v1["files"]] == [
        "_commit_version=1/part-00000.parquet",
        "_commit_version=1/part-00001.parquet",
    ]
    assert v1["sourceTableId"] == t.metadata.id and v1["format"] == "parquet"
    assert [f["name"] for f in v1["schema"]["fields"]] == [
        "id",
        "p",
        "v",
        "_change_type",
        "_commit_version",
        "_commit_timestamp",
    ]
    for f in v1["files"]:
        assert (tmp_path / "out" / f["path"]).stat().st_size == f["bytes"]


def test_runs_resume_from_the_sink_and_never_repeat_a_version(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path / "src"), SCHEMA, properties=CDF)
    sink = str(tmp_path / "out")
    seen = []
    for i in range(4):
        t.append(rows([i], ["a"], [i]))
        if i == 2:
            t.update(f"id = {i}", {"v": "v * 100"})
        r = export_changes(str(tmp_path / "src"), sink)
        seen.append((r.start, r.end))
    assert seen == [(0, 1), (2, 2), (3, 4), (5, 5)]
    again = export_changes(str(tmp_path / "src"), sink)
    assert (again.skipped, again.versions, again.start, again.end) == (True, 0, 6, 5)
    assert read_file_sink(tmp_path / "out").to_pylist() == t.changes(0).to_pylist()


def test_max_versions_caps_a_run_and_the_next_run_continues(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src")
    sink = str(tmp_path / "out")
    ranges = []
    while True:
        r = export_changes(str(tmp_path / "src"), sink, max_versions=4)
        if r.skipped:
            break
        ranges.append((r.start, r.end))
    assert ranges == [(0, 3), (4, 5)]
    assert read_file_sink(tmp_path / "out").to_pylist() == t.changes(0).to_pylist()


def test_explicit_range_that_already_landed_is_skipped(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    sink = str(tmp_path / "out")
    export_changes(str(tmp_path / "src"), sink, starting_version=0, ending_version=3)
    before = tree(tmp_path / "out")
    retry = export_changes(str(tmp_path / "src"), sink, starting_version=0, ending_version=3)
    assert retry.skipped and retry.versions == 0
    assert tree(tmp_path / "out") == before
    nxt = export_changes(str(tmp_path / "src"), sink, starting_version=4)
    assert (nxt.start, nxt.end) == (4, 5)


def test_first_run_starts_at_the_version_that_enabled_the_feed(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path / "src"), SCHEMA)
    t.append(rows([1], ["a"], [1]))  # 1: not recorded
    t.alter("ALTER TABLE t SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")  # 2
    t.append(rows([2], ["a"], [2]))  # 3
    r = export_changes(str(tmp_path / "src"), str(tmp_path / "out"))
    assert (r.start, r.end, r.rows) == (2, 3, 1)


def test_initial_snapshot_exports_the_table_as_inserts_then_changes(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path / "src"), SCHEMA)
    t.append(rows([1, 2], ["a", "b"], [1, 2]))  # no feed yet: only a snapshot can bootstrap
    t.alter("ALTER TABLE t SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
    sink = str(tmp_path / "out")
    first = export_changes(str(tmp_path / "src"), sink, initial_snapshot=True)
    assert (first.start, first.end, first.initial_snapshot, first.rows) == (2, 2, True, 2)
    t.delete("id = 1")
    second = export_changes(str(tmp_path / "src"), sink, initial_snapshot=True)
    assert (second.start, second.end, second.initial_snapshot) == (3, 3, False)
    got = read_file_sink(tmp_path / "out")
    assert [(r["id"], r["_change_type"], r["_commit_version"]) for r in got.to_pylist()] == [
        (1, "insert", 2),
        (2, "insert", 2),
        (1, "delete", 3),
    ]
    assert manifests(tmp_path / "out")[2]["snapshot"] is True


def test_jsonl_export_writes_iso_utc_timestamps_and_decimals_as_strings(tmp_path: Path) -> None:
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("amount", pa.decimal128(10, 2)),
            ("at", pa.timestamp("us", tz="UTC")),
            ("tags", pa.map_(pa.string(), pa.int32())),
            ("raw", pa.binary()),
        ]
    )
    t = DeltaTable.create(str(tmp_path / "src"), schema, properties=CDF)
    at = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.timezone.utc)
    import decimal

    t.append(
        pa.table(
            {
                "id": [1],
                "amount": [decimal.Decimal("12.30")],
                "at": [at],
                "tags": [[("x", 1)]],
                "raw": [b"\x00\x01"],
            },
            schema=schema,
        )
    )
    export_changes(str(tmp_path / "src"), str(tmp_path / "out"), format="jsonl")
    line = (tmp_path / "out" / "_commit_version=1" / "part-00000.jsonl").read_bytes()
    record = orjson.loads(line)
    assert record["amount"] == "12.30"
    assert record["at"] == "2024-05-06T07:08:09.123000Z"
    assert record["_commit_timestamp"].endswith("Z")
    assert record["tags"] == {"x": 1}
    assert record["raw"] == "AAE="
    assert record["_change_type"] == "insert" and record["_commit_version"] == 1


def test_a_rerun_after_a_crash_rewrites_identical_bytes_and_keeps_rows_exactly_once(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src")
    sink = tmp_path / "out"

    class CrashAfterVersion3(LocalExportEngine):
        def write_files(self, job, units):
            records = super().write_files(job, units)
            if any(u.version >= 3 for u in units):
                raise RuntimeError("killed")
            return records

    # A small window so versions 1-2 land before the crash (64 units per window by default).
    import airflow_provider_delta.core.commands.cdf_export.export as export_module

    with pytest.MonkeyPatch.context() as mp:
        original = export_module._Run._write_window
        calls = []

        def one_version_windows(self, sink_, job, window, totals, snapshot):
            for item in window:
                calls.append(item[0])
                original(self, sink_, job, [item], totals, snapshot)

        mp.setattr(export_module._Run, "_write_window", one_version_windows)
        with pytest.raises(RuntimeError, match="killed"):
            export_changes(str(tmp_path / "src"), str(sink), engine=CrashAfterVersion3())
    assert sorted(manifests(sink)) == [0, 1, 2]  # version 3's files may exist, its manifest does not
    half = tree(sink)
    result = export_changes(str(tmp_path / "src"), str(sink))
    assert (result.start, result.end) == (3, 5)
    whole = tree(sink)
    assert {k: v for k, v in whole.items() if k in half} == half  # same names, same bytes
    assert read_file_sink(sink).to_pylist() == t.changes(0).to_pylist()


def test_two_concurrent_runs_into_a_file_sink_leave_each_version_once(tmp_path: Path) -> None:
    import threading

    t = busy_table(tmp_path / "src")
    barrier = threading.Barrier(2, timeout=30)

    class Together(LocalExportEngine):
        def write_files(self, job, units):
            barrier.wait()
            return super().write_files(job, units)

    results, errors = [], []

    def run() -> None:
        try:
            results.append(export_changes(str(tmp_path / "src"), str(tmp_path / "out"), engine=Together()))
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert read_file_sink(tmp_path / "out").to_pylist() == t.changes(0).to_pylist()

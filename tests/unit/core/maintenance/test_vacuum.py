"""VACUUM in the engine: delta-spark's candidate and protection rules, retention, commits, LITE, errors.

The rules are those of ``../shared/specs/maintenance.md`` section 1 (Delta's ``VacuumCommand`` and
``DeltaVacuumSuite``). After every real VACUUM, delta-rs (the oracle) must read the table with our
rows: VACUUM deletes only what no retained version needs.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.actions import Protocol
from airflow_provider_delta.core.commands.maintenance import load_table_for
from airflow_provider_delta.core.commands.vacuum import Protection, vacuum
from airflow_provider_delta.core.commands.vacuum.lite import LAST_VACUUM_INFO, read_last_vacuum_info
from airflow_provider_delta.core.executor import LocalExecutor
from airflow_provider_delta.core.storage import LocalStorage
from airflow_provider_delta.exceptions import (
    RetentionPeriodError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VacuumError,
    VacuumLiteError,
)
from tests.interop import assert_delta_rs_reads_identically
from tests.maintenance_tables import (
    batch,
    disk_files,
    make_old,
    now_plus,
    small_files_table,
    with_deletion_vector,
)

pytestmark = pytest.mark.interop


def _commit_info(location: Path, version: int) -> dict[str, Any]:
    lines = (location / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    (info,) = [json.loads(line)["commitInfo"] for line in lines if "commitInfo" in line]
    return info


def _touch(path: Path, *, days_old: float = 0, data: bytes = b"x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if days_old:
        t = path.stat().st_mtime - days_old * 86400
        os.utime(path, (t, t))


@pytest.fixture
def table(tmp_path: Path) -> DeltaTable:
    """Partitioned by p; p='a' rewritten by a DELETE and p='b' replaced: two tombstones, live files."""
    t = small_files_table(tmp_path / "t", appends=2)
    t.delete("id = 0")
    t.overwrite(batch(range(500, 505), "b"), predicate="p = 'b'")
    return t


# -- what is deleted and what is kept -------------------------------------------------------------------


def test_default_retention_keeps_everything_recent(table: DeltaTable) -> None:
    before = disk_files(Path(table.location))
    result = table.vacuum()
    assert result.files == []
    assert disk_files(Path(table.location)) == before
    assert_delta_rs_reads_identically(table.location)


def test_expired_tombstones_and_old_untracked_files_go_live_files_stay(table: DeltaTable) -> None:
    root = Path(table.location)
    live = {f.path for f in table.files()}
    tombstoned = {r.path for r in table.tombstones()}
    _touch(root / "p=a" / "orphan.parquet", days_old=30)
    make_old(root)
    result = vacuum(table.snapshot, now_ms=now_plus(8))
    assert set(result.files) == tombstoned | {"p=a/orphan.parquet"}
    assert disk_files(root) == live
    assert_delta_rs_reads_identically(table.location)


def test_untracked_file_younger_than_the_retention_stays(table: DeltaTable) -> None:
    root = Path(table.location)
    _touch(root / "p=a" / "in-flight.parquet", days_old=1 / 86400)  # one second old
    table.vacuum(0, enforce_retention_duration=False)
    assert not (root / "p=a" / "in-flight.parquet").exists()  # retention 0: even a new file is old
    _touch(root / "p=a" / "in-flight-2.parquet")
    result = table.vacuum(1, enforce_retention_duration=False)
    assert "p=a/in-flight-2.parquet" not in result.files
    assert (root / "p=a" / "in-flight-2.parquet").exists()


def test_tombstoned_file_needs_an_old_tombstone_and_an_old_mtime(table: DeltaTable) -> None:
    root = Path(table.location)
    tombstoned = sorted(r.path for r in table.tombstones())
    # Old mtime but recent tombstone (removed less than 7 days before "now"): kept.
    make_old(root)
    assert vacuum(table.snapshot, now_ms=now_plus(1), dry_run=True).files == []
    # Expired tombstone but a new mtime (a writer re-created the name after the cutoff): kept.
    for path in tombstoned:
        recreated = now_plus(2) / 1000
        os.utime(root / path, (recreated, recreated))
    assert vacuum(table.snapshot, now_ms=now_plus(8), dry_run=True).files == []


def test_hidden_names_are_never_touched_at_any_depth(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=1)
    root = Path(t.location)
    hidden = ["_checkpoints/x", ".hoodie/y", "p=a/.part-0.crc", "p=a/_tmp/z", "_delta_log/garbage.tmp", ".x"]
    visible = ["_change_data/cdc-1.parquet", "_delta_index/i", "orphan", "deep/er/file"]
    for name in hidden + visible:
        _touch(root / name, days_old=30)
    result = vacuum(t.snapshot, now_ms=now_plus(8))
    assert set(result.files) >= set(visible)
    for name in hidden:
        assert (root / name).exists(), name
    for name in visible:
        assert not (root / name).exists(), name


def test_partition_column_starting_with_underscore_is_not_hidden(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("_d", pa.string())])
    t = DeltaTable.create(str(tmp_path / "t"), schema, partition_by=["_d"])
    t.append(pa.table({"id": [1, 2], "_d": ["x", "y"]}, schema=schema))
    t.overwrite(pa.table({"id": [3], "_d": ["x"]}, schema=schema), predicate="_d = 'x'")
    make_old(Path(t.location))
    result = vacuum(t.snapshot, now_ms=now_plus(8))
    assert [p for p in result.files if p.startswith("_d=x/")] == [t.tombstones()[0].path]
    assert (Path(t.location) / "_delta_log" / "00000000000000000000.json").exists()
    assert_delta_rs_reads_identically(t.location)


def test_change_data_files_go_on_age_alone(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=1, properties={"delta.enableChangeDataFeed": "true"})
    t.update("id = 1", set={"x": "x + 1"})
    root = Path(t.location)
    cdc = sorted(p for p in disk_files(root) if p.startswith("_change_data/"))
    assert cdc
    assert vacuum(t.snapshot, dry_run=True).files == []
    make_old(root)
    result = vacuum(t.snapshot, now_ms=now_plus(8))
    assert set(cdc) <= set(result.files)
    assert not [p for p in disk_files(root) if p.startswith("_change_data")]
    assert "_change_data" in vacuum(t.snapshot, now_ms=now_plus(8)).files  # the emptied folder: next run
    assert_delta_rs_reads_identically(t.location)


def test_deletion_vector_files_follow_their_data_files(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=1, properties={"delta.enableDeletionVectors": "true"})
    with_deletion_vector(t, t.files()[0], [0, 1])
    t = t.refresh()
    root = Path(t.location)
    (dv_file,) = [p for p in disk_files(root) if p.startswith("deletion_vector_")]
    make_old(root)
    assert dv_file not in vacuum(t.snapshot, now_ms=now_plus(8), dry_run=True).files  # live DV: protected
    t.reorg()  # the file and its DV are now tombstoned
    t = t.refresh()
    make_old(root)
    result = vacuum(t.snapshot, now_ms=now_plus(8))
    assert dv_file in result.files
    assert not (root / dv_file).exists()
    assert_delta_rs_reads_identically(t.location)


def test_empty_folders_go_nested_ones_in_one_run_the_root_never(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=1)
    root = Path(t.location)
    (root / "empty" / "nested" / "deeper").mkdir(parents=True)
    (root / "young").mkdir()
    _touch(root / "young" / "new-file")
    result = vacuum(t.snapshot, 200)
    assert result.files == ["empty/nested/deeper", "empty/nested", "empty"]
    assert not (root / "empty").exists()
    assert (root / "young" / "new-file").exists()
    assert result.metrics["numDeletedFiles"] == 3
    assert root.is_dir()


def test_folder_holding_an_old_file_stays_until_the_next_run(tmp_path: Path) -> None:
    # Delta deletes folders non-recursively and only those without old files under them at listing time.
    t = small_files_table(tmp_path / "t", appends=1)
    root = Path(t.location)
    _touch(root / "stale" / "old", days_old=30)
    assert vacuum(t.snapshot, 200).files == ["stale/old"]
    assert (root / "stale").is_dir()
    assert vacuum(t.snapshot, 200).files == ["stale"]
    assert not (root / "stale").exists()


def test_files_outside_the_table_root_are_never_deleted(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=1)
    outside = tmp_path / "elsewhere.parquet"
    (Path(t.location) / "p=a").glob("*.parquet")
    src = next((Path(t.location) / "p=a").glob("*.parquet"))
    outside.write_bytes(src.read_bytes())
    add = t.files()[0]
    with t.transaction(operation="WRITE") as txn:
        txn.add(add._replace(path=outside.as_uri()))
        txn.remove(add._replace(path=outside.as_uri()))
    make_old(tmp_path, skip_log=True)
    vacuum(t.refresh().snapshot, now_ms=now_plus(8))
    assert outside.exists()


# -- dry run, commits, metrics ---------------------------------------------------------------------------


def test_dry_run_lists_files_and_folders_and_commits_nothing(table: DeltaTable) -> None:
    root = Path(table.location)
    (root / "empty").mkdir()
    make_old(root)
    before, version = disk_files(root), table.version
    result = vacuum(table.snapshot, now_ms=now_plus(8), dry_run=True)
    assert result.dry_run and result.start_version is None
    assert result.files == [*sorted(r.path for r in table.tombstones()), "empty"]
    assert result.metrics == {
        "numFilesToDelete": len(result.files),
        "sizeOfDataToDelete": sum((root / p).stat().st_size for p in result.files if (root / p).is_file()),
    }
    assert disk_files(root) == before and (root / "empty").is_dir()
    assert DeltaTable.latest_version(table.location) == version
    assert not (root / LAST_VACUUM_INFO).exists()


def test_a_real_run_writes_vacuum_start_and_end_even_with_nothing_to_delete(table: DeltaTable) -> None:
    root = Path(table.location)
    result = table.vacuum()
    assert result.start_version is not None and result.end_version is not None
    start, end = _commit_info(root, result.start_version), _commit_info(root, result.end_version)
    assert (start["operation"], end["operation"]) == ("VACUUM START", "VACUUM END")
    assert start["operationParameters"] == {
        "retentionCheckEnabled": "true",
        "defaultRetentionMillis": "604800000",
    }
    assert start["operationMetrics"] == {"numFilesToDelete": "0", "sizeOfDataToDelete": "0"}
    assert end["operationParameters"] == {"status": "COMPLETED"}
    # numVacuumedDirectories: folders listed + 1 for the root (p=a, p=b here).
    assert end["operationMetrics"] == {"numDeletedFiles": "0", "numVacuumedDirectories": "3"}
    assert start["isolationLevel"] == "SnapshotIsolation"
    assert table.version == result.end_version == result.start_version + 1


def test_specified_retention_is_recorded_in_hours_rounded_half_up(table: DeltaTable) -> None:
    result = table.vacuum(168.5)
    assert result.start_version is not None
    params = _commit_info(Path(table.location), result.start_version)["operationParameters"]
    assert params["specifiedRetentionMillis"] == str(169 * 3_600_000)
    result = table.vacuum(0.4, enforce_retention_duration=False, dry_run=True)
    assert result.parameters["specifiedRetentionMillis"] == 0


def test_retention_hours_other_than_zero_is_honoured_unlike_delta_4_1(table: DeltaTable) -> None:
    root = Path(table.location)
    make_old(root, days=3)
    # Tombstones are fresh: a 1-hour retention (check off) keeps them... unless the clock moves 2 hours.
    assert vacuum(table.snapshot, 1, enforce_retention_duration=False, dry_run=True).files == []
    two_hours = now_plus(2 / 24)
    expired = vacuum(
        table.snapshot, 1, enforce_retention_duration=False, dry_run=True, now_ms=two_hours
    ).files
    assert sorted(expired) == sorted(r.path for r in table.tombstones())


def test_table_property_sets_the_default_retention(tmp_path: Path) -> None:
    t = small_files_table(
        tmp_path / "t", appends=1, properties={"delta.deletedFileRetentionDuration": "interval 2 days"}
    )
    t.delete("p = 'a'")
    make_old(Path(t.location))
    assert vacuum(t.snapshot, now_ms=now_plus(1), dry_run=True).files == []
    assert len(vacuum(t.snapshot, now_ms=now_plus(3), dry_run=True).files) == 1
    with pytest.raises(RetentionPeriodError, match="at least 48 hours"):
        t.vacuum(47)
    assert t.vacuum(48, dry_run=True).files == []


# -- bad input -----------------------------------------------------------------------------------------


def test_retention_below_the_tables_is_refused_with_deltas_message(table: DeltaTable) -> None:
    version = table.version
    with pytest.raises(
        RetentionPeriodError, match=r"DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT.*at least 168 hours"
    ):
        table.vacuum(100)
    with pytest.raises(RetentionPeriodError, match="too low"):
        table.vacuum(0, dry_run=True)
    assert DeltaTable.latest_version(table.location) == version


@pytest.mark.parametrize("hours", [-1, -0.1, float("nan")])
def test_negative_retention_is_refused_even_with_the_check_off(table: DeltaTable, hours: float) -> None:
    with pytest.raises(
        RetentionPeriodError, match="DELTA_VACUUM_RETENTION_PERIOD_NEGATIVE|can't be less than 0"
    ):
        table.vacuum(hours, enforce_retention_duration=False)


def test_unknown_writer_feature_is_refused_before_anything_even_for_a_dry_run(table: DeltaTable) -> None:
    root = Path(table.location)
    make_old(root)
    before = disk_files(root)
    protocol = Protocol(3, 7, frozenset(), frozenset({"someFutureFeature"})).to_dict()
    commit = root / "_delta_log" / f"{table.version + 1:020d}.json"
    commit.write_text(json.dumps({"protocol": protocol}) + "\n")
    for dry_run in (True, False):
        with pytest.raises(UnsupportedFeatureError, match="someFutureFeature"):
            vacuum(table.refresh().snapshot, now_ms=now_plus(8), dry_run=dry_run)
    assert disk_files(root) == before


def test_vacuum_protocol_check_tables_are_supported(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=1)
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.update_protocol(
            Protocol(3, 7, frozenset({"vacuumProtocolCheck"}), frozenset({"vacuumProtocolCheck"}))
        )
    t = t.refresh()
    t.delete("p = 'a'")
    make_old(Path(t.location))
    assert len(vacuum(t.snapshot, now_ms=now_plus(8)).files) == 1


@pytest.mark.parametrize("where", ["missing", "partition"])
def test_a_path_that_is_not_a_table_is_refused_in_deltas_words(
    table: DeltaTable, tmp_path: Path, where: str
) -> None:
    location = str(tmp_path / "nothing") if where == "missing" else f"{table.location}/p=a"
    with pytest.raises(
        TableNotFoundError, match=r"DELTA_TABLE_ONLY_OPERATION.*is not a Delta table\. VACUUM"
    ) as err:
        load_table_for(location, "VACUUM")
    if where == "partition":
        assert f"inside the Delta table {table.location!r}" in str(err.value)


class _FailingExecutor(LocalExecutor):
    """Deletes the first file, then fails on every other one (a permission problem, say)."""

    def delete_files(self, storage: Any, paths: Any) -> Any:
        outcome = super().delete_files(storage, paths[:1])
        for path in paths[1:]:
            outcome.failed[path] = "PermissionError: denied"
        return outcome


def test_a_failed_delete_ends_with_status_failed_and_keeps_every_needed_file(table: DeltaTable) -> None:
    root = Path(table.location)
    _touch(root / "orphan-1", days_old=30)
    _touch(root / "orphan-2", days_old=30)
    make_old(root)
    with pytest.raises(VacuumError, match="could not be deleted"):
        vacuum(table.snapshot, now_ms=now_plus(8), executor=_FailingExecutor())
    latest = DeltaTable(table.location)
    info = latest.history(1)[0]
    assert (info["operation"], info["operationParameters"]) == ("VACUUM END", {"status": "FAILED"})
    assert "operationMetrics" not in info or info["operationMetrics"] == {}
    assert not (root / LAST_VACUUM_INFO).exists()
    assert {f.path for f in latest.files()} <= disk_files(root)
    assert_delta_rs_reads_identically(table.location)


def test_an_exception_while_deleting_still_writes_vacuum_end_failed(table: DeltaTable) -> None:
    class Boom(LocalExecutor):
        def delete_files(self, storage: Any, paths: Any) -> Any:
            raise KeyboardInterrupt

    make_old(Path(table.location))
    with pytest.raises(KeyboardInterrupt):
        vacuum(table.snapshot, now_ms=now_plus(8), executor=Boom())
    assert DeltaTable(table.location).history(1)[0]["operationParameters"] == {"status": "FAILED"}


# -- LITE -------------------------------------------------------------------------------------------------


def test_lite_deletes_expired_removed_files_only_never_untracked_ones(table: DeltaTable) -> None:
    root = Path(table.location)
    _touch(root / "p=a" / "orphan.parquet", days_old=30)
    (root / "empty").mkdir()
    make_old(root)
    result = vacuum(table.snapshot, lite=True, now_ms=now_plus(8))
    assert result.mode == "LITE"
    assert sorted(result.files) == sorted(r.path for r in table.tombstones())
    assert (root / "p=a" / "orphan.parquet").exists() and (root / "empty").is_dir()
    assert read_last_vacuum_info(LocalStorage(table.location)) == table.version
    assert json.loads((root / LAST_VACUUM_INFO).read_text()) == {
        "latestCommitVersionOutsideOfRetentionWindow": table.version
    }
    assert_delta_rs_reads_identically(table.location)


def test_lite_repeated_is_a_no_op_and_starts_after_the_last_vacuum(table: DeltaTable) -> None:
    make_old(Path(table.location))
    assert vacuum(table.snapshot, lite=True, now_ms=now_plus(8)).files
    t = table.refresh()
    assert vacuum(t.snapshot, lite=True, now_ms=now_plus(8)).files == []


def test_lite_refuses_when_early_commits_were_cleaned_up_until_a_full_run(table: DeltaTable) -> None:
    root = Path(table.location)
    table.checkpoint()
    (root / "_delta_log" / "00000000000000000000.json").unlink()
    with pytest.raises(VacuumLiteError, match=r"DELTA_CANNOT_VACUUM_LITE.*Please run VACUUM FULL"):
        table.vacuum(lite=True, dry_run=True)
    make_old(root)
    vacuum(table.snapshot, now_ms=now_plus(8))  # FULL records where it got to (Delta records nothing)
    assert read_last_vacuum_info(LocalStorage(table.location)) is not None
    assert vacuum(table.refresh().snapshot, lite=True, now_ms=now_plus(8)).mode == "LITE"


def test_lite_with_no_commit_before_the_cutoff_does_nothing(table: DeltaTable) -> None:
    result = table.vacuum(lite=True)
    assert result.files == [] and result.metrics["numDeletedFiles"] == 0


# -- the protection hook (change-data exporters) and concurrency -----------------------------------------------


def test_a_protection_source_keeps_the_files_of_the_versions_it_names(table: DeltaTable) -> None:
    make_old(Path(table.location))
    delete_version = 3  # the DELETE: its remove is an expired tombstone
    tombstone = next(r.path for r in table.tombstones() if r.path.startswith("p=a/"))

    def watermark(snapshot: Any, cutoff_ms: int) -> Protection:
        return Protection(versions={delete_version})

    kept = vacuum(table.snapshot, now_ms=now_plus(8), dry_run=True, protect=[watermark]).files
    assert tombstone not in kept
    assert tombstone in vacuum(table.snapshot, now_ms=now_plus(8), dry_run=True).files
    by_path = vacuum(
        table.snapshot, now_ms=now_plus(8), dry_run=True, protect=[lambda s, c: Protection(paths={tombstone})]
    ).files
    assert tombstone not in by_path


def test_a_file_written_while_vacuum_lists_is_never_deleted(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=1)
    stop = threading.Event()
    versions: list[int | None] = []

    def writer() -> None:
        w = DeltaTable(t.location)
        i = 10_000
        while not stop.is_set():
            versions.append(w.append(batch(range(i, i + 2), "a")))
            stop.wait(0.02)
            i += 2

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(5):
            t.refresh().vacuum()  # default retention: everything is recent
    finally:
        stop.set()
        thread.join()
    assert_delta_rs_reads_identically(t.location)
    assert len(versions) >= 1


def test_vacuum_through_a_read_only_pyarrow_file_system_deletes_nothing(tmp_path: Path) -> None:
    # Schemes without put-if-absent go through ArrowFileSystemStorage, which refuses commits: VACUUM
    # must fail on its VACUUM START commit, before it deletes a single file.
    import pyarrow.fs as pafs

    from airflow_provider_delta.core.snapshot import load_snapshot
    from airflow_provider_delta.core.storage.arrow import ArrowFileSystemStorage
    from airflow_provider_delta.exceptions import StorageError

    t = small_files_table(tmp_path / "t", appends=2)
    t.delete("p = 'a'")
    _touch(Path(t.location) / "p=b" / "orphan", days_old=30)
    make_old(Path(t.location))
    before = disk_files(Path(t.location))
    snapshot = load_snapshot(
        ArrowFileSystemStorage(pafs.LocalFileSystem(), t.location, scheme="file"), t.location
    )
    assert vacuum(snapshot, now_ms=now_plus(8), dry_run=True).files  # there is something to delete
    with pytest.raises(StorageError, match="no atomic put-if-absent"):
        vacuum(snapshot, now_ms=now_plus(8))
    assert disk_files(Path(t.location)) == before
    assert DeltaTable.latest_version(t.location) == t.version

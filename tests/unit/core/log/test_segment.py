"""Finding a version's log files: _last_checkpoint as a hint, listing as the fallback, clear errors."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_provider_delta.core import (
    DeltaTable,
    LogCorruptedError,
    TableNotFoundError,
    VersionNotFoundError,
)
from airflow_provider_delta.core.log.segment import build_segment, latest_version
from airflow_provider_delta.core.storage import LocalStorage

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture
def table(tmp_path) -> str:
    """A table with versions 0..12 and a checkpoint at 10 (the default interval)."""
    location = str(tmp_path / "t")
    t = DeltaTable.create(location, SCHEMA)
    for i in range(12):
        t.append(pa.table({"id": [i]}))
    assert os.path.exists(os.path.join(location, "_delta_log", "00000000000000000010.checkpoint.parquet"))
    return location


def _log(location: str, name: str) -> str:
    return os.path.join(location, "_delta_log", name)


def test_segment_starts_at_the_checkpoint_named_by_last_checkpoint(table):
    seg = build_segment(LocalStorage(table))
    assert seg.version == 12
    assert seg.checkpoint is not None and seg.checkpoint.version == 10
    assert [c.version for c in seg.commits] == [11, 12]


def test_corrupt_last_checkpoint_falls_back_to_listing(table):
    with open(_log(table, "_last_checkpoint"), "w") as fh:
        fh.write("{not json")
    t = DeltaTable(table)
    assert t.version == 12
    assert sorted(t.to_arrow()["id"].to_pylist()) == list(range(12))
    assert DeltaTable.latest_version(table) == 12


def test_stale_last_checkpoint_pointing_at_a_missing_checkpoint_falls_back_to_listing(table):
    os.unlink(_log(table, "00000000000000000010.checkpoint.parquet"))
    seg = build_segment(LocalStorage(table))
    assert seg.checkpoint is None and seg.version == 12
    assert DeltaTable(table).to_arrow().num_rows == 12


def test_missing_last_checkpoint_still_finds_the_newest_checkpoint(table):
    os.unlink(_log(table, "_last_checkpoint"))
    seg = build_segment(LocalStorage(table))
    assert seg.checkpoint is not None and seg.checkpoint.version == 10
    assert latest_version(LocalStorage(table)) == 12


def test_latest_version_counts_commits_after_the_checkpoint_without_listing(table):
    assert DeltaTable.latest_version(table) == 12
    DeltaTable(table).append(pa.table({"id": [99]}))
    assert DeltaTable.latest_version(table) == 13


def test_time_travel_to_a_version_before_the_checkpoint_replays_commits(table):
    assert sorted(DeltaTable(table, version=3).to_arrow()["id"].to_pylist()) == [0, 1, 2]


def test_version_after_the_latest_is_a_clear_error(table):
    with pytest.raises(VersionNotFoundError, match="available versions are 0 to 12") as info:
        DeltaTable(table, version=13)
    assert info.value.latest == 12


def test_cleaned_up_commits_make_old_versions_unrecoverable_but_not_newer_ones(table):
    for v in range(10):
        os.unlink(_log(table, f"{v:020d}.json"))
    with pytest.raises(VersionNotFoundError, match="earliest recoverable version is 10") as info:
        DeltaTable(table, version=5)
    assert info.value.earliest == 10
    assert DeltaTable(table, version=10).to_arrow().num_rows == 10


def test_early_commits_cleaned_up_without_checkpoint_is_log_corruption(tmp_path):
    location = str(tmp_path / "t")
    t = DeltaTable.create(location, SCHEMA)
    t.append(pa.table({"id": [1]}))
    os.unlink(_log(location, f"{0:020d}.json"))
    with pytest.raises(LogCorruptedError, match="commit 0 is missing"):
        DeltaTable(location)


def test_gap_in_commit_versions_is_log_corruption(table):
    os.unlink(_log(table, f"{11:020d}.json"))
    os.unlink(_log(table, "_last_checkpoint"))
    os.unlink(_log(table, "00000000000000000010.checkpoint.parquet"))
    with pytest.raises(LogCorruptedError, match="commit 11 is missing"):
        DeltaTable(table)


def test_a_folder_without_delta_log_is_table_not_found(tmp_path):
    with pytest.raises(TableNotFoundError, match="holds no commits"):
        DeltaTable(str(tmp_path))
    with pytest.raises(TableNotFoundError):
        DeltaTable.latest_version(str(tmp_path / "missing"))


def test_file_uri_and_plain_path_address_the_same_table(table):
    assert DeltaTable("file://" + table).version == DeltaTable(table).version


def test_snapshot_advance_applies_only_new_commits_and_matches_a_full_load(table):
    old = DeltaTable(table, version=4).snapshot
    DeltaTable(table).delete("id = 2")
    new = old.advance()
    full = DeltaTable(table).snapshot
    assert new.version == full.version
    assert sorted(f.path for f in new.files()) == sorted(f.path for f in full.files())
    assert sorted(f.path for f in new.tombstones()) == sorted(f.path for f in full.tombstones())
    with pytest.raises(VersionNotFoundError):
        new.advance(full.version + 5)


class _ListingMisses(LocalStorage):
    """A listing that misses one commit file (as a directory read racing a writer can) while later ones show."""

    def __init__(self, root: str, hidden: str, times: int = 1) -> None:
        super().__init__(root)
        self.hidden, self.times = hidden, times

    def list_dir(self, relative_dir, *, start_after=None):
        listed = super().list_dir(relative_dir, start_after=start_after)
        if self.times > 0:
            self.times -= 1
            return [f for f in listed if f.name != self.hidden]
        return listed


def _table_with_versions(tmp_path, n: int, *, checkpoint_at: int | None = None) -> str:
    location = str(tmp_path / "t")
    t = DeltaTable.create(location, SCHEMA)
    for i in range(n):
        t.append(pa.table({"id": [i]}))
        if checkpoint_at is not None and t.version == checkpoint_at:
            t.checkpoint()
    return location


def test_a_commit_the_listing_missed_while_a_later_one_shows_is_not_a_gap(tmp_path):
    # Probing saw version 3 as the newest; versions 4 and 5 were linked while the folder was listed,
    # and the listing returned 5 but not 4: the probe finds 4, no gap.
    location = _table_with_versions(tmp_path, 5, checkpoint_at=3)
    storage = _ListingMisses(location, f"{4:020d}.json")
    from airflow_provider_delta.core.log.segment import _refuse_commits_beyond_a_gap

    _refuse_commits_beyond_a_gap(storage, 3, None)
    (tmp_path / "t" / "_delta_log" / f"{4:020d}.json").unlink()
    with pytest.raises(LogCorruptedError, match="gap after version 3, commit 4 is missing"):
        _refuse_commits_beyond_a_gap(storage, 3, None)


def test_a_full_listing_that_missed_a_commit_written_meanwhile_is_listed_again(tmp_path):
    location = _table_with_versions(tmp_path, 4)  # no checkpoint: the log is listed
    segment = build_segment(_ListingMisses(location, f"{2:020d}.json"), None, location=location)
    assert segment.version == 4 and [c.version for c in segment.commits] == [0, 1, 2, 3, 4]
    with pytest.raises(LogCorruptedError, match="commit 2 is missing"):
        build_segment(_ListingMisses(location, f"{2:020d}.json", times=5), None, location=location)

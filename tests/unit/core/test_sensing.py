"""core.log.sensing: new commits since a known version, found with a few probes (no listing, no replay)."""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

import deltalake
import orjson
import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.log.sensing import (
    current_table_id,
    current_version,
    has_new_version,
    new_commits,
)
from airflow_provider_delta.core.storage import FileInfo, LocalStorage
from airflow_provider_delta.exceptions import NotADeltaTableError

if TYPE_CHECKING:
    from pathlib import Path

SCHEMA = pa.schema([("id", pa.int64())])


class CountingStorage(LocalStorage):
    """The real local storage, counting the calls the sensor makes (and optionally failing some)."""

    def __init__(self, root: str, *, fail_reads: list[BaseException] | None = None) -> None:
        super().__init__(root)
        self.calls: dict[str, int] = {"exists": 0, "read_bytes": 0, "list_dir": 0}
        self.fail_reads = list(fail_reads or [])

    def exists(self, relative_path: str) -> bool:
        self.calls["exists"] += 1
        return super().exists(relative_path)

    def read_bytes(self, relative_path: str) -> bytes:
        self.calls["read_bytes"] += 1
        if self.fail_reads:
            raise self.fail_reads.pop(0)
        return super().read_bytes(relative_path)

    def list_dir(self, relative_dir: str, *, start_after: str | None = None) -> list[FileInfo]:
        self.calls["list_dir"] += 1
        return super().list_dir(relative_dir, start_after=start_after)


def _append(path: Path, n: int) -> None:
    table = DeltaTable(str(path))
    for i in range(n):
        table.append(pa.table({"id": [i]}, schema=SCHEMA))


def _empty_commits(path: Path, start: int, stop: int, operation: str = "WRITE") -> None:
    """Valid commits holding only commitInfo (Delta allows empty commits): a long log, cheaply."""
    for v in range(start, stop):
        info = {
            "commitInfo": {
                "timestamp": 1_700_000_000_000 + v,
                "operation": operation,
                "operationMetrics": {"v": str(v)},
            }
        }
        (path / commit_path(v)).write_bytes(orjson.dumps(info) + b"\n")


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    DeltaTable.create(str(path), SCHEMA)
    _append(path, 3)  # versions 1..3
    return path


@pytest.mark.parametrize(
    ("latest", "baseline", "matching", "expected"),
    [
        (5, 4, None, True),
        (4, 4, None, False),
        (None, -1, None, False),
        (0, -1, None, True),
        (2, 7, None, True),  # recreated
        (5, 4, [], False),
        (5, 4, ["commit"], True),
    ],
)
def test_has_new_version_is_the_one_rule(latest, baseline, matching, expected):
    assert has_new_version(latest, baseline=baseline, matching=matching) is expected


def test_new_commits_reports_versions_after_the_baseline_with_commit_info(table: Path):
    result = new_commits(str(table), 1)
    history = {h["version"]: h for h in deltalake.DeltaTable(str(table)).history()}  # the oracle
    assert result.latest_version == deltalake.DeltaTable(str(table)).version() == 3
    assert [c.version for c in result.commits] == [2, 3]
    for c in result.commits:
        assert c.operation == history[c.version]["operation"]
        assert c.timestamp == history[c.version]["timestamp"]
        assert c.operation_metrics["numOutputRows"] == "1"
    d = result.to_dict()
    assert (d["previous_version"], d["start_version"], d["end_version"]) == (1, 2, 3)
    assert d["commits"][0]["operationMetrics"]["numOutputRows"] == "1"


def test_no_new_commit_is_not_news(table: Path):
    result = new_commits(str(table), 3)
    assert result.latest_version == 3
    assert not result.has_new_version
    assert result.commits == ()


def test_operations_filter_reports_only_matching_commits(table: Path):
    DeltaTable(str(table)).delete("id = 0")  # version 4
    assert not new_commits(str(table), 3, ["WRITE"]).has_new_version
    only_delete = new_commits(str(table), 2, ["delete"])
    assert only_delete.has_new_version
    assert [c.operation for c in only_delete.commits] == ["DELETE"]
    assert only_delete.latest_version == 4


def test_cost_follows_new_commits_not_history(tmp_path: Path):
    path = tmp_path / "long"
    DeltaTable.create(str(path), SCHEMA)
    _empty_commits(path, 1, 3000)
    small = CountingStorage(str(path))
    result = new_commits(str(path), 2990, storage=small)
    assert result.latest_version == 2999 and len(result.commits) == 9
    assert small.calls["list_dir"] == 0
    assert small.calls["read_bytes"] == 9  # one read per new commit, nothing else
    assert small.calls["exists"] <= 2 * 4 + 2  # galloping then bisecting over 9 versions
    idle = CountingStorage(str(path))
    assert not new_commits(str(path), 2999, storage=idle).has_new_version
    assert idle.calls == {"exists": 2, "read_bytes": 0, "list_dir": 0}


def test_missing_table_waits_and_its_creation_is_news(tmp_path: Path):
    path = tmp_path / "later"
    assert new_commits(str(path), None).latest_version is None
    assert current_version(str(path)) == -1
    path.mkdir()
    (path / "_delta_log").mkdir()
    assert new_commits(str(path), None).latest_version is None  # an empty folder is "not yet"
    DeltaTable.create(str(path), SCHEMA)
    result = new_commits(str(path), -1)
    assert result.has_new_version and result.previous_version is None and result.start_version == 0


def test_folder_of_files_without_a_log_is_not_a_delta_table(tmp_path: Path):
    (tmp_path / "part-0.parquet").write_bytes(b"PAR1")
    with pytest.raises(NotADeltaTableError, match="not a Delta table"):
        new_commits(str(tmp_path), None)
    with pytest.raises(NotADeltaTableError, match="is a file"):
        new_commits(str(tmp_path / "part-0.parquet"), 3)


def test_log_cleanup_below_the_baseline_does_not_matter(table: Path):
    DeltaTable(str(table)).checkpoint()  # checkpoint at 3
    _append(table, 2)  # 4, 5
    for v in range(3):
        os.remove(table / commit_path(v))
    counting = CountingStorage(str(table))
    result = new_commits(str(table), 3, storage=counting)
    assert [c.version for c in result.commits] == [4, 5]
    assert counting.calls["list_dir"] == 0


def test_new_commits_cleaned_up_before_we_looked_are_listed_as_missing(table: Path):
    DeltaTable(str(table)).checkpoint()  # 3
    _append(table, 1)  # 4
    for v in range(4):
        os.remove(table / commit_path(v))
    result = new_commits(str(table), 1)
    assert result.latest_version == 4
    assert result.missing == (2, 3)
    assert [c.version for c in result.commits] == [4]


def test_recreated_table_is_reported_from_version_zero(table: Path):
    shutil.rmtree(table)
    DeltaTable.create(str(table), SCHEMA)
    result = new_commits(str(table), 3)
    assert result.recreated and result.has_new_version
    assert result.latest_version == 0 and result.previous_version is None
    assert [c.operation for c in result.commits] == ["CREATE TABLE"]


def test_transient_read_errors_are_retried_inside_one_call(table: Path):
    flaky = CountingStorage(str(table), fail_reads=[TimeoutError("slow store"), OSError(5, "EIO")])
    waits: list[float] = []
    result = new_commits(str(table), 2, storage=flaky, sleep=waits.append)
    assert result.latest_version == 3 and len(waits) == 2


def test_permission_denied_fails_at_once(table: Path):
    denied = CountingStorage(str(table), fail_reads=[PermissionError(13, "Permission denied")])
    waits: list[float] = []
    with pytest.raises(PermissionError):
        new_commits(str(table), 2, storage=denied, sleep=waits.append)
    assert waits == []


def test_current_version_is_the_latest_version(table: Path):
    assert current_version(str(table)) == DeltaTable.latest_version(str(table)) == 3


def test_a_table_recreated_past_the_baseline_is_told_apart_by_its_id(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    old = DeltaTable.create(path, SCHEMA)
    old.append(pa.table({"id": [1]}, schema=SCHEMA))
    old_id = current_table_id(path)
    assert old_id == old.snapshot.metadata.id
    shutil.rmtree(path)
    new = DeltaTable.create(path, SCHEMA)
    for i in range(3):
        new.append(pa.table({"id": [i]}, schema=SCHEMA))

    by_version_only = new_commits(path, 1)  # versions 2..3 look like new commits of the old table
    assert (by_version_only.recreated, by_version_only.start_version) == (False, 2)
    result = new_commits(path, 1, table_id=old_id)
    assert result.recreated is True
    assert (result.previous_version, result.start_version, result.latest_version) == (None, 0, 3)
    assert result.table_id == new.snapshot.metadata.id != old_id
    assert [c.version for c in result.commits] == [0, 1, 2, 3]
    same = new_commits(path, 2, table_id=result.table_id)
    assert (same.recreated, same.start_version) == (False, 3)


def test_the_table_id_comes_from_the_checkpoint_once_version_0_is_cleaned_up(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    table = DeltaTable.create(path, SCHEMA)
    for i in range(3):
        table.append(pa.table({"id": [i]}, schema=SCHEMA))
    table.checkpoint()
    (tmp_path / "t" / commit_path(0)).unlink()
    assert current_table_id(path) == DeltaTable(path).snapshot.metadata.id
    assert current_table_id(str(tmp_path / "nothing")) is None


def test_the_id_is_read_from_the_head_of_a_large_first_commit(tmp_path: Path) -> None:
    from airflow_provider_delta.core.log.identity import HEAD_BYTES, read_table_id

    path = str(tmp_path / "t")
    table = DeltaTable.create(path, SCHEMA)
    first = tmp_path / "t" / commit_path(0)
    # Pad version 0 far past the head with an (ignored) unknown action after metaData.
    first.write_bytes(first.read_bytes() + orjson.dumps({"x": "y" * (3 * HEAD_BYTES)}) + b"\n")
    reads: list[str] = []

    class Counting(LocalStorage):
        def read_bytes(self, relative_path: str) -> bytes:
            reads.append(relative_path)
            return super().read_bytes(relative_path)

    assert read_table_id(Counting(path)) == table.snapshot.metadata.id
    assert reads == []  # found in the first 64 KiB, the rest never read

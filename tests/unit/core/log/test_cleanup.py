"""Expired log cleanup (PROTOCOL.md "Metadata Cleanup", ``delta.logRetentionDuration``).

Modification times are faked with ``os.utime``: commit ``v`` is ``v`` days after ``BASE``. Oracles:
this engine's time travel and delta-rs loading the cleaned table.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import deltalake
import pytest

from airflow_provider_delta.core.log.checkpoint_write import write_checkpoint
from airflow_provider_delta.core.log.cleanup import (
    cleanup_expired_logs,
    cutoff_checkpoint_version,
    log_retention,
)
from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.log.segment import list_log
from airflow_provider_delta.core.properties import InvalidPropertyError
from airflow_provider_delta.core.snapshot import Snapshot, load_snapshot
from airflow_provider_delta.core.storage import LocalStorage
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import VersionNotFoundError

if TYPE_CHECKING:
    from pathlib import Path

DAY_MS = 86_400_000
BASE_MS = 1_700_000_000_000
SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)


def _load(path: Path, version: int | None = None) -> Snapshot:
    return load_snapshot(LocalStorage(str(path)), str(path), version)


def _set_mtime(path: Path, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def _log(path: Path) -> Path:
    return path / "_delta_log"


def _names(path: Path) -> set[str]:
    return set(os.listdir(_log(path)))


def _make_table(
    root: Path,
    versions: int,
    *,
    checkpoints: tuple[int, ...] = (),
    configuration: dict[str, str] | None = None,
) -> Path:
    """Commits 0..versions-1 (one add each), commit ``v`` dated ``BASE + v days``, plus checkpoints."""
    log = _log(root)
    log.mkdir(parents=True)
    metadata = {
        "id": "t",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": SCHEMA,
        "partitionColumns": [],
        "configuration": configuration or {},
    }
    for v in range(versions):
        actions: list[dict[str, Any]] = [
            {"commitInfo": {"operation": "WRITE", "timestamp": BASE_MS + v * DAY_MS}}
        ]
        if v == 0:
            actions += [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, {"metaData": metadata}]
        actions.append(
            {
                "add": {
                    "path": f"f{v}.parquet",
                    "partitionValues": {},
                    "size": 1,
                    "modificationTime": 1,
                    "dataChange": True,
                }
            }
        )
        target = root / commit_path(v)
        target.write_bytes(b"\n".join(json.dumps(a).encode() for a in actions))
        _set_mtime(target, BASE_MS + v * DAY_MS)
    for v in checkpoints:
        info = write_checkpoint(_load(root, v))
        _set_mtime(root / info.path, BASE_MS + v * DAY_MS + 60_000)
    return root


def _cleanup(path: Path, *, now_days: float, retention_days: float | None = 30) -> list[str]:
    retention = timedelta(days=retention_days) if retention_days is not None else None
    return cleanup_expired_logs(_load(path), now_ms=BASE_MS + int(now_days * DAY_MS), retention=retention)


# --------------------------------------------------------------------------- the boundary


def test_deletes_everything_below_the_newest_checkpoint_older_than_the_cutoff(tmp_path: Path):
    table = _make_table(tmp_path / "t", 25, checkpoints=(10, 20))

    deleted = _cleanup(table, now_days=40)  # cutoff: day 10

    assert deleted == [commit_path(v) for v in range(10)]
    names = _names(table)
    assert "00000000000000000010.json" in names
    assert "00000000000000000010.checkpoint.parquet" in names
    assert "_last_checkpoint" in names


def test_time_travel_works_from_the_boundary_on(tmp_path: Path):
    table = _make_table(tmp_path / "t", 25, checkpoints=(10, 20))
    expected = {v: sorted(f.path for f in _load(table, v).files()) for v in range(10, 25)}

    _cleanup(table, now_days=40)

    for v in range(10, 25):
        assert sorted(f.path for f in DeltaTable(str(table), version=v).files()) == expected[v]
        assert deltalake.DeltaTable(str(table), version=v).version() == v
    assert DeltaTable(str(table)).version == 24
    assert len(deltalake.DeltaTable(str(table)).file_uris()) == 25


@pytest.mark.parametrize(("now_days", "boundary"), [(40, 10), (52, 20)])
def test_versions_before_the_boundary_raise_version_not_found(tmp_path: Path, now_days: int, boundary: int):
    table = _make_table(tmp_path / "t", 25, checkpoints=(10, 20))
    _cleanup(table, now_days=now_days)

    assert DeltaTable(str(table), version=boundary).version == boundary
    for v in (0, boundary // 2, boundary - 1):
        with pytest.raises(VersionNotFoundError) as err:
            DeltaTable(str(table), version=v)
        assert err.value.earliest == boundary


def test_a_later_cutoff_moves_the_boundary_to_the_newer_checkpoint(tmp_path: Path):
    table = _make_table(tmp_path / "t", 25, checkpoints=(10, 20))

    deleted = _cleanup(table, now_days=52)  # cutoff: day 22 -> newest checkpoint at or before it is 20

    assert set(deleted) == {commit_path(v) for v in range(20)} | {
        "_delta_log/00000000000000000010.checkpoint.parquet"
    }
    assert DeltaTable(str(table), version=20).version == 20


def test_checkpoint_newer_than_the_cutoff_protects_everything(tmp_path: Path):
    table = _make_table(tmp_path / "t", 25, checkpoints=(20,))
    before = _names(table)

    assert _cleanup(table, now_days=45) == []  # cutoff day 15 < checkpoint 20's commit
    assert _names(table) == before


def test_table_without_checkpoint_deletes_nothing(tmp_path: Path):
    table = _make_table(tmp_path / "t", 12)
    before = _names(table)

    assert _cleanup(table, now_days=1000) == []
    assert _names(table) == before


def test_a_fresh_checkpoint_of_an_old_version_is_a_valid_boundary(tmp_path: Path):
    table = _make_table(tmp_path / "t", 12)
    write_checkpoint(_load(table, 8))  # written now, for a version committed long ago

    deleted = _cleanup(table, now_days=60)

    assert deleted == [commit_path(v) for v in range(8)]
    assert DeltaTable(str(table), version=8).version == 8


def test_the_boundary_commit_and_checkpoint_are_kept_and_last_checkpoint_untouched(tmp_path: Path):
    table = _make_table(tmp_path / "t", 15, checkpoints=(10,))
    hint = (_log(table) / "_last_checkpoint").read_bytes()

    _cleanup(table, now_days=1000)

    assert {"00000000000000000010.json", "00000000000000000010.checkpoint.parquet"} <= _names(table)
    assert (_log(table) / "_last_checkpoint").read_bytes() == hint


# --------------------------------------------------------------------------- file kinds and their own times


def test_checksums_compactions_and_stale_checkpoints_below_the_boundary_are_deleted(tmp_path: Path):
    table = _make_table(tmp_path / "t", 15, checkpoints=(5, 10))
    extra = {
        "00000000000000000003.crc": 3,
        "00000000000000000012.crc": 12,
        "00000000000000000002.00000000000000000004.compacted.json": 4,
        "00000000000000000010.00000000000000000012.compacted.json": 12,
        "00000000000000000011.00000000000000000013.compacted.json": 13,
        "00000000000000000004.checkpoint.0000000001.0000000002.parquet": 4,  # incomplete multi-part
        "00000000000000000006.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json": 6,
    }
    for name, day in extra.items():
        (_log(table) / name).write_bytes(b"{}")
        _set_mtime(_log(table) / name, BASE_MS + day * DAY_MS)

    deleted = {p.rsplit("/", 1)[-1] for p in _cleanup(table, now_days=1000)}

    assert {
        "00000000000000000003.crc",
        "00000000000000000002.00000000000000000004.compacted.json",
        "00000000000000000010.00000000000000000012.compacted.json",  # starts at the boundary
        "00000000000000000004.checkpoint.0000000001.0000000002.parquet",
        "00000000000000000006.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json",
        "00000000000000000005.checkpoint.parquet",
    } <= deleted
    assert not deleted & {
        "00000000000000000012.crc",
        "00000000000000000011.00000000000000000013.compacted.json",
        "00000000000000000010.json",
        "00000000000000000010.checkpoint.parquet",
    }


def test_files_modified_after_the_cutoff_are_kept(tmp_path: Path):
    table = _make_table(tmp_path / "t", 15, checkpoints=(10,))
    crc = _log(table) / "00000000000000000004.crc"
    crc.write_bytes(b"{}")
    _set_mtime(crc, BASE_MS + 100 * DAY_MS)

    deleted = _cleanup(table, now_days=60)  # cutoff: day 30

    assert commit_path(4) in deleted
    assert crc.exists()


def test_commit_times_are_made_monotonic_so_an_out_of_order_clock_is_conservative(tmp_path: Path):
    table = _make_table(tmp_path / "t", 15, checkpoints=(10,))
    _set_mtime(table / commit_path(7), BASE_MS + 50 * DAY_MS)  # a commit "newer" than those after it

    # Commits 8.. count as no older than commit 7, so the checkpoint at 10 is inside the window.
    assert _cleanup(table, now_days=60) == []
    assert cutoff_checkpoint_version(list_log(LocalStorage(str(table))), BASE_MS + 51 * DAY_MS) == 10


# --------------------------------------------------------------------------- configuration


def test_log_retention_duration_property_sets_the_window(tmp_path: Path):
    table = _make_table(
        tmp_path / "t", 15, checkpoints=(10,), configuration={"delta.logRetentionDuration": "interval 2 days"}
    )
    assert log_retention(_load(table).configuration) == timedelta(days=2)

    assert _cleanup(table, now_days=11, retention_days=None) == []  # cutoff: day 9
    assert _cleanup(table, now_days=12.5, retention_days=None) == [commit_path(v) for v in range(10)]


def test_default_retention_is_thirty_days():
    assert log_retention({}) == timedelta(days=30)


def test_invalid_log_retention_names_the_property(tmp_path: Path):
    table = _make_table(tmp_path / "t", 3, configuration={"delta.logRetentionDuration": "forever"})
    with pytest.raises(InvalidPropertyError, match=r"delta\.logRetentionDuration"):
        cleanup_expired_logs(_load(table))


def test_disabled_expired_log_cleanup_deletes_nothing(tmp_path: Path):
    table = _make_table(
        tmp_path / "t", 15, checkpoints=(10,), configuration={"delta.enableExpiredLogCleanup": "false"}
    )
    assert _cleanup(table, now_days=1000) == []
    assert commit_path(0).rsplit("/", 1)[-1] in _names(table)


# --------------------------------------------------------------------------- delta-rs tables, V2 sidecars


def test_delta_rs_table_cleaned_up_still_loads_in_delta_rs(tmp_path: Path):
    import pyarrow as pa

    path = tmp_path / "rs"
    for i in range(12):
        deltalake.write_deltalake(str(path), pa.table({"x": [i]}), mode="append")
    write_checkpoint(_load(path, 10))
    for name in os.listdir(_log(path)):
        if name[:1].isdigit():
            _set_mtime(_log(path) / name, BASE_MS + int(name[:20]) * DAY_MS)
    expected = deltalake.DeltaTable(str(path)).to_pyarrow_table().num_rows

    deleted = _cleanup(path, now_days=45)

    assert deleted == [commit_path(v) for v in range(10)]
    dt = deltalake.DeltaTable(str(path))
    assert (dt.version(), dt.to_pyarrow_table().num_rows) == (11, expected)
    assert deltalake.DeltaTable(str(path), version=10).to_pyarrow_table().num_rows == 11
    assert DeltaTable(str(path)).to_arrow().num_rows == expected


def test_unreferenced_old_sidecars_are_deleted_and_referenced_ones_kept(copy_table: Any, tmp_path: Path):
    table = copy_table("extra/kernel-rs/v2-checkpoints-parquet-with-sidecars")
    for folder in (_log(table), _log(table) / "_sidecars"):
        for name in os.listdir(folder):
            if (folder / name).is_file():
                _set_mtime(folder / name, BASE_MS)
    orphan_old = _log(table) / "_sidecars" / "orphan-old.parquet"
    orphan_new = _log(table) / "_sidecars" / "orphan-new.parquet"
    shutil.copy(next((_log(table) / "_sidecars").iterdir()), orphan_old)
    shutil.copy(orphan_old, orphan_new)
    _set_mtime(orphan_old, BASE_MS)
    _set_mtime(orphan_new, BASE_MS + 99 * DAY_MS)
    expected = sorted(f.path for f in _load(table).files())

    deleted = _cleanup(table, now_days=100)

    kept_sidecars = set(os.listdir(_log(table) / "_sidecars"))
    assert "_delta_log/_sidecars/orphan-old.parquet" in deleted
    assert "orphan-new.parquet" in kept_sidecars  # younger than a day: maybe an in-progress checkpoint
    assert kept_sidecars == {
        "orphan-new.parquet",
        "00000000000000000006.checkpoint.0000000001.0000000002.76931b15-ead3-480d-b86c-afe55a577fc3.parquet",
        "00000000000000000006.checkpoint.0000000002.0000000002.4367b29c-0e87-447f-8e81-9814cc01ad1f.parquet",
    }
    assert commit_path(5) in deleted
    assert commit_path(6) not in deleted
    assert sorted(f.path for f in _load(table).files()) == expected
    assert deltalake.DeltaTable(str(table)).version() == 6


def test_a_boundary_checkpoint_whose_commit_is_gone_counts_with_its_own_time(tmp_path: Path):
    table = _make_table(tmp_path / "t", 15, checkpoints=(5, 10))
    (table / commit_path(10)).unlink()  # e.g. removed by another tool's cleanup

    deleted = _cleanup(table, now_days=42)  # cutoff: day 12

    assert set(deleted) == {commit_path(v) for v in range(10)} | {
        "_delta_log/00000000000000000005.checkpoint.parquet"
    }
    assert DeltaTable(str(table), version=10).version == 10
    assert DeltaTable(str(table)).version == 14


# --------------------------------------------------------------------------- temporary files


def test_temporary_files_of_killed_writers_older_than_a_day_are_deleted(tmp_path: Path):
    table = _make_table(tmp_path / "t", 3)  # no checkpoint: nothing else may go
    now = BASE_MS + 10 * DAY_MS
    stale = {
        ".00000000000000000003.json.8f14e45fceea167a5a36dedd4bea2543.tmp": now - 2 * DAY_MS,  # commit
        "00000000000000000002.checkpoint.parquet.c9f0f895fb98ab9159f51fd0297e236d.tmp": now - DAY_MS,
        "_last_checkpoint.45c48cce2e2d7fbdea1afc51c7c6ad26.tmp": now - 3 * DAY_MS,
    }
    fresh = {".00000000000000000003.json.d3d9446802a44259755d38e6d163e820.tmp": now - DAY_MS + 1}
    others = {"00000000000000000003.json.tmp": now - 5 * DAY_MS, "notes.txt.1234.tmp": now - 5 * DAY_MS}
    for name, ms in {**stale, **fresh, **others}.items():
        (_log(table) / name).write_bytes(b"{")
        _set_mtime(_log(table) / name, ms)
    before = _names(table)

    deleted = cleanup_expired_logs(_load(table), now_ms=now)

    assert sorted(deleted) == sorted(f"_delta_log/{n}" for n in stale)
    assert _names(table) == before - set(stale)
    assert _load(table).version == 2


def test_temporary_files_stay_when_cleanup_is_disabled(tmp_path: Path):
    table = _make_table(tmp_path / "t", 2, configuration={"delta.enableExpiredLogCleanup": "false"})
    name = ".00000000000000000002.json.8f14e45fceea167a5a36dedd4bea2543.tmp"
    (_log(table) / name).write_bytes(b"")
    _set_mtime(_log(table) / name, BASE_MS)
    assert cleanup_expired_logs(_load(table), now_ms=BASE_MS + 100 * DAY_MS) == []
    assert name in _names(table)

"""Delete expired log files (PROTOCOL.md "Metadata Cleanup", ``delta.logRetentionDuration``).

The rule, with ``cutoff = now - delta.logRetentionDuration`` (default 30 days):

1. Commit times are the commit files' modification times made monotonic the way Delta does (a
   commit is never older than the one before it); a version whose commit is gone counts with its
   checkpoint's time.
2. ``C`` is the newest complete checkpoint whose version's time is at or before the cutoff. Without
   one nothing is deleted: every version still in the window stays reconstructable.
3. Commits, checksums (``.crc``) and checkpoints of every kind with a version below ``C``, and log
   compactions starting at or below ``C``, are deleted -- each only if its own modification time is
   at or before the cutoff. ``C`` itself (checkpoint and commit), everything after it and
   ``_last_checkpoint`` are kept, so every version from ``C`` on still loads.
4. Sidecar files of V2 checkpoints that no remaining checkpoint references and that are older than
   both the cutoff and one day are deleted.
5. Temporary files this engine's storage left in ``_delta_log`` (a writer killed between writing a
   commit, checkpoint or ``_last_checkpoint`` and moving it into place) that are older than a day
   are deleted, whether or not step 2 found a checkpoint: no live writer takes a day for that step.

Files are deleted oldest first, so an interrupted cleanup leaves a log that is still consistent.

Example:
    >>> from airflow_provider_delta.core.snapshot import load_snapshot  # doctest: +SKIP
    >>> cleanup_expired_logs(load_snapshot(storage, "/data/events"))  # doctest: +SKIP
    ['_delta_log/00000000000000000000.json', ...]
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import TYPE_CHECKING
from urllib.parse import unquote

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_delta.core.log.checkpoint_write import retention_property
from airflow_provider_delta.core.log.paths import LOG_DIR, SIDECAR_DIR, LogFile, parse_log_name
from airflow_provider_delta.core.log.segment import list_log
from airflow_provider_delta.core.storage import is_temporary_name

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_delta.core.log.segment import LogListing
    from airflow_provider_delta.core.snapshot import Snapshot
    from airflow_provider_delta.core.storage import Storage

__all__ = ["DEFAULT_LOG_RETENTION", "cleanup_expired_logs", "cutoff_checkpoint_version", "log_retention"]

DEFAULT_LOG_RETENTION = timedelta(days=30)
_SIDECAR_MIN_AGE_MS = 24 * 3600 * 1000
_TEMPORARY_MIN_AGE_MS = 24 * 3600 * 1000


def log_retention(configuration: Mapping[str, str]) -> timedelta:
    """``delta.logRetentionDuration`` as a timedelta (30 days when unset).

    Raises:
        InvalidPropertyError: the value is not an interval.
    """
    return retention_property(configuration, "delta.logRetentionDuration", DEFAULT_LOG_RETENTION)


def _version_times(listing: LogListing) -> dict[int, int]:
    """Each version's commit time (ms), monotonic in the version like Delta's commit timestamps."""
    raw = {v: lf.modification_time for v, lf in listing.commits.items()}
    for ref in listing.checkpoints:
        raw.setdefault(ref.version, max(f.modification_time for f in ref.files))
    out: dict[int, int] = {}
    previous: int | None = None
    for version in sorted(raw):
        t = raw[version]
        if previous is not None and t <= previous:
            t = previous + 1
        out[version] = previous = t
    return out


def cutoff_checkpoint_version(listing: LogListing, cutoff_ms: int) -> int | None:
    """The newest complete checkpoint whose version was committed at or before ``cutoff_ms``, if any."""
    times = _version_times(listing)
    usable = [
        ref.version
        for ref in listing.checkpoints
        if times[ref.version] <= cutoff_ms and all(f.size > 0 for f in ref.files)
    ]
    return max(usable) if usable else None


def _is_expired(lf: LogFile, boundary: int, cutoff_ms: int) -> bool:
    if lf.modification_time > cutoff_ms:
        return False
    if lf.kind == "compacted":
        # PROTOCOL.md "Metadata Cleanup": compactions starting at or before the boundary go too.
        return lf.version <= boundary
    return lf.version < boundary


def _expired_log_files(storage: Storage, boundary: int, cutoff_ms: int) -> list[LogFile]:
    expired = []
    for info in storage.list_dir(LOG_DIR):
        lf = parse_log_name(info.name, size=info.size, modification_time=info.modification_time)
        if lf is not None and _is_expired(lf, boundary, cutoff_ms):
            expired.append(lf)
    # Oldest version first, commits before the checkpoints of the same version: a crash part way
    # through leaves a prefix deleted and the boundary checkpoint intact.
    expired.sort(key=lambda f: (f.version, f.is_checkpoint, f.name))
    return expired


def _sidecar_name(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return unquote(name) if "%" in name else name


def _referenced_sidecars(storage: Storage, lf: LogFile) -> set[str]:
    """Sidecar file names a checkpoint file references (V2 checkpoints; classic ones may be V2 too)."""
    if lf.name.endswith(".json"):
        names = set()
        for line in storage.read_bytes(lf.path).splitlines():
            if line.strip():
                sidecar = orjson.loads(line).get("sidecar")
                if isinstance(sidecar, dict) and isinstance(sidecar.get("path"), str):
                    names.add(_sidecar_name(sidecar["path"]))
        return names
    with storage.open_input_file(lf.path, size=lf.size or None) as source:
        pf = pq.ParquetFile(source)
        if "sidecar" not in pf.schema_arrow.names:
            return set()
        column = pf.read(columns=["sidecar"]).column("sidecar").combine_chunks()
    paths = column.field("path").to_pylist() if isinstance(column, pa.StructArray) else []
    return {_sidecar_name(p) for p in paths if p}


def _cleanup_sidecars(storage: Storage, cutoff_ms: int, now_ms: int) -> list[str]:
    """Delete unreferenced sidecars older than the cutoff and than a day (in-progress checkpoints)."""
    sidecars = storage.list_dir(SIDECAR_DIR)
    threshold = min(cutoff_ms, now_ms - _SIDECAR_MIN_AGE_MS)
    candidates = [s for s in sidecars if s.modification_time <= threshold]
    if not candidates:
        return []
    referenced: set[str] = set()
    for info in storage.list_dir(LOG_DIR):
        lf = parse_log_name(info.name)
        if lf is None or not lf.is_checkpoint:
            continue
        try:
            referenced |= _referenced_sidecars(storage, lf)
        except (OSError, ValueError, pa.ArrowException):
            return []  # a checkpoint we cannot read might reference any sidecar: keep them all
    deleted = []
    for s in candidates:
        if s.name not in referenced:
            path = f"{SIDECAR_DIR}/{s.name}"
            storage.delete(path)
            deleted.append(path)
    return deleted


def cleanup_expired_logs(
    snapshot: Snapshot, *, now_ms: int | None = None, retention: timedelta | None = None
) -> list[str]:
    """Delete the log files older than the table's log retention that no kept version needs.

    See the module docstring for the rule. Nothing is deleted when ``delta.enableExpiredLogCleanup``
    is ``false``, or when no checkpoint is older than the cutoff. After cleanup, every version from
    the boundary checkpoint on still loads; older ones raise ``VersionNotFoundError``.

    Args:
        snapshot: the table (its storage and ``delta.*`` properties are used).
        now_ms: the clock in ms since the epoch (default: now).
        retention: overrides ``delta.logRetentionDuration``.

    Returns:
        The deleted paths, relative to the table root, in deletion order.

    Raises:
        InvalidPropertyError: ``delta.logRetentionDuration`` is not an interval.
        OSError: the storage could not list or delete.

    Example:
        >>> cleanup_expired_logs(snapshot, retention=timedelta(days=7))  # doctest: +SKIP
        ['_delta_log/00000000000000000000.json', '_delta_log/00000000000000000001.json']
    """
    configuration = snapshot.configuration
    if configuration.get("delta.enableExpiredLogCleanup", "true").strip().lower() == "false":
        return []
    now = int(time.time() * 1000) if now_ms is None else now_ms
    keep = retention if retention is not None else log_retention(configuration)
    cutoff = now - int(keep.total_seconds() * 1000)
    storage = snapshot.storage
    temporary = _cleanup_temporary_files(storage, now)
    boundary = cutoff_checkpoint_version(list_log(storage), cutoff)
    if boundary is None:
        return temporary
    deleted = []
    for lf in _expired_log_files(storage, boundary, cutoff):
        storage.delete(lf.path)
        deleted.append(lf.path)
    return temporary + deleted + _cleanup_sidecars(storage, cutoff, now)


def _cleanup_temporary_files(storage: Storage, now_ms: int) -> list[str]:
    """Delete the storage's temporary files in ``_delta_log`` older than a day (left by killed writers)."""
    deleted = []
    for info in storage.list_dir(LOG_DIR):
        if is_temporary_name(info.name) and info.modification_time <= now_ms - _TEMPORARY_MIN_AGE_MS:
            path = f"{LOG_DIR}/{info.name}"
            storage.delete(path)
            deleted.append(path)
    return deleted

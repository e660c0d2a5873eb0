"""Commit history and time travel by timestamp.

A commit's timestamp is its in-commit timestamp when the table has ``delta.enableInCommitTimestamps``
on from ``delta.inCommitTimestampEnablementVersion`` (PROTOCOL.md "In-Commit Timestamps"), and its
commit file's modification time otherwise, made monotonic the way Delta does (a commit is never
older than the one before it).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.log.replay import commit_info_of, read_commit
from airflow_provider_delta.core.log.segment import list_log
from airflow_provider_delta.exceptions import DeltaError, VersionNotFoundError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_delta.core.storage import Storage

TimestampLike = dt.datetime | dt.date | str | int | float


def to_epoch_millis(value: TimestampLike) -> int:
    """Milliseconds since the epoch for a datetime (naive = UTC), ISO string, or number of ms.

    Strings follow Delta's ``yyyy-MM-dd[ HH:mm:ss[.SSS]]`` form, or any ISO-8601 form.
    """
    if isinstance(value, bool):
        raise DeltaError(f"Cannot use {value!r} as a timestamp: expected a datetime, string or epoch millis")
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            parsed = dt.datetime.fromisoformat(text)
        except ValueError:
            raise DeltaError(
                f"Cannot parse timestamp {value!r}: expected yyyy-MM-dd[ HH:mm:ss[.SSS]] or ISO-8601"
            ) from None
        value = parsed
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return int(value.timestamp() * 1000)
    if isinstance(value, dt.date):
        return int(dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc).timestamp() * 1000)
    raise DeltaError(f"Cannot use {value!r} as a timestamp: expected a datetime, string or epoch millis")


def ict_enablement_version(configuration: Mapping[str, str]) -> int | None:
    """The first version with in-commit timestamps, or None when the table does not use them."""
    if configuration.get("delta.enableInCommitTimestamps", "false").lower() != "true":
        return None
    start = configuration.get("delta.inCommitTimestampEnablementVersion")
    try:
        return int(start) if start is not None else 0
    except ValueError:
        return 0


def _ict(storage: Storage, version: int) -> int | None:
    info = commit_info_of(read_commit(storage, commit_path(version), version))
    return info.in_commit_timestamp if info is not None else None


def version_at_timestamp(
    storage: Storage, location: str, timestamp: TimestampLike, configuration: Mapping[str, str]
) -> int:
    """The newest version committed at or before ``timestamp``.

    Raises:
        VersionNotFoundError: the timestamp is before the earliest recoverable commit or after the
            latest one.
    """
    target = to_epoch_millis(timestamp)
    listing = list_log(storage)
    earliest = listing.earliest_recoverable_version()
    latest = listing.latest_version
    versions = sorted(v for v in listing.commits if earliest is None or v >= earliest)
    if not versions or latest is None:
        raise VersionNotFoundError(f"Cannot time travel table {location!r}: no commits found", latest=latest)
    ict_from = ict_enablement_version(configuration)
    # Monotonic file-time timestamps (Delta adjusts each to at least the previous one + 1 ms).
    times: dict[int, int] = {}
    previous = -1
    for v in versions:
        t = max(listing.commits[v].modification_time, previous + 1)
        times[v] = previous = t
    ict_versions = [v for v in versions if ict_from is not None and v >= ict_from]
    cache: dict[int, int] = {}

    def ts(v: int) -> int:
        if ict_from is not None and v >= ict_from:
            if v not in cache:
                ict = _ict(storage, v)
                cache[v] = ict if ict is not None else times[v]
            return cache[v]
        return times[v]

    def human(ms: int) -> str:
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).isoformat(timespec="milliseconds")

    if target < ts(versions[0]):
        raise VersionNotFoundError(
            f"Cannot time travel table {location!r} to {human(target)}: it is before the earliest "
            f"available commit (version {versions[0]} at {human(ts(versions[0]))})",
            earliest=versions[0],
            latest=latest,
        )
    if target > ts(versions[-1]):
        raise VersionNotFoundError(
            f"Cannot time travel table {location!r} to {human(target)}: it is after the latest commit "
            f"(version {versions[-1]} at {human(ts(versions[-1]))})",
            earliest=versions[0],
            latest=latest,
        )
    # Binary search for the last version with ts <= target (timestamps are monotonic).
    lo, hi = 0, len(versions) - 1
    if ict_versions and ts(ict_versions[0]) <= target:
        lo = versions.index(ict_versions[0])
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ts(versions[mid]) <= target:
            lo = mid
        else:
            hi = mid - 1
    return versions[lo]


def history(storage: Storage, latest: int, limit: int | None = None) -> list[dict[str, Any]]:
    """commitInfo of each version, newest first, each with ``version`` and ``timestamp`` (ms).

    Stops at the first version whose commit file has been cleaned up.
    """
    out: list[dict[str, Any]] = []
    version = latest
    while version >= 0 and (limit is None or len(out) < limit):
        path = commit_path(version)
        try:
            actions = read_commit(storage, path, version)
        except DeltaError:
            if not storage.exists(path):
                break
            raise
        info = commit_info_of(actions)
        entry: dict[str, Any] = dict(info.info) if info is not None else {}
        if info is None or info.timestamp is None:
            entry["timestamp"] = storage.modification_time(path)
        elif info.in_commit_timestamp is not None:
            entry["timestamp"] = info.in_commit_timestamp
        entry["version"] = version
        out.append(entry)
        version -= 1
    return out

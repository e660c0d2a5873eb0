"""Has a table moved on since a known version? The one rule shared by sensor and triggers.

``new_commits`` answers with a few file probes from the last known version: it gallops forward from
``after_version + 1`` (1, 2, 4, ... versions ahead, then bisects), then reads only the new commit
files for their ``commitInfo``. It never lists ``_delta_log`` nor replays the table while the
baseline's commit is still there, so its cost follows the number of new commits, not the history.

Edge cases, decided here once:

- **No table yet** (no location, an empty folder, or an empty ``_delta_log``): ``latest_version`` is
  None; callers wait. A table that appears later is new from version 0 (baseline ``-1``).
- **Log cleanup below the baseline** (older commits deleted after a checkpoint): irrelevant, only
  versions after the baseline are probed. New commits that were themselves cleaned up before we
  looked are listed in ``missing``; the version range is still reported.
- **Table recreated** (the folder was deleted and the table created again): reported as new at once
  with ``recreated=True`` and the range ``0..latest`` (``previous_version`` None), so downstream
  reloads everything instead of reading a change range of another table. Found when the newest
  version is lower than the baseline, or, given the baseline's ``table_id`` (``metaData.id``), when
  the table's id differs: a recreated table that has already passed the baseline's version is not
  mistaken for new commits. The id is read only when there are new versions (``log.identity``).
- **Transient read errors** (I/O errors, timeouts) are retried a few times inside one call.
- **Permanent errors** fail at once: ``NotADeltaTableError`` (files but no ``_delta_log``),
  ``PermissionError``, ``LogCorruptedError``.

Example:
    >>> result = new_commits("/data/events", after_version=41)       # doctest: +SKIP
    >>> result.has_new_version, result.latest_version, [c.version for c in result.commits]  # doctest: +SKIP
    (True, 43, [42, 43])
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from airflow_provider_delta.core.log.identity import read_table_id
from airflow_provider_delta.core.log.paths import LOG_DIR, commit_path
from airflow_provider_delta.core.log.segment import latest_version as _latest_version
from airflow_provider_delta.core.log.segment import newest_from
from airflow_provider_delta.core.storage import LocalStorage, storage_for
from airflow_provider_delta.exceptions import DeltaError, NotADeltaTableError, TableNotFoundError

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence

    from airflow_provider_delta.core.storage import Storage

T = TypeVar("T")

#: Errors that never heal by waiting: retrying them only hides the problem.
PERMANENT_OS_ERRORS: tuple[type[OSError], ...] = (PermissionError, NotADirectoryError, IsADirectoryError)


def has_new_version(latest_version: int | None, *, baseline: int, matching: Sequence[object] | None = None) -> bool:
    """Whether there is a new version to report.

    Args:
        latest_version: the table's newest version, None when the table does not exist.
        baseline: the version already known (``-1``: no table was known).
        matching: with an operations filter, the new commits that pass it; None without a filter.

    Example:
        >>> has_new_version(5, baseline=4), has_new_version(4, baseline=4), has_new_version(None, baseline=-1)
        (True, False, False)
        >>> has_new_version(5, baseline=4, matching=[])
        False
    """
    if latest_version is None or latest_version == baseline:
        return False
    # latest < baseline: the table was recreated, which is news too.
    return matching is None or len(matching) > 0


@dataclass(frozen=True, slots=True)
class CommitSummary:
    """What a downstream task needs to know of one commit."""

    version: int
    timestamp: int | None
    operation: str | None
    operation_metrics: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able, with Delta's key names (``operationMetrics``)."""
        return {
            "version": self.version,
            "timestamp": self.timestamp,
            "operation": self.operation,
            "operationMetrics": dict(self.operation_metrics),
        }


@dataclass(frozen=True, slots=True)
class NewCommits:
    """The answer of ``new_commits``: the newest version and the commits after the baseline."""

    location: str
    baseline: int
    latest_version: int | None
    commits: tuple[CommitSummary, ...] = ()
    operations: tuple[str, ...] | None = None
    recreated: bool = False
    missing: tuple[int, ...] = ()
    table_id: str | None = None

    @property
    def has_new_version(self) -> bool:
        """Whether this is news worth reporting (see ``has_new_version``)."""
        return has_new_version(
            self.latest_version, baseline=self.baseline, matching=self.commits if self.operations else None
        )

    @property
    def previous_version(self) -> int | None:
        """The version before the reported range; None when the table is new or was recreated."""
        return None if self.recreated or self.baseline < 0 else self.baseline

    @property
    def start_version(self) -> int:
        """The first version of the reported range (``previous_version + 1``, or 0)."""
        return 0 if self.previous_version is None else self.previous_version + 1

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary: what the sensor pushes to XCom and the triggers put in events."""
        return {
            "table": self.location,
            "version": self.latest_version,
            "previous_version": self.previous_version,
            "start_version": self.start_version,
            "end_version": self.latest_version,
            "recreated": self.recreated,
            "table_id": self.table_id,
            "operations": list(self.operations) if self.operations else None,
            "commits": [c.to_dict() for c in self.commits],
            "missing_versions": list(self.missing),
        }


def _is_transient(err: BaseException) -> bool:
    if isinstance(err, (*PERMANENT_OS_ERRORS, DeltaError)):
        return False
    return isinstance(err, OSError | TimeoutError | ConnectionError)


def _probe_latest(storage: Storage, baseline: int) -> int | None:
    """The newest version, probing forward from ``baseline``; None when there is no table."""
    if baseline >= 0:
        # One LIST from the baseline on an object store; two existence checks on a local disk.
        found = newest_from(storage, baseline)
        if found is not None:
            return found
    # No baseline, or its commit is gone (cleanup past it, table deleted or recreated): ask the log,
    # which trusts _last_checkpoint and probes from there.
    try:
        return _latest_version(storage, location=storage.root)
    except TableNotFoundError:
        _raise_if_not_delta(storage)
        return None


def _raise_if_not_delta(storage: Storage) -> None:
    """No log: a missing or empty location is "not yet"; files without a log are not a Delta table."""
    root = storage.root
    if isinstance(storage, LocalStorage) and os.path.isfile(root):
        raise NotADeltaTableError(f"Cannot watch table {root!r}: it is a file, not a Delta table folder", location=root)
    files = [f.name for f in storage.list_dir("") if not f.name.startswith((".", "_"))]
    if files:
        raise NotADeltaTableError(
            f"Cannot watch table {root!r}: it holds files ({files[0]!r}, ...) but no {LOG_DIR}; it is not a "
            "Delta table. Point the sensor at the table's root folder.",
            location=root,
        )


def _summary(storage: Storage, version: int) -> CommitSummary | None:
    """The commitInfo of one commit (None when the file was cleaned up)."""
    path = commit_path(version)
    try:
        data = storage.read_bytes(path)
    except FileNotFoundError:
        return None
    info: dict[str, Any] = {}
    for line in data.splitlines():
        # Writers put commitInfo first; stop at it instead of parsing every add action.
        if b'"commitInfo"' in line:
            parsed = orjson.loads(line)
            if isinstance(parsed, dict) and isinstance(parsed.get("commitInfo"), dict):
                info = parsed["commitInfo"]
                break
    timestamp = info.get("inCommitTimestamp") or info.get("timestamp")
    if not isinstance(timestamp, int):
        timestamp = storage.modification_time(path)
    metrics = info.get("operationMetrics")
    operation = info.get("operation")
    return CommitSummary(
        version=version,
        timestamp=timestamp,
        operation=operation if isinstance(operation, str) else None,
        operation_metrics=metrics if isinstance(metrics, dict) else {},
    )


def _sense(
    storage: Storage, location: str, baseline: int, operations: tuple[str, ...] | None, known_id: str | None
) -> NewCommits:
    latest = _probe_latest(storage, baseline)
    if latest is None or latest == baseline:
        return NewCommits(location, baseline, latest, operations=operations, table_id=known_id)
    current_id = read_table_id(storage) if known_id is not None or baseline < 0 else None
    recreated = latest < baseline or (known_id is not None and current_id is not None and current_id != known_id)
    first = 0 if recreated else baseline + 1
    wanted = {op.upper() for op in operations} if operations else None
    commits: list[CommitSummary] = []
    missing: list[int] = []
    for version in range(first, latest + 1):
        summary = _summary(storage, version)
        if summary is None:
            missing.append(version)
        elif wanted is None or (summary.operation or "").upper() in wanted:
            commits.append(summary)
    return NewCommits(
        location, baseline, latest, tuple(commits), operations, recreated, tuple(missing), current_id or known_id
    )


def new_commits(
    location: str,
    after_version: int | None,
    operations: Collection[str] | None = None,
    *,
    storage_options: Mapping[str, str] | None = None,
    storage: Storage | None = None,
    table_id: str | None = None,
    attempts: int = 3,
    retry_wait: float = 0.2,
    sleep: Callable[[float], object] = time.sleep,
) -> NewCommits:
    """The newest version of the table at ``location`` and its commits after ``after_version``.

    Args:
        location: the table's path or URI.
        after_version: the version already known; None or -1 when no table was known.
        operations: only report commits whose ``operation`` is one of these (case-insensitive),
            e.g. ``["WRITE", "MERGE"]``; the range still ends at the newest version.
        storage_options: object-store options for the location.
        storage: use this storage instead of opening ``location`` (tests, callers holding one).
        table_id: the table's ``metaData.id`` at the baseline; a different id now means the table was
            recreated (``recreated=True``, range ``0..latest``). None: compare versions only.
        attempts: tries for transient read errors before giving up.
        retry_wait: seconds between those tries (doubling).
        sleep: the sleep function (tests pass a no-op).

    Returns:
        A ``NewCommits``; ``latest_version`` is None while the table does not exist; ``table_id`` is
        the table's id when it was read (new versions) or the one given.

    Raises:
        NotADeltaTableError: the location holds files but no Delta log.
        PermissionError: the log cannot be read.
        OSError: a transient error persisted through every attempt.

    Example:
        >>> new_commits("/data/events", after_version=None).latest_version  # doctest: +SKIP
        43
    """
    baseline = -1 if after_version is None or after_version < 0 else int(after_version)
    ops = tuple(operations) if operations else None
    store = storage if storage is not None else storage_for(str(location), storage_options)
    return _with_retries(
        lambda: _sense(store, str(location), baseline, ops, table_id), attempts, retry_wait, sleep
    )


def current_version(
    location: str,
    *,
    storage_options: Mapping[str, str] | None = None,
    storage: Storage | None = None,
    attempts: int = 3,
    retry_wait: float = 0.2,
    sleep: Callable[[float], object] = time.sleep,
) -> int:
    """The table's newest version now, ``-1`` when there is no table yet (a sensor's first baseline).

    Raises:
        NotADeltaTableError: the location holds files but no Delta log.

    Example:
        >>> current_version("/data/not-yet-created")  # doctest: +SKIP
        -1
    """
    store = storage if storage is not None else storage_for(str(location), storage_options)
    latest = _with_retries(lambda: _probe_latest(store, -1), attempts, retry_wait, sleep)
    return -1 if latest is None else latest


def _with_retries(fn: Callable[[], T], attempts: int, wait: float, sleep: Callable[[float], object]) -> T:
    for attempt in range(1, max(1, attempts) + 1):
        try:
            return fn()
        except Exception as err:
            if not _is_transient(err) or attempt >= attempts:
                raise
            sleep(wait * 2 ** (attempt - 1))
    raise AssertionError("unreachable")  # pragma: no cover


def current_table_id(
    location: str,
    *,
    storage_options: Mapping[str, str] | None = None,
    storage: Storage | None = None,
    attempts: int = 3,
    retry_wait: float = 0.2,
    sleep: Callable[[float], object] = time.sleep,
) -> str | None:
    """The table's ``metaData.id`` now (None when there is no table yet): a sensor's baseline identity.

    Example:
        >>> current_table_id("/data/events")  # doctest: +SKIP
        'c5b0d2e4-3f6a-4b7e-9a51-0c2d1e8f7a93'
    """
    store = storage if storage is not None else storage_for(str(location), storage_options)
    return _with_retries(lambda: read_table_id(store), attempts, retry_wait, sleep)

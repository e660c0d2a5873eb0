"""Change data feed reader: the row-level changes between two versions of a table.

Delta's rules (PROTOCOL.md "Change Data Files", ``CDCReader`` in Delta Lake on Spark):

- Per commit: when it has ``cdc`` actions, its changes are the rows of those files and only those
  (its ``add``/``remove`` actions are ignored); otherwise ``add`` actions with ``dataChange=true``
  are ``insert`` rows and ``remove`` actions with ``dataChange=true`` are ``delete`` rows (the file's
  live rows, its deletion vector applied). A file removed and re-added in the same commit with
  another deletion vector contributes only the rows whose deletion changed: newly deleted rows are
  ``delete``, rows no longer deleted are ``insert``. A MERGE that reports no inserted, updated or
  deleted rows contributes nothing.
- Every version in the range must have been committed with ``delta.enableChangeDataFeed=true``
  (the start version's metadata, and every ``metaData`` action inside the range).
- Bounds are inclusive. A start timestamp maps to the first commit at or after it, an end
  timestamp to the last commit at or before it. A start after the latest version (or timestamp) is
  an error, or an empty result with ``allow_out_of_range``. An end version after the latest is
  clamped to the latest; an end timestamp after the latest commit is an error unless
  ``allow_out_of_range``.
- The result has the table's columns, from the latest version's schema (the end version's when
  the table uses column mapping), plus ``_change_type``, ``_commit_version`` and
  ``_commit_timestamp``. A range that crosses a schema change the read schema cannot represent
  (a dropped, renamed or retyped column, a column made NOT NULL) fails.

Example:
    >>> from airflow_provider_delta.core import DeltaTable
    >>> t = DeltaTable("/data/events")                          # doctest: +SKIP
    >>> batch = read_changes(t.snapshot, starting_version=3, max_files=100)  # doctest: +SKIP
    >>> batch.changes.column_names[-3:], batch.next_starting_version        # doctest: +SKIP
    (['_change_type', '_commit_version', '_commit_timestamp'], 7)
"""

from __future__ import annotations

import bisect
import datetime as dt
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pyarrow as pa

from airflow_provider_delta.core.actions import (
    AddCDCFile,
    AddFile,
    CommitInfo,
    Metadata,
    RemoveFile,
    action_from_dict,
)
from airflow_provider_delta.core.change_data import (
    CDF_METADATA_COLUMNS,
    CDF_PROPERTY,
    CHANGE_TYPE,
    cdf_enabled,
)
from airflow_provider_delta.core.log.context import reading
from airflow_provider_delta.core.log.history import ict_enablement_version, to_epoch_millis
from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.log.replay import commit_info_of, read_commit
from airflow_provider_delta.core.log.segment import list_log
from airflow_provider_delta.core.parallel import run_parallel
from airflow_provider_delta.core.read.deletion_vectors import (
    DeletionVectorDescriptor,
    deletion_vector_opener,
    read_deleted_rows,
)
from airflow_provider_delta.core.read.scan import ScanPlan, read_file
from airflow_provider_delta.core.schema.arrow import to_arrow_schema
from airflow_provider_delta.core.schema.conform import as_schema
from airflow_provider_delta.core.schema.mapping import column_mapping_mode, physical_name
from airflow_provider_delta.core.schema.types import (
    ArrayType,
    DataType,
    MapType,
    StringType,
    StructField,
    StructType,
    schema_from_json,
)
from airflow_provider_delta.core.snapshot import load_snapshot
from airflow_provider_delta.exceptions import (
    ChangeDataNotRecordedError,
    ChangeDataSchemaError,
    DataFileError,
    DeltaError,
    VersionNotFoundError,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_delta.core.log.history import TimestampLike
    from airflow_provider_delta.core.snapshot import Snapshot
    from airflow_provider_delta.core.storage import Storage
    from airflow_provider_delta.core.write.target import TableLayout

__all__ = [
    "CDF_METADATA_COLUMNS",
    "ChangeBatch",
    "ChangeCommit",
    "ChangeFileRead",
    "CommitTimeline",
    "change_file_reads",
    "changes_schema",
    "check_change_range",
    "load_change_commit",
    "read_change_file",
    "read_changes",
]

_TIMESTAMP = pa.timestamp("us", tz="UTC")
_MERGE_ROW_METRICS = ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted")


@dataclass(frozen=True)
class ChangeBatch:
    """The changes of whole commits ``start_version`` to ``end_version``, and where to go on.

    Attributes:
        changes: the change rows (table columns plus ``_change_type``, ``_commit_version``,
            ``_commit_timestamp``), ordered by commit version.
        start_version: the first version read.
        end_version: the last version read; ``start_version - 1`` when no commit was read.
        requested_end_version: the end of the requested range (after clamping to the latest).
        num_files: files read (change data files, or data files added or removed).
        num_bytes: their size in bytes.

    Example:
        >>> batch = read_changes(snapshot, starting_version=0, max_files=10)  # doctest: +SKIP
        >>> while not batch.is_complete:                                      # doctest: +SKIP
        ...     batch = read_changes(snapshot, starting_version=batch.next_starting_version, max_files=10)
    """

    changes: pa.Table
    start_version: int
    end_version: int
    requested_end_version: int
    num_files: int = 0
    num_bytes: int = 0

    @property
    def next_starting_version(self) -> int:
        """The version the next incremental read starts from."""
        return self.end_version + 1

    @property
    def is_complete(self) -> bool:
        """Whether the whole requested range has been read (rate limits may stop a batch early)."""
        return self.end_version >= self.requested_end_version


def changes_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema of change rows for a table schema: its columns plus the CDF metadata columns.

    Example:
        >>> from airflow_provider_delta.core.schema.types import LongType
        >>> changes_schema(StructType((StructField("id", LongType()),))).names
        ['id', '_change_type', '_commit_version', '_commit_timestamp']
    """
    base = to_arrow_schema(schema)
    return pa.schema([
        *base,
        pa.field("_change_type", pa.string()),
        pa.field("_commit_version", pa.int64()),
        pa.field("_commit_timestamp", _TIMESTAMP),
    ])


def read_changes(
    snapshot: Snapshot,
    *,
    starting_version: int | None = None,
    ending_version: int | None = None,
    starting_timestamp: TimestampLike | None = None,
    ending_timestamp: TimestampLike | None = None,
    allow_out_of_range: bool = False,
    max_files: int | None = None,
    max_bytes: int | None = None,
) -> ChangeBatch:
    """Read the change data feed of a table (see the module docstring for the rules).

    Args:
        snapshot: the table at its latest version (older snapshots are advanced first).
        starting_version: first version, inclusive; 0 when neither it nor ``starting_timestamp``
            is given.
        ending_version: last version, inclusive; the latest when neither it nor
            ``ending_timestamp`` is given. A version after the latest is clamped.
        starting_timestamp: instead of ``starting_version``: ``yyyy-MM-dd[ HH:mm:ss[.SSS]]`` (UTC),
            ISO-8601, a datetime or epoch milliseconds; the first commit at or after it.
        ending_timestamp: instead of ``ending_version``: the last commit at or before it.
        allow_out_of_range: a start after the latest version gives an empty batch and an end
            timestamp after the latest commit is clamped, instead of errors.
        max_files: read whole commits until the next one would take the batch over this many
            files (at least one commit is always read).
        max_bytes: the same, in bytes of the files read.

    Returns:
        A :class:`ChangeBatch`; ``batch.changes`` is the table of change rows.

    Raises:
        VersionNotFoundError: the start is after the latest version or commit, the end is before the
            start, or a timestamp is outside the table's history.
        ChangeDataNotRecordedError: a version in the range was written without the change feed on.
        ChangeDataSchemaError: the range crosses a dropped, renamed or retyped column.
        DeltaError: invalid arguments.
    """
    _check_arguments(starting_version, ending_version, starting_timestamp, ending_timestamp, max_files, max_bytes)
    latest = snapshot.advance()
    timeline = CommitTimeline(latest.storage, latest.configuration)
    start, end = _resolve_range(
        latest, timeline, starting_version, ending_version, starting_timestamp, ending_timestamp,
        allow_out_of_range=allow_out_of_range,
    )
    if start > end:
        return ChangeBatch(changes_schema(latest.schema).empty_table(), start, start - 1, end)
    commits = _select_commits(latest, start, end, max_files=max_files, max_bytes=max_bytes)
    batch_end = commits[-1].version
    read_snapshot = _read_schema_snapshot(latest, start, batch_end)
    check_change_range(latest, read_snapshot, start, commits)
    table = _read_commits(read_snapshot, commits, timeline)
    return ChangeBatch(
        changes=table,
        start_version=start,
        end_version=batch_end,
        requested_end_version=end,
        num_files=sum(c.num_files for c in commits),
        num_bytes=sum(c.num_bytes for c in commits),
    )


# --- arguments and range ------------------------------------------------------------------------------


def _check_arguments(
    starting_version: Any, ending_version: Any, starting_timestamp: Any, ending_timestamp: Any,
    max_files: Any, max_bytes: Any,
) -> None:
    if starting_version is not None and starting_timestamp is not None:
        raise DeltaError("Cannot read changes: pass starting_version or starting_timestamp, not both")
    if ending_version is not None and ending_timestamp is not None:
        raise DeltaError("Cannot read changes: pass ending_version or ending_timestamp, not both")
    for name, value in (("starting_version", starting_version), ("ending_version", ending_version)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise DeltaError(f"Cannot read changes: {name} must be a version >= 0, found {value!r}")
    for name, value in (("max_files", max_files), ("max_bytes", max_bytes)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise DeltaError(f"Cannot read changes: {name} must be an integer >= 1, found {value!r}")


def _human(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).isoformat(timespec="milliseconds")


def _resolve_range(
    latest: Snapshot,
    timeline: CommitTimeline,
    starting_version: int | None,
    ending_version: int | None,
    starting_timestamp: TimestampLike | None,
    ending_timestamp: TimestampLike | None,
    *,
    allow_out_of_range: bool,
) -> tuple[int, int]:
    """(start, end) versions; start > end means an empty result."""
    where = f"Cannot read changes of table {latest.location!r}"
    last = latest.version
    if starting_timestamp is not None:
        target = to_epoch_millis(starting_timestamp)
        found = timeline.first_at_or_after(target)
        if found is None:
            if allow_out_of_range:
                return last + 1, last
            raise VersionNotFoundError(
                f"{where}: starting timestamp {_human(target)} is after the latest commit (version {last} at "
                f"{_human(timeline.timestamp(last))}). Help: pass allow_out_of_range=True for an empty result.",
                latest=last,
            )
        start = found
    else:
        start = starting_version if starting_version is not None else 0
        if start > last:
            if allow_out_of_range:
                return start, start - 1
            raise VersionNotFoundError(
                f"{where}: starting version {start} is after the latest version {last}. Help: pass "
                "allow_out_of_range=True for an empty result.",
                version=start,
                latest=last,
            )
    end = _resolve_end(where, last, timeline, ending_version, ending_timestamp, allow_out_of_range)
    if end < start:
        if starting_timestamp is not None and ending_timestamp is not None and end == start - 1:
            # Both timestamps fall between the same two commits: nothing changed in between.
            if to_epoch_millis(starting_timestamp) > to_epoch_millis(ending_timestamp):
                raise VersionNotFoundError(f"{where}: the ending timestamp is before the starting timestamp")
            return start, end
        raise VersionNotFoundError(
            f"{where}: ending version {end} is before starting version {start}", version=end, latest=last
        )
    return start, end


def _resolve_end(
    where: str,
    last: int,
    timeline: CommitTimeline,
    ending_version: int | None,
    ending_timestamp: TimestampLike | None,
    allow_out_of_range: bool,
) -> int:
    if ending_timestamp is None:
        # Delta clamps an ending version after the latest one (it reads the commits that exist).
        return last if ending_version is None else min(ending_version, last)
    target = to_epoch_millis(ending_timestamp)
    if target > timeline.timestamp(last):
        if allow_out_of_range:
            return last
        raise VersionNotFoundError(
            f"{where}: ending timestamp {_human(target)} is after the latest commit (version {last} at "
            f"{_human(timeline.timestamp(last))}). Help: pass allow_out_of_range=True to read up to the latest.",
            latest=last,
        )
    found = timeline.last_at_or_before(target)
    if found is None:
        first = timeline.versions[0]
        raise VersionNotFoundError(
            f"{where}: ending timestamp {_human(target)} is before the earliest available commit (version "
            f"{first} at {_human(timeline.timestamp(first))})",
            earliest=first,
            latest=last,
        )
    return found


class CommitTimeline:
    """Commit timestamps as Delta defines them: in-commit timestamps, else monotonic file times."""

    def __init__(self, storage: Storage, configuration: Mapping[str, str]) -> None:
        self.storage = storage
        listing = list_log(storage)
        self.versions = sorted(listing.commits)
        self._file_times: dict[int, int] = {}
        previous = -1
        for v in self.versions:
            # Delta makes file times monotonic: a commit is never older than the one before it.
            previous = max(listing.commits[v].modification_time, previous + 1)
            self._file_times[v] = previous
        self._ict_from = ict_enablement_version(configuration)
        self._ict: dict[int, int] = {}

    def timestamp(self, version: int, info: CommitInfo | None = None) -> int:
        """The commit timestamp (ms) of ``version``; ``info`` spares reading its commitInfo again."""
        if self._ict_from is None or version < self._ict_from:
            return self._file_times.get(version, 0)
        if version not in self._ict:
            if info is None:
                info = commit_info_of(read_commit(self.storage, commit_path(version), version))
            ict = info.in_commit_timestamp if info is not None else None
            self._ict[version] = ict if ict is not None else self._file_times.get(version, 0)
        return self._ict[version]

    def first_at_or_after(self, target: int) -> int | None:
        """The first version committed at or after ``target`` (ms), or None."""
        i = bisect.bisect_left(self.versions, target, key=self.timestamp)
        return self.versions[i] if i < len(self.versions) else None

    def last_at_or_before(self, target: int) -> int | None:
        """The last version committed at or before ``target`` (ms), or None."""
        i = bisect.bisect_right(self.versions, target, key=self.timestamp)
        return self.versions[i - 1] if i > 0 else None


# --- commits ------------------------------------------------------------------------------------------


@dataclass
class ChangeCommit:
    """One commit's actions that matter to the change feed (see :func:`load_change_commit`)."""

    version: int
    info: CommitInfo | None = None
    metadata: Metadata | None = None
    cdc: list[AddCDCFile] = field(default_factory=list)
    adds: list[AddFile] = field(default_factory=list)
    removes: list[RemoveFile] = field(default_factory=list)

    @property
    def uses_cdc_files(self) -> bool:
        """PROTOCOL.md: a commit with cdc actions is read from them only."""
        return bool(self.cdc)

    @property
    def is_no_op_merge(self) -> bool:
        """A MERGE that changed no row (Delta's CDCReader ignores its file actions)."""
        if self.info is None or self.info.operation != "MERGE":
            return False
        metrics = self.info.info.get("operationMetrics") or {}
        return all(str(metrics.get(k)) == "0" for k in _MERGE_ROW_METRICS)

    @property
    def num_files(self) -> int:
        """Files this commit's changes are read from."""
        return len(self.cdc) if self.cdc else len(self.adds) + len(self.removes)

    @property
    def num_bytes(self) -> int:
        """Bytes of those files."""
        if self.cdc:
            return sum(c.size for c in self.cdc)
        return sum(a.size for a in self.adds) + sum(r.size or 0 for r in self.removes)


def load_change_commit(storage: Storage, version: int) -> ChangeCommit:
    """The change-feed actions of commit ``version`` (``cdc``, dataChange ``add``/``remove``, metadata).

    Raises:
        LogCorruptedError: the commit file is missing or unreadable (naming the table, version, file).
    """
    path = commit_path(version)
    with reading(storage.root, version, path, what="commit"):
        return _change_commit(ChangeCommit(version), read_commit(storage, path, version))


def _change_commit(commit: ChangeCommit, actions: list[dict[str, Any]]) -> ChangeCommit:
    for raw in actions:
        action = action_from_dict(raw)
        if isinstance(action, AddCDCFile):
            commit.cdc.append(action)
        elif isinstance(action, AddFile):
            if action.data_change:
                commit.adds.append(action)
        elif isinstance(action, RemoveFile):
            if action.data_change:
                commit.removes.append(action)
        elif isinstance(action, Metadata):
            commit.metadata = action
        elif isinstance(action, CommitInfo):
            commit.info = action
    return commit


def _select_commits(
    latest: Snapshot, start: int, end: int, *, max_files: int | None, max_bytes: int | None
) -> list[ChangeCommit]:
    """The commits start..end, stopping before the one that would exceed a rate limit."""
    out: list[ChangeCommit] = []
    files = size = 0
    for v in range(start, end + 1):
        try:
            commit = load_change_commit(latest.storage, v)
        except DeltaError as err:
            if latest.storage.exists(commit_path(v)):
                raise
            raise VersionNotFoundError(
                f"Cannot read changes of table {latest.location!r} at version {v}: its commit file has "
                "been cleaned up (delta.logRetentionDuration)",
                version=v,
                latest=latest.version,
            ) from err
        over_files = max_files is not None and files + commit.num_files > max_files
        over_bytes = max_bytes is not None and size + commit.num_bytes > max_bytes
        if out and (over_files or over_bytes):
            break
        out.append(commit)
        files += commit.num_files
        size += commit.num_bytes
    return out


def _metadata_at(latest: Snapshot, version: int) -> Metadata:
    if version == latest.version:
        return latest.metadata
    return load_snapshot(latest.storage, latest.location, version).metadata


def _read_schema_snapshot(latest: Snapshot, start: int, end: int) -> Snapshot:
    """The latest version's schema; the end version's when column mapping is on at start, end or latest."""
    if end == latest.version:
        return latest
    mapped = any(
        column_mapping_mode(md.configuration) != "none"
        for md in (latest.metadata, _metadata_at(latest, start))
    )
    end_snapshot = load_snapshot(latest.storage, latest.location, end)
    if mapped or column_mapping_mode(end_snapshot.configuration) != "none":
        return end_snapshot
    return latest


def check_change_range(
    latest: Snapshot, read: TableLayout, start: int, commits: Sequence[ChangeCommit]
) -> None:
    """Check that commits ``start``.. recorded changes and can be read with ``read``'s schema.

    Raises:
        ChangeDataNotRecordedError: the feed was off at ``start`` or switched off inside the range.
        ChangeDataSchemaError: a version's schema cannot be read as ``read``'s.
    """
    where = f"Cannot read changes of table {latest.location!r} from version {start} to {commits[-1].version}"
    start_metadata = commits[0].metadata or _metadata_at(latest, start)
    _require_cdf(where, start_metadata, start)
    read_schema = read.schema
    mapped = column_mapping_mode(read.configuration) != "none"
    for commit in commits:
        if commit.metadata is None:
            continue
        _require_cdf(where, commit.metadata, commit.version)
        if commit.version > start:
            _check_schema(where, commit.metadata, commit.version, read_schema, read.version, mapped)
    _check_schema(where, start_metadata, start, read_schema, read.version, mapped)


def _require_cdf(where: str, metadata: Metadata, version: int) -> None:
    if not cdf_enabled(metadata.configuration):
        raise ChangeDataNotRecordedError(
            f"{where}: the change data feed was not enabled at version {version}, so its changes were not "
            f"recorded. Help: start after the version that set {CDF_PROPERTY}=true.",
            version=version,
        )


def _check_schema(
    where: str, metadata: Metadata, version: int, read_schema: StructType, read_version: int, mapped: bool
) -> None:
    schema = schema_from_json(metadata.schema_string)
    problem = (_mapping_change(schema, read_schema) if mapped else None) or _read_incompatibility(
        schema, read_schema, ""
    )
    if problem:
        raise ChangeDataSchemaError(
            f"{where}: the schema at version {version} is not compatible with the read schema of version "
            f"{read_version}: {problem}. Help: read the changes before and after that schema change separately.",
            version=version,
        )


def _mapping_change(old: StructType, new: StructType) -> str | None:
    """A rename or drop between two column-mapped schemas (by physical name), or None."""
    def paths(s: StructType) -> dict[tuple[str, ...], tuple[str, ...]]:
        out: dict[tuple[str, ...], tuple[str, ...]] = {}

        def visit(t: DataType, logical: tuple[str, ...], physical: tuple[str, ...]) -> None:
            if isinstance(t, StructType):
                for f in t.fields:
                    lp, pp = (*logical, f.name), (*physical, physical_name(f))
                    out[pp] = lp
                    visit(f.type, lp, pp)
            elif isinstance(t, ArrayType):
                visit(t.element_type, (*logical, "element"), (*physical, "element"))
            elif isinstance(t, MapType):
                visit(t.key_type, (*logical, "key"), (*physical, "key"))
                visit(t.value_type, (*logical, "value"), (*physical, "value"))

        visit(s, (), ())
        return out

    new_paths = paths(new)
    for physical, logical in paths(old).items():
        now = new_paths.get(physical)
        if now is None:
            return f"column {'.'.join(logical)!r} was dropped"
        if [n.lower() for n in now] != [n.lower() for n in logical]:
            return f"column {'.'.join(logical)!r} was renamed to {'.'.join(now)!r}"
    return None


def _read_incompatibility(old: DataType, new: DataType, path: str) -> str | None:
    """Why data written with ``old`` cannot be read as ``new`` (only added columns are fine), or None."""
    if isinstance(old, StructType) and isinstance(new, StructType):
        for f in old.fields:
            name = f"{path}.{f.name}" if path else f.name
            g = new.get(f.name, case_sensitive=False)
            if g is None:
                return f"column {name!r} was dropped or renamed"
            if f.nullable and not g.nullable:
                return f"column {name!r} became NOT NULL"
            problem = _read_incompatibility(f.type, g.type, name)
            if problem:
                return problem
        return None
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        return _read_incompatibility(old.element_type, new.element_type, f"{path}.element")
    if isinstance(old, MapType) and isinstance(new, MapType):
        return _read_incompatibility(old.key_type, new.key_type, f"{path}.key") or _read_incompatibility(
            old.value_type, new.value_type, f"{path}.value"
        )
    if old.simple_string() != new.simple_string():
        return f"column {path!r} changed type from {old.simple_string()} to {new.simple_string()}"
    return None


# --- reading rows -------------------------------------------------------------------------------------

ChangeFileKind = Literal["cdc", "insert", "delete", "dv"]


@dataclass(frozen=True)
class ChangeFileRead:
    """One file's share of the change feed: picklable and JSON-able, so other processes can read it.

    Attributes:
        version: the commit version.
        timestamp: the commit timestamp (ms, as :class:`CommitTimeline` defines it).
        kind: ``cdc`` (a change data file), ``insert`` (an added file), ``delete`` (a removed file) or
            ``dv`` (a file removed and re-added with another deletion vector).
        action: the ``cdc``/``add`` action's JSON object (for ``delete`` the remove action's).
        removed: for ``dv``: the remove action's JSON object.

    Example:
        >>> r = ChangeFileRead(3, 0, "insert", {"path": "a.parquet", "partitionValues": {}, "size": 1,
        ...                                      "modificationTime": 0, "dataChange": True})
        >>> ChangeFileRead.from_dict(r.to_dict()) == r
        True
    """

    version: int
    timestamp: int
    kind: ChangeFileKind
    action: Mapping[str, Any]
    removed: Mapping[str, Any] | None = None

    @property
    def path(self) -> str:
        """The data (or change data) file's path as the log records it."""
        return str(self.action["path"])

    @property
    def size(self) -> int:
        """The file's size in bytes (0 when the log does not say)."""
        return int(self.action.get("size") or 0)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = {"version": self.version, "timestamp": self.timestamp, "kind": self.kind, "action": dict(self.action)}
        if self.removed is not None:
            out["removed"] = dict(self.removed)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ChangeFileRead:
        """Build from :meth:`to_dict`'s output."""
        return cls(int(d["version"]), int(d["timestamp"]), d["kind"], d["action"], d.get("removed"))


def change_file_reads(commit: ChangeCommit, timestamp: int) -> list[ChangeFileRead]:
    """The files a commit's changes are read from, in the order ``read_changes`` returns their rows.

    Example:
        >>> [r.kind for r in change_file_reads(load_change_commit(storage, 3), 0)]  # doctest: +SKIP
        ['delete', 'insert']
    """
    v = commit.version
    if commit.uses_cdc_files:
        return [ChangeFileRead(v, timestamp, "cdc", c.to_dict()) for c in commit.cdc]
    if commit.is_no_op_merge:
        return []
    adds = {a.path: a for a in commit.adds}
    removes = {r.path: r for r in commit.removes}
    reads: list[ChangeFileRead] = []
    for path, r in removes.items():
        if path in adds:
            reads.append(ChangeFileRead(v, timestamp, "dv", adds[path].to_dict(), r.to_dict()))
        else:
            reads.append(ChangeFileRead(v, timestamp, "delete", _as_add(r).to_dict()))
    reads.extend(ChangeFileRead(v, timestamp, "insert", a.to_dict()) for path, a in adds.items() if path not in removes)
    return reads


def read_change_file(read: TableLayout, change: ChangeFileRead) -> pa.Table:
    """The change rows of one file under ``read``'s schema, with the three change feed columns.

    Raises:
        DataFileError: the file (or its deletion vector) is missing or unreadable.
    """
    if change.kind == "cdc":
        rows = _read_cdc_file(read, AddCDCFile.from_dict(change.action))
    elif change.kind == "dv":
        assert change.removed is not None
        rows = _read_dv_change(read, RemoveFile.from_dict(change.removed), AddFile.from_dict(change.action))
    else:
        rows = _read_tagged(read, AddFile.from_dict(change.action), change.kind)
    schema = changes_schema(read.schema)
    n = rows.num_rows
    rows = rows.append_column("_commit_version", pa.array(np.full(n, change.version, dtype=np.int64)))
    stamps = pa.array(np.full(n, change.timestamp * 1000, dtype=np.int64)).cast(_TIMESTAMP)
    rows = rows.append_column("_commit_timestamp", stamps)
    return as_schema(rows.select(schema.names), schema)


def _read_commits(read: Snapshot, commits: Sequence[ChangeCommit], timeline: CommitTimeline) -> pa.Table:
    schema = changes_schema(read.schema)
    reads: list[ChangeFileRead] = []
    for commit in commits:
        reads.extend(change_file_reads(commit, timeline.timestamp(commit.version, commit.info)))
    tables = run_parallel(partial(read_change_file, read), reads)
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _read_tagged(read: TableLayout, add: AddFile, change_type: str) -> pa.Table:
    return _tagged(_read_rows(read, add, keep_deleted=False), change_type)


def _as_add(r: RemoveFile) -> AddFile:
    return AddFile(r.path, r.partition_values or {}, r.size or 0, 0, deletion_vector=r.deletion_vector)


def _tagged(rows: pa.Table, change_type: str) -> pa.Table:
    return rows.append_column(CHANGE_TYPE, pa.array([change_type] * rows.num_rows, pa.string()))


def _plan(read: TableLayout, extra: Sequence[StructField] = ()) -> Any:
    schema = read.schema
    part_names = {c.lower() for c in read.partition_columns}
    data = StructType((*(f for f in schema if f.name.lower() not in part_names), *extra))
    return ScanPlan(
        files=(),
        data_schema=data,
        partition_fields=tuple(f for f in schema if f.name.lower() in part_names),
        output_schema=to_arrow_schema(schema),
        columns=schema.names,
        predicate=None,
        skipped_files=0,
    )


def _read_rows(read: TableLayout, add: AddFile, *, keep_deleted: bool) -> pa.Table:
    """A data file's rows under the read schema; with ``keep_deleted`` the deletion vector is ignored."""
    if keep_deleted:
        add = add._replace(deletion_vector=None)
    table = read_file(read, add, _plan(read), column_mapping_mode(read.configuration))
    return table.select(read.schema.names)


def _read_cdc_file(read: TableLayout, cdc: AddCDCFile) -> pa.Table:
    plan = _plan(read, (StructField(CHANGE_TYPE, StringType()),))
    add = AddFile(cdc.path, cdc.partition_values, cdc.size, 0, data_change=False)
    table = read_file(read, add, plan, column_mapping_mode(read.configuration))
    return table.select([*read.schema.names, CHANGE_TYPE])


def _read_dv_change(read: TableLayout, remove: RemoveFile, add: AddFile) -> pa.Table:
    """Rows of a file re-added with another deletion vector: newly deleted rows, and undeleted ones."""
    def deleted(dv: Mapping[str, Any] | None) -> np.ndarray[Any, Any]:
        if not dv:
            return np.empty(0, dtype=np.uint64)
        with reading(read.location, read.version, add.path, what="deletion vector of data file",
                     error=lambda message, version, path: DataFileError(message, path=path)):
            return read_deleted_rows(
                DeletionVectorDescriptor.from_dict(dv), read.storage.root,
                open_file=deletion_vector_opener(read.storage),
            )

    before, after = deleted(remove.deletion_vector), deleted(add.deletion_vector)
    rows = _read_rows(read, add, keep_deleted=True)
    n = rows.num_rows
    newly_deleted = np.setdiff1d(after, before)
    undeleted = np.setdiff1d(before, after)
    parts = []
    for indexes, change_type in ((newly_deleted, "delete"), (undeleted, "insert")):
        picked = indexes[indexes < np.uint64(n)].astype(np.int64)
        if picked.size:
            parts.append(_tagged(rows.take(pa.array(picked)), change_type))
    return pa.concat_tables(parts) if parts else _tagged(rows.slice(0, 0), "delete")

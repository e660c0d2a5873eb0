"""Planning an export run: its range of versions, its schema segments, and the preflight.

The range is inclusive and pinned when the run plans (rules in :func:`resolve_range`). The
segments cut the range at every commit that changes the schema (or the partitioning), so each
version is read with the schema it was written under; a version is never split. The preflight
checks, before anything is written, that the change data feed was on over the whole range and that
every commit file and every change, data and deletion-vector file the range reads still exists,
naming the first one that does not: a file removed by VACUUM is an error, never a silent gap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow.fs as pafs

from airflow_provider_delta.core.actions import Metadata
from airflow_provider_delta.core.change_data import CDF_PROPERTY, cdf_enabled
from airflow_provider_delta.core.executor.export.units import ExportUnit, units_of
from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.log.replay import read_commit
from airflow_provider_delta.core.parallel import run_parallel
from airflow_provider_delta.core.read.changes import (
    ChangeFileRead,
    CommitTimeline,
    change_file_reads,
    load_change_commit,
)
from airflow_provider_delta.core.read.deletion_vectors import DeletionVectorDescriptor
from airflow_provider_delta.core.schema.types import schema_from_json
from airflow_provider_delta.core.snapshot import load_snapshot
from airflow_provider_delta.core.write.target import WriteTarget
from airflow_provider_delta.exceptions import (
    ChangeDataMissingError,
    ChangeDataNotRecordedError,
    ExportRangeError,
    VersionNotFoundError,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_delta.core.commands.cdf_export.model import Envelope
    from airflow_provider_delta.core.snapshot import Snapshot
    from airflow_provider_delta.core.storage import Storage

__all__ = ["ExportPlan", "RangeRequest", "Segment", "plan_export", "resolve_range"]


@dataclass(frozen=True)
class RangeRequest:
    """What the caller and the sink say about the range.

    Attributes:
        watermark: the last version the sink holds (None: nothing yet).
        first_version: where the sink's export started, when it started without finishing a version.
        first_snapshot: whether that start was an initial snapshot.
        starting_version, ending_version, max_versions, initial_snapshot: the caller's options.
    """

    watermark: int | None = None
    first_version: int | None = None
    first_snapshot: bool = False
    starting_version: int | None = None
    ending_version: int | None = None
    max_versions: int | None = None
    initial_snapshot: bool = False


@dataclass(frozen=True)
class Segment:
    """Versions ``start``..``end`` read with one schema (``layout``); ``reads`` per version, in order."""

    start: int
    end: int
    layout: WriteTarget
    reads: Mapping[int, tuple[ChangeFileRead, ...]]
    snapshot: bool = False

    def units(self, envelope: Envelope) -> dict[int, list[ExportUnit]]:
        """The export units of every version (an empty list for a version without data change)."""
        return {v: units_of(v, self.reads[v], envelope=envelope, snapshot=self.snapshot) for v in sorted(self.reads)}


@dataclass(frozen=True)
class ExportPlan:
    """One run: the range, whether it is skipped, its segments and the commit timestamps (ms)."""

    start: int
    end: int
    skipped: bool
    initial_snapshot: bool = False
    segments: tuple[Segment, ...] = ()
    timestamps: Mapping[int, int] = field(default_factory=dict)

    @property
    def versions(self) -> int:
        """How many versions the run exports."""
        return 0 if self.skipped else self.end - self.start + 1


def _where(latest: Snapshot) -> str:
    return f"Cannot export changes of table {latest.location!r}"


def _end_for(start: int, last: int, request: RangeRequest) -> int:
    end = last if request.ending_version is None else min(request.ending_version, last)
    if request.max_versions is not None:
        end = min(end, start + request.max_versions - 1)
    return end


def resolve_range(latest: Snapshot, request: RangeRequest, timeline: CommitTimeline) -> tuple[int, int, bool, bool]:
    """``(start, end, initial_snapshot, skipped)`` of the run.

    - No ``starting_version``: continue at the sink's watermark + 1 (nothing new: skipped); a sink that
      has none yet starts where its export started, else at the latest version as a snapshot
      (``initial_snapshot``), else at the first version with the change data feed on.
    - A ``starting_version`` must continue the sink exactly (watermark + 1): before it is an overlap,
      after it a gap (both :class:`ExportRangeError`), unless the whole range is already in the sink
      (a retry: skipped).
    - The end is ``ending_version`` or the latest version, capped by ``max_versions``.

    Raises:
        ExportRangeError: a gap or an overlap with the sink, or ``ending_version`` before the start.
        VersionNotFoundError: ``starting_version`` is after the latest version.
        ChangeDataNotRecordedError: no version of the table has the change data feed on.
    """
    last = latest.version
    w = request.watermark
    if request.starting_version is None:
        if w is not None:
            start = w + 1
            if start > last or (request.ending_version is not None and request.ending_version < start):
                return start, start - 1, False, True
            return start, _end_for(start, last, request), False, False
        if request.first_version is not None:
            start, snapshot = request.first_version, request.first_snapshot
        elif request.initial_snapshot:
            start, snapshot = _end_for(last, last, request), True
        else:
            start, snapshot = _first_cdf_version(latest, timeline), False
    else:
        start, snapshot = request.starting_version, request.initial_snapshot
        if start > last:
            raise VersionNotFoundError(
                f"{_where(latest)}: starting_version {start} is after the latest version {last}",
                version=start, latest=last,
            )
        _check_continuation(latest, request, start, snapshot, last)
        if w is not None and _end_for(start, last, request) <= w:
            return start, _end_for(start, last, request), snapshot, True
    if request.ending_version is not None and request.ending_version < start:
        raise ExportRangeError(
            f"{_where(latest)}: ending_version {request.ending_version} is before the start {start}",
            version=request.ending_version, watermark=w,
        )
    return start, _end_for(start, last, request), snapshot, False


def _check_continuation(latest: Snapshot, request: RangeRequest, start: int, snapshot: bool, last: int) -> None:
    w = request.watermark
    if w is not None:
        if _end_for(start, last, request) <= w:
            return  # the whole range is already in the sink: a retry, skipped
        if start <= w:
            raise ExportRangeError(
                f"{_where(latest)}: starting_version {start} overlaps the sink, which already holds versions up "
                f"to {w}: versions {start} to {w} would be exported twice. Help: omit starting_version to "
                f"continue at {w + 1}.",
                version=start, watermark=w,
            )
        if start > w + 1:
            raise ExportRangeError(
                f"{_where(latest)}: starting_version {start} would leave a gap after the sink's last version {w}: "
                f"versions {w + 1} to {start - 1} would never be exported. Help: omit starting_version to "
                f"continue at {w + 1}.",
                version=start, watermark=w,
            )
    elif request.first_version is not None and (start, snapshot) != (request.first_version, request.first_snapshot):
        raise ExportRangeError(
            f"{_where(latest)}: the sink's export started at version {request.first_version} and has not "
            f"finished it; starting_version {start} would leave a gap or an overlap. Help: omit starting_version.",
            version=start,
        )


def _first_cdf_version(latest: Snapshot, timeline: CommitTimeline) -> int:
    """The first available version with the feed on (error when the latest version has it off)."""
    if not cdf_enabled(latest.configuration):
        raise ChangeDataNotRecordedError(
            f"{_where(latest)}: the change data feed is not enabled (version {latest.version}). Help: set "
            f"{CDF_PROPERTY}=true, or export a snapshot with initial_snapshot=True.",
            version=latest.version,
        )
    available = [v for v in timeline.versions if v <= latest.version]
    first = available[0] if available else latest.version
    metadata = load_snapshot(latest.storage, latest.location, first).metadata
    for v in available:
        if v > first:
            md = _metadata_of(read_commit(latest.storage, commit_path(v), v))
            metadata = md or metadata
        if cdf_enabled(metadata.configuration):
            return v
    return latest.version


def _metadata_of(actions: Sequence[Mapping[str, object]]) -> Metadata | None:
    for action in actions:
        raw = action.get("metaData")
        if isinstance(raw, dict):
            return Metadata.from_dict(raw)
    return None


def _layout(latest: Snapshot, metadata: Metadata, version: int) -> WriteTarget:
    return WriteTarget(
        location=latest.location,
        storage=latest.storage,
        schema=schema_from_json(metadata.schema_string),
        partition_columns=tuple(metadata.partition_columns),
        configuration=dict(metadata.configuration),
        version=version,
    )


def _shape(metadata: Metadata) -> tuple[str, tuple[str, ...]]:
    return metadata.schema_string, tuple(metadata.partition_columns)


def plan_export(latest: Snapshot, request: RangeRequest, *, envelope: Envelope) -> ExportPlan:
    """Resolve the range, cut it into schema segments and run the preflight (see the module docstring).

    Raises:
        ExportRangeError, VersionNotFoundError: see :func:`resolve_range`.
        ChangeDataNotRecordedError: the feed was off at the start or switched off inside the range.
        ChangeDataMissingError: a commit file, or a file the range reads, no longer exists.
    """
    del envelope  # units are cut by the engine; the plan is the same for both envelopes
    timeline = CommitTimeline(latest.storage, latest.configuration)
    start, end, snapshot, skipped = resolve_range(latest, request, timeline)
    if skipped:
        return ExportPlan(start, end, True)
    segments: list[Segment] = []
    timestamps: dict[int, int] = {}
    first_change = start
    if snapshot:
        segments.append(_snapshot_segment(latest, start, timeline, timestamps))
        first_change = start + 1
    if first_change <= end:
        segments.extend(_change_segments(latest, first_change, end, timeline, timestamps))
    _preflight_files(latest, segments)
    return ExportPlan(start, end, False, snapshot, tuple(segments), timestamps)


def _snapshot_segment(latest: Snapshot, version: int, timeline: CommitTimeline, ts: dict[int, int]) -> Segment:
    snap = latest if version == latest.version else load_snapshot(latest.storage, latest.location, version)
    ts[version] = timeline.timestamp(version)
    reads = tuple(
        ChangeFileRead(version, ts[version], "insert", add.to_dict())
        for add in sorted(snap.files(), key=lambda a: a.path)
    )
    return Segment(version, version, _layout(latest, snap.metadata, version), {version: reads}, snapshot=True)


def _change_segments(
    latest: Snapshot, start: int, end: int, timeline: CommitTimeline, ts: dict[int, int]
) -> list[Segment]:
    present = set(timeline.versions)
    for v in range(start, end + 1):
        if v not in present:
            raise ChangeDataMissingError(
                f"{_where(latest)} from version {start} to {end}: the commit file of version {v} "
                f"({commit_path(v)!r}) no longer exists (log cleanup, delta.logRetentionDuration), so its "
                "changes cannot be read. Nothing was exported. Help: restore the log, or export from a later "
                "version with starting_version, accepting the loss.",
                version=v, path=commit_path(v),
            )
    commits = run_parallel(lambda v: load_change_commit(latest.storage, v), list(range(start, end + 1)))
    first = commits[0].metadata or (
        latest.metadata if start == latest.version else load_snapshot(latest.storage, latest.location, start).metadata
    )
    _require_cdf(latest, first, start, start, end)
    segments: list[Segment] = []
    current, seg_start = first, start
    reads: dict[int, tuple[ChangeFileRead, ...]] = {}
    for commit in commits:
        if commit.metadata is not None:
            _require_cdf(latest, commit.metadata, commit.version, start, end)
            if commit.version > seg_start and _shape(commit.metadata) != _shape(current):
                last = commit.version - 1
                segments.append(Segment(seg_start, last, _layout(latest, current, last), reads))
                seg_start, reads = commit.version, {}
            current = commit.metadata
        ts[commit.version] = timeline.timestamp(commit.version, commit.info)
        reads[commit.version] = tuple(change_file_reads(commit, ts[commit.version]))
    segments.append(Segment(seg_start, end, _layout(latest, current, end), reads))
    return segments


def _require_cdf(latest: Snapshot, metadata: Metadata, version: int, start: int, end: int) -> None:
    if not cdf_enabled(metadata.configuration):
        raise ChangeDataNotRecordedError(
            f"{_where(latest)} from version {start} to {end}: the change data feed was not enabled at version "
            f"{version}, so its changes were not recorded. Help: export up to version {version - 1}, or start "
            f"after the version that set {CDF_PROPERTY}=true again.",
            version=version,
        )


def _needed_paths(storage: Storage, read: ChangeFileRead) -> list[str]:
    """The files (as the storage opens them) reading ``read`` needs: the file and its deletion vectors."""
    paths = [storage.resolve(read.path)]
    for action in (read.action, read.removed):
        dv = (action or {}).get("deletionVector")
        if dv and dv.get("storageType") != "i":
            paths.append(DeletionVectorDescriptor.from_dict(dv).absolute_path(storage.root))
    return paths


def _preflight_files(latest: Snapshot, segments: Sequence[Segment]) -> None:
    storage = latest.storage
    fs = storage.arrow_filesystem()
    reads = [r for seg in segments for v in sorted(seg.reads) for r in seg.reads[v]]

    def missing(read: ChangeFileRead) -> str | None:
        for path in _needed_paths(storage, read):
            if fs.get_file_info(path).type == pafs.FileType.NotFound:
                return path
        return None

    for read, gone in zip(reads, run_parallel(missing, reads), strict=True):
        if gone is not None:
            raise ChangeDataMissingError(
                f"{_where(latest)}: version {read.version} needs file {gone!r} ({read.kind} of {read.path!r}), "
                "which no longer exists (removed by VACUUM?). Nothing was exported. Help: restore the file, or "
                f"export from version {read.version + 1} on with starting_version, accepting the loss.",
                version=read.version, path=gone,
            )

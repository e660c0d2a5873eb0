"""Which log files make up a version: the newest usable checkpoint plus the commits after it.

Two ways to find them. The fast way trusts ``_last_checkpoint`` and looks only at the files from its
version on, so its cost does not grow with the log's history: on a local disk a handful of existence
checks (galloping, then bisecting); on an object store, where a listing costs one request like an
existence check, one LIST that starts after the checkpoint's version (``start_after``). The safe way
lists all of ``_delta_log``. The fast way falls back to the safe one whenever ``_last_checkpoint`` is
missing, corrupt, stale, or points past the version asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import orjson

from airflow_provider_delta.core.log.paths import (
    LAST_CHECKPOINT,
    LOG_DIR,
    LogFile,
    commit_path,
    parse_log_name,
)
from airflow_provider_delta.exceptions import LogCorruptedError, TableNotFoundError, VersionNotFoundError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from airflow_provider_delta.core.storage import Storage

CheckpointKind = Literal["classic", "multipart", "v2"]


@dataclass(frozen=True, slots=True)
class CheckpointRef:
    """A complete checkpoint: its version and every file of it."""

    version: int
    kind: CheckpointKind
    files: tuple[LogFile, ...]


@dataclass(frozen=True, slots=True)
class LogSegment:
    """The files to replay for ``version``: ``checkpoint`` (maybe none) then ``commits`` in order."""

    version: int
    checkpoint: CheckpointRef | None
    commits: tuple[LogFile, ...]
    listing: LogListing | None = field(default=None, compare=False)

    @property
    def start_version(self) -> int:
        """The first version whose commit is replayed (the checkpoint's version + 1, or 0)."""
        return self.checkpoint.version + 1 if self.checkpoint is not None else 0


@dataclass(frozen=True, slots=True)
class LogListing:
    """Everything a full listing of ``_delta_log`` tells about the versions it holds."""

    commits: dict[int, LogFile]
    checkpoints: tuple[CheckpointRef, ...]  # complete ones, ascending by version

    @property
    def latest_version(self) -> int | None:
        """The newest version with a commit or a checkpoint, or None for an empty log."""
        candidates = list(self.commits)
        if self.checkpoints:
            candidates.append(self.checkpoints[-1].version)
        return max(candidates) if candidates else None

    def earliest_recoverable_version(self) -> int | None:
        """The oldest version whose state can be rebuilt: commit 0, or the oldest usable checkpoint."""
        latest = self.latest_version
        if latest is None:
            return None
        starts = sorted({c.version for c in self.checkpoints} | ({0} if 0 in self.commits else set()))
        for start in starts:
            first_commit = start + 1 if start in {c.version for c in self.checkpoints} else start
            if self.first_missing(first_commit, latest) is None:
                return start
        return None

    def first_missing(self, first: int, last: int) -> int | None:
        """The first version in ``first..last`` without a commit file, or None (cost: the listed commits)."""
        if last < first:
            return None
        present = sorted(v for v in self.commits if first <= v <= last)
        if len(present) == last - first + 1:
            return None
        expected = first
        for v in present:
            if v != expected:
                return expected
            expected += 1
        return expected


def read_last_checkpoint(storage: Storage) -> dict[str, Any] | None:
    """``_last_checkpoint`` as a dict, or None when absent or unreadable (it is only a hint)."""
    try:
        data = storage.read_bytes(LAST_CHECKPOINT)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except OSError:
        return None
    try:
        hint = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(hint, dict) or not isinstance(hint.get("version"), int) or hint["version"] < 0:
        return None
    return hint


def list_log(storage: Storage) -> LogListing:
    """List ``_delta_log`` once and group its files into commits and complete checkpoints."""
    commits: dict[int, LogFile] = {}
    classic: dict[int, LogFile] = {}
    parts: dict[tuple[int, int], dict[int, LogFile]] = {}
    v2: dict[int, list[LogFile]] = {}
    for info in storage.list_dir(LOG_DIR):
        lf = parse_log_name(info.name, size=info.size, modification_time=info.modification_time)
        if lf is None:
            continue
        if lf.kind == "commit":
            commits[lf.version] = lf
        elif lf.kind == "checkpoint":
            classic[lf.version] = lf
        elif lf.kind == "multipart":
            parts.setdefault((lf.version, lf.num_parts), {})[lf.part] = lf
        elif lf.kind == "v2":
            v2.setdefault(lf.version, []).append(lf)
    refs: dict[int, CheckpointRef] = {}
    for (version, num_parts), got in parts.items():
        if len(got) == num_parts and set(got) == set(range(1, num_parts + 1)):
            refs[version] = CheckpointRef(version, "multipart", tuple(got[i] for i in range(1, num_parts + 1)))
    for version, lf in classic.items():
        refs[version] = CheckpointRef(version, "classic", (lf,))
    for version, files in v2.items():
        # Any one of several V2 checkpoints of a version will do (PROTOCOL.md "V2 Spec"); prefer parquet.
        best = sorted(files, key=lambda f: (not f.name.endswith(".parquet"), f.name))[0]
        refs[version] = CheckpointRef(version, "v2", (best,))
    return LogListing(commits, tuple(refs[v] for v in sorted(refs)))


def list_from(storage: Storage, version: int) -> dict[str, int]:
    """Names (-> size) of the log files of ``version`` and later: one LIST from that version on."""
    # "<version:020d>" sorts before "<version>.json" and "<version>.checkpoint.parquet" (a prefix).
    return {f.name: f.size for f in storage.list_dir(LOG_DIR, start_after=f"{version:020d}")}


def _contiguous_from(names: dict[str, int], known: int) -> int:
    version = known
    while f"{version + 1:020d}.json" in names:
        version += 1
    return version


def newest_from(storage: Storage, known: int) -> int | None:
    """The newest contiguous commit version from ``known`` on; None when commit ``known`` is absent.

    One LIST on storage that lists cheaply (object stores), else one or more existence checks.
    """
    if storage.lists_cheaply:
        names = list_from(storage, known)
        return _contiguous_from(names, known) if f"{known:020d}.json" in names else None
    if storage.exists(commit_path(known + 1)):
        return gallop_latest(storage, known + 1)
    return known if storage.exists(commit_path(known)) else None


def gallop_latest(storage: Storage, known: int) -> int:
    """The newest contiguous commit version at or after ``known`` (which exists), by probing."""
    if storage.lists_cheaply:
        return _contiguous_from(list_from(storage, known), known)
    step = 1
    low = known
    high = known + step
    while storage.exists(commit_path(high)):
        low = high
        step *= 2
        high = known + step
    # low exists, high does not: bisect.
    while high - low > 1:
        mid = (low + high) // 2
        if storage.exists(commit_path(mid)):
            low = mid
        else:
            high = mid
    return low


def _checkpoint_from_hint(storage: Storage, hint: dict[str, Any]) -> CheckpointRef | None:
    version = int(hint["version"])
    prefix = f"{version:020d}"
    v2 = hint.get("v2Checkpoint")
    if isinstance(v2, dict) and isinstance(v2.get("path"), str):
        lf = parse_log_name(v2["path"].rsplit("/", 1)[-1])
        return CheckpointRef(version, "v2", (lf,)) if lf is not None else None
    num_parts = hint.get("parts")
    if isinstance(num_parts, int) and num_parts > 1:
        files = [
            LogFile(f"{prefix}.checkpoint.{i:010d}.{num_parts:010d}.parquet", "multipart", version, i, num_parts)
            for i in range(1, num_parts + 1)
        ]
        return CheckpointRef(version, "multipart", tuple(files))
    return CheckpointRef(version, "classic", (LogFile(f"{prefix}.checkpoint.parquet", "checkpoint", version),))


def _hinted_checkpoint(
    storage: Storage, hint: dict[str, Any]
) -> tuple[CheckpointRef, int, Iterable[str] | None] | None:
    """The checkpoint ``_last_checkpoint`` names, if all its files exist, the newest version after it,
    and the log file names from the checkpoint on when they were listed (stores that list cheaply)."""
    checkpoint = _checkpoint_from_hint(storage, hint)
    if checkpoint is None:
        return None
    start = checkpoint.version
    if storage.lists_cheaply:
        names = list_from(storage, start)  # the checkpoint's files and the commits after it, at once
        if not all(f.name in names for f in checkpoint.files):
            return None
        # The listing knows the sizes: reading the checkpoint then needs no HEAD.
        files = tuple(replace(f, size=names[f.name]) for f in checkpoint.files)
        return replace(checkpoint, files=files), _contiguous_from(names, start), names
    if not all(storage.exists(f.path) for f in checkpoint.files):
        return None
    return checkpoint, gallop_latest(storage, start) if storage.exists(commit_path(start + 1)) else start, None


def _fast_segment(storage: Storage, version: int | None) -> LogSegment | None:
    hint = read_last_checkpoint(storage)
    if hint is None or (version is not None and version < int(hint["version"])):
        return None
    found = _hinted_checkpoint(storage, hint)
    if found is None:
        return None
    checkpoint, latest, listed = found
    if version is None:
        _refuse_commits_beyond_a_gap(storage, latest, listed)
        version = latest
    elif version > latest:
        return None  # let the listing decide (and raise with the true bounds)
    commits = tuple(
        LogFile(f"{v:020d}.json", "commit", v) for v in range(checkpoint.version + 1, version + 1)
    )
    return LogSegment(version, checkpoint, commits)


_LISTING_ATTEMPTS = 3


def _refuse_commits_beyond_a_gap(storage: Storage, latest: int, listed: Iterable[str] | None) -> None:
    """Probing finds the newest of the contiguous commits; a commit file after a missing one means a gap.

    Commits that appear meanwhile are contiguous (each writer puts the next version), so only a
    version missing among the listed ones is a gap. ``listed``: the names a listing from the
    checkpoint on already gave (object stores), so no second request is made.
    """
    if listed is not None:
        names: Iterable[str] = listed
    else:
        names = (info.name for info in storage.list_dir(LOG_DIR, start_after=f"{latest:020d}.json"))
    newer = sorted(
        lf.version
        for name in names
        if (lf := parse_log_name(name)) is not None and lf.kind == "commit" and lf.version > latest
    )
    expected = latest + 1
    for found in newer:
        # A listing may miss a commit linked while it ran yet see a later one: probe before calling
        # it a gap (commit files never go away, so one that exists now was written meanwhile).
        while expected < found and storage.exists(commit_path(expected)):
            expected += 1
        if found != expected:
            raise LogCorruptedError(
                f"Cannot load table {storage.root!r}: the log has a gap after version {latest}, commit "
                f"{expected} is missing ({commit_path(expected)}) but {commit_path(found)} exists",
                version=expected,
                path=commit_path(expected),
            )
        expected = found + 1


def segment_from_listing(listing: LogListing, version: int | None, *, location: str) -> LogSegment:
    """The segment for ``version`` (latest when None) from a full listing.

    Raises:
        TableNotFoundError: the log holds no commits or checkpoints.
        VersionNotFoundError: ``version`` is newer than the latest or older than the earliest
            recoverable version.
        LogCorruptedError: commits are missing between the checkpoint and the version.
    """
    latest = listing.latest_version
    if latest is None:
        raise TableNotFoundError(f"Cannot open table {location!r}: {LOG_DIR} holds no commits", location=location)
    target = latest if version is None else version
    if target < 0 or target > latest:
        earliest = listing.earliest_recoverable_version()
        raise VersionNotFoundError(
            f"Cannot load version {target} of table {location!r}: available versions are "
            f"{earliest if earliest is not None else '?'} to {latest}",
            version=target,
            earliest=earliest,
            latest=latest,
        )
    usable = [c for c in listing.checkpoints if c.version <= target]
    checkpoint = usable[-1] if usable else None
    first = checkpoint.version + 1 if checkpoint is not None else 0
    missing = listing.first_missing(first, target)
    if missing is not None:
        earliest = listing.earliest_recoverable_version()
        if earliest is not None and target < earliest:
            raise VersionNotFoundError(
                f"Cannot load version {target} of table {location!r}: its commits were cleaned up "
                f"({commit_path(missing)} is gone); the earliest recoverable version is {earliest}",
                version=target,
                earliest=earliest,
                latest=latest,
            )
        if checkpoint is None and missing == 0 and earliest is None:
            raise LogCorruptedError(
                f"Cannot load version {target} of table {location!r}: commit 0 is missing ({commit_path(0)}) "
                f"and no checkpoint covers the earliest commits (first commit found: {min(listing.commits)})",
                version=0,
                path=commit_path(0),
            )
        raise LogCorruptedError(
            f"Cannot load version {target} of table {location!r}: the log has a gap, commit "
            f"{missing} is missing ({commit_path(missing)})",
            version=missing,
            path=commit_path(missing),
        )
    commits = tuple(listing.commits[v] for v in range(first, target + 1))
    return LogSegment(target, checkpoint, commits, listing)


def build_segment(storage: Storage, version: int | None = None, *, location: str = "") -> LogSegment:
    """Find the files to replay for ``version`` (the latest when None); see the module docstring."""
    fast = _fast_segment(storage, version)
    if fast is not None:
        return fast
    for attempt in range(_LISTING_ATTEMPTS):
        try:
            return segment_from_listing(list_log(storage), version, location=location or storage.root)
        except LogCorruptedError as err:
            # A listing is not a snapshot of the folder: a commit linked while it ran may be missed
            # while a later one is seen. Commit files never go away, so a "missing" one that exists
            # now was written meanwhile: list again.
            if attempt + 1 == _LISTING_ATTEMPTS or err.path is None or not storage.exists(err.path):
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def latest_version(storage: Storage, *, location: str = "") -> int:
    """The table's newest version without replaying anything.

    With a valid ``_last_checkpoint`` this costs a few existence checks that do not grow with the
    log's history; otherwise one listing of ``_delta_log``.
    """
    hint = read_last_checkpoint(storage)
    if hint is not None:
        start = int(hint["version"])
        if storage.lists_cheaply:
            names = list_from(storage, start)
            if f"{start:020d}.json" in names:
                return _contiguous_from(names, start)
        elif storage.exists(commit_path(start)):
            return gallop_latest(storage, start)
        found = _hinted_checkpoint(storage, hint)
        if found is not None:
            return found[1]
    if storage.exists(commit_path(0)):
        # No usable hint: versions are contiguous from 0, so probing still beats listing the log.
        return gallop_latest(storage, 0)
    listing = list_log(storage)
    latest = listing.latest_version
    if latest is None:
        where = location or storage.root
        raise TableNotFoundError(f"Cannot open table {where!r}: {LOG_DIR} holds no commits", location=where)
    return latest

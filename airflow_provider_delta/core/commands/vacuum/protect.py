"""What VACUUM must never delete: the protected files and folders of a table.

Delta's rule (``VacuumCommand.getValidFilesFromSnapshot``): every ``add`` of the snapshot and every
``remove`` whose ``deletionTimestamp`` is not older than the cutoff is protected, with its deletion
vector file (when it is a file, i.e. not inline) and every folder above it. Paths outside the table
root are never listed, so never deleted.

**Extension point.** Callers may protect more through :data:`ProtectionSource` functions passed to
:func:`protected_set` (``vacuum(..., protect=[...])``). A source returns a :class:`Protection`:
``paths`` (files to keep, relative to the table root) and ``versions`` (commit versions whose files
must stay readable: every ``add``, ``remove`` and ``cdc`` file those commits name, with their
deletion vectors). A change-data exporter that still has to read versions from its watermark on
returns them as ``versions`` (``respect_exports=True``); the exporter registry itself lives with the
exporter, not here.

Example:
    >>> keep = protected_set(snapshot, cutoff_ms)                                  # doctest: +SKIP
    >>> keep = protected_set(snapshot, cutoff_ms, [lambda s, c: Protection(versions={41, 42})])  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.log.replay import read_commit
from airflow_provider_delta.core.read.deletion_vectors import DeletionVectorDescriptor
from airflow_provider_delta.exceptions import DataFileError, DeltaError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from airflow_provider_delta.core.snapshot import Snapshot
    from airflow_provider_delta.core.storage import Storage

__all__ = [
    "ProtectedSet",
    "Protection",
    "ProtectionSource",
    "dv_relative_path",
    "parent_dirs",
    "protected_set",
    "relative_path",
    "version_files",
]


@dataclass
class Protection:
    """Extra files a :data:`ProtectionSource` keeps: paths relative to the root, and whole commit versions."""

    paths: set[str] = field(default_factory=set)
    versions: set[int] = field(default_factory=set)


ProtectionSource = Callable[["Snapshot", int], Protection]
"""``(snapshot, cutoff_ms) -> Protection``: more files VACUUM must keep (see the module docstring)."""


@dataclass(frozen=True)
class ProtectedSet:
    """Protected files and the folders above them (relative, decoded, no trailing ``/``)."""

    files: frozenset[str]
    dirs: frozenset[str]

    def __contains__(self, path: object) -> bool:
        return path in self.files or path in self.dirs


def relative_path(storage: Storage, path: str) -> str | None:
    """A log path (URI-encoded relative, or absolute) relative to the table root; None when outside it."""
    if "://" not in path and not path.startswith(("/", "file:")):
        return unquote(path) if "%" in path else path
    try:
        absolute = storage.resolve(path)
    except DataFileError:
        return None  # another scheme, or outside the table root: never VACUUM's to delete
    root = storage.root.rstrip("/")
    if absolute.startswith(root + "/"):
        return absolute[len(root) + 1 :]
    return None


def dv_relative_path(storage: Storage, dv: Mapping[str, Any] | None) -> str | None:
    """The deletion vector file of a descriptor, relative to the root; None when inline, absent or outside."""
    if not dv or dv.get("storageType") == "i":
        return None
    descriptor = DeletionVectorDescriptor.from_dict(dv)
    if descriptor.storage_type == "u":
        prefix = descriptor.path_or_inline_dv[:-20]
        name = descriptor.absolute_path("/").rsplit("/", 1)[-1]
        return f"{prefix}/{name}" if prefix else name
    return relative_path(storage, descriptor.path_or_inline_dv)


def parent_dirs(path: str) -> Iterable[str]:
    """The folders above a relative path, nearest first (``a/b/c`` -> ``a/b``, ``a``)."""
    end = path.rfind("/")
    while end > 0:
        yield path[:end]
        end = path.rfind("/", 0, end)


def _add_file(storage: Storage, out: set[str], path: str, dv: Mapping[str, Any] | None) -> None:
    rel = relative_path(storage, path)
    if rel is not None:
        out.add(rel)
    dv_path = dv_relative_path(storage, dv)
    if dv_path is not None:
        out.add(dv_path)


def version_files(snapshot: Snapshot, versions: Iterable[int]) -> set[str]:
    """Every file the commits of ``versions`` name (add, remove, cdc and their deletion vectors).

    Versions whose commit file no longer exists (cleaned up with the log) are skipped.
    """
    storage = snapshot.storage
    out: set[str] = set()
    for version in sorted(set(versions)):
        try:
            actions = read_commit(storage, commit_path(version), version)
        except (FileNotFoundError, DeltaError):
            continue
        for action in actions:
            for kind in ("add", "remove", "cdc"):
                body = action.get(kind)
                if body is not None and isinstance(body.get("path"), str):
                    _add_file(storage, out, body["path"], body.get("deletionVector"))
    return out


def protected_set(
    snapshot: Snapshot, cutoff_ms: int, sources: Sequence[ProtectionSource] = ()
) -> ProtectedSet:
    """The files VACUUM keeps at ``cutoff_ms``, and every folder above one of them."""
    storage = snapshot.storage
    files: set[str] = set()
    for add in snapshot.files():
        _add_file(storage, files, add.path, add.deletion_vector)
    for remove in snapshot.tombstones():
        # A tombstone without a timestamp counts as expired, as in Delta (delTimestamp defaults to 0).
        if (remove.deletion_timestamp or 0) >= cutoff_ms:
            _add_file(storage, files, remove.path, remove.deletion_vector)
    versions: set[int] = set()
    for source in sources:
        extra = source(snapshot, cutoff_ms)
        files.update(extra.paths)
        versions.update(extra.versions)
    if versions:
        files.update(version_files(snapshot, versions))
    dirs: set[str] = set()
    for path in files:
        for parent in parent_dirs(path):
            if parent in dirs:
                break
            dirs.add(parent)
    return ProtectedSet(frozenset(files), frozenset(dirs))

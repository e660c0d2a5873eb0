"""Plan a VACUUM: which files and empty folders to delete (pure; nothing is deleted here).

FULL (Delta's ``VacuumCommand.gc``): list the table (hidden names skipped), keep files older than the
cutoff, drop the protected ones. So an old untracked file goes, a new untracked file stays (an
in-flight writer's), a tombstoned file needs both its tombstone and its mtime older than the cutoff,
and ``_change_data`` files go on age alone. A folder is a candidate only when no listed file lies
under it (so a folder emptied by this run goes in the next, as in Delta). Delta also lists folders
that hold only new files, which its non-recursive delete then fails to remove; they are left out
here, so a dry run lists only what a real run deletes. Folders are deleted deepest first and
non-recursively: one that still holds something (a hidden file, a file that just arrived) survives.

LITE: candidates from the log (:mod:`.lite`), never untracked files or folders.

Example:
    >>> plan = plan_vacuum(snapshot, retention, mode="FULL")   # doctest: +SKIP
    >>> plan.num_files, plan.size_to_delete                    # doctest: +SKIP
    (2000, 1843200)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from airflow_provider_delta.core.commands.vacuum.listing import ListedFile, is_hidden_name, list_tree
from airflow_provider_delta.core.commands.vacuum.lite import commit_at_cutoff, lite_candidates, lite_window
from airflow_provider_delta.core.commands.vacuum.protect import parent_dirs, protected_set
from airflow_provider_delta.core.schema.mapping import column_mapping_mode, physical_name

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_delta.core.commands.vacuum.protect import ProtectionSource
    from airflow_provider_delta.core.commands.vacuum.retention import Retention
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["VacuumMode", "VacuumPlan", "plan_vacuum"]

VacuumMode = Literal["FULL", "LITE"]


@dataclass
class VacuumPlan:
    """What a VACUUM deletes.

    Attributes:
        mode: FULL or LITE.
        retention: the retention and cutoff it was planned with.
        files: files to delete, relative to the root, sorted.
        dirs: empty folders to delete, deepest first.
        num_dirs_listed: folders listed (FULL), for Delta's ``numVacuumedDirectories`` (+1 for the root).
        num_files_listed: files listed (FULL) or read from the log (LITE).
        end_version: the commit active at the cutoff, recorded in ``_last_vacuum_info``.
    """

    mode: VacuumMode
    retention: Retention
    files: list[ListedFile] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)
    num_dirs_listed: int = 0
    num_files_listed: int = 0
    end_version: int | None = None

    @property
    def num_files(self) -> int:
        """Files and folders to delete (Delta's ``numFilesToDelete`` counts both)."""
        return len(self.files) + len(self.dirs)

    @property
    def size_to_delete(self) -> int:
        """Bytes of the files to delete."""
        return sum(f.size for f in self.files)

    @property
    def paths(self) -> list[str]:
        """Every path to delete: files, then folders."""
        return [f.path for f in self.files] + list(self.dirs)


def _partition_names(snapshot: Snapshot) -> list[str]:
    names = list(snapshot.partition_columns)
    if column_mapping_mode(snapshot.configuration) != "none":
        lowered = {c.lower() for c in names}
        names += [physical_name(f) for f in snapshot.schema if f.name.lower() in lowered]
    return names


def plan_vacuum(
    snapshot: Snapshot,
    retention: Retention,
    *,
    mode: VacuumMode = "FULL",
    protect: Sequence[ProtectionSource] = (),
) -> VacuumPlan:
    """Plan a FULL or LITE VACUUM of ``snapshot``'s table at ``retention.cutoff_ms``.

    Raises:
        VacuumLiteError: LITE cannot see every eligible file (see :mod:`.lite`).
    """
    cutoff = retention.cutoff_ms
    storage = snapshot.storage
    plan = VacuumPlan(mode, retention)
    if mode == "LITE":
        window = lite_window(storage, snapshot.location, cutoff)
        plan.end_version = window.end
        listed = lite_candidates(storage, window)
        plan.num_files_listed = len(listed)
        keep = protected_set(snapshot, cutoff, protect)
        plan.files = sorted((f for f in listed if f.modification_time < cutoff and f.path not in keep.files),
                            key=lambda f: f.path)
        return plan
    plan.end_version = commit_at_cutoff(storage, cutoff)[0]
    tree = list_tree(storage, is_hidden_name(_partition_names(snapshot), snapshot.configuration))
    plan.num_dirs_listed, plan.num_files_listed = len(tree.dirs), len(tree.files)
    keep = protected_set(snapshot, cutoff, protect)
    holding: set[str] = set()
    for f in tree.files:
        for parent in parent_dirs(f.path):
            if parent in holding:
                break
            holding.add(parent)
    old = [f for f in tree.files if f.modification_time < cutoff]
    plan.files = sorted((f for f in old if f.path not in keep.files), key=lambda f: f.path)
    dirs = [d for d in tree.dirs if d not in holding and d not in keep.dirs and d not in keep.files]
    plan.dirs = sorted(dirs, key=lambda d: (-d.count("/"), d))
    return plan

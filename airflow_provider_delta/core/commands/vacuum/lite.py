"""VACUUM LITE: candidates from the log instead of a listing, and ``_delta_log/_last_vacuum_info``.

Delta's rules (Delta 3.3+, ``VacuumCommand`` with ``VacuumType.LITE``):

- the *end* is the commit active at the cutoff (the newest commit at or before it); with none, there
  is nothing to do;
- the *start* is ``latestCommitVersionOutsideOfRetentionWindow + 1`` from ``_last_vacuum_info``, else
  the earliest commit; when the earliest commit is not 0 and the info is missing or older than it,
  LITE cannot see every eligible file: ``DELTA_CANNOT_VACUUM_LITE``;
- candidates are the ``remove`` actions of commits ``start..end`` (with their deletion vector files;
  age = ``deletionTimestamp``) and their ``cdc`` files (always old enough); LITE never deletes
  untracked files or folders.

Every successful run records the end in ``_last_vacuum_info``, so a repeat is a no-op. Delta writes
an empty value after a FULL run, which bars LITE for good on a table whose first commits were
cleaned up; here FULL records its end too (a FULL run deleted everything LITE could have).

Example:
    >>> read_last_vacuum_info(storage)                    # doctest: +SKIP
    12
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from airflow_provider_delta.core.commands.vacuum.listing import ListedFile
from airflow_provider_delta.core.commands.vacuum.protect import dv_relative_path, relative_path
from airflow_provider_delta.core.log.paths import LOG_DIR, commit_path
from airflow_provider_delta.core.log.replay import read_commit
from airflow_provider_delta.core.log.segment import list_log
from airflow_provider_delta.exceptions import VacuumLiteError

if TYPE_CHECKING:
    from airflow_provider_delta.core.storage import Storage

__all__ = [
    "LAST_VACUUM_INFO",
    "LiteWindow",
    "commit_at_cutoff",
    "lite_candidates",
    "lite_window",
    "read_last_vacuum_info",
    "write_last_vacuum_info",
]

LAST_VACUUM_INFO = f"{LOG_DIR}/_last_vacuum_info"
_KEY = "latestCommitVersionOutsideOfRetentionWindow"


def read_last_vacuum_info(storage: Storage) -> int | None:
    """``latestCommitVersionOutsideOfRetentionWindow`` of the last VACUUM, or None."""
    try:
        info = orjson.loads(storage.read_bytes(LAST_VACUUM_INFO))
    except (FileNotFoundError, orjson.JSONDecodeError):
        return None
    value = info.get(_KEY) if isinstance(info, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def write_last_vacuum_info(storage: Storage, version: int) -> None:
    """Record that every file eligible up to commit ``version`` has been vacuumed."""
    storage.write(LAST_VACUUM_INFO, orjson.dumps({_KEY: version}) + b"\n")


def commit_at_cutoff(storage: Storage, cutoff_ms: int) -> tuple[int | None, int | None]:
    """(the newest commit at or before ``cutoff_ms``, the earliest commit); Nones for an empty log.

    Commit times are the commit files' modification times, made strictly increasing as Delta does.
    """
    listing = list_log(storage)
    versions = sorted(listing.commits)
    if not versions:
        return None, None
    active = None
    previous = -1
    for v in versions:
        t = max(listing.commits[v].modification_time, previous + 1)
        previous = t
        if t > cutoff_ms:
            break
        active = v
    return active, versions[0]


@dataclass(frozen=True)
class LiteWindow:
    """The commits LITE reads: ``start..end`` (empty when ``end`` is None or before ``start``)."""

    start: int
    end: int | None

    @property
    def versions(self) -> range:
        """The commit versions to read."""
        return range(self.start, self.end + 1) if self.end is not None else range(0)


def lite_window(storage: Storage, location: str, cutoff_ms: int) -> LiteWindow:
    """Where LITE starts and ends for this cutoff.

    Raises:
        VacuumLiteError: commits LITE would need were cleaned up and no earlier VACUUM covered them.
    """
    end, earliest = commit_at_cutoff(storage, cutoff_ms)
    last = read_last_vacuum_info(storage)
    if earliest is not None and earliest != 0 and (last is None or last < earliest):
        raise VacuumLiteError(
            "[DELTA_CANNOT_VACUUM_LITE] VACUUM LITE cannot delete all eligible files as some files are not "
            f"referenced by the Delta log. Please run VACUUM FULL. (table {location!r}: the earliest commit "
            f"is {earliest} and the last VACUUM covered "
            f"{'no version' if last is None else f'versions up to {last}'})"
        )
    start = last + 1 if last is not None else (earliest or 0)
    return LiteWindow(start, end)


def lite_candidates(storage: Storage, window: LiteWindow) -> list[ListedFile]:
    """Files the commits of ``window`` removed (and their DVs and change files), with LITE's ages.

    A removed file's age is its ``deletionTimestamp``; change files count as age 0 (always old enough).
    """
    out: dict[str, ListedFile] = {}
    for version in window.versions:
        for action in read_commit(storage, commit_path(version), version):
            remove, cdc = action.get("remove"), action.get("cdc")
            if remove is not None and isinstance(remove.get("path"), str):
                age = int(remove.get("deletionTimestamp") or 0)
                size = int(remove.get("size") or 0)
                path = relative_path(storage, remove["path"])
                if path is not None:
                    out[path] = ListedFile(path, size, age)
                dv = dv_relative_path(storage, remove.get("deletionVector"))
                if dv is not None:
                    out.setdefault(dv, ListedFile(dv, 0, age))
            elif cdc is not None and isinstance(cdc.get("path"), str):
                path = relative_path(storage, cdc["path"])
                if path is not None:
                    out[path] = ListedFile(path, int(cdc.get("size") or 0), 0)
    return list(out.values())

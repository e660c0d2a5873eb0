"""Which files OPTIMIZE, ZORDER BY and REORG rewrite together (pure planning; no file is read).

Delta's rules (``OptimizeTableCommand.groupFilesIntoBins``, ``OptimizeTableStrategy``):

- **compaction**: a file is a candidate when it is smaller than ``min_file_size``, or has a
  deletion vector without ``numRecords``, or more than ``max_deleted_rows_ratio`` of its rows
  deleted; per partition the candidates are sorted by size and packed into bins that close when
  the next file would exceed ``max_file_size``; a bin of one file is left alone;
- **ZORDER BY**: every file of a partition forms one bin, a single file included;
- **REORG PURGE**: the files to purge are packed like compaction, and single-file bins are kept
  (small purged files get combined).

Example:
    >>> [len(b) for b in compaction_bins(files, min_file_size=1 << 20, max_file_size=1 << 30)]  # doctest: +SKIP
    [100, 100, 100]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from airflow_provider_delta.core.actions import AddFile

__all__ = [
    "DEFAULT_MAX_DELETED_ROWS_RATIO",
    "by_partition",
    "compaction_bins",
    "deleted_rows",
    "pack",
    "zorder_bins",
]

#: Delta's ``spark.databricks.delta.optimize.maxDeletedRowsRatio``.
DEFAULT_MAX_DELETED_ROWS_RATIO = 0.05

PartitionKey = tuple[tuple[str, "str | None"], ...]


def deleted_rows(add: AddFile) -> int:
    """Rows the file's deletion vector deletes (0 without one)."""
    return int((add.deletion_vector or {}).get("cardinality") or 0)


def by_partition(files: Iterable[AddFile]) -> dict[PartitionKey, list[AddFile]]:
    """Files grouped by their partition values, in first-seen order of the partitions."""
    groups: dict[PartitionKey, list[AddFile]] = {}
    for add in files:
        key = tuple(sorted(add.partition_values.items()))
        groups.setdefault(key, []).append(add)
    return groups


def pack(files: Sequence[AddFile], max_file_size: int) -> list[list[AddFile]]:
    """Pack files (smallest first) into bins that close when the next file would exceed ``max_file_size``."""
    bins: list[list[AddFile]] = []
    current: list[AddFile] = []
    size = 0
    for add in sorted(files, key=lambda f: (f.size, f.path)):
        if current and size + add.size > max_file_size:
            bins.append(current)
            current, size = [], 0
        current.append(add)
        size += add.size
    if current:
        bins.append(current)
    return bins


def _is_compaction_candidate(add: AddFile, min_file_size: int, max_deleted_rows_ratio: float) -> bool:
    if add.size < min_file_size:
        return True
    if not add.deletion_vector:
        return False
    records = add.num_records
    if records is None:
        return True
    return records > 0 and deleted_rows(add) / records > max_deleted_rows_ratio


def compaction_bins(
    files: Iterable[AddFile],
    *,
    min_file_size: int,
    max_file_size: int,
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO,
    keep_single_file_bins: bool = False,
) -> list[list[AddFile]]:
    """Bins of candidate files per partition (see the module docstring)."""
    out: list[list[AddFile]] = []
    for group in by_partition(files).values():
        candidates = [f for f in group if _is_compaction_candidate(f, min_file_size, max_deleted_rows_ratio)]
        out += [b for b in pack(candidates, max_file_size) if len(b) > 1 or keep_single_file_bins]
    return out


def zorder_bins(files: Iterable[AddFile]) -> list[list[AddFile]]:
    """One bin per partition holding all its files."""
    return [sorted(group, key=lambda f: f.path) for group in by_partition(files).values()]

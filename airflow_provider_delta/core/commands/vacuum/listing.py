"""List a table's files and folders for VACUUM: hidden names skipped, top-level folders in parallel.

Delta's rule (``DeltaTableUtils.isHiddenDirectory``), applied to every name at any depth: a name that
starts with ``_`` or ``.`` is hidden and never listed (a hidden folder is not entered), except
``_delta_index*``, ``_change_data*`` and ``<partitionColumn>=*``. So ``_delta_log``,
``_checkpoints`` and ``.part-0.crc`` are never touched, while ``_change_data/`` is. With UniForm
Iceberg on, ``metadata`` is hidden too.

The root is listed first; each top-level folder (a partition, ``_change_data``, a DV prefix) is then
walked on the engine's thread pool, so a table of 100,000 files in many partitions is not listed by
one thread.

Example:
    >>> tree = list_tree(storage, is_hidden_name(("date",), {}))  # doctest: +SKIP
    >>> len(tree.files), tree.dirs[:2]                              # doctest: +SKIP
    (4000, ['date=2024-01-01', 'date=2024-01-02'])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from airflow_provider_delta.core.parallel import run_parallel

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from airflow_provider_delta.core.storage import Storage

__all__ = ["ListedFile", "Tree", "is_hidden_name", "list_tree"]

_EXEMPT_PREFIXES = ("_delta_index", "_change_data")


@dataclass(frozen=True, slots=True)
class ListedFile:
    """A listed file: its path relative to the table root (decoded, ``/``-separated), size, mtime (ms)."""

    path: str
    size: int
    modification_time: int


@dataclass
class Tree:
    """Every visible file and folder under the table root (folders relative, without a trailing ``/``)."""

    files: list[ListedFile] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)

    def extend(self, other: Tree) -> None:
        """Add another subtree's entries."""
        self.files.extend(other.files)
        self.dirs.extend(other.dirs)


def is_hidden_name(partition_columns: Iterable[str], configuration: Mapping[str, str]) -> Callable[[str], bool]:
    """The hidden-name test for a table with these partition columns (logical and physical names)."""
    prefixes = tuple(f"{c}=" for c in partition_columns)
    formats = configuration.get("delta.universalFormat.enabledFormats", "")
    iceberg = "iceberg" in formats.lower()

    def hidden(name: str) -> bool:
        if iceberg and name == "metadata":
            return True
        if not name.startswith(("_", ".")):
            return False
        return not name.startswith(_EXEMPT_PREFIXES) and not (prefixes and name.startswith(prefixes))

    return hidden


def _walk(storage: Storage, folder: str, hidden: Callable[[str], bool]) -> Tree:
    """Depth-first listing of ``folder`` (relative, not hidden itself) and everything visible below it."""
    tree = Tree(dirs=[folder])
    pending = [folder]
    while pending:
        current = pending.pop()
        for entry in storage.list_entries(current):
            if hidden(entry.name):
                continue
            path = f"{current}/{entry.name}"
            if entry.is_dir:
                tree.dirs.append(path)
                pending.append(path)
            else:
                tree.files.append(ListedFile(path, entry.size, entry.modification_time))
    return tree


def list_tree(storage: Storage, hidden: Callable[[str], bool]) -> Tree:
    """List the table's visible files and folders; the top-level folders are walked in parallel."""
    tree = Tree()
    top_dirs = []
    for entry in storage.list_entries(""):
        if hidden(entry.name):
            continue
        if entry.is_dir:
            top_dirs.append(entry.name)
        else:
            tree.files.append(ListedFile(entry.name, entry.size, entry.modification_time))
    for subtree in run_parallel(lambda d: _walk(storage, d, hidden), top_dirs):
        tree.extend(subtree)
    return tree

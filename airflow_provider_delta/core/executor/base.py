"""The executor seam: where a command's data work runs.

A command plans in core (which files to read and rewrite, which actions to commit) and hands every
step that touches rows to an :class:`Executor`:

- ``write_files``: write these rows as data files (conformed, CHECK constraints and an optional
  required predicate enforced, statistics collected) and return their ``add`` actions;
- ``rewrite_files``: read these files, pass each one's live rows through a :data:`FileRewrite`
  function, write what it keeps as new data files, and return the actions and counters;
- ``change_rows`` / ``write_changes``: these rows as change data of one kind; write collected change
  rows as ``_change_data`` files and return their ``cdc`` actions (``write_files_and_changes``: data
  files and change rows from one pass over the rows);
- ``read_files``: these files' live rows as Arrow (the MERGE target);
- ``rewrite_bins``: read each bin's files, arrange their rows with a :data:`BinLayout` (one file, or
  Z-ordered files of a target size) and write them with ``dataChange=false`` (OPTIMIZE, REORG);
- ``delete_files``: delete files of the table (VACUUM), reporting what could not be deleted;
- ``data_schema``: the Arrow schema of the rows an engine was given (for schema evolution);
- ``merge``: a planned MERGE's row work with the engine's own join (Spark), or None: the command then
  joins in this process with pyarrow over ``read_files`` / ``write_files`` / ``write_changes``.

:class:`~airflow_provider_delta.core.executor.local.LocalExecutor` does all of it with pyarrow on the
engine's thread pool. The Spark executor (``airflow_provider_delta.spark``) does it in Spark tasks,
where the rows are a DataFrame and only actions travel back. A command never knows which one runs it;
the functions it passes (:data:`FileRewrite`) are plain module-level callables or picklable objects,
so they can be shipped to other processes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pyarrow as pa

    from airflow_provider_delta.core.actions import AddCDCFile, AddFile
    from airflow_provider_delta.core.change_data import ChangeType
    from airflow_provider_delta.core.executor.merge.job import MergeJob, MergeOutcome
    from airflow_provider_delta.core.expressions import Expr
    from airflow_provider_delta.core.schema.types import StructType
    from airflow_provider_delta.core.storage import Storage
    from airflow_provider_delta.core.write.target import WriteTarget

__all__ = [
    "BinLayout",
    "ChangeRows",
    "DeleteOutcome",
    "Executor",
    "FileRewrite",
    "RewriteResult",
    "RowRewrite",
    "delete_paths",
]

ChangeRows = Any
"""Change rows an executor holds until :meth:`Executor.write_changes`: an Arrow table tagged with
``_change_type`` (local), or ``cdc`` actions of files already written (Spark tasks)."""


@dataclass(frozen=True)
class RowRewrite:
    """What a :data:`FileRewrite` makes of one file's live rows.

    Attributes:
        keep: the rows the new data files hold (empty: the file is removed and nothing replaces it).
        changes: change rows, each table tagged with ``_change_type`` (only used when recording).
        metrics: counters summed over the files (e.g. ``numDeletedRows``).
    """

    keep: pa.Table
    changes: tuple[pa.Table, ...] = ()
    metrics: Mapping[str, int] = field(default_factory=dict)


class FileRewrite(Protocol):
    """Turn one file's live rows into a :class:`RowRewrite`, or None to leave the file as it is."""

    def __call__(self, add: AddFile, rows: pa.Table, /) -> RowRewrite | None: ...


class BinLayout(Protocol):
    """Arrange the live rows of one bin (its files' rows, in file order) into the tables to write, one file each."""

    def __call__(self, files: Sequence[AddFile], rows: pa.Table, /) -> list[pa.Table]: ...


@dataclass
class DeleteOutcome:
    """What ``delete_files`` did: the paths deleted (absent ones count) and the failures by path."""

    deleted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    def merge(self, other: DeleteOutcome) -> None:
        """Fold another outcome into this one."""
        self.deleted.extend(other.deleted)
        self.failed.update(other.failed)


def delete_paths(storage: Storage, paths: Sequence[str]) -> DeleteOutcome:
    """Delete files one by one: a file already gone counts as deleted, other errors are reported."""
    outcome = DeleteOutcome()
    for path in paths:
        try:
            storage.delete(path)
        except FileNotFoundError:
            pass
        except OSError as err:
            outcome.failed[path] = f"{type(err).__name__}: {err}"
            continue
        outcome.deleted.append(path)
    return outcome


@dataclass
class RewriteResult:
    """What ``rewrite_files`` did: files to remove, files to add, change rows, summed counters."""

    removed: list[AddFile] = field(default_factory=list)
    added: list[AddFile] = field(default_factory=list)
    changes: list[ChangeRows] = field(default_factory=list)
    metrics: dict[str, int] = field(default_factory=dict)

    def record(self, add: AddFile, rewrite: RowRewrite, new: Sequence[AddFile]) -> None:
        """Fold one rewritten file into the result."""
        self.removed.append(add)
        self.added.extend(new)
        for key, value in rewrite.metrics.items():
            self.metrics[key] = self.metrics.get(key, 0) + value


class Executor(ABC):
    """Runs the data work of commands (see the module docstring)."""

    name: str = "executor"

    @abstractmethod
    def data_schema(self, data: Any) -> pa.Schema:
        """The Arrow schema of ``data`` (rows in this engine's form), logical names."""

    @abstractmethod
    def write_files(
        self,
        target: WriteTarget,
        data: Any,
        *,
        data_change: bool = True,
        require: Expr | None = None,
        require_text: str = "",
    ) -> list[AddFile]:
        """Write ``data`` as data files of ``target``; every row must satisfy ``require`` when given.

        Raises:
            SchemaMismatchError: the rows do not fit the schema, break a CHECK constraint or ``require``.
        """

    @abstractmethod
    def rewrite_files(
        self, target: WriteTarget, files: Sequence[AddFile], rewrite: FileRewrite, *, record_changes: bool
    ) -> RewriteResult:
        """Rewrite ``files`` through ``rewrite``; keep its change rows when ``record_changes``."""

    @abstractmethod
    def rewrite_bins(
        self, target: WriteTarget, bins: Sequence[Sequence[AddFile]], layout: BinLayout
    ) -> list[list[AddFile]]:
        """Rewrite each bin's live rows through ``layout`` as new files (``dataChange=false``).

        Returns:
            The ``add`` actions written for each bin, in the order of ``bins`` (empty for a bin
            without live rows).
        """

    @abstractmethod
    def delete_files(self, storage: Storage, paths: Sequence[str]) -> DeleteOutcome:
        """Delete ``paths`` (relative to ``storage``'s root); never raises for a single file's failure."""

    @abstractmethod
    def change_rows(self, target: WriteTarget, data: Any, change_type: ChangeType) -> list[ChangeRows]:
        """``data`` (rows about to be written) as change rows of kind ``change_type``."""

    def write_files_and_changes(
        self,
        target: WriteTarget,
        data: Any,
        change_type: ChangeType,
        *,
        require: Expr | None = None,
        require_text: str = "",
    ) -> tuple[list[AddFile], list[ChangeRows]]:
        """``write_files`` and ``change_rows`` of the same rows; an engine may take the rows only once.

        The default takes them twice (free for rows in memory); an engine whose rows are computed on
        demand (a Spark DataFrame) writes both from one pass, so both hold exactly the same rows.
        """
        adds = self.write_files(target, data, require=require, require_text=require_text)
        return adds, self.change_rows(target, data, change_type)

    @abstractmethod
    def write_changes(self, target: WriteTarget, changes: Sequence[ChangeRows]) -> list[AddCDCFile]:
        """Write collected change rows as change data files; return their ``cdc`` actions."""

    @abstractmethod
    def read_files(
        self,
        target: WriteTarget,
        files: Sequence[AddFile],
        *,
        schema: StructType | None = None,
        columns: Sequence[str] | None = None,
    ) -> list[pa.Table]:
        """Every live row of each file, in the order of ``files``, conformed to ``schema`` when given.

        Deletion vectors applied, partition columns included, logical names of ``target.schema``.
        ``columns``: read only these (the rows are the same, in the same order); ``schema`` then
        holds just those columns.
        """

    def merge(self, job: MergeJob) -> MergeOutcome | None:
        """Do a planned MERGE's row work with this engine's own join, or return None.

        None (the default, and the local executor's answer) means the engine has no join of its own:
        the MERGE command then reads the candidate files, joins and runs the clauses with pyarrow in
        this process, and writes through :meth:`read_files`, :meth:`write_files` and
        :meth:`write_changes`. An engine that joins (Spark) returns the files it removed and wrote.

        Raises:
            MergeError: a value does not fit its column.
            MergeMultipleMatchError: several source rows would update or delete one target row.
        """
        return None

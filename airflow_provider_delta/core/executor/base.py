"""The executor seam: where a command's data work runs, as a few narrow capabilities.

A command plans in core (which files to read and rewrite, which actions to commit) and hands every
step that touches rows to an :class:`Executor`. As delta-kernel-rs's ``Engine`` hands out a few small
handlers, an executor hands out capabilities; a command asks for the one it needs:

- :meth:`Executor.writer` -> :class:`FileWriter` (every executor): ``write_files`` writes rows as
  data files (conformed, CHECK constraints and an optional required predicate enforced, statistics
  collected) and returns their ``add`` actions; ``change_rows`` / ``write_changes`` turn rows into
  change data and write collected change rows as ``_change_data`` files (``write_files_and_changes``:
  both from one pass over the rows); ``data_schema`` is the Arrow schema of the rows given;
- :meth:`Executor.rewriter` -> :class:`FileRewriter` (every executor): ``rewrite_files`` passes each
  file's live rows through a :data:`FileRewrite` function and writes what it keeps (DELETE, UPDATE,
  replaceWhere); ``rewrite_bins`` arranges each bin's rows with a :data:`BinLayout` and writes them with
  ``dataChange=false`` (OPTIMIZE, REORG);
- :meth:`Executor.deleter` -> :class:`FileDeleter` (every executor): ``delete_files`` deletes files of
  the table, reporting what could not be deleted (VACUUM);
- :meth:`Executor.reader` -> :class:`FileReader` (optional): ``read_files`` brings files' live rows
  into this process as Arrow;
- :meth:`Executor.merger` -> :class:`Merger` (optional): ``merge`` does a planned MERGE's row work
  (join, clauses, rewritten and inserted files) and returns what it wrote;
- :meth:`Executor.exporter` -> :class:`ChangeExporter` (optional): the data work of a change data
  export (units of change files into a file sink's files, or into a Delta sink's data files).

An optional capability an executor lacks raises :class:`~airflow_provider_delta.exceptions.ExecutorCapabilityError`
when asked for, naming the executor and what it cannot do. The work types an executor receives and
returns live in this package (MERGE's in :mod:`.merge.job` and :mod:`.merge.plan`, the export's in
:mod:`.export.units`), so
the executor layer never imports the commands above it.

:class:`~airflow_provider_delta.core.executor.local.LocalExecutor` has every capability, with pyarrow
on the engine's thread pool. The Spark executor (``airflow_provider_delta.spark``) has all but
``reader``, in Spark tasks where the rows are a DataFrame and only actions travel back. A command
never knows which one runs it; the functions it passes (:data:`FileRewrite`) are plain module-level
callables or picklable objects, so they can be shipped to other processes.

Example:
    >>> adds = executor.writer().write_files(WriteTarget.of(snapshot), rows)   # doctest: +SKIP
    >>> outcome = executor.merger().merge(job)                                 # doctest: +SKIP
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from airflow_provider_delta.exceptions import ExecutorCapabilityError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pyarrow as pa

    from airflow_provider_delta.core.actions import AddCDCFile, AddFile
    from airflow_provider_delta.core.change_data import ChangeType
    from airflow_provider_delta.core.executor.export.units import DeltaOutput, ExportUnit, UnitJob
    from airflow_provider_delta.core.executor.merge.job import MergeJob, MergeOutcome
    from airflow_provider_delta.core.expressions import Expr
    from airflow_provider_delta.core.schema.types import StructType
    from airflow_provider_delta.core.storage import Storage
    from airflow_provider_delta.core.write.target import WriteTarget

__all__ = [
    "BinLayout",
    "ChangeExporter",
    "ChangeRows",
    "DeleteOutcome",
    "Executor",
    "FileDeleter",
    "FileReader",
    "FileRewrite",
    "FileRewriter",
    "FileWriter",
    "Merger",
    "RewriteResult",
    "RowRewrite",
    "delete_paths",
]

ChangeRows = Any
"""Change rows an executor holds until :meth:`FileWriter.write_changes`: an Arrow table tagged with
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


# ------------------------------------------------------------------------------------ capabilities


class FileWriter(Protocol):
    """Rows in, data files and change data files out (every executor has it)."""

    def data_schema(self, data: Any) -> pa.Schema:
        """The Arrow schema of ``data`` (rows in this engine's form), logical names."""
        ...

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
        ...

    def change_rows(self, target: WriteTarget, data: Any, change_type: ChangeType) -> list[ChangeRows]:
        """``data`` (rows about to be written) as change rows of kind ``change_type``."""
        ...

    def write_files_and_changes(
        self,
        target: WriteTarget,
        data: Any,
        change_type: ChangeType,
        *,
        require: Expr | None = None,
        require_text: str = "",
    ) -> tuple[list[AddFile], list[ChangeRows]]:
        """``write_files`` and ``change_rows`` of the same rows, which an engine may take only once.

        An engine whose rows are computed on demand (a Spark DataFrame) writes both from one pass, so
        both hold exactly the same rows.
        """
        ...

    def write_changes(self, target: WriteTarget, changes: Sequence[ChangeRows]) -> list[AddCDCFile]:
        """Write collected change rows as change data files; return their ``cdc`` actions."""
        ...


class FileRewriter(Protocol):
    """Files in, new files out: row-level rewrites and bin rewrites (every executor has it)."""

    def rewrite_files(
        self, target: WriteTarget, files: Sequence[AddFile], rewrite: FileRewrite, *, record_changes: bool
    ) -> RewriteResult:
        """Rewrite ``files`` through ``rewrite``; keep its change rows when ``record_changes``."""
        ...

    def rewrite_bins(
        self, target: WriteTarget, bins: Sequence[Sequence[AddFile]], layout: BinLayout
    ) -> list[list[AddFile]]:
        """Rewrite each bin's live rows through ``layout`` as new files (``dataChange=false``).

        Returns:
            The ``add`` actions written for each bin, in the order of ``bins`` (empty for a bin
            without live rows).
        """
        ...


class FileDeleter(Protocol):
    """Delete files of a table (every executor has it)."""

    def delete_files(self, storage: Storage, paths: Sequence[str]) -> DeleteOutcome:
        """Delete ``paths`` (relative to ``storage``'s root); never raises for a single file's failure."""
        ...


class FileReader(Protocol):
    """Files' live rows into this process (optional: an engine whose rows stay remote has none)."""

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
        ...


class Merger(Protocol):
    """A planned MERGE's row work: join, clauses, files rewritten and inserted (optional)."""

    def merge(self, job: MergeJob) -> MergeOutcome:
        """Read the candidate files, join them with the source, run the clauses, write the new files.

        Returns:
            The files removed and written, change files, and the clause counters.

        Raises:
            MergeError: a value does not fit its column, or the plan needs what this engine lacks.
            MergeMultipleMatchError: several source rows would update or delete one target row.
        """
        ...


class ChangeExporter(Protocol):
    """The data work of a change data export (optional).

    The planning, the preflight and the sink's commit stay with the command (the driver); an exporter
    turns :class:`~.export.units.ExportUnit` s into output.
    """

    def write_files(self, job: UnitJob, units: Sequence[ExportUnit]) -> list[dict[str, Any]]:
        """Write each unit's output file to ``job.sink``; one record per unit, in the order of ``units``."""
        ...

    def write_delta(self, target: WriteTarget, work: Sequence[tuple[UnitJob, Sequence[ExportUnit]]]) -> DeltaOutput:
        """Write the rows of every unit (conformed to ``target.schema``) as data files of ``target``."""
        ...


# ---------------------------------------------------------------------------------------- executor


class Executor(ABC):
    """Where commands' data work runs: hands out its capabilities (see the module docstring).

    ``writer``, ``rewriter`` and ``deleter`` are required; ``reader``, ``merger`` and ``exporter``
    are optional and raise :class:`~airflow_provider_delta.exceptions.ExecutorCapabilityError` unless
    an executor provides them. An executor may implement a capability itself and return ``self``.
    """

    name: str = "executor"

    @abstractmethod
    def writer(self) -> FileWriter:
        """Write rows as data files and change files."""

    @abstractmethod
    def rewriter(self) -> FileRewriter:
        """Rewrite files row by row, or bin by bin."""

    @abstractmethod
    def deleter(self) -> FileDeleter:
        """Delete files of a table."""

    def reader(self) -> FileReader:
        """Read files' live rows into this process.

        Raises:
            ExecutorCapabilityError: this executor keeps rows where they are.
        """
        raise self.lacks("reader", "read data files into this process")

    def merger(self) -> Merger:
        """Run a planned MERGE's row work.

        Raises:
            ExecutorCapabilityError: this executor cannot run MERGE.
        """
        raise self.lacks("merger", "run MERGE")

    def exporter(self) -> ChangeExporter:
        """Run a change data export's data work.

        Raises:
            ExecutorCapabilityError: this executor cannot export change data.
        """
        raise self.lacks("exporter", "export change data")

    def lacks(self, capability: str, action: str, help: str = "") -> ExecutorCapabilityError:  # noqa: A002
        """The error for a capability this executor does not have (``help``: what to do instead)."""
        hint = help or "use an executor that has it, e.g. LocalExecutor()"
        return ExecutorCapabilityError(
            f"Cannot {action} with the {self.name!r} executor: it has no {capability!r} capability. Help: {hint}",
            executor=self.name,
            capability=capability,
        )

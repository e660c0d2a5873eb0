"""The local executor: a command's data work in this process, with pyarrow on the engine's thread pool.

The default executor of every command, with every capability of the seam (:mod:`.base`): it is its
own reader, writer, rewriter, deleter and merger (MERGE's join with pyarrow, :mod:`.merge.local`);
its exporter is :class:`~.export.local.LocalChangeExporter`. Files are read and written on
:mod:`..parallel`'s one pool (the same pool the scans and the data-file writer use); change rows are
collected as Arrow tables and written once per command, so a commit gets as few ``_change_data``
files as its partitions need.

Example:
    >>> executor = LocalExecutor()
    >>> adds = executor.writer().write_files(WriteTarget.of(snapshot), pa.table({"id": [1]}))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core.executor.base import DeleteOutcome, Executor, RewriteResult, delete_paths
from airflow_provider_delta.core.executor.export.local import LocalChangeExporter
from airflow_provider_delta.core.parallel import MAX_THREADS, run_parallel
from airflow_provider_delta.core.read.scan import add_file_reader, read_add_file
from airflow_provider_delta.core.write.changes import tag_changes, write_change_files
from airflow_provider_delta.core.write.files import conform_to_table
from airflow_provider_delta.core.write.rows import write_rows

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_delta.core.actions import AddCDCFile, AddFile
    from airflow_provider_delta.core.change_data import ChangeType
    from airflow_provider_delta.core.executor.base import (
        BinLayout,
        ChangeExporter,
        ChangeRows,
        FileDeleter,
        FileReader,
        FileRewrite,
        FileRewriter,
        FileWriter,
        Merger,
    )
    from airflow_provider_delta.core.executor.merge.job import MergeJob, MergeOutcome
    from airflow_provider_delta.core.expressions import Expr
    from airflow_provider_delta.core.schema.types import StructType
    from airflow_provider_delta.core.storage import Storage
    from airflow_provider_delta.core.write.target import WriteTarget

__all__ = ["LocalExecutor", "rewrite_bin"]


class LocalExecutor(Executor):
    """Data work with pyarrow in this process; ``data`` is a ``pyarrow.Table``. Every capability."""

    name = "local"

    def reader(self) -> FileReader:
        """This executor (:meth:`read_files`)."""
        return self

    def writer(self) -> FileWriter:
        """This executor (:meth:`write_files`, :meth:`change_rows`, :meth:`write_changes`, ...)."""
        return self

    def rewriter(self) -> FileRewriter:
        """This executor (:meth:`rewrite_files`, :meth:`rewrite_bins`)."""
        return self

    def deleter(self) -> FileDeleter:
        """This executor (:meth:`delete_files`)."""
        return self

    def merger(self) -> Merger:
        """This executor (:meth:`merge`)."""
        return self

    def exporter(self) -> ChangeExporter:
        """A :class:`~.export.local.LocalChangeExporter`."""
        return LocalChangeExporter()

    def merge(self, job: MergeJob) -> MergeOutcome:
        """The MERGE's row work in this process: read, join and run the clauses with pyarrow (:mod:`.merge.local`).

        Raises:
            MergeError: a value does not fit its column, or the plan holds SQL only Spark evaluates.
            MergeMultipleMatchError: two source rows would update or delete one target row.
        """
        # lazy: the MERGE join loads the expression engine (sqlglot, ~0.2 s), which other commands do not need
        from airflow_provider_delta.core.executor.merge.local import merge_locally

        return merge_locally(job, self)

    def data_schema(self, data: Any) -> pa.Schema:
        """The schema of the Arrow table ``data``."""
        return _as_table(data).schema

    def write_files(
        self,
        target: WriteTarget,
        data: Any,
        *,
        data_change: bool = True,
        require: Expr | None = None,
        require_text: str = "",
    ) -> list[AddFile]:
        """Write the rows (files in parallel on the shared pool); see :meth:`Executor.write_files`."""
        return write_rows(
            target, _as_table(data), data_change=data_change, require=require, require_text=require_text
        )

    def rewrite_files(
        self, target: WriteTarget, files: Sequence[AddFile], rewrite: FileRewrite, *, record_changes: bool
    ) -> RewriteResult:
        """Rewrite file by file (one file's rows in memory at a time), in the order of ``files``."""
        result = RewriteResult()
        for add in files:
            outcome = rewrite(add, read_add_file(target, add))
            if outcome is None:
                continue
            new = write_rows(target, outcome.keep) if outcome.keep.num_rows else []
            result.record(add, outcome, new)
            if record_changes:
                result.changes.extend(outcome.changes)
        return result

    def rewrite_bins(
        self, target: WriteTarget, bins: Sequence[Sequence[AddFile]], layout: BinLayout
    ) -> list[list[AddFile]]:
        """Rewrite the bins on the shared pool (one bin per job; a single bin reads its files in parallel)."""
        return run_parallel(lambda files: rewrite_bin(target, files, layout), bins)

    def delete_files(self, storage: Storage, paths: Sequence[str]) -> DeleteOutcome:
        """Delete on the shared pool, in a few chunks per thread (I/O bound: the GIL is released)."""
        outcome = DeleteOutcome()
        if not paths:
            return outcome
        size = max(1, -(-len(paths) // (MAX_THREADS * 4)))
        chunks = [paths[i : i + size] for i in range(0, len(paths), size)]
        for part in run_parallel(lambda chunk: delete_paths(storage, chunk), chunks):
            outcome.merge(part)
        return outcome

    def change_rows(self, target: WriteTarget, data: Any, change_type: ChangeType) -> list[ChangeRows]:
        """The rows, conformed to the table's schema, tagged ``change_type``."""
        return [tag_changes(conform_to_table(_as_table(data), target.schema, location=target.location), change_type)]

    def write_files_and_changes(
        self,
        target: WriteTarget,
        data: Any,
        change_type: ChangeType,
        *,
        require: Expr | None = None,
        require_text: str = "",
    ) -> tuple[list[AddFile], list[ChangeRows]]:
        """:meth:`write_files` and :meth:`change_rows` of the same rows (taking rows in memory twice is free)."""
        adds = self.write_files(target, data, require=require, require_text=require_text)
        return adds, self.change_rows(target, data, change_type)

    def write_changes(self, target: WriteTarget, changes: Sequence[ChangeRows]) -> list[AddCDCFile]:
        """Write every collected change table in one go (PROTOCOL.md "Change Data Files")."""
        tables = [t for t in changes if t.num_rows]
        if not tables:
            return []
        return write_change_files(target, pa.concat_tables(tables, promote_options="permissive"))

    def read_files(
        self,
        target: WriteTarget,
        files: Sequence[AddFile],
        *,
        schema: StructType | None = None,
        columns: Sequence[str] | None = None,
    ) -> list[pa.Table]:
        """Read the files (or their ``columns``) in parallel; conform to ``schema`` when it differs from the table's."""
        reader = add_file_reader(target, columns)

        def read(add: AddFile) -> pa.Table:
            rows = reader(add)
            return conform_to_table(rows, schema) if schema is not None and schema != target.schema else rows

        return run_parallel(read, files)


def rewrite_bin(target: WriteTarget, files: Sequence[AddFile], layout: BinLayout) -> list[AddFile]:
    """Read one bin's live rows (files in parallel unless already on a pool thread), arrange, write.

    Each table ``layout`` returns becomes one file, with ``dataChange=false``. Shared with the Spark
    executor's tasks.
    """
    parts = run_parallel(add_file_reader(target), files)
    rows = pa.concat_tables(parts) if parts else pa.table({})
    if rows.num_rows == 0:
        return []
    # One chunk per column: Parquet writes a table of many small chunks about 3x slower.
    rows = rows.combine_chunks()
    added: list[AddFile] = []
    for chunk in layout(files, rows):
        if chunk.num_rows:
            added += write_rows(target, chunk, data_change=False, target_file_rows=chunk.num_rows)
    return added


def _as_table(data: Any) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    raise TypeError(f"Cannot write rows: the local executor takes a pyarrow.Table, found {type(data).__name__}")

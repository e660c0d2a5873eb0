"""The Spark executor: a command's data work in Spark tasks; only actions come back to the driver.

:class:`SparkExecutor` implements core's :class:`~airflow_provider_delta.core.executor.Executor` seam
with ``data`` a ``pyspark.sql.DataFrame``: it is its own writer, rewriter, deleter and merger; its
exporter is :class:`~airflow_provider_delta.spark.cdf_export.SparkChangeExporter`; it has no reader
(``reader()`` raises ``ExecutorCapabilityError``: rows stay on the executors). Every step runs the
engine's own code inside the tasks, so the files are exactly those the local executor writes:

- ``write_files``: ``df.mapInArrow`` where each task takes its Arrow batches and calls core's
  :func:`~airflow_provider_delta.core.write.rows.write_rows` once (conform to the schema, CHECK
  constraints, the replaceWhere predicate, Parquet files of at most a million rows with statistics),
  and yields the ``add`` actions as JSON;
- ``rewrite_files``: the files spread over tasks (by size, as Spark splits its own scans); each task
  reads a file with :func:`~airflow_provider_delta.core.read.scan.read_add_file`, applies the
  command's :data:`~airflow_provider_delta.core.executor.FileRewrite` (a picklable dataclass), writes
  the kept rows and, when recording changes, its change rows as ``_change_data`` files;
- ``change_rows``: the DataFrame's rows written as change files by tasks (``cdc`` actions back);
- ``write_changes``: ``cdc`` actions pass through; Arrow change tables (if any) are written here;
- ``merge``: a planned MERGE joined by Spark (:mod:`airflow_provider_delta.spark.merge.execution`);
- ``rewrite_bins`` (OPTIMIZE, ZORDER BY, REORG): the bins spread over tasks by size; each task reads
  a bin's files, arranges the rows with the command's layout and writes them (``dataChange=false``);
- ``delete_files`` (VACUUM): a long list of paths is deleted by tasks in chunks; a short one (fewer
  than :data:`SPARK_DELETE_THRESHOLD`) in the driver, where a Spark job would cost more than it saves.

Only the actions returned by successful task attempts reach the driver, and the driver commits once:
files written by a failed or speculative attempt are never referenced (they are orphans that vacuum
removes). A ``DeltaError`` raised in a task (a row outside the predicate, a CHECK violation) fails
the Spark job and is raised again in the driver with its type and message, before anything commits.

Example:
    >>> from airflow_provider_delta.core.commands.write import write
    >>> write(table.snapshot, spark.range(10), executor=SparkExecutor(spark))  # doctest: +SKIP
    WriteResult(version=3, metrics={'numFiles': 2, 'numOutputRows': 10, ...})
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa

from airflow_provider_delta.core.actions import AddCDCFile, AddFile
from airflow_provider_delta.core.executor import (
    DeleteOutcome,
    Executor,
    LocalExecutor,
    RewriteResult,
    delete_paths,
)
from airflow_provider_delta.core.executor.local import rewrite_bin
from airflow_provider_delta.core.read.scan import read_add_file
from airflow_provider_delta.core.schema.arrow import to_arrow_schema
from airflow_provider_delta.core.write.changes import tag_changes, write_change_files
from airflow_provider_delta.core.write.files import conform_to_table
from airflow_provider_delta.core.write.rows import write_rows
from airflow_provider_delta.exceptions import ExecutorCapabilityError, SchemaMismatchError
from airflow_provider_delta.spark.cdf_export import SparkChangeExporter
from airflow_provider_delta.spark.environment import require_executor_environment
from airflow_provider_delta.spark.merge.execution import run_spark_merge
from airflow_provider_delta.spark.tasks import (
    RECORD_SCHEMA,
    collect_records,
    delta_errors,
    file_frame,
    file_partitions,
    json_frame,
    map_in_arrow,
    records_batch,
    task_payloads,
    task_rows,
)
from airflow_provider_delta.spark.types import from_spark_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from airflow_provider_delta.core.change_data import ChangeType
    from airflow_provider_delta.core.executor import (
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

__all__ = ["DELETE_JOB_GROUP", "REWRITE_JOB_GROUP", "SPARK_DELETE_THRESHOLD", "SparkExecutor", "TaskHook", "job_group"]

#: Fewer paths than this are deleted in the driver (thread pool) rather than by a Spark job.
SPARK_DELETE_THRESHOLD = 1000
_DELETE_CHUNKS_PER_CORE = 4
_READ_HELP = "rows stay on the executors; read the table as a DataFrame with airflow_provider_delta.spark.read_delta"
#: Spark job groups of the maintenance work (the Spark UI and ``statusTracker`` show them).
DELETE_JOB_GROUP = "delta-vacuum-delete"
REWRITE_JOB_GROUP = "delta-rewrite"


@contextlib.contextmanager
def job_group(spark: SparkSession, group: str, description: str) -> Iterator[None]:
    """Run the Spark jobs of the block in ``group`` (the caller's own group is restored afterwards)."""
    sc = spark.sparkContext
    previous = {key: sc.getLocalProperty(key) for key in ("spark.jobGroup.id", "spark.job.description")}
    sc.setJobGroup(group, description)
    try:
        yield
    finally:
        for key, value in previous.items():
            sc.setLocalProperty(key, value)  # type: ignore[arg-type]

TaskHook = Callable[[Sequence[AddFile | AddCDCFile]], None]
"""A callable run in each task after it has written its files, with their actions (tests); VACUUM's
delete tasks call it with no actions after each chunk."""


class SparkExecutor(Executor):
    """Data work in Spark tasks; ``data`` is a ``pyspark.sql.DataFrame`` (see the module docstring).

    Args:
        spark: the SparkSession whose executors do the work.
        task_hook: called in every task after the task wrote its files, with their actions; tests
            use it to fail an attempt after it wrote (picklable: a module-level function or closure).

    Example:
        >>> executor = SparkExecutor(spark)                                               # doctest: +SKIP
        >>> adds = executor.writer().write_files(WriteTarget.of(snapshot), spark.range(5))  # doctest: +SKIP
    """

    name = "spark"

    def __init__(self, spark: SparkSession, *, task_hook: TaskHook | None = None) -> None:
        require_executor_environment(spark)
        self.spark = spark
        self.task_hook = task_hook

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
        """This executor (:meth:`merge`: Spark's join)."""
        return self

    def exporter(self) -> ChangeExporter:
        """A :class:`~airflow_provider_delta.spark.cdf_export.SparkChangeExporter` writing through this executor."""
        return SparkChangeExporter(self.spark, writer=self)

    def reader(self) -> FileReader:
        """None on Spark: reading files into the driver would bring every row there.

        Raises:
            ExecutorCapabilityError: always.
        """
        raise self.lacks("reader", "read data files into the driver", _READ_HELP)

    def data_schema(self, data: Any) -> pa.Schema:
        """The logical Arrow schema of the DataFrame ``data`` (its Spark schema, converted via Delta).

        Raises:
            SchemaError: a column's Spark type has no Delta equivalent.
            UnsupportedFeatureError: a column's type needs a table feature this engine lacks.
        """
        return to_arrow_schema(from_spark_schema(_frame(data).schema))

    def write_files(
        self,
        target: WriteTarget,
        data: Any,
        *,
        data_change: bool = True,
        require: Expr | None = None,
        require_text: str = "",
    ) -> list[AddFile]:
        """Write the DataFrame's rows in Spark tasks, one ``write_rows`` per task; return the ``add`` actions.

        Raises:
            SchemaMismatchError: the DataFrame's columns do not fit the table (checked in the driver
                before any task runs), or rows do not (nulls in NOT NULL columns, CHECK constraints,
                ``require``): the tasks fail and nothing is returned to commit.
        """
        frame = _frame(data)
        self._check_fits(target, frame)
        task = _WriteTask(target, data_change, require, require_text, self.task_hook)
        records = collect_records(map_in_arrow(frame, task, RECORD_SCHEMA))
        return [AddFile.from_dict(r["add"]) for r in records]

    def write_files_and_changes(
        self,
        target: WriteTarget,
        data: Any,
        change_type: ChangeType,
        *,
        require: Expr | None = None,
        require_text: str = "",
    ) -> tuple[list[AddFile], list[ChangeRows]]:
        """One pass over the DataFrame: each task writes its rows as data files and as change rows.

        Raises:
            SchemaMismatchError: as :meth:`write_files`.
        """
        frame = _frame(data)
        self._check_fits(target, frame)
        task = _WriteTask(target, True, require, require_text, self.task_hook, change_type)
        records = collect_records(map_in_arrow(frame, task, RECORD_SCHEMA))
        adds = [AddFile.from_dict(r["add"]) for r in records if "add" in r]
        return adds, [AddCDCFile.from_dict(r["cdc"]) for r in records if "cdc" in r]

    def rewrite_files(
        self, target: WriteTarget, files: Sequence[AddFile], rewrite: FileRewrite, *, record_changes: bool
    ) -> RewriteResult:
        """Rewrite the files in Spark tasks; change rows are written there too (``cdc`` actions back)."""
        result = RewriteResult()
        if not files:
            return result
        task = _RewriteTask(target, rewrite, record_changes, self.task_hook)
        records = collect_records(map_in_arrow(file_frame(self.spark, files), task, RECORD_SCHEMA))
        for record in sorted(records, key=lambda r: int(r["index"])):
            result.removed.append(files[int(record["index"])])
            result.added.extend(AddFile.from_dict(a) for a in record["added"])
            if record_changes:
                result.changes.extend(AddCDCFile.from_dict(c) for c in record["cdc"])
            for key, value in record["metrics"].items():
                result.metrics[key] = result.metrics.get(key, 0) + int(value)
        return result

    def rewrite_bins(
        self, target: WriteTarget, bins: Sequence[Sequence[AddFile]], layout: BinLayout
    ) -> list[list[AddFile]]:
        """Rewrite the bins in Spark tasks (bins grouped into tasks by size); only ``add`` actions come back."""
        out: list[list[AddFile]] = [[] for _ in bins]
        if not bins:
            return out
        groups = file_partitions([sum(f.size for f in b) for b in bins], parallelism=self._parallelism())
        payloads = [
            [orjson.dumps({"index": i, "files": [f.to_dict() for f in bins[i]]}).decode() for i in group]
            for group in groups
        ]
        task = _BinTask(target, layout, self.task_hook)
        description = f"Delta rewrite: {len(bins)} bin(s) of {target.location}"
        with job_group(self.spark, REWRITE_JOB_GROUP, description):
            records = collect_records(map_in_arrow(json_frame(self.spark, payloads), task, RECORD_SCHEMA))
        for record in records:
            out[int(record["index"])] = [AddFile.from_dict(a) for a in record["added"]]
        return out

    def delete_files(self, storage: Storage, paths: Sequence[str]) -> DeleteOutcome:
        """Delete in tasks, ``defaultParallelism * 4`` chunks (in the driver below the threshold)."""
        if len(paths) < SPARK_DELETE_THRESHOLD:
            return LocalExecutor().deleter().delete_files(storage, paths)
        chunks = self._parallelism() * _DELETE_CHUNKS_PER_CORE
        size = -(-len(paths) // chunks)
        groups = [[orjson.dumps(list(paths[i : i + size])).decode()] for i in range(0, len(paths), size)]
        outcome = DeleteOutcome()
        task = _DeleteTask(storage, self.task_hook)
        with job_group(self.spark, DELETE_JOB_GROUP, f"Delta VACUUM: delete {len(paths)} file(s) of {storage.root}"):
            records = collect_records(map_in_arrow(json_frame(self.spark, groups), task, RECORD_SCHEMA))
        for record in records:
            outcome.merge(DeleteOutcome(list(record["deleted"]), dict(record["failed"])))
        return outcome

    def _parallelism(self) -> int:
        return max(1, int(self.spark.sparkContext.defaultParallelism))

    def change_rows(self, target: WriteTarget, data: Any, change_type: ChangeType) -> list[ChangeRows]:
        """Write the DataFrame's rows as change rows of kind ``change_type`` in tasks; their ``cdc`` actions."""
        frame = _frame(data)
        self._check_fits(target, frame)
        task = _ChangeTask(target, change_type, self.task_hook)
        records = collect_records(map_in_arrow(frame, task, RECORD_SCHEMA))
        return [AddCDCFile.from_dict(r["cdc"]) for r in records]

    def write_changes(self, target: WriteTarget, changes: Sequence[ChangeRows]) -> list[AddCDCFile]:
        """``cdc`` actions of files tasks already wrote, plus any Arrow change tables written here."""
        written = [c for c in changes if isinstance(c, AddCDCFile)]
        tables = [c for c in changes if isinstance(c, pa.Table) and c.num_rows]
        if tables:
            written += write_change_files(target, pa.concat_tables(tables, promote_options="permissive"))
        return written

    def read_files(
        self,
        target: WriteTarget,
        files: Sequence[AddFile],
        *,
        schema: StructType | None = None,
        columns: Sequence[str] | None = None,
    ) -> list[pa.Table]:
        """Not on Spark (see :meth:`reader`): it would bring every row to the driver.

        Raises:
            ExecutorCapabilityError: always (a ``NotImplementedError``).
        """
        raise ExecutorCapabilityError(
            f"Cannot read {len(files)} file(s) of table {target.location!r} into the driver with the Spark "
            f"executor. Help: {_READ_HELP}",
            executor=self.name,
            capability="reader",
        )

    def merge(self, job: MergeJob) -> MergeOutcome:
        """A planned MERGE's row work in one Spark job: target files read by tasks, joined with the
        source by Spark, clauses evaluated as Spark SQL, files written by tasks (see
        :mod:`airflow_provider_delta.spark.merge.execution`); only actions come back.

        Raises:
            MergeError: a value does not fit its column.
            MergeMultipleMatchError: several source rows would update or delete one target row.
        """
        return run_spark_merge(self.spark, job, self.task_hook)

    def _check_fits(self, target: WriteTarget, frame: DataFrame) -> None:
        """Refuse columns that do not fit the table before any task writes a file."""
        try:
            conform_to_table(self.data_schema(frame).empty_table(), target.schema, location=target.location)
        except SchemaMismatchError as err:
            raise SchemaMismatchError(
                f"{err} (version {target.version}). Help: select and cast the "
                "DataFrame's columns to the table schema, or pass schema_mode='merge' to add new columns"
            ) from err


def _frame(data: Any) -> DataFrame:
    from pyspark.sql import DataFrame

    if not isinstance(data, DataFrame):
        raise TypeError(
            f"Cannot write rows: the Spark executor takes a pyspark.sql.DataFrame, found {type(data).__name__}"
        )
    return data


# ---------------------------------------------------------------------------------------- the tasks
# Module-level dataclasses: Spark pickles them by reference to this module plus their fields
# (WriteTarget, bound expressions and FileRewrite dataclasses are picklable), so executors run the
# same code as the driver.


@dataclass(frozen=True)
class _WriteTask:
    """``mapInArrow`` function: write the task's rows as data files (one ``write_rows`` call), and as
    change rows of ``change_type`` too when it is set."""

    target: WriteTarget
    data_change: bool
    require: Expr | None
    require_text: str
    hook: TaskHook | None
    change_type: ChangeType | None = None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = task_rows(batches)
        if rows is None:
            return
        cdc: list[AddCDCFile] = []
        with delta_errors():
            adds = write_rows(
                self.target, rows, data_change=self.data_change, require=self.require, require_text=self.require_text
            )
            if self.change_type is not None:
                tagged = tag_changes(conform_to_table(rows, self.target.schema), self.change_type)
                cdc = write_change_files(self.target, tagged)
        if self.hook is not None:
            self.hook([*adds, *cdc])
        yield records_batch([{"add": a.to_dict()} for a in adds] + [{"cdc": c.to_dict()} for c in cdc])


@dataclass(frozen=True)
class _ChangeTask:
    """``mapInArrow`` function: write the task's rows as change rows of one kind."""

    target: WriteTarget
    change_type: ChangeType
    hook: TaskHook | None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = task_rows(batches)
        if rows is None:
            return
        with delta_errors():
            tagged = tag_changes(
                conform_to_table(rows, self.target.schema, location=self.target.location), self.change_type
            )
            cdc = write_change_files(self.target, tagged)
        if self.hook is not None:
            self.hook(cdc)
        yield records_batch([{"cdc": c.to_dict()} for c in cdc])


@dataclass(frozen=True)
class _BinTask:
    """``mapInArrow`` function over a bin frame: rewrite each bin of the task (core's ``rewrite_bin``)."""

    target: WriteTarget
    layout: BinLayout
    hook: TaskHook | None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for payload in task_payloads(batches):
            files = [AddFile.from_dict(f) for f in payload["files"]]
            with delta_errors():
                added = rewrite_bin(self.target, files, self.layout)
            if self.hook is not None:
                self.hook(added)
            yield records_batch([{"index": payload["index"], "added": [a.to_dict() for a in added]}])


@dataclass(frozen=True)
class _DeleteTask:
    """``mapInArrow`` function: delete each chunk of paths; report what was deleted and what failed."""

    storage: Storage
    hook: TaskHook | None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for paths in task_payloads(batches):
            outcome = delete_paths(self.storage, paths)
            if self.hook is not None:
                self.hook([])
            yield records_batch([{"deleted": outcome.deleted, "failed": outcome.failed}])


@dataclass(frozen=True)
class _RewriteTask:
    """``mapInArrow`` function over a file frame: rewrite each file of the task through ``rewrite``."""

    target: WriteTarget
    rewrite: FileRewrite
    record_changes: bool
    hook: TaskHook | None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for payload in task_payloads(batches):
            with delta_errors():
                record = self._rewrite(AddFile.from_dict(payload["add"]))
            if record is not None:
                yield records_batch([{"index": payload["index"], **record}])

    def _rewrite(self, add: AddFile) -> dict[str, Any] | None:
        outcome = self.rewrite(add, read_add_file(self.target, add))
        if outcome is None:
            return None
        added = write_rows(self.target, outcome.keep) if outcome.keep.num_rows else []
        cdc: list[AddCDCFile] = []
        changes = [t for t in outcome.changes if t.num_rows]
        if self.record_changes and changes:
            cdc = write_change_files(self.target, pa.concat_tables(changes, promote_options="permissive"))
        if self.hook is not None:
            self.hook([*added, *cdc])
        return {
            "added": [a.to_dict() for a in added],
            "cdc": [c.to_dict() for c in cdc],
            "metrics": dict(outcome.metrics),
        }

"""MERGE on Spark: the row work of a plan core made, as one Spark job; only actions reach the driver.

The plan (clauses, evolved schema, candidate files) is core's, as for the local executor. Here:

1. the candidate target files are read by Spark tasks with the engine's reader
   (:func:`~airflow_provider_delta.spark.read.file_rows_frame`: deletion vectors, column mapping,
   partition values), only the columns the ON condition and the clauses use, each row tagged with its
   file and position;
2. Spark joins them with the source DataFrame on the ON condition (full outer when there are
   WHEN NOT MATCHED clauses, else left outer; a left anti join of the source for insert-only merges),
   so the join scales and spills as any Spark join. For a source of at most
   :data:`BROADCAST_KEYS_ROWS` rows, the target rows are first narrowed to those whose equi-join keys
   occur in the source (a left semi join on a broadcast of the source's keys): only they are shuffled
   for the join, not the whole target; with NOT MATCHED BY SOURCE clauses the other target rows (a
   left anti join on the same broadcast) join the result as unmatched rows, without a shuffle;
3. the clause conditions and values are Spark SQL, evaluated where Delta evaluates them: WHEN MATCHED
   over both aliases, WHEN NOT MATCHED over the source only, NOT MATCHED BY SOURCE over the target
   only (each stage sees just its aliases); a row's clause is the first whose condition holds
   (``CASE WHEN``), and a value is computed only on the rows its clause takes;
4. the joined rows a clause acts on are grouped by target file (rows to insert in a few groups of
   their own, by a hash of their keys), the groups spread evenly over one task per core
   (:mod:`~airflow_provider_delta.spark.task_slots`), and
   :class:`~airflow_provider_delta.spark.merge.tasks.MergeGroupTask` writes each group
   with core's reader and writer: it reads its file again, rewrites it with the changes, and writes
   inserted rows and change data; unchanged rows never pass through Spark's shuffles. Only
   ``add``/``cdc`` actions and counters come back, and the driver commits once.

Example:
    >>> outcome = run_spark_merge(spark, job)   # doctest: +SKIP
    >>> outcome.counts["numTargetRowsMatchedUpdated"], len(outcome.removed)   # doctest: +SKIP
    (250000, 20)
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from airflow_provider_delta.core.actions import AddCDCFile, AddFile
from airflow_provider_delta.core.commands.merge.plan import quote_sql
from airflow_provider_delta.core.executor.merge.job import CLAUSE_COUNTERS, MergeOutcome
from airflow_provider_delta.core.executor.merge.plan import EngineExpr
from airflow_provider_delta.core.executor.merge.source import ArrowMergeSource
from airflow_provider_delta.core.expressions import Column as ExprColumn
from airflow_provider_delta.core.write.target import WriteTarget
from airflow_provider_delta.exceptions import MergeError
from airflow_provider_delta.spark.file_rows import FILE_INDEX, ROW_INDEX, file_rows_frame
from airflow_provider_delta.spark.merge.source import SparkMergeSource
from airflow_provider_delta.spark.merge.tasks import (
    BY_SOURCE,
    GROUP,
    INSERT,
    MATCHED,
    MergeGroupTask,
    TaskClause,
    target_column,
    value_column,
)
from airflow_provider_delta.spark.task_slots import SLOT, balanced_slots, slot_keys
from airflow_provider_delta.spark.tasks import RECORD_SCHEMA, apply_in_arrow, collect_records

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from airflow_provider_delta.core.executor.merge.job import MergeJob
    from airflow_provider_delta.core.executor.merge.plan import MergePlan, PlannedClause
    from airflow_provider_delta.core.expressions import Expr

__all__ = ["BROADCAST_KEYS_CONF", "BROADCAST_KEYS_ROWS", "run_spark_merge"]

log = logging.getLogger(__name__)

_TARGET_PRESENT = "__delta_merge_target_row"
_SOURCE_PRESENT = "__delta_merge_source_row"
_ROWS_PER_INSERT_GROUP = 1_000_000  # inserted rows are grouped into about this many rows per task
BROADCAST_KEYS_CONF = "spark.airflow_provider_delta.merge.broadcastKeyRows"
"""Spark conf: the largest source (rows) whose join keys are broadcast (see :data:`BROADCAST_KEYS_ROWS`)."""
BROADCAST_KEYS_ROWS = 2_000_000
"""By default, a source of at most this many rows has its join keys broadcast: a target row whose keys no
source row has is dropped before the join (a left semi join), so only the target rows that can match are
shuffled. Larger sources join the whole target (a shuffle join of both sides)."""


def _source_column(index: int) -> str:
    return f"__delta_merge_s{index}"


def run_spark_merge(
    spark: SparkSession,
    job: MergeJob,
    hook: Callable[[Sequence[AddFile | AddCDCFile]], None] | None = None,
) -> MergeOutcome:
    """The row work of ``job`` on Spark (see the module docstring); files are written, nothing committed.

    Raises:
        MergeError: a value does not fit its column (from a task).
        MergeMultipleMatchError: two source rows would update or delete one target row (from a task).
    """
    plan = job.plan
    changes_target = bool(plan.matched or plan.not_matched_by_source)
    if not plan.not_matched and not job.files:
        return MergeOutcome(counts=dict.fromkeys(CLAUSE_COUNTERS, 0))  # no target row can change
    started = time.monotonic()
    source = _source_frame(spark, job)
    reader = WriteTarget.of(job.reader)
    columns = _target_columns(plan, reader.schema.names)
    target = file_rows_frame(spark, reader, job.files, columns)
    writer = WriteTarget.of(job.writer)
    parallelism = spark.sparkContext.defaultParallelism
    groups = max(parallelism, math.ceil(plan.source_rows / _ROWS_PER_INSERT_GROUP)) if plan.not_matched else 0
    slots = _Slots.of(job.files, groups, plan.source_rows, parallelism)
    stages = _Stages(plan, target, source, columns, prefilter=_prefilter(spark, plan))
    frame = stages.grouped(slots)
    task = MergeGroupTask(
        reader=reader,
        files=tuple(f._replace(stats=None) for f in job.files),
        target=writer,
        clauses=stages.task_clauses(),
        duplicates_allowed=plan.duplicates_allowed,
        record_changes=job.record_changes,
        insert_changes=job.record_changes and changes_target,
        on=plan.condition_sql,
        hook=hook,
    )
    log.info("MERGE on Spark: joining %d target file(s) (columns %s) with the source; %d insert group(s)",
             len(job.files), ", ".join(columns), groups)
    # A plain function: pyspark counts a callable object's parameters inconsistently (self included).
    grouped = frame.repartition(slots.count, SLOT).groupBy(SLOT, GROUP)  # one task per slot, no second shuffle
    records = collect_records(apply_in_arrow(grouped, lambda key, rows: task(key, rows), RECORD_SCHEMA))
    outcome = _outcome(job, records, writer)
    outcome.scan_seconds = time.monotonic() - started
    log.info("MERGE on Spark: %d task record(s) in %.1fs", len(records), outcome.scan_seconds)
    return outcome


@dataclass(frozen=True)
class _Slots:
    """Which task writes which group (see :mod:`~airflow_provider_delta.spark.task_slots`): a slot key per
    target file and per insert group, balanced by rows (a file's ``numRecords``, an insert group's share
    of the source)."""

    count: int
    file_keys: list[int]
    insert_keys: list[int]

    @classmethod
    def of(cls, files: Sequence[AddFile], insert_groups: int, source_rows: int, parallelism: int) -> _Slots:
        costs = [float(f.num_records or f.size // 32) for f in files]
        costs += [source_rows / max(1, insert_groups)] * insert_groups
        count = max(1, min(parallelism, len(costs)))
        keys = slot_keys(count)
        chosen = [keys[slot] for slot in balanced_slots(costs, count)]
        return cls(count, chosen[: len(files)], chosen[len(files):])


def _prefilter(spark: SparkSession, plan: MergePlan) -> bool:
    """Whether to narrow the target to the rows whose keys occur in the source before the join."""
    if not plan.keys:  # no equality to look up
        return False
    limit = spark.conf.get(BROADCAST_KEYS_CONF, None)
    if not limit:
        return plan.source_rows <= BROADCAST_KEYS_ROWS
    try:
        return plan.source_rows <= int(limit)
    except ValueError:
        raise MergeError(
            f"Cannot run MERGE on Spark: the Spark conf {BROADCAST_KEYS_CONF} must be a number of source rows, "
            f"found {limit!r}. Help: set it to e.g. 2000000, or 0 to always join the whole target"
        ) from None


def _target_columns(plan: MergePlan, names: Sequence[str]) -> list[str]:
    """The target columns the ON condition and the clauses read (all of them for Spark-only SQL)."""
    exprs: list[Expr | None] = [plan.target_filter, plan.residual]
    for clause in (*plan.matched, *plan.not_matched_by_source):
        exprs += [clause.condition, *(a.value for a in clause.assignments)]
    used = {key.target[0].lower() for key in plan.keys}
    for expr in exprs:
        for node in _walk(expr):
            if isinstance(node, EngineExpr):
                return list(names)
            if isinstance(node, ExprColumn) and node.qualifier in (None, plan.target_alias):
                used.add(node.path[0].lower())
    chosen = [n for n in names if n.lower() in used]
    return chosen or list(names[:1])  # a row count needs one column


def _walk(expr: Expr | None) -> Iterator[Expr]:
    if expr is None:
        return
    yield expr
    for child in expr.children():
        yield from _walk(child)


def _source_frame(spark: SparkSession, job: MergeJob) -> DataFrame:
    if isinstance(job.source, SparkMergeSource):
        return job.source.frame
    if isinstance(job.source, ArrowMergeSource):
        return spark.createDataFrame(job.source.table)
    raise TypeError(f"Cannot run MERGE on Spark from a source of type {type(job.source).__name__}")


def _outcome(job: MergeJob, records: list[dict[str, Any]], writer: WriteTarget) -> MergeOutcome:
    """Fold the tasks' records; keep speculative ``insert`` change files only when a file was removed."""
    outcome = MergeOutcome(counts=dict.fromkeys(CLAUSE_COUNTERS, 0))
    insert_changes: list[AddCDCFile] = []
    for record in sorted(records, key=lambda r: (r["index"] is None, r["index"] or 0)):
        if record["index"] is not None:
            outcome.removed.append(job.files[int(record["index"])])
        outcome.added.extend(AddFile.from_dict(a) for a in record["added"])
        cdc = [AddCDCFile.from_dict(c) for c in record["cdc"]]
        (outcome.cdc if record["index"] is not None else insert_changes).extend(cdc)
        for key, value in record["counts"].items():
            outcome.counts[key] += int(value)
        outcome.copied_rows += int(record["copied"])
    if outcome.removed:
        outcome.cdc.extend(insert_changes)
    else:  # as locally: an insert-only outcome records no change files (readers derive inserts from adds)
        filesystem = writer.storage.arrow_filesystem()
        for unused in insert_changes:
            filesystem.delete_file(writer.storage.resolve(unused.path))
    return outcome


class _Stages:
    """The joined rows with each clause's choice and values, built stage by stage (see the module docstring).

    A value that is a bare column of the clause's scope (``UPDATE SET *``, ``INSERT *``) is not
    computed into a column of its own: the tasks read it from the joined row's copy of that column.
    """

    def __init__(self, plan: MergePlan, target: DataFrame, source: DataFrame, target_names: Sequence[str],
                 *, prefilter: bool) -> None:
        self.plan = plan
        self.prefilter = prefilter
        self.target_names = list(target_names)
        self.source_names = list(source.columns)
        self.offsets = {
            "matched": 0,
            "not_matched": len(plan.matched),
            "not_matched_by_source": len(plan.matched) + len(plan.not_matched),
        }
        self.value_columns: dict[tuple[int, int], str] = {}  # (clause, assignment) -> the column of its values
        self.private: list[str] = []  # the columns every stage carries on
        self.frame = self._join(target.withColumn(_TARGET_PRESENT, F.lit(True)),
                                source.withColumn(_SOURCE_PRESENT, F.lit(True)))

    def task_clauses(self) -> tuple[TaskClause, ...]:
        """Every clause as the tasks see it, with the columns holding its values."""
        return tuple(
            TaskClause.of(c, tuple(self.value_columns[(k, j)] for j in range(len(c.assignments))))
            for k, c in enumerate(self.plan.clauses)
        )

    def _join(self, target: DataFrame, source: DataFrame) -> DataFrame:
        plan, ta, sa = self.plan, self.plan.target_alias, self.plan.source_alias
        on = F.expr(plan.condition_sql)
        candidates = _with_source_keys(target, source, plan, "left_semi") if self.prefilter else target
        if not (plan.matched or plan.not_matched_by_source):  # insert-only: the unmatched source rows
            joined = source.alias(sa).join(candidates.alias(ta), on, "left_anti")
            self.private += [FILE_INDEX, ROW_INDEX, _TARGET_PRESENT]
            missing = [F.lit(None).cast(t).alias(n) for n, t in
                       ((FILE_INDEX, "int"), (ROW_INDEX, "long"), (_TARGET_PRESENT, "boolean"))]
            return joined.select(*missing, *self._privatize_source(sa))
        joined = candidates.alias(ta).join(source.alias(sa), on, _join_type(plan))
        extra: list[Column] = []
        if plan.matched:  # both aliases are visible only here, on the join itself
            both = F.col(_TARGET_PRESENT).isNotNull() & F.col(_SOURCE_PRESENT).isNotNull()
            joined = joined.select("*", F.when(both, _choice(plan.matched)).alias(MATCHED))
            extra = [F.col(MATCHED), *self._values(plan.matched, MATCHED, "matched")]
        target_columns = [F.col(quote_sql(ta, n)).alias(target_column(i)) for i, n in enumerate(self.target_names)]
        self.private += [target_column(i) for i in range(len(self.target_names))]
        self.private += [FILE_INDEX, ROW_INDEX, _TARGET_PRESENT]
        self.private += [MATCHED, *self._value_names(plan.matched, "matched")] if plan.matched else []
        frame = joined.select(
            *target_columns, FILE_INDEX, ROW_INDEX, _TARGET_PRESENT, *extra, *self._privatize_source(sa)
        )
        if self.prefilter and plan.not_matched_by_source:  # the rest of the target: matched by no source row
            outsiders = _with_source_keys(target, source, plan, "left_anti")
            frame = frame.unionByName(self._as_unmatched(outsiders, frame.schema))
        return frame

    def _as_unmatched(self, outsiders: DataFrame, schema: StructType) -> DataFrame:
        """Target rows laid out as the joined rows (``schema``) of target rows no source row matched."""
        ta = self.plan.target_alias
        own = {target_column(i): F.col(quote_sql(ta, n)) for i, n in enumerate(self.target_names)}
        own.update({n: F.col(n) for n in (FILE_INDEX, ROW_INDEX, _TARGET_PRESENT)})
        return outsiders.alias(ta).select(*[
            (own[f.name] if f.name in own else F.lit(None).cast(f.dataType)).alias(f.name) for f in schema.fields
        ])

    def _privatize_source(self, alias: str) -> list[Column]:
        self.private += [_source_column(i) for i in range(len(self.source_names))] + [_SOURCE_PRESENT]
        columns = [F.col(quote_sql(alias, n)).alias(_source_column(i)) for i, n in enumerate(self.source_names)]
        return [*columns, F.col(quote_sql(alias, _SOURCE_PRESENT)).alias(_SOURCE_PRESENT)]

    def _bare_column(self, value: Expr, kind: str) -> str | None:
        """The private column holding ``value`` when it is a bare top-level column of the clause's scope."""
        if not isinstance(value, ExprColumn) or len(value.path) != 1:
            return None
        plan = self.plan
        sides = {"matched": ((plan.source_alias, "s"), (plan.target_alias, "t")),
                 "not_matched": ((plan.source_alias, "s"), (None, "s")),
                 "not_matched_by_source": ((plan.target_alias, "t"), (None, "t"))}[kind]
        for qualifier, side in sides:
            names, private_of = ((self.source_names, _source_column) if side == "s"
                                 else (self.target_names, target_column))
            if value.qualifier == qualifier and value.path[0] in names:
                return private_of(names.index(value.path[0]))
        return None

    def _values(self, clauses: Sequence[PlannedClause], chosen: str, kind: str) -> list[Column]:
        """Each assignment of each clause, computed only on the rows that clause takes."""
        out = []
        for k, clause in enumerate(clauses):
            for j, assignment in enumerate(clause.assignments):
                position = (self.offsets[kind] + k, j)
                bare = self._bare_column(assignment.value, kind)
                if bare is not None:
                    self.value_columns[position] = bare
                    continue
                self.value_columns[position] = value_column(*position)
                value = F.when(F.col(chosen) == k, F.expr(assignment.sql))
                out.append(value.alias(value_column(*position)))
        return out

    def _value_names(self, clauses: Sequence[PlannedClause], kind: str) -> list[str]:
        """The value columns :meth:`_values` computed (after it ran)."""
        return [
            value_column(self.offsets[kind] + k, j)
            for k, clause in enumerate(clauses)
            for j in range(len(clause.assignments))
            if self.value_columns[(self.offsets[kind] + k, j)] == value_column(self.offsets[kind] + k, j)
        ]

    def _stage(self, names: Sequence[str], column: str, alias: str, present: Column,
               clauses: Sequence[PlannedClause], kind: str) -> None:
        """Add ``column`` (the clause chosen) and its values, with only ``names`` visible under ``alias``."""
        private_of = target_column if kind == "not_matched_by_source" else _source_column
        visible = [F.col(private_of(i)).alias(n) for i, n in enumerate(names)]
        scope = self.frame.select(*visible, *self.private).alias(alias)
        scope = scope.select("*", F.when(present, _choice(clauses)).alias(column))
        self.frame = scope.select(*self.private, column, *self._values(clauses, column, kind))
        self.private += [column, *self._value_names(clauses, kind)]

    def grouped(self, slots: _Slots) -> DataFrame:
        """The rows the tasks need, each with its :data:`GROUP` and :data:`SLOT`: target rows and rows to insert."""
        plan = self.plan
        target_row = F.col(_TARGET_PRESENT).isNotNull()
        if plan.not_matched:
            self._stage(self.source_names, INSERT, plan.source_alias, ~target_row,
                        plan.not_matched, "not_matched")
        if plan.not_matched_by_source:
            only_target = target_row & F.col(_SOURCE_PRESENT).isNull()
            self._stage(self.target_names, BY_SOURCE, plan.target_alias, only_target,
                        plan.not_matched_by_source, "not_matched_by_source")
        acted = [F.col(c) >= 0 for c, clauses in ((MATCHED, plan.matched), (INSERT, plan.not_matched),
                                                   (BY_SOURCE, plan.not_matched_by_source)) if clauses]
        keep = acted[0]
        for more in acted[1:]:
            keep = keep | more
        insert_index = F.pmod(self._insert_hash(), F.lit(max(1, len(slots.insert_keys))))
        group = F.when(target_row, F.col(FILE_INDEX).cast("long")).otherwise((F.lit(-1) - insert_index).cast("long"))
        slot = F.when(target_row, F.element_at(F.lit(slots.file_keys or [0]), F.col(FILE_INDEX) + 1)).otherwise(
            F.element_at(F.lit(slots.insert_keys or [0]), (insert_index + 1).cast("int")))
        dropped = {_SOURCE_PRESENT, _TARGET_PRESENT, *(_source_column(i) for i in range(len(self.source_names))),
                   *(target_column(i) for i in range(len(self.target_names)))} - set(self.value_columns.values())
        wanted = [n for n in self.private if n not in dropped]
        return self.frame.where(keep).select(slot.alias(SLOT), group.alias(GROUP), *wanted)

    def _insert_hash(self) -> Column:
        """A row to insert's hash, which spreads the inserted rows over the insert groups: of its join keys."""
        names = {n: i for i, n in enumerate(self.source_names)}
        keys = [names.get(k.source[0]) for k in self.plan.keys if len(k.source) == 1]
        if not keys or None in keys:
            return F.spark_partition_id()
        return F.hash(*[F.col(_source_column(i)) for i in keys if i is not None])


def _with_source_keys(target: DataFrame, source: DataFrame, plan: MergePlan, how: str) -> DataFrame:
    """The target rows whose equi-join keys occur in the source (``left_semi``), or the others
    (``left_anti``): a join with a broadcast of the source's keys.

    Exact as a first step of the join: a target row the ON condition matches has equal keys.
    """
    names = [f"__delta_merge_k{i}" for i in range(len(plan.keys))]
    keys = source.select(*[F.col(quote_sql(*k.source)).alias(n) for k, n in zip(plan.keys, names, strict=True)])
    on: Column | None = None
    for key, name in zip(plan.keys, names, strict=True):
        term = F.expr(quote_sql(plan.target_alias, *key.target)) == F.col(name)
        on = term if on is None else on & term
    return target.alias(plan.target_alias).join(F.broadcast(keys), on, how)


def _join_type(plan: MergePlan) -> str:
    """The join the clauses need: unmatched target rows only for NOT MATCHED BY SOURCE, unmatched source
    rows only for NOT MATCHED (a join type that drops the other side lets Spark broadcast a small side)."""
    if plan.not_matched_by_source:
        return "full" if plan.not_matched else "left"
    return "right" if plan.not_matched else "inner"


def _choice(clauses: Sequence[PlannedClause]) -> Column:
    """``CASE WHEN <condition 1> THEN 0 WHEN <condition 2> THEN 1 ... ELSE -1 END`` (null counts as false)."""
    chosen: Any = None
    for k, clause in enumerate(clauses):
        condition = F.expr(clause.condition_sql) if clause.condition_sql else F.lit(True)
        chosen = F.when(condition, k) if chosen is None else chosen.when(condition, k)
    return chosen.otherwise(-1)

"""``LocalExecutor.merge``: a MERGE plan's row work with pyarrow in this process (the command commits it).

Vectorised throughout: clause conditions and values are Arrow expressions over the joined rows
(:mod:`.clauses`), and the rewritten files are built by column-wise take/filter. The work runs as
jobs on the engine's pool (pyarrow releases the GIL in its kernels, its Parquet reader and writer,
and numpy in its searches, so every core works):

- one rewrite job per group of consecutive candidate target files (the transaction's read): it
  gets each file's rows and its pairs with the source (:mod:`.join`: on one integer key the job
  reads and probes its files itself, so reading, joining and writing overlap and only the running
  jobs' files are in memory; otherwise all files were read and hash-joined before), gives every
  matched pair and unmatched target row the first clause whose condition holds, refuses a target
  row that two source rows would update or delete, rewrites the files holding an updated or
  deleted row as one new file (their other rows copied, in their order, then the updated rows) and
  writes their ``_change_data`` rows when the table records its changes;
- one insert job, once every file is probed: the not-matched clauses on the source rows no target
  row matched, written as new files, with their change rows when files are rewritten (an
  insert-only merge is a plain append: those change rows are then deleted again).

Jobs write through the executor's ``write_files`` / ``write_changes``; when one fails, the others
stop and every file already written is deleted, so a failed merge leaves nothing behind.

Example:
    >>> merge_locally(job, LocalExecutor()).counts["numTargetRowsMatchedUpdated"]   # doctest: +SKIP
    2
"""


from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from airflow_provider_delta.core.executor.merge.clauses import (
    Scope,
    apply_assignments,
    assign_values,
    choose,
    file_clauses,
    indices,
)
from airflow_provider_delta.core.executor.merge.job import CLAUSE_COUNTERS, MergeOutcome
from airflow_provider_delta.core.executor.merge.join import file_rows
from airflow_provider_delta.core.executor.merge.source import ArrowMergeSource
from airflow_provider_delta.core.parallel import MAX_THREADS, run_all_or_undo
from airflow_provider_delta.core.schema.conform import null_table
from airflow_provider_delta.core.storage.base import decode_relative
from airflow_provider_delta.core.write.changes import tag_changes
from airflow_provider_delta.core.write.rows import DEFAULT_FILE_ROWS
from airflow_provider_delta.core.write.target import WriteTarget
from airflow_provider_delta.exceptions import MergeError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_delta.core.actions import AddCDCFile, AddFile
    from airflow_provider_delta.core.executor.local import LocalExecutor
    from airflow_provider_delta.core.executor.merge.job import MergeJob
    from airflow_provider_delta.core.executor.merge.join import FileRows
    from airflow_provider_delta.core.executor.merge.plan import MergePlan

__all__ = ["assign_values", "merge_locally"]

# Rewrite jobs per pool thread (see _groups), and the fewest rows a job gathers.
_JOBS_PER_THREAD = 2
_MIN_GROUP_ROWS = 131_072


@dataclass(frozen=True)
class _Run:
    """What every job of one MERGE reads."""

    plan: MergePlan
    executor: LocalExecutor
    writer: WriteTarget
    rows: FileRows
    record_changes: bool


@dataclass
class _Piece:
    """What one job did: the target files it replaced (by index), the files it wrote, its counters."""

    removed: list[int] = field(default_factory=list)
    added: list[AddFile] = field(default_factory=list)
    cdc: list[AddCDCFile] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLAUSE_COUNTERS, 0))
    copied_rows: int = 0


def _rewrite_files(run: _Run, group: Sequence[int]) -> _Piece:
    """One job: the clauses on a group of target files; their touched files rewritten as one new file."""
    try:
        loaded = [(f, *run.rows.rows(f)) for f in group]
    except BaseException:
        run.rows.probed(failed=True)
        raise
    run.rows.probed(failed=False)
    piece = _Piece()
    data: list[pa.Table] = []
    changes: list[pa.Table] = []
    for f, part, pair_t, pair_s in loaded:
        found = file_clauses(run.plan, run.rows.source, part, pair_t, pair_s)
        if found.touched:
            piece.removed.append(f)
            for name, n in found.counts.items():
                piece.counts[name] += n
            left = found.rows_left(part)
            piece.copied_rows += left.num_rows
            data += [left, *found.updated_tables]
            if run.record_changes:
                changes += found.change_rows(part)
    del loaded
    rows = pa.concat_tables(data) if data else None
    if rows is not None and rows.num_rows:
        piece.added = run.executor.write_files(run.writer, rows)
    if changes:
        piece.cdc = run.executor.write_changes(run.writer, changes)
    return piece


def _insert_rows(run: _Run) -> _Piece:
    """One job: the not-matched clauses on the source rows no target row matched; those rows written.

    Waits until every file is probed. Their change rows are written when files may be rewritten
    (the merge drops them when none was).
    """
    plan, source = run.plan, run.rows.source
    piece = _Piece()
    matched = run.rows.matched_source()
    if matched is None:  # a rewrite job failed: the merge fails
        return piece
    rows = np.flatnonzero(~matched)
    if not len(rows):
        return piece
    scope = Scope({plan.source_alias: source if len(rows) == source.num_rows else source.take(indices(rows))})
    chosen = choose(scope, plan.not_matched)
    inserted: list[pa.Table] = []
    for i, clause in enumerate(plan.not_matched):
        picked = np.flatnonzero(chosen == i)
        if len(picked):
            picked_scope = scope if len(picked) == scope.num_rows else scope.take(picked)
            base = null_table(plan.schema, len(picked))
            inserted.append(apply_assignments(picked_scope, base, clause, plan.schema))
            piece.counts["numTargetRowsInserted"] += len(picked)
    if inserted:
        table = pa.concat_tables(inserted)
        piece.added = run.executor.write_files(run.writer, table)
        if run.record_changes and (plan.matched or plan.not_matched_by_source):
            piece.cdc = run.executor.write_changes(run.writer, [tag_changes(table, "insert")])
    return piece


def _groups(rows: FileRows) -> list[list[int]]:
    """The target files the clauses may change, in groups of consecutive files: one job each.

    A group gathers about ``1 / (_JOBS_PER_THREAD * MAX_THREADS)`` of the rows (between
    ``_MIN_GROUP_ROWS`` and a data file's worth), so the jobs keep every thread busy to the end, few
    files are in memory at once, and small files are not rewritten one by one.
    """
    sizes, work = rows.sizes(), rows.work()
    share = int(np.minimum(sizes[work], DEFAULT_FILE_ROWS).sum()) // (_JOBS_PER_THREAD * MAX_THREADS)
    size = min(DEFAULT_FILE_ROWS, max(_MIN_GROUP_ROWS, share))
    groups: list[list[int]] = []
    current: list[int] = []
    held = 0
    for f in work:
        current.append(int(f))
        held += int(sizes[f])
        if held >= size:
            groups.append(current)
            current, held = [], 0
    return [*groups, current] if current else groups


def _run_jobs(run: _Run) -> list[_Piece]:
    """The rewrite jobs, then the insert job, on the engine's pool; on a failure every file written is deleted.

    The insert job comes last: run one by one (inside a pool job), the files are probed before it.
    """
    groups = _groups(run.rows)
    run.rows.expect(len(groups))
    jobs = [functools.partial(_rewrite_files, run, group) for group in groups]
    if run.plan.not_matched:
        jobs.append(functools.partial(_insert_rows, run))
    return run_all_or_undo(jobs, undo=lambda piece: _delete(run, piece.added, piece.cdc))


def _delete(run: _Run, added: Sequence[AddFile], cdc: Sequence[AddCDCFile]) -> None:
    paths = [decode_relative(a.path) for a in added] + [decode_relative(c.path) for c in cdc]
    if paths:
        run.executor.delete_files(run.writer.storage, paths)


# ------------------------------------------------------------------------------------------ entry


def merge_locally(job: MergeJob, executor: LocalExecutor) -> MergeOutcome:
    """The row work of a planned MERGE in this process (see the module docstring).

    Raises:
        MergeError: a value does not fit its column, or the plan holds SQL only Spark evaluates.
        MergeMultipleMatchError: two source rows would update or delete one target row.
    """
    plan, files = job.plan, job.files
    if plan.engine_only or not isinstance(job.source, ArrowMergeSource):
        raise MergeError(
            f"Cannot run MERGE into table {job.reader.location!r} locally: "
            + (f"{plan.engine_only[0]} uses SQL only Spark evaluates"
               if plan.engine_only else "the source is not a pyarrow table")
            + ". Help: run it with airflow_provider_delta.spark.merge_delta",
            clause=plan.engine_only[0] if plan.engine_only else "source",
        )
    rows = file_rows(executor, job, job.source.table)
    run = _Run(plan, executor, WriteTarget.of(job.writer), rows, job.record_changes)
    pieces = _run_jobs(run)
    removed = sorted(f for piece in pieces for f in piece.removed)
    if not removed:  # the insert job's change rows were written for nothing
        _delete(run, [], [c for piece in pieces for c in piece.cdc])
    counts = dict.fromkeys(CLAUSE_COUNTERS, 0)
    for piece in pieces:
        for name, n in piece.counts.items():
            counts[name] += n
    return MergeOutcome(
        removed=[files[f] for f in removed],
        added=[a for piece in pieces for a in piece.added],
        cdc=[c for piece in pieces for c in piece.cdc] if removed else [],
        counts=counts,
        copied_rows=sum(piece.copied_rows for piece in pieces),
        scan_seconds=rows.scan_seconds,
    )

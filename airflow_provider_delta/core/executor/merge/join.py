"""The local executor's MERGE join: the candidate target files' rows and their pairs with the source.

The rewrite jobs of :mod:`.local` ask a :class:`FileRows` for one file at a time: its rows (in the
evolved schema) and its pairs (row in the file, source row) that satisfy the whole ON condition.
Two ways to get there:

- :class:`ProbedFiles`, when the condition's equality is one integer column on each side (the
  common ``t.id = s.id``): the source key is sorted once (:mod:`.probe`) and each job reads its
  own files and probes them, so reading, joining, the clauses and writing overlap, and only the
  files of the running jobs are in memory. The insert job waits until every file is probed (the
  source rows no target row matched are known only then).
- :class:`JoinedFiles` otherwise: the columns the condition reads of the target (its keys, the
  target-only conjuncts, the rest of the condition) are read from every candidate file (in
  parallel) and Arrow's hash join runs over all of them at once, before any job starts; each job
  then reads its own files whole, so only the join columns of the target and the running jobs'
  files are in memory, and files no clause can change are not read again.

Pairs are the same either way: equal keys match, null keys match nothing, the target-only and
source-only conjuncts filter their side first and the rest of the condition filters the pairs. A
target row that two source rows would update or delete is refused by the job that holds its file
(:func:`~.clauses.file_clauses`); the merge then deletes every file its jobs wrote.

Example:
    >>> rows = file_rows(LocalExecutor(), job, source)              # doctest: +SKIP
    >>> part, pair_t, pair_s = rows.rows(0)                          # doctest: +SKIP
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.executor.merge.clauses import (
    EMPTY,
    Scope,
    indices,
)
from airflow_provider_delta.core.executor.merge.probe import SortedKeys, probes_one_integer_key
from airflow_provider_delta.core.executor.merge.source import source_key_column
from airflow_provider_delta.core.expressions import evaluate, referenced_columns
from airflow_provider_delta.core.parallel import run_parallel
from airflow_provider_delta.core.schema.arrow import to_arrow_schema
from airflow_provider_delta.core.schema.types import StructType
from airflow_provider_delta.core.write.target import WriteTarget

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_delta.core.executor.local import LocalExecutor
    from airflow_provider_delta.core.executor.merge.job import MergeJob
    from airflow_provider_delta.core.executor.merge.plan import JoinKey, MergePlan

__all__ = ["FileRows", "JoinedFiles", "ProbedFiles", "file_rows"]

Pairs = tuple[np.ndarray, np.ndarray]


def file_rows(executor: LocalExecutor, job: MergeJob, source: pa.Table) -> FileRows:
    """The candidate files' rows and pairs: probed file by file on one integer key, else joined at once."""
    if probes_one_integer_key(job.plan.keys):
        return ProbedFiles(executor, job, source)
    return JoinedFiles.read(executor, job, source)


class FileRows(ABC):
    """The candidate target files' rows and pairs, one file at a time (see the module docstring)."""

    def __init__(self, job: MergeJob, source: pa.Table) -> None:
        self.plan = job.plan
        self.files = job.files
        self.source = source
        self.scan_seconds = 0.0

    @abstractmethod
    def rows(self, f: int) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """File ``f``'s rows, and its pairs: (row positions in the file, source rows)."""

    def probed(self, *, failed: bool) -> None:  # noqa: B027 - optional: only probing files counts them
        """A job has the pairs of its files (or failed getting them)."""

    def expect(self, jobs: int) -> None:  # noqa: B027 - optional: only probing files counts them
        """``jobs`` jobs will call :meth:`probed`, once each."""

    @abstractmethod
    def matched_source(self) -> np.ndarray | None:
        """Which source rows are in a pair, once every file is probed (None: a job failed)."""

    @abstractmethod
    def sizes(self) -> np.ndarray:
        """Each file's row count (an estimate when it is not read yet)."""

    @abstractmethod
    def work(self) -> np.ndarray:
        """The files the rewrite jobs go through, in order: those the clauses may change (every file
        when the jobs also probe them)."""


def _source_rows(plan: MergePlan, source: pa.Table) -> np.ndarray:
    """The source rows the source-only conjuncts of the condition keep."""
    if plan.source_filter is None or not source.num_rows:
        return np.arange(source.num_rows)
    return np.flatnonzero(pc.fill_null(evaluate(plan.source_filter, source), False).to_numpy(zero_copy_only=False))


def _target_rows(plan: MergePlan, target: pa.Table) -> np.ndarray | None:
    """The target rows the target-only conjuncts keep (None: all of them)."""
    if plan.target_filter is None or not target.num_rows:
        return None
    return np.flatnonzero(pc.fill_null(evaluate(plan.target_filter, target), False).to_numpy(zero_copy_only=False))


def _target_key(target: pa.Table, path: Sequence[str]) -> pa.ChunkedArray:
    column = target.column(path[0])
    for name in path[1:]:
        column = pc.struct_field(column, name)
    return column


def _take(parts: Sequence[pa.Table], rows: np.ndarray) -> pa.Table:
    """Rows of the files ``parts`` by position in their concatenation, file by file.

    So the cost follows the rows taken, not the table size (a take on the concatenated table would
    first combine every chunk).
    """
    if len(parts) == 1:
        return parts[0].take(indices(rows))
    starts = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([p.num_rows for p in parts], out=starts[1:])
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    bounds = np.searchsorted(ordered, starts)
    pieces = [
        parts[f].take(indices(ordered[bounds[f] : bounds[f + 1]] - starts[f]))
        for f in range(len(parts))
        if bounds[f + 1] > bounds[f]
    ]
    taken = pa.concat_tables(pieces) if pieces else parts[0].slice(0, 0)
    if np.all(order[1:] > order[:-1]):
        return taken
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return taken.take(indices(inverse))


def _residual(plan: MergePlan, parts: Sequence[pa.Table], source: pa.Table, pair_t: np.ndarray,
              pair_s: np.ndarray) -> Pairs:
    """The pairs the rest of the condition keeps (``pair_t`` points into the concatenation of ``parts``)."""
    if plan.residual is None or not len(pair_t):
        return pair_t, pair_s
    scope = Scope({plan.target_alias: _take(parts, pair_t), plan.source_alias: source.take(indices(pair_s))})
    keep = scope.mask(plan.residual)
    return pair_t[keep], pair_s[keep]


# ------------------------------------------------------------------------------------------ probed


class ProbedFiles(FileRows):
    """Each file read and probed against the sorted source key by the job that rewrites it."""

    def __init__(self, executor: LocalExecutor, job: MergeJob, source: pa.Table) -> None:
        super().__init__(job, source)
        self._started = time.monotonic()
        self._executor = executor
        self._reader = WriteTarget.of(job.reader)
        self._schema = job.writer.schema
        s_rows = _source_rows(self.plan, source)
        column = source_key_column(source, self.plan.keys[0].source)
        self._keys = SortedKeys.build(
            column if len(s_rows) == source.num_rows else column.take(indices(s_rows)), s_rows
        )
        self._matched = np.zeros(source.num_rows, dtype=bool)
        self._pending = 0
        self._failed = False
        self._done = threading.Condition()

    def rows(self, f: int) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        part = self._executor.read_files(self._reader, [self.files[f]], schema=self._schema)[0]
        if not part.num_rows:
            return part, EMPTY, EMPTY
        pair_t, pair_s = self._keys.probe(_target_key(part, self.plan.keys[0].target), _target_rows(self.plan, part))
        pair_t, pair_s = _residual(self.plan, [part], self.source, pair_t, pair_s)
        self._matched[pair_s] = True  # jobs only ever set True: concurrent writes agree
        return part, pair_t, pair_s

    def expect(self, jobs: int) -> None:
        with self._done:
            self._pending = jobs
            if not jobs:
                self.scan_seconds = time.monotonic() - self._started

    def probed(self, *, failed: bool) -> None:
        with self._done:
            self._pending -= 1
            self._failed |= failed
            if not self._pending:
                self.scan_seconds = time.monotonic() - self._started
            self._done.notify_all()

    def matched_source(self) -> np.ndarray | None:
        with self._done:
            self._done.wait_for(lambda: self._pending <= 0 or self._failed)
            return None if self._failed else self._matched

    def sizes(self) -> np.ndarray:
        # Unknown row counts (no statistics) count as large: such a file gets a job of its own.
        return np.array([a.num_records if a.num_records is not None else 1 << 40 for a in self.files], np.int64)

    def work(self) -> np.ndarray:
        # Every file: a job probes its files even when no clause can change them (insert-only merges
        # need to know which source rows match).
        return np.arange(len(self.files))


# ------------------------------------------------------------------------------------------ joined


class JoinedFiles(FileRows):
    """The join columns of every candidate file read first and hash-joined with the source at once;
    each job reads its own files whole."""

    def __init__(self, executor: LocalExecutor, job: MergeJob, source: pa.Table, sizes: Sequence[int],
                 pairs: Pairs) -> None:
        super().__init__(job, source)
        self._executor = executor
        self._reader = WriteTarget.of(job.reader)
        self._schema = job.writer.schema
        self._starts = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=self._starts[1:])
        tidx, sidx = pairs
        by_file = np.searchsorted(self._starts, tidx, side="right") - 1
        order = np.argsort(by_file, kind="stable")
        self._bounds = np.searchsorted(by_file[order], np.arange(len(sizes) + 1))
        self._tidx, self._sidx = tidx[order], sidx[order]

    @classmethod
    def read(cls, executor: LocalExecutor, job: MergeJob, source: pa.Table) -> JoinedFiles:
        """Read the files' join columns (in parallel) and join them with the source."""
        started = time.monotonic()
        plan = job.plan
        schema = _join_schema(plan, job.writer.schema)
        reader, names = WriteTarget.of(job.reader), schema.names
        parts = run_parallel(
            lambda add: executor.read_files(reader, [add], schema=schema, columns=names)[0], job.files
        )
        target = pa.concat_tables(parts) if parts else to_arrow_schema(schema).empty_table()
        tidx, sidx = _join(plan, target, source, _source_rows(plan, source))
        tidx, sidx = _residual(plan, parts, source, tidx, sidx)
        joined = cls(executor, job, source, [p.num_rows for p in parts], (tidx, sidx))
        joined.scan_seconds = time.monotonic() - started
        return joined

    def rows(self, f: int) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        part = self._executor.read_files(self._reader, [self.files[f]], schema=self._schema)[0]
        lo, hi = int(self._bounds[f]), int(self._bounds[f + 1])
        return part, self._tidx[lo:hi] - self._starts[f], self._sidx[lo:hi]

    def matched_source(self) -> np.ndarray | None:
        matched = np.zeros(self.source.num_rows, dtype=bool)
        matched[self._sidx] = True
        return matched

    def sizes(self) -> np.ndarray:
        return np.diff(self._starts)

    def work(self) -> np.ndarray:
        if self.plan.not_matched_by_source:
            return np.flatnonzero(self.sizes() > 0)
        if self.plan.matched:
            return np.flatnonzero(np.diff(self._bounds) > 0)
        return EMPTY


def _join_schema(plan: MergePlan, schema: StructType) -> StructType:
    """The target columns the ON condition reads (its keys, target-only conjuncts, the rest), in the
    evolved schema; a superset: a name the source also has counts as the target's."""
    used = {key.target[0].lower() for key in plan.keys}
    for expr in (plan.target_filter, plan.residual):
        if expr is not None:
            used |= {path[0].lower() for path in referenced_columns(expr)}
    fields = tuple(f for f in schema.fields if f.name.lower() in used)
    return StructType(fields or schema.fields[:1])  # a row count needs one column


def _join(plan: MergePlan, target: pa.Table, source: pa.Table, s_rows: np.ndarray) -> Pairs:
    """Pairs of equal keys (every pair without keys), before the rest of the condition."""
    t_rows = _target_rows(plan, target)
    t_rows = np.arange(target.num_rows) if t_rows is None else t_rows
    if len(t_rows) == 0 or len(s_rows) == 0:
        return EMPTY, EMPTY
    if plan.keys:
        return _hash_join(plan.keys, target, source, t_rows, s_rows)
    return np.repeat(t_rows, len(s_rows)), np.tile(s_rows, len(t_rows))


def _key_arrays(
    key: JoinKey, target: pa.ChunkedArray, source: pa.ChunkedArray
) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
    """Both sides of a key in one type, so the hash join compares values."""
    if target.type == source.type:
        return target, source
    try:
        return target, pc.cast(source, target.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        common = (
            pa.float64() if pa.types.is_floating(target.type) or pa.types.is_floating(source.type) else None
        )
        if common is None and pa.types.is_integer(target.type) and pa.types.is_integer(source.type):
            common = pa.int64() if not pa.types.is_unsigned_integer(source.type) else pa.float64()
        if common is None:
            common = pa.float64()
        return pc.cast(target, common, safe=False), pc.cast(source, common, safe=False)


def _hash_join(
    keys: Sequence[JoinKey], target: pa.Table, source: pa.Table, t_rows: np.ndarray, s_rows: np.ndarray
) -> Pairs:
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    all_t, all_s = len(t_rows) == target.num_rows, len(s_rows) == source.num_rows
    for i, key in enumerate(keys):
        t_col = _target_key(target, key.target)
        s_col = source_key_column(source, key.source)
        t_col = t_col if all_t else t_col.take(indices(t_rows))
        s_col = s_col if all_s else s_col.take(indices(s_rows))
        left[f"k{i}"], right[f"k{i}"] = _key_arrays(key, t_col, s_col)
    left["__t"] = pa.array(t_rows, pa.int64())
    right["__s"] = pa.array(s_rows, pa.int64())
    names = [f"k{i}" for i in range(len(keys))]
    joined = pa.table(left).join(pa.table(right), keys=names, join_type="inner")
    tidx = joined.column("__t").to_numpy()
    sidx = joined.column("__s").to_numpy()
    return np.asarray(tidx, dtype=np.int64), np.asarray(sidx, dtype=np.int64)

"""Execute a MERGE plan's row work on the local pyarrow engine (the command commits it).

Vectorised throughout: the equi-join keys go through Arrow's hash join (``pa.Table.join``), clause
conditions and values are Arrow expressions over the joined rows, and the rewritten files are built
by column-wise take/filter. Steps:

1. read the candidate target files (the transaction's read) through the executor's ``read_files``;
2. join target and source rows on the keys, over every file at once, and filter by the rest of the
   condition: the matched pairs; refuse a target row that two source rows would update or delete
   (before any file is written);
3. then, in parallel on the engine's pool (pyarrow releases the GIL in its kernels and its Parquet
   writer, so every core works): one job per group of consecutive candidate files gives each
   matched pair and unmatched target row of its files the first clause whose condition holds,
   rewrites the files holding an updated or deleted row as one new file (their other rows copied,
   in their order, then the updated rows) and writes their ``_change_data`` rows when the table
   records its changes; one more job writes the inserted rows, with their change rows when files
   are rewritten (insert-only merges are plain appends). Jobs write through the executor's
   ``write_files`` / ``write_changes``; when one fails, the others stop and every file already
   written is deleted.

Example:
    >>> merge_locally(job, LocalExecutor()).counts["numTargetRowsMatchedUpdated"]   # doctest: +SKIP
    2
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.commands.merge.job import CLAUSE_COUNTERS, MergeOutcome
from airflow_provider_delta.core.commands.merge.plan import JoinKey, field_at, source_key_column
from airflow_provider_delta.core.commands.merge.probe import SortedKeys, probes_one_integer_key
from airflow_provider_delta.core.commands.merge.source import ArrowMergeSource
from airflow_provider_delta.core.expressions import Column, evaluate
from airflow_provider_delta.core.parallel import MAX_THREADS, run_all_or_undo, run_parallel
from airflow_provider_delta.core.schema.arrow import to_arrow_schema
from airflow_provider_delta.core.schema.conform import conform_array, null_table
from airflow_provider_delta.core.storage.base import decode_relative
from airflow_provider_delta.core.write.changes import tag_changes
from airflow_provider_delta.core.write.rows import DEFAULT_FILE_ROWS
from airflow_provider_delta.core.write.target import WriteTarget
from airflow_provider_delta.exceptions import MergeError, MergeMultipleMatchError, SchemaMismatchError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_delta.core.actions import AddCDCFile, AddFile
    from airflow_provider_delta.core.commands.merge.job import MergeJob
    from airflow_provider_delta.core.commands.merge.plan import MergePlan, PlannedClause
    from airflow_provider_delta.core.executor import Executor
    from airflow_provider_delta.core.expressions import Expr
    from airflow_provider_delta.core.schema.types import StructType

__all__ = ["assign_values", "merge_locally"]

_EMPTY = np.empty(0, dtype=np.int64)
# Rewrite jobs per file-writing thread (see _groups), and the fewest rows a job gathers.
_JOBS_PER_THREAD = 2
_MIN_GROUP_ROWS = 131_072


def _indices(values: np.ndarray) -> pa.Array:
    return pa.array(values, type=pa.int64())


class _Target:
    """The target rows read, file after file: a zero-copy concatenation plus per-file tables.

    Taking rows goes file by file, so its cost follows the rows taken, not the table size (a take on
    the concatenated table would first combine every chunk).
    """

    def __init__(self, parts: list[pa.Table], schema: pa.Schema) -> None:
        self.parts = parts
        self.table = pa.concat_tables(parts) if parts else schema.empty_table()
        self.num_rows = self.table.num_rows
        self.starts = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([p.num_rows for p in parts], out=self.starts[1:])

    def file_ids(self, rows: np.ndarray) -> np.ndarray:
        """The index of the file each row comes from."""
        return np.searchsorted(self.starts, rows, side="right") - 1

    def take(self, rows: np.ndarray) -> pa.Table:
        if len(rows) == 0:
            return self.table.slice(0, 0)
        order = np.argsort(rows, kind="stable")
        ordered = rows[order]
        bounds = np.searchsorted(ordered, self.starts)
        pieces = [
            self.parts[f].take(_indices(ordered[bounds[f] : bounds[f + 1]] - self.starts[f]))
            for f in range(len(self.parts))
            if bounds[f + 1] > bounds[f]
        ]
        taken = pa.concat_tables(pieces)
        if np.all(order[1:] > order[:-1]):
            return taken
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        return taken.take(_indices(inverse))


class _Scope:
    """Rows seen by a clause: one table per alias, row-aligned; expressions read them as struct columns."""

    def __init__(self, tables: dict[str, pa.Table]) -> None:
        self.tables = tables
        self.num_rows = next(iter(tables.values())).num_rows
        self._struct: pa.Table | None = None

    def take(self, rows: np.ndarray) -> _Scope:
        index = _indices(rows)
        return _Scope({alias: t.take(index) for alias, t in self.tables.items()})

    def struct_table(self) -> pa.Table:
        if self._struct is None:
            self._struct = pa.table({alias: t.to_struct_array() for alias, t in self.tables.items()})
        return self._struct

    def value(self, expr: Expr) -> pa.Array | pa.ChunkedArray:
        if isinstance(expr, Column) and expr.qualifier in self.tables:
            column: pa.ChunkedArray = self.tables[expr.qualifier].column(expr.path[0])
            for name in expr.path[1:]:
                column = pc.struct_field(column, name)
            return column
        return evaluate(expr, self.struct_table())

    def mask(self, condition: Expr | None) -> np.ndarray:
        if condition is None:
            return np.ones(self.num_rows, dtype=bool)
        if self.num_rows == 0:
            return np.zeros(0, dtype=bool)
        result = pc.fill_null(self.value(condition), False)
        return np.asarray(result.to_numpy(zero_copy_only=False), dtype=bool)


def _choose(scope: _Scope, clauses: Sequence[PlannedClause]) -> np.ndarray:
    """Per row, the index of the first clause whose condition holds (-1: none).

    As in Spark, a clause's condition is computed only on the rows no earlier clause took.
    """
    chosen = np.full(scope.num_rows, -1, dtype=np.int16)
    for i, clause in enumerate(clauses):
        open_rows = np.flatnonzero(chosen == -1)
        if not len(open_rows):
            break
        reaching = scope if len(open_rows) == scope.num_rows else scope.take(open_rows)
        chosen[open_rows[reaching.mask(clause.condition)]] = i
    return chosen


# ------------------------------------------------------------------------------------------- rows


def _conform(
    values: pa.Array | pa.ChunkedArray, schema: StructType, path: Sequence[str], where: str
) -> pa.ChunkedArray:
    f = field_at(schema, path)
    if isinstance(values, pa.Array):
        values = pa.chunked_array([values])
    try:
        out = conform_array(values, f.type, mode="none")
    except SchemaMismatchError as err:
        raise MergeError(
            f"Cannot assign a value to column {'.'.join(path)!r} in {where}: {err}",
            clause=where,
            column=".".join(path),
        ) from err
    assert isinstance(out, pa.ChunkedArray)
    return out


def _set_nested(struct: pa.ChunkedArray, names: Sequence[str], value: pa.ChunkedArray) -> pa.ChunkedArray:
    """``struct`` with field ``names`` replaced by ``value`` (the struct itself becomes non-null, as in Spark)."""
    arr = struct.combine_chunks() if struct.num_chunks != 1 else struct.chunk(0)
    children = arr.flatten()
    fields = [arr.type.field(i) for i in range(arr.type.num_fields)]
    for i, f in enumerate(fields):
        if f.name == names[0]:
            if len(names) == 1:
                children[i] = value.combine_chunks()
            else:
                children[i] = _set_nested(pa.chunked_array([children[i]]), names[1:], value).combine_chunks()
    return pa.chunked_array([pa.StructArray.from_arrays(children, fields=fields)])


def assign_values(
    base: pa.Table, path: Sequence[str], values: pa.Array | pa.ChunkedArray, schema: StructType, where: str
) -> pa.Table:
    """``base`` (rows in the evolved ``schema``) with the column or nested field at ``path`` set to
    ``values``, cast to its type as Spark's store assignment does (the Spark executor's tasks too).

    Raises:
        MergeError: a value does not fit the column (naming ``where`` and the column).
    """
    value = _conform(values, schema, path, where)
    index = base.schema.get_field_index(path[0])
    column = value if len(path) == 1 else _set_nested(base.column(index), path[1:], value)
    return base.set_column(index, base.schema.field(index), column)


def _apply(scope: _Scope, base: pa.Table, clause: PlannedClause, schema: StructType) -> pa.Table:
    """``base`` (rows in the evolved schema) with the clause's assignments applied."""
    for a in clause.assignments:
        base = assign_values(base, a.path, scope.value(a.value), schema, clause.label)
    return base


# ------------------------------------------------------------------------------------------- join


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


def _target_key(target: pa.Table, path: Sequence[str]) -> pa.ChunkedArray:
    column = target.column(path[0])
    for name in path[1:]:
        column = pc.struct_field(column, name)
    return column


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


def _read_and_join(
    executor: Executor, job: MergeJob, source: pa.Table
) -> tuple[_Target, np.ndarray, np.ndarray]:
    """The candidate files' rows (in the evolved schema) and the (target row, source row) pairs that
    satisfy the whole join condition.

    Files are read in parallel; on one integer key each file is joined as soon as it is read
    (:mod:`.probe`), otherwise Arrow's hash join runs over all of them at once.
    """
    plan = job.plan
    s_rows = _source_rows(plan, source)
    keys = None
    if probes_one_integer_key(plan.keys):
        column = source_key_column(source, plan.keys[0].source)
        keys = SortedKeys.build(column if len(s_rows) == source.num_rows else column.take(_indices(s_rows)), s_rows)
    reader = WriteTarget.of(job.reader)

    def read(add: AddFile) -> tuple[pa.Table, tuple[np.ndarray, np.ndarray] | None]:
        part = executor.read_files(reader, [add], schema=job.writer.schema)[0]
        if keys is None or not part.num_rows:
            return part, None
        return part, keys.probe(_target_key(part, plan.keys[0].target), _target_rows(plan, part))

    read_files = run_parallel(read, job.files)
    rows = _Target([part for part, _ in read_files], to_arrow_schema(job.writer.schema))
    if keys is not None:
        found = [(f, pairs) for f, (_, pairs) in enumerate(read_files) if pairs is not None]
        tidx = np.concatenate([pairs[0] + rows.starts[f] for f, pairs in found]) if found else _EMPTY
        sidx = np.concatenate([pairs[1] for _, pairs in found]) if found else _EMPTY
    else:
        tidx, sidx = _join(plan, rows, source, s_rows)
    if plan.residual is not None and len(tidx):
        scope = _Scope({plan.target_alias: rows.take(tidx), plan.source_alias: source.take(_indices(sidx))})
        keep = scope.mask(plan.residual)
        tidx, sidx = tidx[keep], sidx[keep]
    return rows, tidx, sidx


def _join(plan: MergePlan, rows: _Target, source: pa.Table, s_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of the keys (every pair without keys), before the residual condition."""
    target = rows.table
    t_rows = _target_rows(plan, target)
    t_rows = np.arange(target.num_rows) if t_rows is None else t_rows
    if len(t_rows) == 0 or len(s_rows) == 0:
        return _EMPTY, _EMPTY
    if plan.keys:
        return _hash_join(plan.keys, target, source, t_rows, s_rows)
    return np.repeat(t_rows, len(s_rows)), np.tile(s_rows, len(t_rows))


def _hash_join(
    keys: Sequence[JoinKey], target: pa.Table, source: pa.Table, t_rows: np.ndarray, s_rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    all_t, all_s = len(t_rows) == target.num_rows, len(s_rows) == source.num_rows
    for i, key in enumerate(keys):
        t_col = _target_key(target, key.target)
        s_col = source_key_column(source, key.source)
        t_col = t_col if all_t else t_col.take(_indices(t_rows))
        s_col = s_col if all_s else s_col.take(_indices(s_rows))
        left[f"k{i}"], right[f"k{i}"] = _key_arrays(key, t_col, s_col)
    left["__t"] = pa.array(t_rows, pa.int64())
    right["__s"] = pa.array(s_rows, pa.int64())
    names = [f"k{i}" for i in range(len(keys))]
    joined = pa.table(left).join(pa.table(right), keys=names, join_type="inner")
    tidx = joined.column("__t").to_numpy()
    sidx = joined.column("__s").to_numpy()
    return np.asarray(tidx, dtype=np.int64), np.asarray(sidx, dtype=np.int64)


# ------------------------------------------------------------------------------------------ pairs


def _refuse_multiple_matches(
    plan: MergePlan, rows: _Target, source: pa.Table, tidx: np.ndarray, sidx: np.ndarray
) -> None:
    """Raise when two source rows would update or delete one target row, before any file is written.

    Only a target row with several pairs can: those pairs go through the matched clauses here (the
    file jobs choose the same clauses again for all pairs).
    """
    if plan.duplicates_allowed or not plan.matched or len(tidx) < 2:
        return
    seen = np.zeros(rows.num_rows, dtype=bool)
    seen[tidx] = True
    if np.count_nonzero(seen) == len(tidx):  # every target row in one pair at most: the common case
        return
    ordered = np.sort(tidx)
    several = np.isin(tidx, ordered[1:][ordered[1:] == ordered[:-1]])
    pair_t = tidx[several]
    scope = _Scope({plan.target_alias: rows.take(pair_t), plan.source_alias: source.take(_indices(sidx[several]))})
    acted = pair_t[_choose(scope, plan.matched) >= 0]
    if len(np.unique(acted)) < len(acted):
        raise MergeMultipleMatchError(
            f"Cannot perform MERGE: multiple source rows matched the same target row and tried to update or "
            f"delete it (ON {plan.operation_parameters['predicate']}). Help: deduplicate the source on the "
            "join keys, e.g. keep the latest change per key",
            clause="ON condition",
        )


@dataclass(frozen=True)
class _Pairs:
    """The matched pairs ordered by target file: file ``f``'s are ``bounds[f]:bounds[f + 1]``."""

    target: np.ndarray  # row positions in the concatenated target
    source: np.ndarray
    bounds: np.ndarray

    @classmethod
    def by_file(cls, rows: _Target, tidx: np.ndarray, sidx: np.ndarray) -> _Pairs:
        files = rows.file_ids(tidx)
        order = np.argsort(files, kind="stable")
        bounds = np.searchsorted(files[order], np.arange(len(rows.parts) + 1))
        return cls(tidx[order], sidx[order], bounds)

    def of_file(self, rows: _Target, f: int) -> tuple[np.ndarray, np.ndarray]:
        """File ``f``'s pairs: (row positions in the file, source rows)."""
        lo, hi = int(self.bounds[f]), int(self.bounds[f + 1])
        return self.target[lo:hi] - rows.starts[f], self.source[lo:hi]


# ---------------------------------------------------------------------------------------- clauses


class _FileChanges:
    """What the clauses do to one file's rows: positions in the file, new row values, counters."""

    def __init__(self) -> None:
        self.updated_rows: list[np.ndarray] = []
        self.updated_tables: list[pa.Table] = []
        self.deleted_rows: list[np.ndarray] = []
        self.counts: dict[str, int] = dict.fromkeys(CLAUSE_COUNTERS, 0)

    @property
    def touched(self) -> bool:
        return bool(self.updated_rows or self.deleted_rows)

    def positions(self, rows: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(rows) if rows else _EMPTY

    def rows_left(self, part: pa.Table) -> pa.Table:
        """The file's rows no clause updated or deleted, in their order."""
        keep = np.ones(part.num_rows, dtype=bool)
        keep[self.positions(self.updated_rows)] = False
        keep[self.positions(self.deleted_rows)] = False
        return part if keep.all() else part.filter(pa.array(keep))

    def change_rows(self, part: pa.Table) -> list[pa.Table]:
        """The file's change data rows (pre- and post-images of updates, deleted rows)."""
        out = []
        if self.updated_rows:
            out.append(tag_changes(part.take(_indices(self.positions(self.updated_rows))), "update_preimage"))
            out.append(tag_changes(pa.concat_tables(self.updated_tables), "update_postimage"))
        if self.deleted_rows:
            out.append(tag_changes(part.take(_indices(self.positions(self.deleted_rows))), "delete"))
        return out


def _file_clauses(run: _Run, part: pa.Table, pair_t: np.ndarray, pair_s: np.ndarray) -> _FileChanges:
    """Run the matched clauses on one file's pairs and the not-matched-by-source ones on its other rows."""
    plan = run.plan
    ta, sa = plan.target_alias, plan.source_alias
    out = _FileChanges()
    if plan.matched and len(pair_t):
        matched_t, matched_s = pair_t, pair_s
        if plan.duplicates_allowed:  # a lone unconditional DELETE: each target row once (one change row)
            matched_t, first = np.unique(pair_t, return_index=True)
            matched_s = pair_s[first]
        scope = _Scope({ta: part.take(_indices(matched_t)), sa: run.source.take(_indices(matched_s))})
        _apply_clauses(out, plan.matched, scope, _choose(scope, plan.matched), matched_t, ta, plan.schema, "Matched")
    if plan.not_matched_by_source and part.num_rows:
        matched = np.zeros(part.num_rows, dtype=bool)
        matched[pair_t] = True
        rows = np.flatnonzero(~matched)
        scope = _Scope({ta: part if len(rows) == part.num_rows else part.take(_indices(rows))})
        chosen = _choose(scope, plan.not_matched_by_source)
        _apply_clauses(out, plan.not_matched_by_source, scope, chosen, rows, ta, plan.schema, "NotMatchedBySource")
    return out


def _apply_clauses(
    out: _FileChanges,
    clauses: Sequence[PlannedClause],
    scope: _Scope,
    chosen: np.ndarray,
    rows: np.ndarray,
    target_alias: str,
    schema: StructType,
    kind: str,
) -> None:
    for i, clause in enumerate(clauses):
        picked = np.flatnonzero(chosen == i)
        if not len(picked):
            continue
        positions = rows[picked]
        if clause.action == "delete":
            out.deleted_rows.append(positions)
            out.counts[f"numTargetRows{kind}Deleted"] += len(picked)
        else:
            picked_scope = scope if len(picked) == scope.num_rows else scope.take(picked)
            base = picked_scope.tables[target_alias]
            out.updated_tables.append(_apply(picked_scope, base, clause, schema))
            out.updated_rows.append(positions)
            out.counts[f"numTargetRows{kind}Updated"] += len(picked)


# ------------------------------------------------------------------------------------------- jobs


@dataclass(frozen=True)
class _Run:
    """What every job of one MERGE reads (never writes)."""

    plan: MergePlan
    executor: Executor
    writer: WriteTarget
    rows: _Target
    source: pa.Table
    pairs: _Pairs
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
    piece = _Piece()
    data: list[pa.Table] = []
    changes: list[pa.Table] = []
    for f in group:
        part = run.rows.parts[f]
        found = _file_clauses(run, part, *run.pairs.of_file(run.rows, f))
        if not found.touched:
            continue
        piece.removed.append(f)
        for name, n in found.counts.items():
            piece.counts[name] += n
        left = found.rows_left(part)
        piece.copied_rows += left.num_rows
        data += [left, *found.updated_tables]
        if run.record_changes:
            changes += found.change_rows(part)
    rows = pa.concat_tables(data) if data else None
    if rows is not None and rows.num_rows:
        piece.added = run.executor.write_files(run.writer, rows)
    if changes:
        piece.cdc = run.executor.write_changes(run.writer, changes)
    return piece


def _insert_rows(run: _Run, *, with_changes: bool) -> _Piece:
    """One job: the not-matched clauses on the unmatched source rows; the inserted rows written."""
    plan, source = run.plan, run.source
    piece = _Piece()
    matched = np.zeros(source.num_rows, dtype=bool)
    matched[run.pairs.source] = True
    rows = np.flatnonzero(~matched)
    if not len(rows):
        return piece
    scope = _Scope({plan.source_alias: source if len(rows) == source.num_rows else source.take(_indices(rows))})
    chosen = _choose(scope, plan.not_matched)
    inserted: list[pa.Table] = []
    for i, clause in enumerate(plan.not_matched):
        picked = np.flatnonzero(chosen == i)
        if len(picked):
            picked_scope = scope if len(picked) == scope.num_rows else scope.take(picked)
            inserted.append(_apply(picked_scope, null_table(plan.schema, len(picked)), clause, plan.schema))
            piece.counts["numTargetRowsInserted"] += len(picked)
    if inserted:
        table = pa.concat_tables(inserted)
        piece.added = run.executor.write_files(run.writer, table)
        if with_changes:
            piece.cdc = run.executor.write_changes(run.writer, [tag_changes(table, "insert")])
    return piece


def _groups(run: _Run) -> list[list[int]]:
    """The target files the clauses may change, in groups of consecutive files: one job each.

    A group gathers about ``1 / (_JOBS_PER_THREAD * MAX_THREADS)`` of the rows (between
    ``_MIN_GROUP_ROWS`` and a data file's worth), so the jobs keep every thread busy to the end and
    small files are not rewritten one by one.
    """
    sizes = np.diff(run.rows.starts)
    if run.plan.not_matched_by_source:
        work = np.flatnonzero(sizes > 0)
    elif run.plan.matched:
        work = np.flatnonzero(np.diff(run.pairs.bounds) > 0)
    else:
        return []
    share = int(sizes[work].sum()) // (_JOBS_PER_THREAD * MAX_THREADS)
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


def _run_jobs(run: _Run, *, insert_changes: bool) -> list[_Piece]:
    """The insert job, then the rewrite jobs, on the engine's pool; on a failure every file written is deleted."""
    jobs = [functools.partial(_insert_rows, run, with_changes=insert_changes)] if run.plan.not_matched else []
    jobs += [functools.partial(_rewrite_files, run, group) for group in _groups(run)]
    return run_all_or_undo(jobs, undo=lambda piece: _delete(run, piece.added, piece.cdc))


def _delete(run: _Run, added: Sequence[AddFile], cdc: Sequence[AddCDCFile]) -> None:
    paths = [decode_relative(a.path) for a in added] + [decode_relative(c.path) for c in cdc]
    if paths:
        run.executor.delete_files(run.writer.storage, paths)


# ------------------------------------------------------------------------------------------ entry


def merge_locally(job: MergeJob, executor: Executor) -> MergeOutcome:
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
    started = time.monotonic()
    source = job.source.table
    rows, tidx, sidx = _read_and_join(executor, job, source)
    _refuse_multiple_matches(plan, rows, source, tidx, sidx)
    scanned = time.monotonic()
    run = _Run(plan, executor, WriteTarget.of(job.writer), rows, source, _Pairs.by_file(rows, tidx, sidx),
               job.record_changes)
    # Insert change rows are needed only when files are rewritten; the insert job runs alongside the
    # rewrites, so it writes them whenever a rewrite is possible and they are dropped if none happened.
    may_rewrite = bool(plan.matched and len(tidx)) or bool(plan.not_matched_by_source and rows.num_rows)
    pieces = _run_jobs(run, insert_changes=job.record_changes and may_rewrite)
    removed = sorted(f for piece in pieces for f in piece.removed)
    if not removed:
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
        scan_seconds=scanned - started,
    )

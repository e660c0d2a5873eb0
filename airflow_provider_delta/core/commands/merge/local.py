"""Execute a MERGE plan's row work on the local pyarrow engine (the command commits it).

Vectorised throughout: the equi-join keys go through Arrow's hash join (``pa.Table.join``), clause
conditions and values are Arrow expressions over the joined rows, and the rewritten files are built
by column-wise take/if_else. Steps:

1. read the candidate target files (the transaction's read) through the executor's ``read_files``;
2. join target and source rows on the keys, filter by the rest of the condition: matched pairs;
3. give every matched pair, unmatched target row and unmatched source row the first clause whose
   condition holds; refuse a target row that two source rows would update or delete;
4. rewrite only the files holding an updated or deleted row (other rows of those files are copied,
   in their order), write inserted rows as new files, write ``_change_data`` files when the table
   records its changes and files were rewritten (insert-only merges are plain appends), through the
   executor's ``write_files`` / ``write_changes``.

Example:
    >>> merge_locally(job, LocalExecutor()).counts["numTargetRowsMatchedUpdated"]   # doctest: +SKIP
    2
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.change_data import cdf_enabled
from airflow_provider_delta.core.commands.merge.job import MergeOutcome
from airflow_provider_delta.core.commands.merge.plan import JoinKey, field_at, source_key_column
from airflow_provider_delta.core.commands.merge.source import ArrowMergeSource
from airflow_provider_delta.core.expressions import Column, evaluate
from airflow_provider_delta.core.parallel import run_parallel
from airflow_provider_delta.core.schema.arrow import to_arrow_schema
from airflow_provider_delta.core.schema.conform import conform_array, null_table
from airflow_provider_delta.core.write.changes import tag_changes
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
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["assign_values", "merge_locally"]

_EMPTY = np.empty(0, dtype=np.int64)


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


def _matched_pairs(plan: MergePlan, rows: _Target, source: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """(target row, source row) index pairs that satisfy the whole join condition."""
    target = rows.table
    t_rows = np.arange(target.num_rows)
    s_rows = np.arange(source.num_rows)
    if plan.target_filter is not None and target.num_rows:
        t_rows = np.flatnonzero(
            pc.fill_null(evaluate(plan.target_filter, target), False).to_numpy(zero_copy_only=False)
        )
    if plan.source_filter is not None and source.num_rows:
        s_rows = np.flatnonzero(
            pc.fill_null(evaluate(plan.source_filter, source), False).to_numpy(zero_copy_only=False)
        )
    if len(t_rows) == 0 or len(s_rows) == 0:
        return _EMPTY, _EMPTY
    if plan.keys:
        tidx, sidx = _hash_join(plan.keys, target, source, t_rows, s_rows)
    else:
        tidx = np.repeat(t_rows, len(s_rows))
        sidx = np.tile(s_rows, len(t_rows))
    if plan.residual is not None and len(tidx):
        scope = _Scope({plan.target_alias: rows.take(tidx), plan.source_alias: source.take(_indices(sidx))})
        keep = scope.mask(plan.residual)
        tidx, sidx = tidx[keep], sidx[keep]
    return tidx, sidx


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


# -------------------------------------------------------------------------------------- executor


class _Outcome:
    """Rows the merge changes, as positions into the target and the new rows."""

    def __init__(self) -> None:
        self.updated_rows: list[np.ndarray] = []
        self.updated_tables: list[pa.Table] = []
        self.deleted_rows: list[np.ndarray] = []
        self.inserted: list[pa.Table] = []
        self.counts: dict[str, int] = {
            "numTargetRowsMatchedUpdated": 0,
            "numTargetRowsMatchedDeleted": 0,
            "numTargetRowsNotMatchedBySourceUpdated": 0,
            "numTargetRowsNotMatchedBySourceDeleted": 0,
            "numTargetRowsInserted": 0,
        }


def _run_clauses(plan: MergePlan, target: _Target, source: pa.Table) -> _Outcome:
    out = _Outcome()
    ta, sa = plan.target_alias, plan.source_alias
    tidx, sidx = _matched_pairs(plan, target, source)
    if plan.matched and len(tidx):
        pair_t, pair_s = tidx, sidx
        if plan.duplicates_allowed:  # a lone unconditional DELETE: each target row once (one change row)
            pair_t, first = np.unique(tidx, return_index=True)
            pair_s = sidx[first]
        scope = _Scope({ta: target.take(pair_t), sa: source.take(_indices(pair_s))})
        chosen = _choose(scope, plan.matched)
        acted = pair_t[chosen >= 0]
        seen = np.zeros(target.num_rows, dtype=bool)
        seen[acted] = True
        if not plan.duplicates_allowed and np.count_nonzero(seen) < len(acted):
            raise MergeMultipleMatchError(
                f"Cannot perform MERGE: multiple source rows matched the same target row and tried to update or "
                f"delete it (ON {plan.operation_parameters['predicate']}). Help: deduplicate the source on the "
                "join keys, e.g. keep the latest change per key",
                clause="ON condition",
            )
        _apply_clauses(out, plan.matched, scope, chosen, pair_t, ta, plan.schema, "Matched")
    if plan.not_matched_by_source:
        matched = np.zeros(target.num_rows, dtype=bool)
        matched[tidx] = True
        rows = np.flatnonzero(~matched)
        scope = _Scope({ta: target.take(rows)})
        chosen = _choose(scope, plan.not_matched_by_source)
        _apply_clauses(
            out, plan.not_matched_by_source, scope, chosen, rows, ta, plan.schema, "NotMatchedBySource"
        )
    if plan.not_matched:
        matched_source = np.zeros(source.num_rows, dtype=bool)
        matched_source[sidx] = True
        rows = np.flatnonzero(~matched_source)
        scope = _Scope({sa: source.take(_indices(rows))})
        chosen = _choose(scope, plan.not_matched)

        for i, clause in enumerate(plan.not_matched):
            picked = np.flatnonzero(chosen == i)
            if len(picked):
                base = null_table(plan.schema, len(picked))
                out.inserted.append(_apply(scope.take(picked), base, clause, plan.schema))
                out.counts["numTargetRowsInserted"] += len(picked)
    return out


def _apply_clauses(
    out: _Outcome,
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
            picked_scope = scope.take(picked)
            base = picked_scope.tables[target_alias]
            out.updated_tables.append(_apply(picked_scope, base, clause, schema))
            out.updated_rows.append(positions)
            out.counts[f"numTargetRows{kind}Updated"] += len(picked)


def _rewrite(target: _Target, out: _Outcome) -> tuple[np.ndarray, pa.Table, np.ndarray, np.ndarray]:
    """(touched file indices, rewritten rows file by file, updated and deleted target row positions).

    Each touched file contributes its unchanged rows (in order) followed by its updated rows, so the
    rewritten files keep the clustering of the originals (their statistics still prune later merges).
    """
    updated = np.concatenate(out.updated_rows) if out.updated_rows else _EMPTY
    deleted = np.concatenate(out.deleted_rows) if out.deleted_rows else _EMPTY
    changed = np.zeros(target.num_rows, dtype=bool)
    changed[updated] = True
    changed[deleted] = True
    num_files = len(target.parts)
    is_touched = np.zeros(num_files, dtype=bool)
    is_touched[target.file_ids(np.concatenate([updated, deleted]))] = True
    touched = np.flatnonzero(is_touched)
    new_values = pa.concat_tables(out.updated_tables) if out.updated_tables else None
    update_bounds = np.zeros(num_files + 1, dtype=np.int64)
    if new_values is not None:
        update_files = target.file_ids(updated)
        order = np.argsort(update_files, kind="stable")
        new_values = new_values.take(_indices(order))
        update_bounds = np.searchsorted(update_files[order], np.arange(num_files + 1))

    def file_rows(f: int) -> list[pa.Table]:
        lo, hi = int(target.starts[f]), int(target.starts[f + 1])
        keep = ~changed[lo:hi]
        rows = target.parts[f]
        out = [rows if keep.all() else rows.filter(pa.array(keep))]
        if new_values is not None and update_bounds[f + 1] > update_bounds[f]:
            out.append(new_values.slice(int(update_bounds[f]), int(update_bounds[f + 1] - update_bounds[f])))
        return out

    # On the engine's pool: Arrow's filter releases the GIL.
    parts = [t for per_file in run_parallel(file_rows, [int(f) for f in touched]) for t in per_file]
    rewritten = pa.concat_tables(parts) if parts else target.table.slice(0, 0)
    return touched, rewritten, updated, deleted


# ------------------------------------------------------------------------------------------ entry


def _read_target(
    executor: Executor, snapshot: Snapshot, files: Sequence[AddFile], schema: StructType
) -> _Target:
    """The rows of ``files`` in the (evolved) ``schema``, file by file."""
    parts = executor.read_files(WriteTarget.of(snapshot), files, schema=schema)
    return _Target(parts, to_arrow_schema(schema))


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
    target = _read_target(executor, job.reader, files, job.writer.schema)
    scanned = time.monotonic()
    out = _run_clauses(plan, target, source)
    touched, rewritten, updated, deleted = _rewrite(target, out)
    inserted = pa.concat_tables(out.inserted) if out.inserted else None
    removed = [files[i] for i in touched]
    changes = _changes(job.writer, out, target, updated, deleted, inserted) if removed else None
    tables = [t for t in (rewritten, inserted) if t is not None and t.num_rows]
    adds, cdc = _write(executor, job.writer, tables, changes)
    updated_rows = out.counts["numTargetRowsMatchedUpdated"] + out.counts["numTargetRowsNotMatchedBySourceUpdated"]
    return MergeOutcome(
        removed=removed, added=adds, cdc=cdc, counts=dict(out.counts),
        copied_rows=rewritten.num_rows - updated_rows, scan_seconds=scanned - started,
    )


def _changes(
    writer: Snapshot,
    out: _Outcome,
    target: _Target,
    updated: np.ndarray,
    deleted: np.ndarray,
    inserted: pa.Table | None,
) -> pa.Table | None:
    """The change rows of a merge that rewrites files, when the table records its changes."""
    if not cdf_enabled(writer.configuration):
        return None
    parts = [tag_changes(target.take(updated), "update_preimage")]
    if out.updated_tables:
        parts.append(tag_changes(pa.concat_tables(out.updated_tables), "update_postimage"))
    parts.append(tag_changes(target.take(deleted), "delete"))
    if inserted is not None:
        parts.append(tag_changes(inserted, "insert"))
    return pa.concat_tables(parts)


def _write(
    executor: Executor, writer: Snapshot, tables: Sequence[pa.Table], changes: pa.Table | None
) -> tuple[list[AddFile], list[AddCDCFile]]:
    """Write the rewritten and inserted rows as data files and the change rows as change files."""
    target = WriteTarget.of(writer)
    adds = executor.write_files(target, pa.concat_tables(tables)) if tables else []
    cdc = executor.write_changes(target, [changes]) if changes is not None and changes.num_rows else []
    return adds, cdc

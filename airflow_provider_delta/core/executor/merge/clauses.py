"""How the local executor's MERGE runs its clauses on Arrow rows: conditions, assignments, changes.

A clause sees a :class:`Scope`: one table per alias (``t`` the target rows, ``s`` the source rows),
row-aligned; its condition and values are Arrow expressions over them. :func:`choose` gives each row
the first clause whose condition holds (a later clause's condition is computed only on the rows no
earlier clause took, as in Spark), :func:`assign_values` applies an assignment with Spark's store
assignment casts, and :func:`file_clauses` runs the matched and not-matched-by-source clauses on
one target file's rows, returning what they change (:class:`FileChanges`).

Example:
    >>> scope = Scope({"s": pa.table({"v": [1, 5]})})
    >>> choose(scope, plan.not_matched)                               # doctest: +SKIP
    array([-1,  0], dtype=int16)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.executor.merge.job import CLAUSE_COUNTERS
from airflow_provider_delta.core.executor.merge.store import store_value
from airflow_provider_delta.core.expressions import Column, evaluate
from airflow_provider_delta.core.write.changes import tag_changes
from airflow_provider_delta.exceptions import MergeError, MergeMultipleMatchError, SchemaMismatchError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_delta.core.executor.merge.plan import MergePlan, PlannedClause
    from airflow_provider_delta.core.expressions import Expr
    from airflow_provider_delta.core.schema.types import StructType

__all__ = [
    "FileChanges",
    "Scope",
    "apply_assignments",
    "assign_values",
    "choose",
    "file_clauses",
    "indices",
    "refuse_multiple_matches",
]

EMPTY = np.empty(0, dtype=np.int64)


def indices(values: np.ndarray) -> pa.Array:
    """Row numbers as an Arrow ``int64`` array (for ``take``)."""
    return pa.array(values, type=pa.int64())


class Scope:
    """Rows seen by a clause: one table per alias, row-aligned; expressions read them as struct columns."""

    def __init__(self, tables: dict[str, pa.Table]) -> None:
        self.tables = tables
        self.num_rows = next(iter(tables.values())).num_rows
        self._struct: pa.Table | None = None

    def take(self, rows: np.ndarray) -> Scope:
        index = indices(rows)
        return Scope({alias: t.take(index) for alias, t in self.tables.items()})

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


def choose(scope: Scope, clauses: Sequence[PlannedClause]) -> np.ndarray:
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


# ------------------------------------------------------------------------------------------ values


def _conform(
    values: pa.Array | pa.ChunkedArray,
    schema: StructType,
    path: Sequence[str],
    where: str,
    original: pa.ChunkedArray | None = None,
) -> pa.ChunkedArray:
    """The values stored into the field at ``path`` as Delta stores them (:mod:`.store`)."""
    f = schema.find_path(tuple(path))
    chunk = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    before = original.combine_chunks() if original is not None else None
    try:
        out = store_value(chunk, f.type, original=before)
    except SchemaMismatchError as err:
        raise MergeError(
            f"Cannot assign a value to column {'.'.join(path)!r} in {where}: {err}",
            clause=where,
            column=".".join(path),
        ) from err
    return pa.chunked_array([out], type=out.type)


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
    base: pa.Table,
    path: Sequence[str],
    values: pa.Array | pa.ChunkedArray,
    schema: StructType,
    where: str,
    *,
    preserve: bool = False,
) -> pa.Table:
    """``base`` (rows in the evolved ``schema``) with the column or nested field at ``path`` set to
    ``values``, stored as Delta stores them (:mod:`.store`; the Spark executor's tasks too).

    ``preserve``: ``UPDATE SET *`` with schema evolution; struct fields the value lacks keep ``base``'s.

    Raises:
        MergeError: a value does not fit the column (naming ``where`` and the column).
    """
    index = base.schema.get_field_index(path[0])
    original = base.column(index) if preserve and len(path) == 1 else None
    value = _conform(values, schema, path, where, original)
    column = value if len(path) == 1 else _set_nested(base.column(index), path[1:], value)
    return base.set_column(index, base.schema.field(index), column)


def apply_assignments(scope: Scope, base: pa.Table, clause: PlannedClause, schema: StructType) -> pa.Table:
    """``base`` (rows in the evolved schema) with the clause's assignments applied."""
    for a in clause.assignments:
        base = assign_values(base, a.path, scope.value(a.value), schema, clause.label, preserve=a.preserve)
    return base


# ----------------------------------------------------------------------------------------- changes


class FileChanges:
    """What the clauses do to one file's rows: positions in the file, new row values, counters."""

    def __init__(self) -> None:
        self.updated_rows: list[np.ndarray] = []
        self.updated_tables: list[pa.Table] = []
        self.deleted_rows: list[np.ndarray] = []
        self.counts: dict[str, int] = dict.fromkeys(CLAUSE_COUNTERS, 0)

    @property
    def touched(self) -> bool:
        """Whether a row of the file is updated or deleted (the file is then rewritten)."""
        return bool(self.updated_rows or self.deleted_rows)

    @staticmethod
    def positions(rows: list[np.ndarray]) -> np.ndarray:
        """The row positions of several clauses as one array."""
        return np.concatenate(rows) if rows else EMPTY

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
            out.append(tag_changes(part.take(indices(self.positions(self.updated_rows))), "update_preimage"))
            out.append(tag_changes(pa.concat_tables(self.updated_tables), "update_postimage"))
        if self.deleted_rows:
            out.append(tag_changes(part.take(indices(self.positions(self.deleted_rows))), "delete"))
        return out


def refuse_multiple_matches(plan: MergePlan, acted: np.ndarray) -> None:
    """Raise when a target row is in ``acted`` (rows an update or delete took, one per pair) twice.

    Raises:
        MergeMultipleMatchError: naming the ON condition.
    """
    if plan.duplicates_allowed or len(acted) < 2 or len(np.unique(acted)) == len(acted):
        return
    raise MergeMultipleMatchError(
        f"Cannot perform MERGE: multiple source rows matched the same target row and tried to update or "
        f"delete it (ON {plan.operation_parameters['predicate']}). Help: deduplicate the source on the "
        "join keys, e.g. keep the latest change per key",
        clause="ON condition",
    )


def file_clauses(
    plan: MergePlan, source: pa.Table, part: pa.Table, pair_t: np.ndarray, pair_s: np.ndarray
) -> FileChanges:
    """Run the matched clauses on one file's pairs (file row, source row) and the not-matched-by-source
    ones on its other rows.

    Raises:
        MergeMultipleMatchError: two source rows would update or delete one of the file's rows.
        MergeError: a value does not fit its column.
    """
    ta, sa = plan.target_alias, plan.source_alias
    out = FileChanges()
    if plan.matched and len(pair_t):
        matched_t, matched_s = pair_t, pair_s
        if plan.duplicates_allowed:  # a lone unconditional DELETE: each target row once (one change row)
            matched_t, first = np.unique(pair_t, return_index=True)
            matched_s = pair_s[first]
        scope = Scope({ta: part.take(indices(matched_t)), sa: source.take(indices(matched_s))})
        chosen = choose(scope, plan.matched)
        refuse_multiple_matches(plan, matched_t[chosen >= 0])
        _apply_clauses(out, plan.matched, scope, chosen, matched_t, ta, plan.schema, "Matched")
    if plan.not_matched_by_source and part.num_rows:
        matched = np.zeros(part.num_rows, dtype=bool)
        matched[pair_t] = True
        rows = np.flatnonzero(~matched)
        scope = Scope({ta: part if len(rows) == part.num_rows else part.take(indices(rows))})
        chosen = choose(scope, plan.not_matched_by_source)
        _apply_clauses(out, plan.not_matched_by_source, scope, chosen, rows, ta, plan.schema, "NotMatchedBySource")
    return out


def _apply_clauses(
    out: FileChanges,
    clauses: Sequence[PlannedClause],
    scope: Scope,
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
            out.updated_tables.append(apply_assignments(picked_scope, base, clause, schema))
            out.updated_rows.append(positions)
            out.counts[f"numTargetRows{kind}Updated"] += len(picked)

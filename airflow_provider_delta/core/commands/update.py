"""UPDATE: set columns to SQL expressions on the rows matching a predicate, rewriting their files.

Every right-hand side sees the row as it was before the update (``SET a = b, b = a`` swaps). Files
holding a matching row are removed and rewritten whole by the executor; on a table that records its
changes the old and new images of the updated rows are written as change data.

Example:
    >>> update(snapshot, "id = 1", {"amount": "amount * 2"})  # doctest: +SKIP
    8
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.change_data import cdf_enabled
from airflow_provider_delta.core.commands.delete import bound_predicate, matches, operation_predicate
from airflow_provider_delta.core.executor import LocalExecutor, RowRewrite
from airflow_provider_delta.core.executor.merge.store import store_value, struct_mismatch
from airflow_provider_delta.core.expressions import _type_of, bind, evaluate, parse_expression, spread
from airflow_provider_delta.core.schema.arrow import from_arrow_type
from airflow_provider_delta.core.transaction.commit import Transaction, refuse_if_append_only
from airflow_provider_delta.core.write.changes import tag_changes
from airflow_provider_delta.core.write.rows import check_table_writable, count_true
from airflow_provider_delta.core.write.target import WriteTarget
from airflow_provider_delta.exceptions import DeltaError, PredicateError, SchemaMismatchError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_delta.core.actions import AddFile
    from airflow_provider_delta.core.executor import Executor
    from airflow_provider_delta.core.expressions import Expr
    from airflow_provider_delta.core.schema.types import DataType
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["UpdateRows", "update"]


@dataclass(frozen=True)
class UpdateRows:
    """The :data:`~airflow_provider_delta.core.executor.FileRewrite` of UPDATE."""

    predicate: Expr | None
    assignments: tuple[tuple[str, Expr], ...]
    record_changes: bool

    def __call__(self, add: AddFile, rows: pa.Table) -> RowRewrite | None:
        """The file's rows with the assignments applied where the predicate holds; None when none does."""
        if self.predicate is not None:
            mask = matches(self.predicate, rows)
        else:
            mask = pa.array(np.ones(rows.num_rows, dtype=bool))
        hits = count_true(mask)
        if hits == 0:
            return None
        # As in Spark, SET values are computed on the matching rows only: an overflow or a value that
        # does not fit its column can only come from a row that is updated.
        positions = np.flatnonzero(np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool))
        updated = rows if hits == rows.num_rows else rows.take(pa.array(positions, pa.int64()))
        new_values = {}
        for name, expr in self.assignments:
            target_type = rows.schema.field(name).type
            try:
                new_values[name] = _stored(evaluate(expr, updated), target_type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
                raise SchemaMismatchError(
                    f"Cannot update column {name!r}: the value {str(expr)!r} does not fit type {target_type} ({err})"
                ) from err
        before = rows
        for name, new in new_values.items():
            idx = rows.schema.get_field_index(name)
            new_column = new if hits == rows.num_rows else spread(new, positions, rows.num_rows)
            rows = rows.set_column(idx, rows.schema.field(idx), pc.if_else(mask, new_column, rows.column(idx)))
        changes: tuple[pa.Table, ...] = ()
        if self.record_changes:
            changes = (
                tag_changes(before.filter(mask), "update_preimage"),
                tag_changes(rows.filter(mask), "update_postimage"),
            )
        return RowRewrite(rows, changes, {"numUpdatedRows": hits, "numCopiedRows": rows.num_rows - hits})


def _stored(values: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """Values cast to the column's type; structs (also in arrays and maps) by field name, as Delta does."""
    if not pa.types.is_nested(target):
        return pc.cast(values, target)
    chunk = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    return store_value(chunk, from_arrow_type(target))


def _bind_assignments(snapshot: Snapshot, set: Mapping[str, str]) -> tuple[tuple[str, Expr], ...]:  # noqa: A002
    if not set:
        raise DeltaError("Cannot update: no assignments given (set={'column': 'sql expression'})")
    arrow_schema = snapshot.arrow_schema
    assignments = []
    for name, text in set.items():
        f = snapshot.schema.get(name, case_sensitive=False)
        if f is None:
            raise PredicateError(
                f"Cannot update column {name!r}: no such column (columns: {', '.join(snapshot.schema.names)})"
            )
        # Partition columns may be assigned too: the rewritten rows move to their new partition folder.
        bound = bind(parse_expression(str(text)), arrow_schema)
        _refuse_struct_mismatch(f.name, f.type, _type_of(bound))
        assignments.append((f.name, bound))
    return tuple(assignments)


def _refuse_struct_mismatch(name: str, column: DataType, value: pa.DataType | None) -> None:
    """Delta's UPDATE stores structs by name and never evolves the schema
    (``UpdateExpressionsSupport.castIfNeeded``): a struct value must have exactly the column's fields.

    Raises:
        SchemaMismatchError: the value has a field the column lacks, or lacks one of the column's.
    """
    reason = None if value is None else struct_mismatch(value, column, name, allow_missing=False)
    if reason:
        raise SchemaMismatchError(f"Cannot update column {name!r}: {reason}. Help: assign the fields one by one")


def update(
    snapshot: Snapshot,
    predicate: Any,
    set: Mapping[str, str],  # noqa: A002 - Delta's name for the assignments
    *,
    isolation_level: Any = None,
    executor: Executor | None = None,
) -> int | None:
    """Set columns to SQL expressions on the rows matching ``predicate`` (all rows when None).

    Returns:
        The committed version, or None when no row matched.
    """
    executor = executor or LocalExecutor()
    assignments = _bind_assignments(snapshot, set)
    bound = bound_predicate(snapshot, predicate) if predicate is not None else None
    params = {"predicate": operation_predicate(predicate)}
    txn = Transaction(snapshot, operation="UPDATE", operation_parameters=params, isolation_level=isolation_level)
    refuse_if_append_only(snapshot.metadata, snapshot.location, "UPDATE", snapshot.version)
    files = txn.read_files(bound)
    if files:
        check_table_writable(snapshot)  # before any file is rewritten
    record = cdf_enabled(snapshot.configuration)
    target = WriteTarget.of(snapshot)
    rewrite = UpdateRows(bound, assignments, record)
    result = executor.rewriter().rewrite_files(target, files, rewrite, record_changes=record)
    if not result.removed:
        return None
    txn.remove(*result.removed)
    txn.add(*result.added)
    txn.add_cdc(*executor.writer().write_changes(target, result.changes))
    txn.operation_metrics = {
        "numUpdatedRows": result.metrics.get("numUpdatedRows", 0),
        "numCopiedRows": result.metrics.get("numCopiedRows", 0),
        "numRemovedFiles": len(result.removed),
        "numAddedFiles": len(result.added),
    }
    return txn.commit()

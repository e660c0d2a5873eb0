"""DELETE: remove the rows matching a predicate, by dropping whole files and rewriting partial ones.

Files whose partition values decide the predicate are removed without being read (their rows are
served to the change data feed from the ``remove`` actions). Every other candidate file is read by
the executor; a file with matching rows is removed and its other rows are written to new files, and
on a table that records its changes the deleted rows are written as change data.

Example:
    >>> delete(snapshot, "country = 'FR' AND amount < 0")  # doctest: +SKIP
    7
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.change_data import cdf_enabled
from airflow_provider_delta.core.executor import LocalExecutor, RowRewrite
from airflow_provider_delta.core.expressions import bind_filter, evaluate, is_partition_only, predicate_text
from airflow_provider_delta.core.partitions import partition_column
from airflow_provider_delta.core.read.scan import raw_partition_value
from airflow_provider_delta.core.schema.arrow import to_arrow_type
from airflow_provider_delta.core.schema.mapping import column_mapping_mode
from airflow_provider_delta.core.transaction.commit import Transaction, refuse_if_append_only
from airflow_provider_delta.core.write.changes import tag_changes
from airflow_provider_delta.core.write.rows import check_table_writable, count_true
from airflow_provider_delta.core.write.target import WriteTarget

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_delta.core.actions import AddFile
    from airflow_provider_delta.core.executor import ChangeRows, Executor
    from airflow_provider_delta.core.expressions import Expr
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["DeleteRows", "delete", "matches", "partition_matches", "stage_delete"]


def matches(predicate: Expr, rows: pa.Table) -> pa.BooleanArray | pa.ChunkedArray:
    """Where ``predicate`` holds on ``rows`` (null counts as false)."""
    return pc.fill_null(evaluate(predicate, rows), False)


@dataclass(frozen=True)
class DeleteRows:
    """The :data:`~airflow_provider_delta.core.executor.FileRewrite` of DELETE: keep the other rows."""

    predicate: Expr
    record_changes: bool

    def __call__(self, add: AddFile, rows: pa.Table) -> RowRewrite | None:
        """Drop the matching rows; None when no row of the file matches."""
        mask = matches(self.predicate, rows)
        hits = count_true(mask)
        if hits == 0:
            return None
        keep = rows.filter(pc.invert(mask))
        changes = (tag_changes(rows.filter(mask), "delete"),) if self.record_changes else ()
        return RowRewrite(keep, changes, {"numDeletedRows": hits, "numCopiedRows": keep.num_rows})


def partition_matches(snapshot: Snapshot, predicate: Expr, add: AddFile) -> bool:
    """Evaluate a partition-only predicate exactly on one file's partition values (errors propagate)."""
    mode = column_mapping_mode(snapshot.configuration)
    lowered = {c.lower() for c in snapshot.partition_columns}
    columns = {}
    for f in snapshot.schema:
        if f.name.lower() in lowered:
            raw = raw_partition_value(add.partition_values, f, mode)
            columns[f.name] = partition_column(raw, to_arrow_type(f.type), 1, column=f.name)
    return bool(matches(predicate, pa.table(columns))[0].as_py())


def stage_delete(
    txn: Transaction,
    snapshot: Snapshot,
    predicate: Expr | None,
    files: Sequence[AddFile],
    executor: Executor,
    *,
    changes: list[ChangeRows] | None,
) -> dict[str, int]:
    """Stage on ``txn`` the removal of the rows matching ``predicate`` (all when None) from ``files``.

    Whole files go when the partition values decide; the others are rewritten by ``executor``. With
    ``changes`` (a list), the deleted rows of every rewritten file are appended to it.

    Returns:
        Delta's DELETE metrics: numRemovedFiles, numAddedFiles, numDeletedRows, numCopiedRows.
    """
    removed = deleted = 0
    to_read: list[AddFile] = []
    partition_only = predicate is None or is_partition_only(predicate, snapshot.partition_columns)
    for add in files:
        if not partition_only:
            to_read.append(add)
        elif predicate is None or partition_matches(snapshot, predicate, add):
            txn.remove(add)
            removed += 1
            deleted += add.num_records or 0
    metrics = {"numRemovedFiles": removed, "numAddedFiles": 0, "numDeletedRows": deleted, "numCopiedRows": 0}
    if to_read and predicate is not None:
        result = executor.rewriter().rewrite_files(
            WriteTarget.of(snapshot), to_read, DeleteRows(predicate, changes is not None),
            record_changes=changes is not None,
        )
        txn.remove(*result.removed)
        txn.add(*result.added)
        if changes is not None:
            changes.extend(result.changes)
        metrics["numRemovedFiles"] += len(result.removed)
        metrics["numAddedFiles"] += len(result.added)
        metrics["numDeletedRows"] += result.metrics.get("numDeletedRows", 0)
        metrics["numCopiedRows"] += result.metrics.get("numCopiedRows", 0)
    return metrics


def bound_predicate(snapshot: Snapshot, predicate: Any) -> Expr:
    """``predicate`` bound to the snapshot's logical schema (it must yield booleans)."""
    return bind_filter(predicate, snapshot.arrow_schema)


def operation_predicate(predicate: Any) -> str:
    """``operationParameters.predicate`` as Delta records it: a JSON list of the predicate's text."""
    return orjson.dumps([predicate_text(predicate)] if predicate is not None else []).decode()


def delete(
    snapshot: Snapshot, predicate: Any = None, *, isolation_level: Any = None, executor: Executor | None = None
) -> int | None:
    """Delete the rows matching ``predicate`` (all rows when None); None when nothing matched."""
    executor = executor or LocalExecutor()
    bound = bound_predicate(snapshot, predicate) if predicate is not None else None
    params = {"predicate": operation_predicate(predicate)}
    txn = Transaction(snapshot, operation="DELETE", operation_parameters=params, isolation_level=isolation_level)
    refuse_if_append_only(snapshot.metadata, snapshot.location, "DELETE", snapshot.version)
    files = txn.read_files(bound)
    if files and not (bound is None or is_partition_only(bound, snapshot.partition_columns)):
        check_table_writable(snapshot)  # before any file is rewritten
    changes: list[ChangeRows] | None = [] if cdf_enabled(snapshot.configuration) else None
    metrics = stage_delete(txn, snapshot, bound, files, executor, changes=changes)
    if metrics["numRemovedFiles"] == 0:
        return None
    txn.add_cdc(*executor.writer().write_changes(WriteTarget.of(snapshot), changes or []))
    txn.operation_metrics = metrics
    return txn.commit()

"""WRITE: append rows, or overwrite the table (all of it, or Delta's replaceWhere) with them.

One transaction per call: the schema evolution the rows need (``schema_mode``), the idempotency
record (``txn``: ``app_id``/``app_version``), the files the overwrite removes or rewrites, the new data
files, change data on a change-data-feed table, one commit. The rows are whatever the executor takes
(a pyarrow Table locally, a Spark DataFrame on Spark); they never pass through this module.

Example:
    >>> write(snapshot, pa.table({"id": [1, 2]}), mode="append").version   # doctest: +SKIP
    5
    >>> write(snapshot, rows, mode="overwrite", predicate="day = '2024-01-01'")  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from airflow_provider_delta.core.change_data import cdf_enabled
from airflow_provider_delta.core.commands.schema.write import stage_schema_evolution
from airflow_provider_delta.core.executor import LocalExecutor
from airflow_provider_delta.core.transaction.commit import Transaction, refuse_if_append_only
from airflow_provider_delta.core.write.rows import check_table_writable, metrics_for_adds
from airflow_provider_delta.core.write.target import WriteTarget
from airflow_provider_delta.exceptions import DeltaError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from airflow_provider_delta.core.executor import ChangeRows, Executor
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["WriteMode", "WriteResult", "append", "overwrite", "write"]

WriteMode = Literal["append", "overwrite"]


@dataclass(frozen=True)
class WriteResult:
    """One write: the committed version (None when ``app_id`` had already written ``app_version``).

    Attributes:
        version: the committed version, or None when nothing was written.
        metrics: Delta's write metrics (``numFiles``, ``numOutputRows``, ``numOutputBytes``, and for an
            overwrite ``numRemovedFiles``, ...); for a skipped write ``appTransactionVersion``.
    """

    version: int | None
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def committed(self) -> bool:
        """Whether this call wrote a commit."""
        return self.version is not None


def write(
    snapshot: Snapshot,
    data: Any,
    *,
    mode: WriteMode = "append",
    predicate: Any = None,
    schema_mode: str | None = None,
    partition_by: Sequence[str] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    isolation_level: Any = None,
    executor: Executor | None = None,
    before_commit: Callable[[], object] | None = None,
) -> WriteResult:
    """Append ``data``, or overwrite the table (only the rows matching ``predicate``) with it.

    Args:
        snapshot: the version the write reads (the newest, for a writer), or a new table's state before
            its creation (``commands.create.table_before_creation``): then the write creates it.
        data: the rows, in the executor's form (a pyarrow Table for the local executor).
        mode: ``append`` or ``overwrite``.
        predicate: overwrite only: Delta's replaceWhere; every new row must satisfy it.
        schema_mode: ``merge`` (mergeSchema) or, for an overwrite without predicate, ``overwrite``
            (overwriteSchema, with ``partition_by``); default: the session's ``auto_merge_schema``.
        partition_by: the partitioning that ``schema_mode="overwrite"`` gives the table.
        app_id, app_version: idempotent writes (Delta's ``txn``): when the table records ``app_id`` at
            ``app_version`` or later, nothing is written.
        isolation_level: ``Serializable`` or ``WriteSerializable`` (default: the table's).
        executor: where the rows are written (default: :class:`LocalExecutor`).
        before_commit: called after the files are written and before the commit (tests, jobs).

    Raises:
        SchemaMismatchError: the rows do not fit, break a CHECK constraint or lie outside ``predicate``.
        SchemaEvolutionError: the schema cannot evolve as asked.
        DeltaConcurrentModificationException: a concurrent commit conflicts.
    """
    if (app_id is None) != (app_version is None):
        raise DeltaError(f"Cannot {mode}: pass app_id and app_version together (idempotent writes need both)")
    if predicate is not None and mode != "overwrite":
        raise DeltaError("Cannot append with a predicate: replaceWhere needs mode 'overwrite'")
    executor = executor or LocalExecutor()
    params: dict[str, Any] = {"mode": mode.capitalize(), "partitionBy": list(snapshot.partition_columns)}
    txn = Transaction(snapshot, operation="WRITE", operation_parameters=params, isolation_level=isolation_level)
    if snapshot.is_new_table:  # created by this write: version 0 holds the table and its first rows
        txn.update_protocol(snapshot.protocol).update_metadata(snapshot.metadata)
    if app_id is not None and app_version is not None:
        done = txn.app_transaction_version(app_id)
        if done is not None and done >= app_version:
            return WriteResult(None, {"appTransactionVersion": done})
        txn.set_app_transaction(app_id, app_version)
    snapshot = stage_schema_evolution(
        txn, snapshot, executor.writer().data_schema(data), schema_mode=schema_mode, operation=mode,
        partition_by=partition_by, predicate=predicate,
    )
    # Refuse before writing: a refused commit must not leave data files behind.
    check_table_writable(snapshot)
    if mode == "append":
        adds = executor.writer().write_files(WriteTarget.of(snapshot), data)
        metrics: dict[str, Any] = metrics_for_adds(adds)
    else:
        adds, metrics = _overwrite(txn, snapshot, data, predicate, executor)
    txn.add(*adds)
    txn.operation_metrics = metrics
    if before_commit is not None:
        before_commit()
    return WriteResult(txn.commit(), dict(txn.operation_metrics))


def _overwrite(
    txn: Transaction, snapshot: Snapshot, data: Any, predicate: Any, executor: Executor
) -> tuple[list[Any], dict[str, Any]]:
    """Write the new rows, then stage what they replace: every file, or the rows ``predicate`` matches."""
    target = WriteTarget.of(snapshot)
    if predicate is None:
        files = txn.read_files(None)
        if files:
            refuse_if_append_only(snapshot.metadata, snapshot.location, "WRITE", snapshot.version)
        adds = executor.writer().write_files(target, data)
        txn.remove(*files)
        return adds, {"numRemovedFiles": len(files), **metrics_for_adds(adds)}
    refuse_if_append_only(snapshot.metadata, snapshot.location, "WRITE", snapshot.version)
    # lazy: replaceWhere needs the expression engine (sqlglot, ~0.2 s); appends and full overwrites do not
    from airflow_provider_delta.core.commands.delete import bound_predicate, operation_predicate, stage_delete
    from airflow_provider_delta.core.expressions import is_partition_only, predicate_text

    bound = bound_predicate(snapshot, predicate)
    txn.operation_parameters["predicate"] = operation_predicate(predicate)
    files = txn.read_files(bound)
    changes: list[ChangeRows] | None = [] if cdf_enabled(snapshot.configuration) else None
    # Delta's replaceWhere on data columns: when the removal writes change rows, the new rows are
    # recorded too (tagged insert), because a commit with cdc files is read from them only. Only a
    # row-level removal can write change rows; then the new rows are taken once for both.
    row_level = bool(files) and not is_partition_only(bound, snapshot.partition_columns)
    # The new rows first: one outside the predicate fails the write before any old file is rewritten.
    text = predicate_text(predicate)
    inserts: list[ChangeRows] = []
    if changes is not None and row_level:
        adds, inserts = executor.writer().write_files_and_changes(
            target, data, "insert", require=bound, require_text=text
        )
    else:
        adds = executor.writer().write_files(target, data, require=bound, require_text=text)
    metrics = stage_delete(txn, snapshot, bound, files, executor, changes=changes)
    if changes:
        changes.extend(inserts)
        txn.add_cdc(*executor.writer().write_changes(target, changes))
    return adds, {**metrics, **metrics_for_adds(adds)}


def append(
    snapshot: Snapshot,
    data: Any,
    *,
    app_id: str | None = None,
    app_version: int | None = None,
    isolation_level: Any = None,
    schema_mode: str | None = None,
    executor: Executor | None = None,
) -> int | None:
    """Append rows; returns the committed version, or None when (app_id, app_version) already landed."""
    return write(
        snapshot, data, mode="append", app_id=app_id, app_version=app_version,
        isolation_level=isolation_level, schema_mode=schema_mode, executor=executor,
    ).version


def overwrite(
    snapshot: Snapshot,
    data: Any,
    predicate: Any = None,
    *,
    isolation_level: Any = None,
    schema_mode: str | None = None,
    partition_by: Sequence[str] | None = None,
    executor: Executor | None = None,
) -> int:
    """Replace the table's rows (or those matching ``predicate``, Delta's replaceWhere) with ``data``."""
    version = write(
        snapshot, data, mode="overwrite", predicate=predicate, isolation_level=isolation_level,
        schema_mode=schema_mode, partition_by=partition_by, executor=executor,
    ).version
    assert version is not None  # without app_id every write commits
    return version

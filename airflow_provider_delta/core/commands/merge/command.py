"""The MERGE command: plan, hand the row work to an executor, commit one ``MERGE`` version.

1. plan the statement against the table and the source (:func:`~.plan.plan_merge`: clauses, schema
   evolution, the join keys, the predicate of the files that can hold affected rows);
2. refuse what cannot be written (append-only tables, unsupported writer features) before any file
   is written; open a transaction and record the candidate files as its read;
3. the executor's merger does the row work (``executor.merger().merge``:
   :class:`~airflow_provider_delta.core.executor.merge.job.MergeJob` in,
   :class:`~airflow_provider_delta.core.executor.merge.job.MergeOutcome` out): the local executor
   joins with pyarrow in this process, Spark's in Spark; an executor without a merger is refused
   with ``ExecutorCapabilityError`` before any file is written;
4. commit the removes, adds and change files with the evolved metadata, Delta's operation
   parameters and metrics, once (nothing when nothing changed).

Example:
    >>> execute_merge(snapshot, spec, pa.table({"id": [1]}))["numTargetRowsInserted"]   # doctest: +SKIP
    1
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.change_data import cdf_enabled
from airflow_provider_delta.core.commands.merge.plan import plan_merge
from airflow_provider_delta.core.commands.schema.update import metadata_with_schema
from airflow_provider_delta.core.commands.schema.write import with_metadata
from airflow_provider_delta.core.executor import LocalExecutor
from airflow_provider_delta.core.executor.merge.job import MergeJob, MergeOutcome
from airflow_provider_delta.core.executor.merge.source import as_merge_source
from airflow_provider_delta.core.transaction.commit import Transaction, refuse_if_append_only
from airflow_provider_delta.core.write.memory import rewrite_memory_pool
from airflow_provider_delta.core.write.rows import check_table_writable
from airflow_provider_delta.exceptions import MergeError

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow_provider_delta.core.commands.merge.model import MergeSpec
    from airflow_provider_delta.core.commands.merge.plan import MergePlan
    from airflow_provider_delta.core.executor import Executor
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["execute_merge", "merge_metrics"]

log = logging.getLogger(__name__)


def execute_merge(
    snapshot: Snapshot,
    spec: MergeSpec,
    source: Any,
    *,
    isolation_level: Any = None,
    executor: Executor | None = None,
    before_commit: Callable[[], object] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
) -> dict[str, Any]:
    """Plan, execute and commit a MERGE; return Delta's merge metrics plus ``version``.

    Args:
        snapshot: the table version the merge reads.
        spec: the statement.
        source: a ``MergeSource`` (e.g. Spark's), or rows pyarrow takes (a Table, batch reader, dataset).
        isolation_level: ``Serializable`` or ``WriteSerializable`` (the table's when None).
        executor: where the row work runs (default: the local executor).
        before_commit: called after the files are written and before the commit (jobs' test hook).
        app_id, app_version: an idempotent MERGE (Delta's ``txn``): when the table already records
            ``app_id`` at ``app_version`` or later nothing is done and the result is
            ``{"version": None, "alreadyCommitted": True}``; otherwise the commit records it.

    Raises:
        MergeError: invalid statement (see :func:`plan_merge`), or a value that does not fit its column.
        MergeMultipleMatchError: two source rows would update or delete one target row.
        ExecutorCapabilityError: ``executor`` cannot run MERGE (it has no merger).
    """
    if (app_id is None) != (app_version is None):
        raise MergeError("Cannot run MERGE: pass app_id and app_version together (idempotent merges need both)")
    if app_id is not None and app_version is not None:
        done = snapshot.app_transaction_version(app_id)
        if done is not None and done >= app_version:
            log.info("MERGE into %s: application %r already committed version %d; nothing to do",
                     snapshot.location, app_id, done)
            return {"version": None, "alreadyCommitted": True}
    with rewrite_memory_pool():  # jemalloc: far fewer page faults than mimalloc for a rewrite
        return _execute_merge(snapshot, spec, as_merge_source(source), isolation_level=isolation_level,
                              executor=executor or LocalExecutor(), before_commit=before_commit,
                              app=(app_id, app_version) if app_id is not None and app_version is not None else None)


def _evolved_snapshot(snapshot: Snapshot, plan: MergePlan) -> Snapshot:
    """The snapshot as writers must see it: with the evolved schema (column mapping ids for new fields)."""
    if not plan.evolved:
        return snapshot
    return with_metadata(snapshot, metadata_with_schema(snapshot.metadata, plan.schema))


def _execute_merge(
    snapshot: Snapshot,
    spec: MergeSpec,
    source: Any,
    *,
    isolation_level: Any,
    executor: Executor,
    before_commit: Callable[[], object] | None,
    app: tuple[str, int] | None,
) -> dict[str, Any]:
    started = time.monotonic()
    merger = executor.merger()  # before planning: an executor without a merger fails fast
    plan = plan_merge(snapshot, spec, source)
    if plan.matched or plan.not_matched_by_source:  # as Delta: only insert-only merges may run append-only
        refuse_if_append_only(snapshot.metadata, snapshot.location, "MERGE", snapshot.version)
    writer = _evolved_snapshot(snapshot, plan)
    check_table_writable(writer)  # before any file is written
    txn = Transaction(
        snapshot,
        operation="MERGE",
        operation_parameters=plan.operation_parameters,
        isolation_level=isolation_level,
    )
    if app is not None:
        txn.app_transaction_version(app[0])  # recorded as read: a concurrent try with this id conflicts
        txn.set_app_transaction(*app)
    files = txn.read_files(plan.file_predicate)
    log.info("MERGE into %s at version %d: %d file(s) may hold affected rows, %d source row(s), executor %s",
             snapshot.location, snapshot.version, len(files), plan.source_rows, executor.name)
    job = MergeJob(plan, snapshot, writer, tuple(files), source, cdf_enabled(writer.configuration))
    outcome = merger.merge(job)
    log.info("MERGE into %s: %d file(s) rewritten, %d data and %d change file(s) written; %s",
             snapshot.location, len(outcome.removed), len(outcome.added), len(outcome.cdc),
             ", ".join(f"{k}={v}" for k, v in outcome.counts.items()))
    if plan.evolved:
        txn.update_metadata(writer.metadata)
    txn.remove(*outcome.removed)
    txn.add(*outcome.added)
    txn.add_cdc(*outcome.cdc)
    metrics = merge_metrics(plan, outcome)
    metrics.update(
        executionTimeMs=int((time.monotonic() - started) * 1000),
        scanTimeMs=int(outcome.scan_seconds * 1000),
        rewriteTimeMs=int(max(0.0, time.monotonic() - started - outcome.scan_seconds) * 1000),
    )
    txn.operation_metrics = metrics
    changed = bool(outcome.added or outcome.removed or plan.evolved or app is not None)
    if changed and before_commit is not None:
        before_commit()
    version = txn.commit() if changed else None
    log.info("MERGE into %s: %s", snapshot.location,
             f"committed version {version}" if version is not None else "nothing changed, nothing committed")
    return {**metrics, "version": version}


def merge_metrics(plan: MergePlan, outcome: MergeOutcome) -> dict[str, Any]:
    """Delta's MERGE operation metrics (times aside) from a plan and its outcome."""
    c = outcome.counts
    updated = c["numTargetRowsMatchedUpdated"] + c["numTargetRowsNotMatchedBySourceUpdated"]
    deleted = c["numTargetRowsMatchedDeleted"] + c["numTargetRowsNotMatchedBySourceDeleted"]
    return {
        "numSourceRows": plan.source_rows,
        "numTargetRowsInserted": c["numTargetRowsInserted"],
        "numTargetRowsUpdated": updated,
        "numTargetRowsMatchedUpdated": c["numTargetRowsMatchedUpdated"],
        "numTargetRowsNotMatchedBySourceUpdated": c["numTargetRowsNotMatchedBySourceUpdated"],
        "numTargetRowsDeleted": deleted,
        "numTargetRowsMatchedDeleted": c["numTargetRowsMatchedDeleted"],
        "numTargetRowsNotMatchedBySourceDeleted": c["numTargetRowsNotMatchedBySourceDeleted"],
        "numTargetRowsCopied": outcome.copied_rows,
        "numOutputRows": outcome.copied_rows + updated + c["numTargetRowsInserted"],
        "numTargetFilesAdded": len(outcome.added),
        "numTargetFilesRemoved": len(outcome.removed),
        "numTargetChangeFilesAdded": len(outcome.cdc),
        "numTargetBytesAdded": sum(a.size for a in outcome.added),
        "numTargetBytesRemoved": sum(r.size for r in outcome.removed),
        "numTargetDeletionVectorsAdded": 0,
        "numTargetDeletionVectorsRemoved": 0,
        "numTargetDeletionVectorsUpdated": 0,
    }

"""Table maintenance on Spark: DeltaVacuumOperator, DeltaOptimizeOperator and DeltaReorgOperator.

Each is a :class:`~airflow_provider_delta.operators.delta.DeltaSparkJobOperator` for one job
(``vacuum``, ``optimize``, ``reorg``; see ``airflow_provider_delta/jobs/``), whose declared options
are its arguments (templated; checked when the DAG is parsed and after rendering): the same Spark
connection handling, conflict policies (``conflict_policy=``) and job runner. The job plans and
commits in the Spark driver (the Airflow worker, client mode) and rewrites or deletes files on the
Spark executors. Its progress (files listed, candidates, deleted, bins rewritten) is logged by the
driver and shows in the task log; the result is the task's XCom. ``tables=[...]`` maintains several
tables in one job (one JVM), with one result per table.

They run on Spark by default. ``engine="local"`` runs the same job in the task's process without a
JVM: the right choice for VACUUM (listing and deleting files moves no data) and for small tables,
where spark-submit's ~10 s start costs more than the rewrite; large OPTIMIZE and REORG belong on Spark.

These operators commit no data (VACUUM's history commits, OPTIMIZE and REORG rewrite with
``dataChange=false``), so they record no idempotency key: an Airflow retry of a run that landed
finds nothing left to do.

Example:
    >>> DeltaVacuumOperator(task_id="vacuum_events", table="/data/events", retention_hours=168)  # doctest: +SKIP
    >>> DeltaOptimizeOperator(task_id="optimize_events", table="events", zorder_by=["user_id"])  # doctest: +SKIP
    >>> DeltaReorgOperator(task_id="purge_events", table="events", where="date < '{{ ds }}'")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_delta.operators.delta import DeltaSparkJobOperator

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["DeltaOptimizeOperator", "DeltaReorgOperator", "DeltaVacuumOperator"]


class _MaintenanceOperator(DeltaSparkJobOperator):
    """A maintenance job: no idempotency key, and a one-line summary of the result in the task log."""

    def execute(self, context: Context) -> dict[str, Any]:
        """Run the job (see ``DeltaSparkJobOperator.execute``), then log what it did, per table."""
        result = super().execute(context)
        for one in result.get("tables") or [{**result, "table": self.table}]:
            if one.get("status", "success") == "success":
                self.log.info("%s", self.summary(str(one.get("table")), one))
        return result

    def summary(self, table: str, result: dict[str, Any]) -> str:
        """One line about one table's result for the task log."""
        metrics = result.get("metrics") or {}
        if not result.get("committed"):
            return f"{self.job} of {table!r}: nothing to rewrite (version {result.get('version')})"
        return (
            f"{self.job} of {table!r}: {metrics.get('numRemovedFiles')} file(s) rewritten into "
            f"{metrics.get('numAddedFiles')} in {metrics.get('numBins')} bin(s); "
            f"{metrics.get('numDeletionVectorsRemoved')} deletion vector(s) removed; version {result.get('version')}"
        )


class DeltaVacuumOperator(_MaintenanceOperator, job="vacuum"):
    """VACUUM a table on Spark: delete files no version within the retention needs.

    Args:
        table: a full path/URI or a bare name under the ``delta`` connection's base path (templated).
        tables: several tables instead of ``table``, one after the other in one job (templated);
            one result per table, and a failure of one does not stop the others.
        **kwargs: as :class:`DeltaSparkJobOperator` (connections, Spark conf, conflict policy, ...).

    The option ``dry_run`` is kept in the attribute ``dry_run_`` (``BaseOperator.dry_run`` is a method).
    ``lite`` fails with ``VacuumLiteError`` when the log no longer covers the candidates: run a full
    VACUUM then.

    Returns (XCom): the job result; ``metrics`` holds ``files`` (relative paths deleted, or for a dry
    run to delete, folders included, capped), ``numFiles``, ``filesTruncated``, Delta's ``metrics``
    (``numFilesToDelete``, ``sizeOfDataToDelete``, ``numDeletedFiles``, ``numVacuumedDirectories``),
    ``startVersion`` and ``endVersion`` (the ``VACUUM START``/``END`` commits).

    Example:
        >>> DeltaVacuumOperator(task_id="vacuum_events", table="/data/events", retention_hours=168,
        ...                     dry_run=True)  # doctest: +SKIP
    """

    def summary(self, table: str, result: dict[str, Any]) -> str:
        """Files and folders deleted (or to delete), and the history versions."""
        metrics = result.get("metrics") or {}
        delta = metrics.get("metrics") or {}
        verb = "would delete" if metrics.get("dryRun") else "deleted"
        return (
            f"VACUUM {metrics.get('mode')} of {table!r} {verb} {metrics.get('numFiles')} file(s) and folder(s) "
            f"({delta.get('sizeOfDataToDelete')} bytes); VACUUM START/END at versions "
            f"{metrics.get('startVersion')}/{metrics.get('endVersion')}"
        )


class DeltaOptimizeOperator(_MaintenanceOperator, job="optimize"):
    """OPTIMIZE a table on Spark: compact small files per partition, or ZORDER BY columns.

    Args:
        table: a full path/URI or a bare name under the ``delta`` connection's base path (templated).
        tables: several tables instead of ``table``, one after the other in one job (templated);
            one result per table, and a failure of one does not stop the others.
        **kwargs: as :class:`DeltaSparkJobOperator`.

    Returns (XCom): the job result; ``committed`` is false when there was nothing to do; ``metrics``
    holds Delta's ``numAddedFiles``, ``numRemovedFiles``, ``numAddedBytes``, ``numRemovedBytes``,
    ``minFileSize``/``p25FileSize``/``p50FileSize``/``p75FileSize``/``maxFileSize``,
    ``numDeletionVectorsRemoved`` and ``numBins``, ``partitionsOptimized``, ``totalConsideredFiles``.

    Example:
        >>> DeltaOptimizeOperator(task_id="optimize_events", table="events", where="date = '{{ ds }}'",
        ...                       zorder_by=["user_id"])  # doctest: +SKIP
    """


class DeltaReorgOperator(_MaintenanceOperator, job="reorg"):
    """``REORG TABLE ... APPLY (PURGE)`` on Spark: rewrite files with soft-deleted rows or dropped columns.

    Files whose deletion vectors delete rows, and files that still hold columns dropped under column
    mapping, are rewritten (small ones combined); the old files go with the next VACUUM. A run that
    finds nothing commits nothing.

    Args:
        table: a full path/URI or a bare name under the ``delta`` connection's base path (templated).
        tables: several tables instead of ``table``, one after the other in one job (templated);
            one result per table, and a failure of one does not stop the others.
        **kwargs: as :class:`DeltaSparkJobOperator`.

    Returns (XCom): the job result, with OPTIMIZE's metrics (``numDeletionVectorsRemoved``, ...).

    Example:
        >>> DeltaReorgOperator(task_id="purge_events", table="events")  # doctest: +SKIP
    """

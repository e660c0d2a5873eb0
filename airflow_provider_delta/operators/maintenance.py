"""Table maintenance on Spark: DeltaVacuumOperator, DeltaOptimizeOperator and DeltaReorgOperator.

Each is a :class:`~airflow_provider_delta.operators.delta.DeltaSparkJobOperator` for one job
(``vacuum``, ``optimize``, ``reorg``; see ``airflow_provider_delta/jobs/``): the same Spark
connection handling, conflict policies (``conflict_policy=``) and job protocol. The job plans and
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

from typing import TYPE_CHECKING, Any, ClassVar

from airflow_provider_delta.operators.delta import DeltaSparkJobOperator

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow.sdk import Context

__all__ = ["DeltaOptimizeOperator", "DeltaReorgOperator", "DeltaVacuumOperator"]

#: Paths a VACUUM result carries in XCom at most (a dry run of a big table can name millions).
DEFAULT_MAX_FILES_IN_XCOM = 1000


def _non_negative_number(value: Any, name: str, task_id: Any) -> None:
    if value is None or isinstance(value, str):  # None, or a template rendered at run time
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"Cannot create task {task_id!r}: {name} must be a number >= 0, found {value!r}")


class _MaintenanceOperator(DeltaSparkJobOperator):
    """A maintenance job: no idempotency key, and a one-line summary of the result in the task log."""

    job_name: ClassVar[str] = ""

    def __init__(
        self,
        *,
        job_options: dict[str, Any],
        table: str | None = None,
        tables: list[str] | str | None = None,
        **kwargs: Any,
    ) -> None:
        options = {k: v for k, v in job_options.items() if v is not None}
        super().__init__(job=self.job_name, table=table, tables=tables, job_options=options, **kwargs)

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
            return f"{self.job_name} of {table!r}: nothing to rewrite (version {result.get('version')})"
        return (
            f"{self.job_name} of {table!r}: {metrics.get('numRemovedFiles')} file(s) rewritten into "
            f"{metrics.get('numAddedFiles')} in {metrics.get('numBins')} bin(s); "
            f"{metrics.get('numDeletionVectorsRemoved')} deletion vector(s) removed; version {result.get('version')}"
        )


class DeltaVacuumOperator(_MaintenanceOperator):
    """VACUUM a table on Spark: delete files no version within the retention needs.

    Args:
        table: a full path/URI or a bare name under the ``delta`` connection's base path (templated).
        tables: several tables instead of ``table``, one after the other in one job (templated);
            one result per table, and a failure of one does not stop the others.
        retention_hours: keep files removed within this many hours (default: the table's
            ``delta.deletedFileRetentionDuration``, 7 days). Honoured as given: Delta 4.1 ignores
            values other than 0, this provider does not.
        dry_run: only list what would be deleted: nothing is deleted or committed.
        lite: take the candidates from the log since the last VACUUM (no listing; never deletes
            untracked files). Fails with ``VacuumLiteError`` when the log no longer covers them: run a
            full VACUUM then.
        enforce_retention_duration: refuse a retention below the table's (Delta's safety check).
        max_files_in_xcom: the most paths the result lists (``numFiles`` has the total).
        **kwargs: as :class:`DeltaSparkJobOperator` (connections, Spark conf, conflict policy, ...).

    Returns (XCom): the job result; ``metrics`` holds ``files`` (relative paths deleted, or for a dry
    run to delete, folders included, capped), ``numFiles``, ``filesTruncated``, Delta's ``metrics``
    (``numFilesToDelete``, ``sizeOfDataToDelete``, ``numDeletedFiles``, ``numVacuumedDirectories``),
    ``startVersion`` and ``endVersion`` (the ``VACUUM START``/``END`` commits).

    Example:
        >>> DeltaVacuumOperator(task_id="vacuum_events", table="/data/events", retention_hours=168,
        ...                     dry_run=True)  # doctest: +SKIP
    """

    job_name: ClassVar[str] = "vacuum"

    def __init__(
        self,
        *,
        table: str | None = None,
        tables: list[str] | str | None = None,
        retention_hours: float | None = None,
        dry_run: bool = False,
        lite: bool = False,
        enforce_retention_duration: bool = True,
        max_files_in_xcom: int = DEFAULT_MAX_FILES_IN_XCOM,
        **kwargs: Any,
    ) -> None:
        _non_negative_number(retention_hours, "retention_hours", kwargs.get("task_id"))
        _non_negative_number(max_files_in_xcom, "max_files_in_xcom", kwargs.get("task_id"))
        options = {
            "retention_hours": retention_hours,
            "dry_run": dry_run,
            "lite": lite,
            "enforce_retention_duration": enforce_retention_duration,
            "max_files_in_result": max_files_in_xcom,
        }
        super().__init__(table=table, tables=tables, job_options=options, **kwargs)
        self.retention_hours = retention_hours
        self.is_dry_run = dry_run  # BaseOperator.dry_run() is a method
        self.lite = lite
        self.enforce_retention_duration = enforce_retention_duration

    def execute(self, context: Context) -> dict[str, Any]:
        """Coerce a templated ``retention_hours`` to a number, then run the job."""
        value = self.job_options.get("retention_hours")
        if isinstance(value, str):
            try:
                self.job_options["retention_hours"] = float(value)
            except ValueError:
                names = self.table or self.tables
                raise ValueError(f"Cannot vacuum {names!r}: retention_hours {value!r} is not a number") from None
        return super().execute(context)

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


class DeltaOptimizeOperator(_MaintenanceOperator):
    """OPTIMIZE a table on Spark: compact small files per partition, or ZORDER BY columns.

    Args:
        table: a full path/URI or a bare name under the ``delta`` connection's base path (templated).
        tables: several tables instead of ``table``, one after the other in one job (templated);
            one result per table, and a failure of one does not stop the others.
        where: a SQL predicate on partition columns only (templated), e.g. ``"date = '{{ ds }}'"``.
        target_file_size: the file size to compact to, in bytes (default: the table's
            ``delta.targetFileSize``, else 1 GiB).
        zorder_by: data columns to cluster by (each selected partition is rewritten whole).
        **kwargs: as :class:`DeltaSparkJobOperator`.

    Returns (XCom): the job result; ``committed`` is false when there was nothing to do; ``metrics``
    holds Delta's ``numAddedFiles``, ``numRemovedFiles``, ``numAddedBytes``, ``numRemovedBytes``,
    ``minFileSize``/``p25FileSize``/``p50FileSize``/``p75FileSize``/``maxFileSize``,
    ``numDeletionVectorsRemoved`` and ``numBins``, ``partitionsOptimized``, ``totalConsideredFiles``.

    Example:
        >>> DeltaOptimizeOperator(task_id="optimize_events", table="events", where="date = '{{ ds }}'",
        ...                       zorder_by=["user_id"])  # doctest: +SKIP
    """

    job_name: ClassVar[str] = "optimize"

    def __init__(
        self,
        *,
        table: str | None = None,
        tables: list[str] | str | None = None,
        where: str | None = None,
        target_file_size: int | None = None,
        zorder_by: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if target_file_size is not None and (
            isinstance(target_file_size, bool) or not isinstance(target_file_size, int) or target_file_size <= 0
        ):
            raise ValueError(
                f"Cannot create task {kwargs.get('task_id')!r}: target_file_size must be a positive number of "
                f"bytes, found {target_file_size!r}"
            )
        if zorder_by is not None and (
            isinstance(zorder_by, str) or not all(isinstance(c, str) and c for c in zorder_by)
        ):
            raise ValueError(
                f"Cannot create task {kwargs.get('task_id')!r}: zorder_by must be a list of column names, "
                f"found {zorder_by!r}"
            )
        options = {
            "where": where,
            "target_file_size": target_file_size,
            "zorder_by": list(zorder_by) if zorder_by else None,
        }
        super().__init__(table=table, tables=tables, job_options=options, **kwargs)
        self.where = where
        self.target_file_size = target_file_size
        self.zorder_by = list(zorder_by) if zorder_by else None


class DeltaReorgOperator(_MaintenanceOperator):
    """``REORG TABLE ... APPLY (PURGE)`` on Spark: rewrite files with soft-deleted rows or dropped columns.

    Files whose deletion vectors delete rows, and files that still hold columns dropped under column
    mapping, are rewritten (small ones combined); the old files go with the next VACUUM. A run that
    finds nothing commits nothing.

    Args:
        table: a full path/URI or a bare name under the ``delta`` connection's base path (templated).
        tables: several tables instead of ``table``, one after the other in one job (templated);
            one result per table, and a failure of one does not stop the others.
        where: a SQL predicate on partition columns only (templated).
        **kwargs: as :class:`DeltaSparkJobOperator`.

    Returns (XCom): the job result, with OPTIMIZE's metrics (``numDeletionVectorsRemoved``, ...).

    Example:
        >>> DeltaReorgOperator(task_id="purge_events", table="events")  # doctest: +SKIP
    """

    job_name: ClassVar[str] = "reorg"

    def __init__(
        self,
        *,
        table: str | None = None,
        tables: list[str] | str | None = None,
        where: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(table=table, tables=tables, job_options={"where": where}, **kwargs)
        self.where = where

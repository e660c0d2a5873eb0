"""The ``reorg`` job: ``REORG TABLE ... APPLY (PURGE)``: rewrite files with soft-deleted rows or dropped columns.

Options:
    where (str): a SQL predicate on partition columns only.

Under spark-submit the purged files are rewritten by Spark tasks; the plan (which reads the
candidates' Parquet footers) and the one ``REORG`` commit stay in the driver. A second run finds
nothing and commits nothing (``committed: false``). Metrics: as the ``optimize`` job's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_delta.core.commands.maintenance import load_table_for
from airflow_provider_delta.core.commands.reorg import reorg
from airflow_provider_delta.jobs.context import JobOutput
from airflow_provider_delta.jobs.definition import JobDefinition
from airflow_provider_delta.jobs.maintenance import where_option

if TYPE_CHECKING:
    from airflow_provider_delta.jobs.context import JobContext


JOB = JobDefinition(
    name="reorg",
    summary="REORG TABLE ... APPLY (PURGE): rewrite files with soft-deleted rows or dropped columns.",
    options=(
        where_option("purged"),
    ),
    engines=("spark", "local"),
    default_engine="spark",
    multi_table=True,
)


def run(ctx: JobContext) -> JobOutput:
    """REORG PURGE ``ctx.spec.table`` (a fresh snapshot on every attempt).

    Example:
        >>> run(JobContext(JobSpec(job="reorg", table="/data/t")))  # doctest: +SKIP
        JobOutput(version=14, committed=True, metrics={'numDeletionVectorsRemoved': 3, ...})
    """
    where = ctx.option("where")
    snapshot = load_table_for(ctx.spec.table, "REORG", ctx.spec.storage_options)
    result = reorg(snapshot, where, executor=ctx.executor(), before_commit=ctx.before_commit)
    version = result.pop("version")
    return JobOutput(version=version if version is not None else snapshot.version, committed=version is not None,
                     metrics=result)

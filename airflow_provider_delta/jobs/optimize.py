"""The ``optimize`` job: compact small files, or ZORDER BY columns (Delta's OPTIMIZE).

Options:
    where (str): a SQL predicate on partition columns only.
    target_file_size (int, bytes; default: the table's ``delta.targetFileSize``, else 1 GiB).
    zorder_by (list of str, or "a,b"): data columns to cluster by.

Under spark-submit each bin (a group of files, or a whole partition for ZORDER BY) is rewritten by
a Spark task with the engine's reader and writer; the plan and the one ``OPTIMIZE`` commit stay in
the driver. A concurrent DELETE/UPDATE of a rewritten file raises ``ConcurrentDeleteReadException``:
the conflict policy retries (the job plans again from the new snapshot). Metrics: Delta's OPTIMIZE
metrics plus ``numBins``, ``partitionsOptimized``, ``totalConsideredFiles``, ``totalFilesSkipped``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_delta.core.commands.maintenance import load_table_for
from airflow_provider_delta.core.commands.optimize import optimize
from airflow_provider_delta.jobs.context import JobOutput
from airflow_provider_delta.jobs.definition import JobDefinition, Option
from airflow_provider_delta.jobs.maintenance import (
    columns_option,
    where_option,
)

if TYPE_CHECKING:
    from airflow_provider_delta.jobs.context import JobContext


JOB = JobDefinition(
    name="optimize",
    summary="Compact small files per partition (bin-packing), or ZORDER BY columns (Delta's OPTIMIZE).",
    options=(
        where_option("optimized"),
        Option("target_file_size", (int, float), None,
               "Target file size in bytes (default: the table's delta.targetFileSize, else 1 GiB).",
               aliases=("targetFileSize", "max_file_size"), minimum=1),
        Option("zorder_by", (list, str), None, "Columns to Z-order the files of each selected partition by.",
               aliases=("zorder", "zOrderBy", "z_order_by")),
    ),
    engines=("spark", "local"),
    default_engine="spark",
    multi_table=True,
)


def run(ctx: JobContext) -> JobOutput:
    """OPTIMIZE ``ctx.spec.table`` (a fresh snapshot on every attempt).

    Example:
        >>> run(JobContext(JobSpec(job="optimize", table="/data/t", options={"zorder_by": ["id"]})))  # doctest: +SKIP
        JobOutput(version=13, committed=True, metrics={'numAddedFiles': 2, ...})
    """
    where = ctx.option("where")
    size = ctx.option("target_file_size")  # a number >= 1: checked by JOB
    zorder = columns_option(ctx, "zorder_by")
    snapshot = load_table_for(ctx.spec.table, "OPTIMIZE", ctx.spec.storage_options)
    result = optimize(
        snapshot, where, target_file_size=int(size) if size is not None else None, zorder_by=zorder,
        executor=ctx.executor(), before_commit=ctx.before_commit,
    )
    version = result.pop("version")
    return JobOutput(version=version if version is not None else snapshot.version, committed=version is not None,
                     metrics=result)

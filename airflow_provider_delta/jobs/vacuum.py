"""The ``vacuum`` job: delete files no version within the retention needs (Delta's VACUUM).

Options:
    retention_hours (number, default: the table's ``delta.deletedFileRetentionDuration``, 7 days):
        keep files removed within this many hours. Honoured as given (Delta 4.1 ignores values
        other than 0).
    dry_run (bool, default False): only list what would be deleted; nothing is deleted or committed.
    lite (bool, default False): take the candidates from the log since the last VACUUM.
    enforce_retention_duration (bool, default True): refuse a retention below the table's.
    max_files_in_result (int, default 1,000): how many paths the result lists (``numFiles`` is the total).

Planning (listing, protection, retention) and the ``VACUUM START``/``END`` commits run in the driver;
under spark-submit a long candidate list is deleted by Spark tasks. Metrics: the VACUUM result
(``files``, ``numFiles``, ``filesTruncated``, Delta's ``metrics``, ``startVersion``, ``endVersion``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_delta.core.commands.maintenance import load_table_for
from airflow_provider_delta.core.commands.vacuum import vacuum
from airflow_provider_delta.jobs.context import JobOutput
from airflow_provider_delta.jobs.definition import JobDefinition, Option

if TYPE_CHECKING:
    from airflow_provider_delta.jobs.context import JobContext


JOB = JobDefinition(
    name="vacuum",
    summary="Delete files that no version within the retention needs (Delta's VACUUM), with VACUUM START/END commits.",
    options=(
        Option("retention_hours", (int, float), None,
               "Keep files removed within this many hours (default: the table's delta.deletedFileRetentionDuration, "
               "7 days). Honoured as given; Delta 4.1 ignores values other than 0.",
               aliases=("retention", "retentionHours"), minimum=0),
        Option("dry_run", bool, False, "Only list what would be deleted; nothing is deleted or committed.",
               aliases=("dryRun", "dry")),
        Option("lite", bool, False, "VACUUM LITE: take the candidates from the log since the last VACUUM."),
        Option("enforce_retention_duration", bool, True,
               "Refuse a retention shorter than the table's (Delta's retentionDurationCheck).",
               aliases=("retentionDurationCheck", "enforce_retention")),
        Option("max_files_in_result", int, 1000, "How many paths the result lists (numFiles is the total).",
               minimum=0),
        Option("respect_exports", bool, True,
               "Refuse to delete files a registered change data exporter still needs (false: delete anyway)."),
    ),
    engines=("spark", "local"),
    default_engine="spark",
    multi_table=True,
)


def run(ctx: JobContext) -> JobOutput:
    """VACUUM ``ctx.spec.table``.

    Example:
        >>> run(JobContext(JobSpec(job="vacuum", table="/data/t", options={"dry_run": True})))  # doctest: +SKIP
        JobOutput(version=12, committed=False, metrics={'files': [...], 'numFiles': 3, ...})
    """
    retention = ctx.option("retention_hours")  # a number >= 0 (or None): checked by JOB
    dry_run = ctx.option("dry_run", False)
    lite = ctx.option("lite", False)
    enforce = ctx.option("enforce_retention_duration", True)
    respect_exports = bool(ctx.option("respect_exports", True))
    cap = int(ctx.option("max_files_in_result"))
    snapshot = load_table_for(ctx.spec.table, "VACUUM", ctx.spec.storage_options)
    result = vacuum(
        snapshot, retention, dry_run=dry_run, lite=lite, enforce_retention_duration=enforce,
        executor=ctx.executor(), respect_exports=respect_exports,
    )
    version = result.end_version if result.end_version is not None else snapshot.version
    return JobOutput(version=version, committed=not dry_run, metrics=result.to_dict(max_files=cap))

"""The ``checkpoint`` job: write a classic checkpoint of the newest version, then clean up the log.

A checkpoint is one snapshot replay and one Parquet file: it moves no data, so the job runs on
engine ``local`` (in the Airflow task, no JVM) unless the task asks for ``spark``. It takes a list of
tables (one result per table). Metrics: ``checkpointVersion``, ``checkpointSize`` (action rows),
``checkpointSizeInBytes``, ``numAddFiles``, ``numDeletedLogFiles`` and ``checkpointPath``; a missing
table with ``skip_missing`` reports ``skipped: true`` and no version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_delta.core.log.checkpoint_write import write_checkpoint
from airflow_provider_delta.core.log.cleanup import cleanup_expired_logs
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import TableNotFoundError
from airflow_provider_delta.jobs.context import JobOutput
from airflow_provider_delta.jobs.definition import JobDefinition, Option

if TYPE_CHECKING:
    from airflow_provider_delta.jobs.context import JobContext

JOB = JobDefinition(
    name="checkpoint",
    summary="Write a checkpoint of the newest version, then delete expired log files.",
    options=(
        Option(
            "cleanup_log", bool, True,
            "Also delete log files older than `delta.logRetentionDuration` that no retained version needs "
            "(Delta's cleanupExpiredLogs).",
        ),
        Option(
            "skip_missing", bool, False,
            "A table that does not exist (yet) is reported as skipped instead of failing the job.",
        ),
    ),
    engines=("spark", "local"),
    default_engine="local",
    multi_table=True,
)


def run(ctx: JobContext) -> JobOutput:
    """Checkpoint ``ctx.spec.table`` at its newest version; optionally clean up expired log files.

    Example:
        >>> run(JobContext(JobSpec(job="checkpoint", table="/data/events")))  # doctest: +SKIP
        JobOutput(version=12, committed=False, metrics={'checkpointVersion': 12, ...})
    """
    try:
        snapshot = DeltaTable(ctx.spec.table, storage_options=ctx.spec.storage_options).snapshot
    except TableNotFoundError as err:
        if not ctx.option("skip_missing"):
            raise
        ctx.progress("skipped: %s", err)
        return JobOutput(version=None, metrics={"skipped": True, "reason": str(err)})
    files = snapshot.files()
    ctx.progress(
        "checkpointing version %d (%d files, %d bytes)", snapshot.version, len(files), sum(a.size for a in files)
    )
    info = write_checkpoint(snapshot)
    deleted = cleanup_expired_logs(snapshot) if ctx.option("cleanup_log") else []
    metrics = {
        "checkpointVersion": info.version,
        "checkpointSize": info.size,
        "checkpointSizeInBytes": info.size_in_bytes,
        "numAddFiles": info.num_add_files,
        "checkpointPath": info.path,
        "numDeletedLogFiles": len(deleted),
    }
    return JobOutput(version=info.version, committed=False, metrics=metrics)

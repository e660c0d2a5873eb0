"""The ``checkpoint`` job: write a classic checkpoint of the newest version, then clean up the log.

Options:
    cleanup_log (bool, default True): delete log files older than ``delta.logRetentionDuration``
        that no version in the retention window needs (Delta's ``cleanupExpiredLogs``).

The engine runs in the Spark driver: a checkpoint is one snapshot replay and one Parquet file, so
there is nothing to distribute. Metrics: ``checkpointVersion``, ``checkpointSize`` (action rows),
``checkpointSizeInBytes``, ``numAddFiles``, ``numDeletedLogFiles`` and ``checkpointPath``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_delta.core.log.checkpoint_write import write_checkpoint
from airflow_provider_delta.core.log.cleanup import cleanup_expired_logs
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.spark.jobs.context import JobOutput

if TYPE_CHECKING:
    from airflow_provider_delta.spark.jobs.context import JobContext


def run(ctx: JobContext) -> JobOutput:
    """Checkpoint ``ctx.spec.table`` at its newest version; optionally clean up expired log files.

    Example:
        >>> run(JobContext(JobSpec(job="checkpoint", table="/data/events")))  # doctest: +SKIP
        JobOutput(version=12, committed=False, metrics={'checkpointVersion': 12, ...})
    """
    cleanup = ctx.option("cleanup_log", True, kind=bool)
    table = DeltaTable(ctx.spec.table, storage_options=ctx.spec.storage_options)
    info = write_checkpoint(table.snapshot)
    deleted = cleanup_expired_logs(table.snapshot) if cleanup else []
    metrics = {
        "checkpointVersion": info.version,
        "checkpointSize": info.size,
        "checkpointSizeInBytes": info.size_in_bytes,
        "numAddFiles": info.num_add_files,
        "checkpointPath": info.path,
        "numDeletedLogFiles": len(deleted),
    }
    return JobOutput(version=info.version, committed=False, metrics=metrics)

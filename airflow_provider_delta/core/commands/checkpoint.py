"""CHECKPOINT and log cleanup: a classic checkpoint of one version; expired log files deleted.

Example:
    >>> checkpoint(load_snapshot(storage, "/data/t"))  # doctest: +SKIP
    42
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_delta.core.log.checkpoint_write import write_checkpoint
from airflow_provider_delta.core.log.cleanup import cleanup_expired_logs

if TYPE_CHECKING:
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["checkpoint", "cleanup_log"]


def checkpoint(snapshot: Snapshot) -> int:
    """Write a checkpoint of ``snapshot`` (and ``_last_checkpoint``); return its version."""
    write_checkpoint(snapshot)
    return snapshot.version


def cleanup_log(snapshot: Snapshot) -> list[str]:
    """Delete log files older than ``delta.logRetentionDuration`` that no version in it needs."""
    return cleanup_expired_logs(snapshot)

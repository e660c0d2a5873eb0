"""Commit a rewrite of bins (OPTIMIZE, ZORDER BY, REORG): one transaction, ``dataChange=false``.

The files of every bin are recorded as read (and nothing else), the executor writes the new files,
and the commit removes the old ones. With only ``dataChange=false`` file actions the transaction runs
at SnapshotIsolation (Delta's downgrade): a concurrent blind append never conflicts; a concurrent
commit that removed one of the rewritten files (DELETE, UPDATE, MERGE, another OPTIMIZE) raises
``ConcurrentDeleteReadException``. Nothing to rewrite means no commit.

The metrics are Delta's: ``numAddedFiles``, ``numRemovedFiles``, ``numAddedBytes``,
``numRemovedBytes``, ``minFileSize``, ``p25FileSize``, ``p50FileSize``, ``p75FileSize``,
``maxFileSize`` (over the added files), ``numDeletionVectorsRemoved``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.protocol import check_writable
from airflow_provider_delta.core.transaction.commit import Transaction
from airflow_provider_delta.core.write.target import WriteTarget

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from airflow_provider_delta.core.actions import AddFile
    from airflow_provider_delta.core.executor import BinLayout, Executor
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["RewriteRequest", "describe_request", "rewrite_metrics", "run_rewrite"]

log = logging.getLogger("airflow_provider_delta.maintenance")


@dataclass
class RewriteRequest:
    """What to rewrite and how to record it.

    Attributes:
        operation: ``OPTIMIZE`` or ``REORG``.
        parameters: the commit's ``operationParameters``.
        bins: the files of each bin.
        layout: how a bin's rows become files.
        considered: how many files the command looked at (those matching its ``where``).
        extra: more keys for the returned dict.
    """

    operation: str
    parameters: dict[str, Any]
    bins: list[list[AddFile]]
    layout: BinLayout
    considered: int
    extra: dict[str, Any] = field(default_factory=dict)


def rewrite_metrics(added: Sequence[AddFile], removed: Sequence[AddFile]) -> dict[str, int]:
    """Delta's OPTIMIZE/REORG metrics (percentiles over the added files' sizes: sorted[n * k / 4])."""
    sizes = sorted(a.size for a in added)
    n = len(sizes)

    def pick(index: int) -> int:
        return sizes[min(index, n - 1)] if n else 0

    return {
        "numAddedFiles": n,
        "numRemovedFiles": len(removed),
        "numAddedBytes": sum(sizes),
        "numRemovedBytes": sum(r.size for r in removed),
        "minFileSize": pick(0),
        "p25FileSize": pick(n * 1 // 4),
        "p50FileSize": pick(n * 2 // 4),
        "p75FileSize": pick(n * 3 // 4),
        "maxFileSize": pick(n - 1),
        "numDeletionVectorsRemoved": sum(1 for r in removed if r.deletion_vector),
    }


def describe_request(request: RewriteRequest) -> dict[str, Any]:
    """What a dry run reports: the files each bin would combine, and the counts."""
    files = [f for b in request.bins for f in b]
    return {
        "operation": request.operation,
        "numBins": len(request.bins),
        "numFilesToRewrite": len(files),
        "sizeOfFilesToRewrite": sum(f.size for f in files),
        "numDeletionVectorsToRemove": sum(1 for f in files if f.deletion_vector),
        "partitionsToOptimize": len({tuple(sorted(f.partition_values.items())) for f in files}),
        "totalConsideredFiles": request.considered,
        "bins": [[f.path for f in b] for b in request.bins],
        **request.extra,
    }


def run_rewrite(
    snapshot: Snapshot,
    request: RewriteRequest,
    *,
    executor: Executor,
    before_commit: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Rewrite the bins and commit once; return ``version`` (None when nothing was rewritten) and metrics."""
    files = [f for b in request.bins for f in b]
    partitions = {tuple(sorted(f.partition_values.items())) for f in files}
    summary: dict[str, Any] = {
        "numBins": len(request.bins),
        "partitionsOptimized": len(partitions),
        "totalConsideredFiles": request.considered,
        "totalFilesSkipped": request.considered - len(files),
        **request.extra,
    }
    if not files:
        log.info("%s of %r at version %d: nothing to rewrite (%d file(s) considered)",
                 request.operation, snapshot.location, snapshot.version, request.considered)
        return {"version": None, **rewrite_metrics([], []), **summary}
    check_writable(snapshot.protocol, location=snapshot.location, version=snapshot.version)
    log.info("%s of %r at version %d: rewriting %d file(s) in %d bin(s) over %d partition(s)",
             request.operation, snapshot.location, snapshot.version, len(files), len(request.bins), len(partitions))
    txn = Transaction(snapshot, operation=request.operation, operation_parameters=request.parameters)
    txn.mark_files_read(*files)
    written = executor.rewriter().rewrite_bins(WriteTarget.of(snapshot), request.bins, request.layout)
    added = [a for bin_adds in written for a in bin_adds]
    txn.remove(*files, data_change=False)
    txn.add(*added)
    metrics = rewrite_metrics(added, files)
    txn.operation_metrics = metrics
    if before_commit is not None:
        before_commit()
    version = txn.commit()
    log.info("%s of %r: %d file(s) rewritten into %d, committed version %d",
             request.operation, snapshot.location, len(files), len(added), version)
    return {"version": version, **metrics, **summary}

"""VACUUM: delete files no version within the retention needs, with Delta's audit commits.

Order of work (Delta's ``VacuumCommand``): the writer-protocol check (dry runs too; a table with
``vacuumProtocolCheck`` is supported), the retention safety check, the plan (:mod:`.plan`), then,
unless a dry run: a ``VACUUM START`` commit, the deletes (files through the executor, concurrently;
then empty folders, deepest first, non-recursively), a ``VACUUM END`` commit (``status`` COMPLETED,
or FAILED when a delete failed, before the error is raised), and ``_delta_log/_last_vacuum_info``.
Both commits are written on every store (Delta skips them on S3 by default): the history is the
operator's audit trail. Only unreferenced files are ever deleted, so a failure in the middle leaves
every file a retained version needs.

Example:
    >>> result = vacuum(snapshot, retention_hours=168, dry_run=True)   # doctest: +SKIP
    >>> result.files[:2], result.metrics["numFilesToDelete"]            # doctest: +SKIP
    (['p=a/part-00000-....parquet', 'p=b'], 2)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.commands.vacuum.lite import write_last_vacuum_info
from airflow_provider_delta.core.commands.vacuum.plan import plan_vacuum
from airflow_provider_delta.core.commands.vacuum.retention import Retention
from airflow_provider_delta.core.executor import LocalExecutor
from airflow_provider_delta.core.protocol import check_writable
from airflow_provider_delta.core.transaction.commit import Transaction
from airflow_provider_delta.exceptions import VacuumError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_delta.core.commands.vacuum.plan import VacuumPlan
    from airflow_provider_delta.core.commands.vacuum.protect import ProtectionSource
    from airflow_provider_delta.core.executor import DeleteOutcome, Executor
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["VacuumResult", "vacuum"]

log = logging.getLogger("airflow_provider_delta.maintenance")


@dataclass(frozen=True)
class VacuumResult:
    """What a VACUUM deleted (or, for a dry run, would delete).

    Attributes:
        files: paths relative to the table root, files first then folders (sorted files, deepest
            folders first).
        metrics: Delta's names: ``numFilesToDelete`` (folders included), ``sizeOfDataToDelete``, and
            for a real run ``numDeletedFiles`` (folders included) and ``numVacuumedDirectories``
            (folders listed + the root).
        dry_run: nothing was deleted or committed.
        mode: ``"FULL"`` or ``"LITE"``.
        start_version: the ``VACUUM START`` commit (None for a dry run).
        end_version: the ``VACUUM END`` commit (None for a dry run).
    """

    files: list[str]
    metrics: dict[str, Any]
    dry_run: bool
    mode: str
    start_version: int | None = None
    end_version: int | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, max_files: int | None = None) -> dict[str, Any]:
        """A JSON-able dict; ``files`` capped at ``max_files`` (``numFiles`` keeps the total)."""
        files = self.files if max_files is None else self.files[:max_files]
        return {
            "files": files,
            "numFiles": len(self.files),
            "filesTruncated": len(files) < len(self.files),
            "metrics": dict(self.metrics),
            "dryRun": self.dry_run,
            "mode": self.mode,
            "startVersion": self.start_version,
            "endVersion": self.end_version,
            "parameters": dict(self.parameters),
        }


def _start_parameters(retention: Retention) -> dict[str, Any]:
    params: dict[str, Any] = {
        "retentionCheckEnabled": retention.check_enabled,
        "defaultRetentionMillis": retention.table_ms,
    }
    if retention.specified_ms is not None:
        params["specifiedRetentionMillis"] = retention.specified_ms
    return params


def _commit(snapshot: Snapshot, operation: str, params: dict[str, Any], metrics: dict[str, Any]) -> int:
    txn = Transaction(snapshot, operation=operation, operation_parameters=params)
    txn.operation_metrics = metrics
    return txn.commit()


def _delete_dirs(snapshot: Snapshot, dirs: Sequence[str]) -> list[str]:
    """Delete empty folders, deepest first; one that is not empty (a new file arrived) stays."""
    return [d for d in dirs if snapshot.storage.delete_empty_dir(d)]


def _failure_message(snapshot: Snapshot, outcome: DeleteOutcome) -> str:
    shown = "; ".join(f"{p!r}: {e}" for p, e in sorted(outcome.failed.items())[:5])
    more = f" (and {len(outcome.failed) - 5} more)" if len(outcome.failed) > 5 else ""
    return (
        f"Cannot vacuum table {snapshot.location!r}: {len(outcome.failed)} file(s) could not be deleted: "
        f"{shown}{more}. VACUUM END was committed with status FAILED; every file a retained version needs "
        "is still there. Help: fix the permissions or the store and run VACUUM again."
    )


def _log_plan(snapshot: Snapshot, plan: VacuumPlan, dry_run: bool) -> None:
    listed = "read from the log" if plan.mode == "LITE" else f"listed in {plan.num_dirs_listed + 1} folder(s)"
    log.info(
        "VACUUM %s%s of %r at version %d: %d file(s) %s; %d file(s) and %d empty folder(s) to delete "
        "(%d bytes), cutoff %d ms",
        plan.mode, " DRY RUN" if dry_run else "", snapshot.location, snapshot.version, plan.num_files_listed,
        listed, len(plan.files), len(plan.dirs), plan.size_to_delete, plan.retention.cutoff_ms,
    )


def vacuum(
    snapshot: Snapshot,
    retention_hours: float | None = None,
    *,
    dry_run: bool = False,
    lite: bool = False,
    enforce_retention_duration: bool = True,
    executor: Executor | None = None,
    protect: Sequence[ProtectionSource] = (),
    respect_exports: bool = True,
    now_ms: int | None = None,
) -> VacuumResult:
    """VACUUM ``snapshot``'s table (see the module docstring).

    Args:
        snapshot: the table's newest snapshot.
        retention_hours: keep files removed within this many hours (default: the table's
            ``delta.deletedFileRetentionDuration``, 7 days). Honoured as given (Delta 4.1 ignores
            values other than 0).
        dry_run: only plan: nothing is deleted or committed.
        lite: take candidates from the log since the last VACUUM instead of listing the table.
        enforce_retention_duration: refuse a retention shorter than the table's (the safety check).
        executor: where the deletes run (default: this process's thread pool).
        protect: more files to keep (see :mod:`.protect`).
        respect_exports: refuse to delete files that a change data exporter registered in the table
            still needs (``core.commands.cdf_export``); False deletes them anyway.
        now_ms: the clock (tests).

    Raises:
        UnsupportedFeatureError: the table needs a writer feature this engine lacks (checked first).
        RetentionPeriodError: negative retention, or too short with the check on.
        VacuumLiteError: LITE cannot see every eligible file; run a FULL VACUUM.
        VacuumError: some files could not be deleted (after ``VACUUM END`` with status FAILED).
        ExportWatermarkError: a registered change data exporter still needs a file (before anything
            is deleted or committed; a dry run lists the files without this check).
    """
    check_writable(snapshot.protocol, location=snapshot.location, version=snapshot.version)
    retention = Retention.of(
        snapshot.configuration, retention_hours, enforce_retention_duration=enforce_retention_duration,
        now_ms=now_ms, location=snapshot.location,
    )
    plan = plan_vacuum(snapshot, retention, mode="LITE" if lite else "FULL", protect=protect)
    _log_plan(snapshot, plan, dry_run)
    params = _start_parameters(retention)
    metrics: dict[str, Any] = {"numFilesToDelete": plan.num_files, "sizeOfDataToDelete": plan.size_to_delete}
    if dry_run:
        return VacuumResult(plan.paths, metrics, True, plan.mode, parameters=params)
    if respect_exports:
        # lazy: exporter watermarks live in the CDF export command, needed only by a real run
        from airflow_provider_delta.core.commands.cdf_export.watermarks import refuse_if_exporters_need

        refuse_if_exporters_need(snapshot, [f.path for f in plan.files])
    executor = executor or LocalExecutor()
    start = _commit(snapshot, "VACUUM START", params, metrics)
    snapshot = snapshot.advance(start)  # END follows START directly (no rebase round trip)
    try:
        outcome = executor.deleter().delete_files(snapshot.storage, [f.path for f in plan.files])
        deleted_dirs = _delete_dirs(snapshot, plan.dirs) if not outcome.failed else []
    except BaseException:
        _commit(snapshot, "VACUUM END", {"status": "FAILED"}, {})
        raise
    if outcome.failed:
        _commit(snapshot, "VACUUM END", {"status": "FAILED"}, {})
        raise VacuumError(_failure_message(snapshot, outcome))
    end_metrics = {
        "numDeletedFiles": len(outcome.deleted) + len(deleted_dirs),
        "numVacuumedDirectories": plan.num_dirs_listed + 1,
    }
    end = _commit(snapshot, "VACUUM END", {"status": "COMPLETED"}, end_metrics)
    if plan.end_version is not None:
        write_last_vacuum_info(snapshot.storage, plan.end_version)
    log.info("VACUUM of %r: deleted %d file(s) and %d folder(s) (commits %d and %d)",
             snapshot.location, len(outcome.deleted), len(deleted_dirs), start, end)
    deleted = set(outcome.deleted)
    files = [f.path for f in plan.files if f.path in deleted] + deleted_dirs
    return VacuumResult(files, {**metrics, **end_metrics}, False, plan.mode, start, end, params)

"""REORG TABLE ... APPLY (PURGE): rewrite files holding soft-deleted rows or dropped columns.

Delta's rules (``DeltaReorgTableCommand``, ``ReorgTableHelper``): among the files matching ``where``
(partition columns only), rewrite (a) every file with a deletion vector that deletes rows (or lacks
``numRecords``) and (b) every file whose Parquet footer holds a column the table's physical schema
lacks (a column dropped under column mapping). The files are packed per partition like compaction,
single-file bins included, so small purged files are combined. One ``REORG`` commit with
``{"predicate": ..., "applyPurge": "true"}`` and OPTIMIZE's metrics; a second run finds nothing
and commits nothing. The rows are read with their deletion vectors applied; the old files stay for
VACUUM.

Example:
    >>> reorg(snapshot)["numDeletionVectorsRemoved"]  # doctest: +SKIP
    3
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.commands.delete import operation_predicate
from airflow_provider_delta.core.commands.optimize.bins import by_partition, deleted_rows, pack
from airflow_provider_delta.core.commands.optimize.command import matching_files, target_file_size_for
from airflow_provider_delta.core.commands.optimize.layout import Coalesce
from airflow_provider_delta.core.commands.optimize.rewrite import RewriteRequest, run_rewrite
from airflow_provider_delta.core.executor import LocalExecutor
from airflow_provider_delta.core.parallel import run_parallel
from airflow_provider_delta.core.protocol import check_writable
from airflow_provider_delta.core.read.footers import has_columns_outside, table_column_paths
from airflow_provider_delta.core.schema.mapping import column_mapping_mode

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from airflow_provider_delta.core.actions import AddFile
    from airflow_provider_delta.core.executor import Executor
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["plan_reorg", "purge_candidates", "reorg"]


def _has_deleted_rows(add: AddFile) -> bool:
    return bool(add.deletion_vector) and (add.num_records is None or deleted_rows(add) > 0)


def purge_candidates(snapshot: Snapshot, files: Sequence[AddFile]) -> list[AddFile]:
    """The files REORG PURGE rewrites: deleted rows, or columns outside the physical schema (footers read)."""
    with_dv = [f for f in files if _has_deleted_rows(f)]
    others = [f for f in files if not _has_deleted_rows(f)]
    allowed = table_column_paths(
        snapshot.schema, dict(snapshot.configuration), physical=column_mapping_mode(snapshot.configuration) != "none"
    )
    stale = run_parallel(lambda f: has_columns_outside(snapshot, f, allowed), others)
    return with_dv + [f for f, outside in zip(others, stale, strict=True) if outside]


def reorg(
    snapshot: Snapshot,
    where: Any = None,
    *,
    executor: Executor | None = None,
    before_commit: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """REORG ``snapshot``'s table ``APPLY (PURGE)`` (see the module docstring).

    Returns:
        ``version`` (None when nothing needed a purge) and OPTIMIZE's metrics.

    Raises:
        PredicateError: ``where`` references a data column or does not parse.
        ConcurrentDeleteReadException: a concurrent commit removed a file this REORG rewrote.
    """
    request = plan_reorg(snapshot, where)
    return run_rewrite(snapshot, request, executor=executor or LocalExecutor(), before_commit=before_commit)


def plan_reorg(snapshot: Snapshot, where: Any = None) -> RewriteRequest:
    """The bins REORG PURGE would rewrite (footers are read, no data), for dry runs.

    Raises:
        UnsupportedFeatureError: the table needs a writer feature this engine lacks.
        PredicateError: ``where`` references a data column or does not parse.
    """
    check_writable(snapshot.protocol, location=snapshot.location, version=snapshot.version)
    size = target_file_size_for(snapshot, None)
    files = matching_files(snapshot, where, "REORG")
    candidates = purge_candidates(snapshot, files)
    bins = [b for group in by_partition(candidates).values() for b in pack(group, size)]
    params = {"predicate": operation_predicate(where), "applyPurge": "true"}
    return RewriteRequest("REORG", params, bins, Coalesce(), len(files))

"""OPTIMIZE: compact small files per partition, or ZORDER BY columns (Delta's OPTIMIZE).

``where`` may name partition columns only (Delta's ``DELTA_NON_PARTITION_COLUMN_REFERENCE``);
``zorder_by`` must name existing data columns (``DELTA_ZORDERING_ON_PARTITION_COLUMN``,
``DELTA_ZORDERING_COLUMN_DOES_NOT_EXIST``). Both are checked before any file is read. Bins follow
:mod:`.bins`, rows are arranged by :mod:`.layout`, and one ``OPTIMIZE`` commit (:mod:`.rewrite`)
records ``predicate``, ``zOrderBy``, ``clusterBy`` and ``auto`` as Delta does. Compaction is
idempotent (a second run finds nothing to do); ZORDER BY rewrites every selected partition again.

Example:
    >>> optimize(snapshot, "date = '2024-01-01'", zorder_by=["id"])["numAddedFiles"]  # doctest: +SKIP
    1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.commands.delete import (
    bound_predicate,
    operation_predicate,
    partition_matches,
)
from airflow_provider_delta.core.commands.maintenance import target_file_size
from airflow_provider_delta.core.commands.optimize.bins import by_partition, compaction_bins, zorder_bins
from airflow_provider_delta.core.commands.optimize.layout import Coalesce, ZOrder
from airflow_provider_delta.core.commands.optimize.rewrite import RewriteRequest, run_rewrite
from airflow_provider_delta.core.executor import LocalExecutor
from airflow_provider_delta.core.expressions import referenced_columns
from airflow_provider_delta.core.protocol import check_writable
from airflow_provider_delta.core.schema.types import StructType
from airflow_provider_delta.exceptions import PredicateError, SchemaError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from airflow_provider_delta.core.actions import AddFile
    from airflow_provider_delta.core.executor import BinLayout, Executor
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["matching_files", "optimize", "plan_optimize", "zorder_columns"]


def matching_files(snapshot: Snapshot, where: Any, operation: str) -> list[AddFile]:
    """The files whose partition values satisfy ``where`` (all files when None).

    Raises:
        PredicateError: ``where`` does not parse, or references a column that is not a partition column.
    """
    files = snapshot.files()
    if where is None:
        return files
    bound = bound_predicate(snapshot, where)
    partitions = {c.lower() for c in snapshot.partition_columns}
    outside = sorted(".".join(p) for p in referenced_columns(bound) if len(p) != 1 or p[0].lower() not in partitions)
    if outside:
        listed = ", ".join(snapshot.partition_columns)
        raise PredicateError(
            f"[DELTA_NON_PARTITION_COLUMN_REFERENCE] Predicate references non-partition column '{outside[0]}'. "
            f"Only the partition columns may be referenced: [{listed}] ({operation} of table "
            f"{snapshot.location!r}, where {where!r})"
        )
    out: list[AddFile] = []
    for group in by_partition(files).values():
        if partition_matches(snapshot, bound, group[0]):
            out += group
    return out


def _field_path(schema: StructType, path: str) -> str | None:
    """``path`` (dotted, any case) in the schema's spelling, or None when a part is missing."""
    struct: Any = schema
    found = []
    for name in path.split("."):
        if not isinstance(struct, StructType):
            return None
        f = struct.get(name, case_sensitive=False)
        if f is None:
            return None
        found.append(f.name)
        struct = f.type
    return ".".join(found)


def zorder_columns(snapshot: Snapshot, columns: Sequence[str] | None) -> tuple[str, ...]:
    """The ZORDER BY columns in the schema's spelling.

    Raises:
        SchemaError: a partition column, a missing column, or a repeated one.
    """
    if not columns:
        return ()
    if isinstance(columns, str):
        columns = [c.strip() for c in columns.split(",") if c.strip()]
    partitions = {c.lower() for c in snapshot.partition_columns}
    out: list[str] = []
    for column in columns:
        if column.lower() in partitions:
            raise SchemaError(
                f"[DELTA_ZORDERING_ON_PARTITION_COLUMN] {column} is a partition column. Z-Ordering can only be "
                f"performed on data columns (table {snapshot.location!r})"
            )
        resolved = _field_path(snapshot.schema, column)
        if resolved is None:
            raise SchemaError(
                f"[DELTA_ZORDERING_COLUMN_DOES_NOT_EXIST] Z-Ordering column {column} does not exist in data "
                f"schema (table {snapshot.location!r}; columns: {', '.join(snapshot.schema.names)})"
            )
        if resolved in out:
            raise SchemaError(f"Cannot Z-order table {snapshot.location!r}: column {column!r} is listed twice")
        out.append(resolved)
    return tuple(out)


def optimize(
    snapshot: Snapshot,
    where: Any = None,
    *,
    target_file_size: int | None = None,
    zorder_by: Sequence[str] | None = None,
    executor: Executor | None = None,
    before_commit: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """OPTIMIZE ``snapshot``'s table (see the module docstring).

    Returns:
        ``version`` (None when there was nothing to do), Delta's metrics, and ``numBins``,
        ``partitionsOptimized``, ``totalConsideredFiles``, ``totalFilesSkipped``, ``zOrderBy``.

    Raises:
        PredicateError: ``where`` references a data column or does not parse.
        SchemaError: a ZORDER BY column is a partition column or does not exist.
        ConcurrentDeleteReadException: a concurrent commit removed a file this OPTIMIZE rewrote.
    """
    request = plan_optimize(snapshot, where, target_file_size=target_file_size, zorder_by=zorder_by)
    return run_rewrite(snapshot, request, executor=executor or LocalExecutor(), before_commit=before_commit)


def plan_optimize(
    snapshot: Snapshot,
    where: Any = None,
    *,
    target_file_size: int | None = None,
    zorder_by: Sequence[str] | None = None,
) -> RewriteRequest:
    """The bins OPTIMIZE would rewrite, without reading or writing any data file (dry runs).

    Raises:
        UnsupportedFeatureError: the table needs a writer feature this engine lacks.
        PredicateError: ``where`` references a data column or does not parse.
        SchemaError: a ZORDER BY column is a partition column or does not exist.
    """
    check_writable(snapshot.protocol, location=snapshot.location, version=snapshot.version)
    size = target_file_size_for(snapshot, target_file_size)
    columns = zorder_columns(snapshot, zorder_by)
    files = matching_files(snapshot, where, "OPTIMIZE")
    layout: BinLayout
    if columns:
        bins, layout = zorder_bins(files), ZOrder(columns, size)
    else:
        bins, layout = compaction_bins(files, min_file_size=size, max_file_size=size), Coalesce()
    params = {"predicate": operation_predicate(where), "zOrderBy": list(columns), "clusterBy": [], "auto": False}
    return RewriteRequest("OPTIMIZE", params, bins, layout, len(files), {"zOrderBy": list(columns)})


def target_file_size_for(snapshot: Snapshot, requested: int | None) -> int:
    """The target file size for ``snapshot``'s table (see ``maintenance.target_file_size``)."""
    return target_file_size(snapshot.configuration, requested, location=snapshot.location)

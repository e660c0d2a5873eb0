"""What VACUUM, OPTIMIZE and REORG share: opening the table they maintain, and the target file size.

A maintenance command runs on a *table*: a path that is not one (or a partition folder inside one)
is refused with Delta's ``DELTA_TABLE_ONLY_OPERATION`` before anything is deleted or committed.

Example:
    >>> snapshot = load_table_for("/data/events", "VACUUM")      # doctest: +SKIP
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from airflow_provider_delta.core.log.paths import LOG_DIR
from airflow_provider_delta.core.snapshot import load_snapshot
from airflow_provider_delta.core.storage import storage_for
from airflow_provider_delta.exceptions import DeltaError, TableNotFoundError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["DEFAULT_TARGET_FILE_SIZE", "load_table_for", "not_a_table_error", "target_file_size"]

#: Delta's ``spark.databricks.delta.optimize.maxFileSize``: 1 GiB.
DEFAULT_TARGET_FILE_SIZE = 1 << 30
_MAX_PARENTS = 32


def _has_log(location: str, storage_options: Mapping[str, str] | None) -> bool:
    try:
        return bool(storage_for(location, storage_options).list_dir(LOG_DIR))
    except (DeltaError, OSError):
        return False


def not_a_table_error(
    location: str, operation: str, storage_options: Mapping[str, str] | None = None
) -> TableNotFoundError:
    """Delta's error for a path that is not a Delta table, naming the table when it is a folder inside one."""
    message = (
        f"[DELTA_TABLE_ONLY_OPERATION] {location!r} is not a Delta table. {operation} is only supported for "
        "Delta tables."
    )
    parent = location.rstrip("/")
    for _ in range(_MAX_PARENTS):
        scheme, sep, rest = parent.partition("://")
        head = posixpath.dirname(rest if sep else parent)
        candidate = f"{scheme}{sep}{head}" if sep else head
        if not head or candidate == parent or head in ("/", "."):
            break
        parent = candidate
        if _has_log(parent, storage_options):
            message += f" It is a folder inside the Delta table {parent!r}: run {operation} on that table."
            break
    return TableNotFoundError(message, location=location)


def load_table_for(location: str, operation: str, storage_options: Mapping[str, str] | None = None) -> Snapshot:
    """The newest snapshot of the table at ``location``, for ``operation``.

    Raises:
        TableNotFoundError: no Delta table there (Delta's wording; names the table when ``location``
            is a folder inside one).
    """
    try:
        storage = storage_for(location, storage_options)
        return load_snapshot(storage, location)
    except TableNotFoundError:
        raise not_a_table_error(location, operation, storage_options) from None


def target_file_size(configuration: Mapping[str, str], requested: int | None, *, location: str = "") -> int:
    """The size files are compacted to: ``requested``, else ``delta.targetFileSize``, else 1 GiB.

    Raises:
        DeltaError: the size is not a positive number of bytes.
    """
    raw: object = requested if requested is not None else configuration.get("delta.targetFileSize")
    if raw is None:
        return DEFAULT_TARGET_FILE_SIZE
    try:
        size = int(str(raw)) if not isinstance(raw, bool) else -1
    except ValueError:
        size = -1
    if size <= 0:
        raise DeltaError(
            f"Cannot optimize table {location!r}: the target file size must be a positive number of bytes, "
            f"found {raw!r}"
        )
    return size

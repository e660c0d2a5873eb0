"""Column names in data files' Parquet footers, for REORG's dropped-column purge.

A file written before ``DROP COLUMN`` (under column mapping) still holds the dropped column; REORG
PURGE rewrites it. Delta's test (``ReorgTableHelper``): the footer has a column, at any depth and
ignoring case, that the table's physical schema lacks (the materialized row-tracking columns are
allowed). Only the footer is read.

Example:
    >>> has_columns_outside(target, add, table_column_paths(target.schema, physical=True))  # doctest: +SKIP
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_delta.core.schema.arrow import to_arrow_schema
from airflow_provider_delta.exceptions import DataFileError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from airflow_provider_delta.core.actions import AddFile
    from airflow_provider_delta.core.schema.types import StructType
    from airflow_provider_delta.core.write.target import TableLayout

__all__ = ["column_paths", "file_column_paths", "has_columns_outside", "table_column_paths"]

_ROW_TRACKING_KEYS = (
    "delta.rowTracking.materializedRowIdColumnName",
    "delta.rowTracking.materializedRowCommitVersionColumnName",
)


def column_paths(fields: Iterable[pa.Field], prefix: str = "") -> set[str]:
    """Dotted, lower-cased paths of every field at any depth (list and map elements add no name)."""
    out: set[str] = set()
    for f in fields:
        path = f"{prefix}{f.name.lower()}"
        out.add(path)
        out |= _nested_paths(f.type, path)
    return out


def _nested_paths(data_type: pa.DataType, path: str) -> set[str]:
    if pa.types.is_struct(data_type):
        return column_paths(list(data_type), f"{path}.")
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type) or pa.types.is_fixed_size_list(data_type):
        return _nested_paths(data_type.value_type, path)
    if pa.types.is_map(data_type):
        return _nested_paths(data_type.key_type, path) | _nested_paths(data_type.item_type, path)
    return set()


def table_column_paths(schema: StructType, configuration: dict[str, str] | None = None, *, physical: bool) -> set[str]:
    """The paths a data file of the table may hold: its (physical) schema plus row-tracking columns."""
    paths = column_paths(to_arrow_schema(schema, physical=physical))
    for key in _ROW_TRACKING_KEYS:
        name = (configuration or {}).get(key)
        if name:
            paths.add(name.lower())
    return paths


def file_column_paths(table: TableLayout, add: AddFile) -> set[str]:
    """The column paths in one data file's footer.

    Raises:
        DataFileError: the file is missing or not Parquet.
    """
    storage = table.storage
    try:
        schema = pq.read_schema(storage.resolve(add.path), filesystem=storage.arrow_filesystem())
    except (OSError, pa.ArrowException) as err:
        raise DataFileError(f"Cannot read the footer of data file {add.path!r}: {err}", path=add.path) from err
    return column_paths(schema)


def has_columns_outside(table: TableLayout, add: AddFile, allowed: set[str]) -> bool:
    """Whether the file holds a column (at any depth, ignoring case) outside ``allowed``."""
    return not file_column_paths(table, add) <= allowed

"""Write change data files (PROTOCOL.md "Change Data Files", "Add CDC File").

A commit that changes rows inside files (UPDATE, DELETE with a data predicate, MERGE) on a table with
``delta.enableChangeDataFeed=true`` records the changed rows in Parquet files under ``_change_data/``
and adds one ``cdc`` action per file. The files hold the table's data columns (physical names under
column mapping) plus ``_change_type``; partition values live in the folders and ``partitionValues``,
as for data files. Inserts and whole-file deletes need no such files: readers derive them from the
commit's ``add`` and ``remove`` actions.

Example:
    >>> import pyarrow as pa
    >>> changes = pa.table({"id": [1, 1], "v": ["a", "b"],
    ...                     "_change_type": ["update_preimage", "update_postimage"]})
    >>> cdc = write_change_files(snapshot, changes)  # doctest: +SKIP
    >>> txn.add_cdc(*cdc)                             # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.actions import AddCDCFile
from airflow_provider_delta.core.change_data import CHANGE_TYPE, CHANGE_TYPES, ChangeType
from airflow_provider_delta.core.schema.types import StringType, StructField, StructType
from airflow_provider_delta.core.write.files import write_data_files
from airflow_provider_delta.exceptions import SchemaMismatchError

if TYPE_CHECKING:
    from airflow_provider_delta.core.write.target import TableLayout

__all__ = ["tag_changes", "write_change_files"]


def tag_changes(rows: pa.Table, change_type: ChangeType) -> pa.Table:
    """Return ``rows`` with a ``_change_type`` column set to ``change_type`` on every row.

    Example:
        >>> tag_changes(pa.table({"id": [1]}), "delete").column("_change_type").to_pylist()
        ['delete']
    """
    return rows.append_column(CHANGE_TYPE, pa.repeat(pa.scalar(change_type, pa.string()), rows.num_rows))


def write_change_files(snapshot: TableLayout, changes: pa.Table) -> list[AddCDCFile]:
    """Write the change rows of one commit as ``_change_data/`` files and return their ``cdc`` actions.

    Args:
        snapshot: the table version the commit is based on (schema, partitioning, column mapping).
        changes: the changed rows: the table's logical columns (matched ignoring case, missing
            nullable columns are null-filled) plus ``_change_type`` (``insert``, ``delete``,
            ``update_preimage`` or ``update_postimage``).

    Returns:
        One ``cdc`` action per written file (``dataChange`` false, size, partition values);
        ``[]`` when ``changes`` has no rows.

    Raises:
        SchemaMismatchError: ``changes`` lacks ``_change_type``, holds an unknown change type, or
            does not fit the table schema.

    Example:
        >>> rows = tag_changes(pa.table({"id": [7]}), "delete")
        >>> [a.path.startswith("_change_data/") for a in write_change_files(snapshot, rows)]  # doctest: +SKIP
        [True]
    """
    _check_change_types(snapshot, changes)
    if changes.num_rows == 0:
        return []
    # _change_type is not a table column: it has no column mapping id and keeps its name in the files.
    schema = StructType((*snapshot.schema.fields, StructField(CHANGE_TYPE, StringType(), nullable=False)))
    adds = write_data_files(
        changes,
        storage=snapshot.storage,
        schema=schema,
        partition_columns=snapshot.partition_columns,
        configuration=snapshot.configuration,
        data_change=False,
        change_data=True,
    )
    return [AddCDCFile(path=a.path, partition_values=a.partition_values, size=a.size) for a in adds]


def _check_change_types(snapshot: TableLayout, changes: pa.Table) -> None:
    if CHANGE_TYPE not in changes.column_names:
        raise SchemaMismatchError(
            f"Cannot write change data of table {snapshot.location!r}: the rows have no {CHANGE_TYPE!r} column"
        )
    if snapshot.schema.get(CHANGE_TYPE, case_sensitive=False) is not None:
        raise SchemaMismatchError(
            f"Cannot write change data of table {snapshot.location!r}: column {CHANGE_TYPE!r} is reserved "
            "for the change data feed"
        )
    if changes.num_rows == 0:
        return
    column = changes.column(CHANGE_TYPE)
    if pa.types.is_null(column.type) or column.null_count:
        raise SchemaMismatchError(
            f"Cannot write change data of table {snapshot.location!r}: {CHANGE_TYPE} has null values"
        )
    unknown = set(pc.unique(pc.cast(column, pa.string())).to_pylist()) - set(CHANGE_TYPES)
    if unknown:
        raise SchemaMismatchError(
            f"Cannot write change data of table {snapshot.location!r}: unknown {CHANGE_TYPE} value(s) "
            f"{sorted(unknown)!r}, expected one of {', '.join(CHANGE_TYPES)}"
        )

"""Schema evolution on write: Delta's ``mergeSchema`` and ``overwriteSchema`` for append and overwrite.

:func:`evolve_for_write` computes the ``metaData`` action a write needs (or None), which the write
commits in the same transaction as its data files; :func:`with_metadata` gives a view of the
snapshot under that metadata, so the files are written (and old rows rewritten) with the new schema.

- ``schema_mode="merge"``: :func:`~airflow_provider_delta.core.schema.evolution.merge_schemas` of
  the table's schema and the data's (made nullable, as Delta does): new columns at the end, new
  struct fields at the end of their struct, ``NullType`` rules, byte/short/int widening.
- ``schema_mode="overwrite"`` (overwrite only, not with a predicate): the data's schema and
  ``partition_by`` replace the table's schema and partitioning. As in Delta, an overwrite that does
  not pass ``partition_by`` leaves the table unpartitioned.
- ``None``: the session default (``session_defaults(auto_merge_schema=True)``) turns on ``merge``;
  an explicit ``schema_mode`` always wins.

Example:
    >>> t.append(pa.table({"id": [1], "new_col": ["x"]}), schema_mode="merge")      # doctest: +SKIP
    >>> t.overwrite(data, schema_mode="overwrite", partition_by=["day"])             # doctest: +SKIP
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any, Literal

from airflow_provider_delta.core.commands.schema.update import metadata_with_schema
from airflow_provider_delta.core.schema.arrow import from_arrow_schema
from airflow_provider_delta.core.schema.evolution import _SMALL_INTEGERS, as_nullable, merge_schemas
from airflow_provider_delta.core.schema.mapping import (
    COLUMN_MAPPING_MAX_ID_KEY,
    assign_column_mapping,
    column_mapping_mode,
    without_column_mapping,
)
from airflow_provider_delta.core.schema.types import (
    ArrayType,
    ByteType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StructField,
    StructType,
)
from airflow_provider_delta.core.session import write_defaults
from airflow_provider_delta.exceptions import SchemaEvolutionError

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa

    from airflow_provider_delta.core.actions import Metadata
    from airflow_provider_delta.core.snapshot import Snapshot
    from airflow_provider_delta.core.transaction.commit import Transaction

SchemaMode = Literal["merge", "overwrite"]
_INTEGERS = (ByteType, ShortType, IntegerType, LongType)
_FLOATS = (FloatType, DoubleType)
_MODES = ("merge", "overwrite")


def effective_schema_mode(schema_mode: str | None, *, operation: str) -> SchemaMode | None:
    """The schema mode a write uses: the explicit one, else the session default.

    Raises:
        SchemaEvolutionError: an unknown mode, or ``overwrite`` on an append.
    """
    if schema_mode is None:
        return "merge" if write_defaults().auto_merge_schema else None
    if schema_mode not in _MODES or (schema_mode == "overwrite" and operation != "overwrite"):
        allowed = "'merge'" if operation != "overwrite" else "'merge' or 'overwrite'"
        raise SchemaEvolutionError(f"Cannot {operation}: schema_mode must be None or {allowed}, found {schema_mode!r}")
    return "merge" if schema_mode == "merge" else "overwrite"


def evolve_for_write(
    snapshot: Snapshot,
    data_schema: pa.Schema,
    *,
    schema_mode: str | None,
    operation: Literal["append", "overwrite"],
    partition_by: Sequence[str] | None = None,
    predicate: Any = None,
) -> Metadata | None:
    """The new metaData a write of rows of ``data_schema`` needs, or None when the metadata stays.

    Raises:
        SchemaEvolutionError: incompatible types (merge), ``overwrite`` with a predicate, a
            partitioning change without ``schema_mode="overwrite"``, unknown partition columns.
    """
    mode = effective_schema_mode(schema_mode, operation=operation)
    if mode == "overwrite" and predicate is not None:
        raise SchemaEvolutionError(
            f"Cannot overwrite table {snapshot.location!r} with schema_mode='overwrite' and a predicate: a "
            "schema can only be replaced together with all the data (Delta's overwriteSchema is not allowed "
            "with replaceWhere or dynamic partition overwrite). Help: drop the predicate, or use schema_mode='merge'."
        )
    if mode != "overwrite" and partition_by is not None:
        _check_same_partitioning(snapshot, partition_by)
    if mode is None:
        return None
    incoming = as_nullable(from_arrow_schema(data_schema))
    assert isinstance(incoming, StructType)
    if mode == "merge":
        merged = merge_schemas(snapshot.schema, _align_to_table(snapshot.schema, incoming))
        if merged is snapshot.schema:
            return None

        return metadata_with_schema(snapshot.metadata, merged)
    return _overwritten(snapshot, incoming, partition_by or ())


def _align_to_table(table: DataType, data: DataType) -> Any:
    """The data's schema with existing leaves of the same family (integers, floats, decimals) typed as
    the table's: a write casts those values to the column's type, checked per value, with or without
    schema evolution. Delta's mergeSchema would refuse e.g. long data for an int column; pyarrow infers
    int64 for every Python int, so this engine casts instead. Widening byte/short/int still widens.
    """
    if isinstance(table, StructType) and isinstance(data, StructType):
        fields = []
        for f in data.fields:
            existing = table.get(f.name, case_sensitive=False)
            fields.append(f if existing is None else StructField(
                f.name, _align_to_table(existing.type, f.type), f.nullable, f.metadata))
        return StructType(tuple(fields))
    if isinstance(table, ArrayType) and isinstance(data, ArrayType):
        return ArrayType(_align_to_table(table.element_type, data.element_type), data.contains_null)
    if isinstance(table, MapType) and isinstance(data, MapType):
        return MapType(_align_to_table(table.key_type, data.key_type),
                       _align_to_table(table.value_type, data.value_type), data.value_contains_null)
    small_t, small_d = _SMALL_INTEGERS.get(type(table)), _SMALL_INTEGERS.get(type(data))
    if small_t is not None and small_d is not None:
        return data  # Delta's own rule: widen among byte, short and int
    for family in (_INTEGERS, _FLOATS, (DecimalType,)):
        if isinstance(table, family) and isinstance(data, family):
            return table
    return data


def _check_same_partitioning(snapshot: Snapshot, partition_by: Sequence[str]) -> None:
    if [c.casefold() for c in partition_by] != [c.casefold() for c in snapshot.partition_columns]:
        raise SchemaEvolutionError(
            f"Cannot overwrite table {snapshot.location!r} partitioned by {list(snapshot.partition_columns)} "
            f"with partition_by={list(partition_by)}: the partitioning differs. Help: pass "
            "schema_mode='overwrite' to replace the schema and partitioning."
        )


def _overwritten(snapshot: Snapshot, schema: StructType, partition_by: Sequence[str]) -> Metadata | None:
    folded = [n.casefold() for n in schema.names]
    if len(set(folded)) != len(folded):
        raise SchemaEvolutionError(
            f"Cannot overwrite the schema of table {snapshot.location!r}: duplicate column names in "
            f"{list(schema.names)}"
        )
    partitions = []
    for col in partition_by:
        f = schema.get(col, case_sensitive=False)
        if f is None:
            raise SchemaEvolutionError(
                f"Cannot partition table {snapshot.location!r} by {col!r}: no such column in the data "
                f"(columns: {', '.join(schema.names)})"
            )
        partitions.append(f.name)
    same = schema == without_column_mapping(snapshot.schema) and tuple(partitions) == snapshot.partition_columns
    if same:
        return None
    configuration = dict(snapshot.configuration)
    if column_mapping_mode(configuration) != "none":
        # Every file is replaced: all columns get fresh ids and physical names, above the old maximum.
        start = int(configuration.get(COLUMN_MAPPING_MAX_ID_KEY, "0") or 0) + 1
        schema, max_id = assign_column_mapping(schema, start, keep_existing=False)
        configuration[COLUMN_MAPPING_MAX_ID_KEY] = str(max_id)
    return dataclasses.replace(
        snapshot.metadata, schema_string=schema.to_json(), configuration=configuration,
        partition_columns=tuple(partitions),
    )


def with_metadata(snapshot: Snapshot, metadata: Metadata) -> Snapshot:
    """A view of ``snapshot`` (same version and files) under staged ``metadata``, for writing files."""
    view = copy.copy(snapshot)
    view.metadata = metadata
    view.__dict__.pop("schema", None)  # the cached schema of the old metadata
    return view




def stage_schema_evolution(
    txn: Transaction,
    snapshot: Snapshot,
    data_schema: pa.Schema,
    *,
    schema_mode: str | None,
    operation: Literal["append", "overwrite"],
    partition_by: Sequence[str] | None = None,
    predicate: Any = None,
) -> Snapshot:
    """Stage the metadata change a write of rows of ``data_schema`` needs in ``txn``.

    Returns:
        The snapshot view to write files with (``snapshot`` itself when the metadata stays).
    """
    metadata = evolve_for_write(snapshot, data_schema, schema_mode=schema_mode, operation=operation,
                                partition_by=partition_by, predicate=predicate)
    if metadata is None:
        return snapshot
    txn.update_metadata(metadata)
    txn.operation_parameters["partitionBy"] = list(metadata.partition_columns)
    if effective_schema_mode(schema_mode, operation=operation) == "merge":
        txn.operation_parameters["mergeSchema"] = "true"
    else:
        txn.operation_parameters["overwriteSchema"] = "true"
    return with_metadata(snapshot, metadata)


__all__ = ["SchemaMode", "effective_schema_mode", "evolve_for_write", "stage_schema_evolution", "with_metadata"]

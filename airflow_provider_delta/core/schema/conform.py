"""Conform data read from one Parquet data file to the table's logical schema.

Files of one Delta table may have been written under different schemas (columns added, nested
fields added, types widened) and, with column mapping, name their columns by physical name or
carry Parquet field ids. :func:`conform_table` turns what one file holds into exactly
``to_arrow_schema(schema)``::

    >>> import pyarrow as pa
    >>> from airflow_provider_delta.core.schema.types import LongType, StringType, StructField, StructType
    >>> schema = StructType((StructField("id", LongType()), StructField("name", StringType())))
    >>> conform_table(pa.table({"ID": pa.array([1], pa.int32())}), schema, mode="none").to_pylist()
    [{'id': 1, 'name': None}]

Everything is vectorised: struct, list and map arrays are rebuilt from their (converted) children
and Arrow casts do the rest; no per-row Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.schema.arrow import (
    PARQUET_FIELD_ID_KEY,
    rebased_offsets,
    to_arrow_schema,
    to_arrow_type,
)
from airflow_provider_delta.core.schema.mapping import ColumnMappingMode, field_id, physical_name
from airflow_provider_delta.core.schema.types import (
    ArrayType,
    DataType,
    MapType,
    NullType,
    StructField,
    StructType,
    TimestampNtzType,
    TimestampType,
)
from airflow_provider_delta.exceptions import SchemaError, SchemaMismatchError

if TYPE_CHECKING:
    from collections.abc import Sequence

_MODES = ("none", "name", "id")


class _FieldMatcher:
    """Finds, for a Delta field, the matching field among the fields of a file (one struct level).

    Order (PROTOCOL.md "Column Mapping"): in ``id`` mode the Parquet field id; then the physical
    name (the logical name when mode is ``none``), exact first, then ignoring case when that is
    unambiguous (Spark/Hive writers do not always preserve case). In ``id`` mode a name only matches
    a file field that carries no id, so a field id is never paired with another column's data.
    """

    def __init__(self, fields: Sequence[pa.Field], mode: ColumnMappingMode) -> None:
        self._mode = mode
        self._names: list[str] = []
        self._by_id: dict[int, int] = {}
        for i, f in enumerate(fields):
            fid = _parquet_field_id(f) if mode == "id" else None
            if fid is not None:
                self._by_id.setdefault(fid, i)
                # Placeholder that no name equals: fields with an id are matched by id only.
                self._names.append("")
            else:
                self._names.append(f.name)
        self._by_name: dict[str, int] = {}
        self._by_folded: dict[str, list[int]] = {}
        for i, name in enumerate(self._names):
            if name:
                self._by_name.setdefault(name, i)
                self._by_folded.setdefault(name.casefold(), []).append(i)

    def find(self, f: StructField) -> int | None:
        if self._mode == "id":
            fid = field_id(f)
            if fid is not None and fid in self._by_id:
                return self._by_id[fid]
        name = physical_name(f, mode=self._mode)
        i = self._by_name.get(name)
        if i is not None:
            return i
        candidates = self._by_folded.get(name.casefold(), [])
        return candidates[0] if len(candidates) == 1 else None


def _parquet_field_id(f: pa.Field) -> int | None:
    if not f.metadata:
        return None
    raw = f.metadata.get(PARQUET_FIELD_ID_KEY)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise SchemaError(
            f"Cannot conform data: column mapping mode {mode!r} is not one of 'none', 'name', 'id'"
        )


def conform_table(table: pa.Table, schema: StructType, *, mode: ColumnMappingMode) -> pa.Table:
    """Return the data of one data file with exactly the table's logical Arrow schema.

    Columns are matched by Parquet field id (``mode="id"``), physical name (``"name"``) or logical
    name (``"none"``), exact first and then ignoring case. Columns and nested struct fields missing
    from the file are filled with nulls; extra ones are dropped; structs, lists of structs and maps
    with struct values are conformed recursively; dictionaries are decoded; other type differences
    are cast (timestamps of any unit or zone to ``us``/UTC with sub-microsecond truncation, large or
    view strings, narrower integers, decimals of another precision).

    Partition columns are not in data files: they come back all null and the caller replaces them
    with the file's decoded partition values.

    Args:
        table: what was read from one Parquet file, columns named as in the file.
        schema: the table's logical schema.
        mode: the table's column mapping mode (see ``column_mapping_mode``).

    Returns:
        A table whose schema equals ``to_arrow_schema(schema)`` and whose row count is the input's.

    Raises:
        SchemaMismatchError: if a column of the file cannot be converted to the schema's type.
        UnsupportedFeatureError: if the schema holds an unsupported type.
    """
    _check_mode(mode)
    target = to_arrow_schema(schema)
    if len(schema) == 0:
        return table.select([])  # (replace_schema_metadata would drop the row count here)
    matcher = _FieldMatcher(list(table.schema), mode)
    columns: list[pa.ChunkedArray] = []
    for f, target_field in zip(schema.fields, target, strict=True):
        i = matcher.find(f)
        if i is None:
            columns.append(pa.chunked_array([pa.nulls(table.num_rows, target_field.type)], target_field.type))
            continue
        chunks = [
            _conform_array(chunk, f.type, target_field.type, mode, (f.name,))
            for chunk in table.column(i).chunks
        ]
        columns.append(pa.chunked_array(chunks, type=target_field.type))
    return pa.Table.from_arrays(columns, schema=target)


def conform_batch(batch: pa.RecordBatch, schema: StructType, *, mode: ColumnMappingMode) -> pa.RecordBatch:
    """Like :func:`conform_table`, for one record batch (streaming scans).

    Raises:
        SchemaMismatchError: if a column of the file cannot be converted to the schema's type.
    """
    _check_mode(mode)
    target = to_arrow_schema(schema)
    if len(schema) == 0:
        return batch.select([])
    matcher = _FieldMatcher(list(batch.schema), mode)
    arrays: list[pa.Array] = []
    for f, target_field in zip(schema.fields, target, strict=True):
        i = matcher.find(f)
        if i is None:
            arrays.append(pa.nulls(batch.num_rows, target_field.type))
        else:
            arrays.append(_conform_array(batch.column(i), f.type, target_field.type, mode, (f.name,)))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def matching_file_columns(
    file_schema: pa.Schema, schema: StructType, *, mode: ColumnMappingMode
) -> list[str]:
    """Return the names of the file's top-level columns that :func:`conform_table` would use.

    Pass them as ``columns=`` to the Parquet reader to read only what the (possibly projected) schema
    needs; ``pq.ParquetFile(path).schema_arrow`` gives ``file_schema`` with its field ids.

    Example:
        >>> import pyarrow as pa
        >>> from airflow_provider_delta.core.schema.types import LongType, StructField, StructType
        >>> file_schema = pa.schema([("x", pa.int64()), ("ID", pa.int64())])
        >>> matching_file_columns(file_schema, StructType((StructField("id", LongType()),)), mode="none")
        ['ID']
    """
    _check_mode(mode)
    matcher = _FieldMatcher(list(file_schema), mode)
    indices = sorted({i for f in schema.fields if (i := matcher.find(f)) is not None})
    return [file_schema.field(i).name for i in indices]


def conform_array(
    array: pa.Array | pa.ChunkedArray, data_type: DataType, *, mode: ColumnMappingMode
) -> pa.Array | pa.ChunkedArray:
    """Conform one column (an array or chunked array) to the Arrow type of ``data_type``.

    Raises:
        SchemaMismatchError: if the data cannot be converted.
    """
    _check_mode(mode)
    target = to_arrow_type(data_type)
    if isinstance(array, pa.ChunkedArray):
        chunks = [_conform_array(c, data_type, target, mode, ()) for c in array.chunks]
        return pa.chunked_array(chunks, type=target)
    return _conform_array(array, data_type, target, mode, ())


def as_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table.cast(schema)``, without the cast when the types already are the schema's.

    A cast validates the data, and Arrow refuses the placeholder null of a NOT NULL field inside a
    null struct (valid Delta data: the field is null because its parent is).
    """
    if table.schema.equals(schema):
        return table
    if [f.type for f in table.schema] == [f.type for f in schema]:
        return pa.Table.from_arrays(table.columns, schema=schema)
    return table.cast(schema)


def null_table(schema: StructType, num_rows: int) -> pa.Table:
    """Return a table of ``num_rows`` rows, all null, with the schema ``to_arrow_schema(schema)``.

    Example:
        >>> from airflow_provider_delta.core.schema.types import LongType, StructField, StructType
        >>> null_table(StructType((StructField("id", LongType()),)), 2).to_pylist()
        [{'id': None}, {'id': None}]
    """
    target = to_arrow_schema(schema)
    if len(schema) == 0:
        # A table without columns still has a row count; derive it from a throwaway column.
        return pa.table({"_": pa.nulls(num_rows)}).select([])
    return pa.Table.from_arrays([pa.nulls(num_rows, f.type) for f in target], schema=target)


def _conform_array(
    arr: pa.Array, dt: DataType, target: pa.DataType, mode: ColumnMappingMode, path: tuple[str, ...]
) -> pa.Array:
    if arr.type.equals(target, check_metadata=True):
        return arr
    if isinstance(dt, NullType) or pa.types.is_null(arr.type):
        return pa.nulls(len(arr), target)
    if pa.types.is_dictionary(arr.type):
        return _conform_array(arr.dictionary_decode(), dt, target, mode, path)
    if pa.types.is_run_end_encoded(arr.type):
        return _conform_array(pc.run_end_decode(arr), dt, target, mode, path)
    if isinstance(arr.type, pa.ExtensionType):
        return _conform_array(arr.storage, dt, target, mode, path)
    if isinstance(dt, StructType):
        return _conform_struct(arr, dt, target, mode, path)
    if isinstance(dt, ArrayType):
        return _conform_list(arr, dt, target, mode, path)
    if isinstance(dt, MapType):
        return _conform_map(arr, dt, target, mode, path)
    if isinstance(dt, (TimestampType, TimestampNtzType)) and pa.types.is_timestamp(arr.type):
        return _conform_timestamp(arr, target, path)
    return _cast(arr, target, dt, path)


def _mismatch(path: tuple[str, ...], arr: pa.Array, dt: DataType, reason: str = "") -> SchemaMismatchError:
    column = ".".join(path) or "<value>"
    suffix = f" ({reason})" if reason else ""
    return SchemaMismatchError(
        f"Cannot read column {column!r}: file type {arr.type} cannot be converted to "
        f"{dt.simple_string()}{suffix}"
    )


def _cast(arr: pa.Array, target: pa.DataType, dt: DataType, path: tuple[str, ...]) -> pa.Array:
    try:
        return pc.cast(arr, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
        raise _mismatch(path, arr, dt, str(err)) from err


def _conform_timestamp(arr: pa.Array, target: pa.DataType, path: tuple[str, ...]) -> pa.Array:
    # Arrow stores every timestamp as an offset from the epoch; a zone is metadata. Delta's
    # `timestamp` is a UTC instant (zone-less data in the file is taken as UTC, as Spark does) and
    # `timestamp_ntz` is wall-clock time: both are relabelled first, without touching the values.
    unit = arr.type.unit
    relabelled = pa.timestamp(unit, tz=target.tz)
    if arr.type != relabelled:
        arr = arr.view(relabelled)
    if unit == target.unit:
        return arr
    # ns -> us divides and cannot overflow; truncation of sub-microsecond digits is intended.
    # s/ms -> us multiplies and raises rather than wraps for instants beyond +-294,000 years.
    options = pc.CastOptions(target, allow_time_truncate=True, allow_time_overflow=False)
    try:
        return pc.cast(arr, options=options)
    except pa.ArrowInvalid as err:
        raise SchemaMismatchError(f"Cannot read column {'.'.join(path) or '<value>'!r}: {err}") from err


def _conform_struct(
    arr: pa.Array, dt: StructType, target: pa.DataType, mode: ColumnMappingMode, path: tuple[str, ...]
) -> pa.Array:
    if not pa.types.is_struct(arr.type):
        raise _mismatch(path, arr, dt, "expected a struct")
    mask = arr.is_null() if arr.null_count else None
    target_fields = [target.field(i) for i in range(target.num_fields)]
    if not target_fields:
        return pa.Array.from_buffers(target, len(arr), [arr.buffers()[0]], offset=arr.offset)
    # flatten() applies the slice offset and the parent's validity to each child.
    source_children = arr.flatten()
    matcher = _FieldMatcher([arr.type.field(i) for i in range(arr.type.num_fields)], mode)
    children: list[pa.Array] = []
    for f, target_field in zip(dt.fields, target_fields, strict=True):
        i = matcher.find(f)
        if i is None:
            children.append(pa.nulls(len(arr), target_field.type))
        else:
            children.append(
                _conform_array(source_children[i], f.type, target_field.type, mode, (*path, f.name))
            )
    return pa.StructArray.from_arrays(children, fields=target_fields, mask=mask)


def _as_list(arr: pa.Array, dt: DataType, path: tuple[str, ...]) -> pa.Array:
    if pa.types.is_list(arr.type):
        return arr
    if is_any_list(arr.type):
        try:
            return as_list_array(arr)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            raise _mismatch(path, arr, dt, str(err)) from err
    raise _mismatch(path, arr, dt, "expected a list")


def is_any_list(t: pa.DataType) -> bool:
    """Whether ``t`` is one of Arrow's list layouts (list, large, fixed-size, list-view, large list-view)."""
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
                or pa.types.is_list_view(t) or pa.types.is_large_list_view(t))


def as_list_array(arr: pa.Array) -> pa.Array:
    """A large, fixed-size or view list array as a ``list`` array with the same items and nulls.

    Built from the lengths and the flattened items: pyarrow 26's cast of a list-view with nulls to a
    list yields an invalid array.

    Raises:
        pyarrow.ArrowInvalid: more than 2**31 - 1 items in all.
    """
    if pa.types.is_list(arr.type):
        return arr
    lengths = pc.fill_null(pc.list_value_length(arr), 0).cast(pa.int32())
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.cumulative_sum(lengths).cast(pa.int32())])
    mask = arr.is_null() if arr.null_count else None
    return pa.ListArray.from_arrays(offsets, pc.list_flatten(arr), type=pa.list_(arr.type.value_field), mask=mask)


def _conform_list(
    arr: pa.Array, dt: ArrayType, target: pa.DataType, mode: ColumnMappingMode, path: tuple[str, ...]
) -> pa.Array:
    arr = _as_list(arr, dt, path)
    offsets, start, stop = rebased_offsets(arr)
    values = arr.values.slice(start, stop - start)
    values = _conform_array(values, dt.element_type, target.value_type, mode, (*path, "element"))
    mask = arr.is_null() if arr.null_count else None
    return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)



def _conform_map(
    arr: pa.Array, dt: MapType, target: pa.DataType, mode: ColumnMappingMode, path: tuple[str, ...]
) -> pa.Array:
    if not pa.types.is_map(arr.type):
        raise _mismatch(path, arr, dt, "expected a map")
    offsets, start, stop = rebased_offsets(arr)
    keys, items = arr.keys.slice(start, stop - start), arr.items.slice(start, stop - start)
    keys = _conform_array(keys, dt.key_type, target.key_type, mode, (*path, "key"))
    items = _conform_array(items, dt.value_type, target.item_type, mode, (*path, "value"))
    mask = arr.is_null() if arr.null_count else None
    return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)


__all__ = [
    "as_list_array",
    "as_schema",
    "conform_array",
    "conform_batch",
    "conform_table",
    "is_any_list",
    "matching_file_columns",
    "null_table",
]

"""Write a table's data files: Arrow in, Parquet files and their ``add`` actions out.

:func:`write_data_files` is the data plane of every write: it checks and casts the input to the
table schema, splits rows by partition values into Hive-style folders, writes Parquet files the way
Delta Lake on Spark does (physical column names and field ids under column mapping, INT64 microsecond
timestamps) and returns one :class:`~airflow_provider_delta.core.actions.AddFile` per file, with
statistics. It commits nothing: the caller puts the actions in a transaction. It needs no Airflow or
Spark, so a Spark executor can run it on its own partition of the data.

Example:
    >>> import pyarrow as pa
    >>> from airflow_provider_delta.core.schema.types import LongType, StructField, StructType
    >>> from airflow_provider_delta.core.storage import LocalStorage
    >>> schema = StructType((StructField("id", LongType()), StructField("day", LongType())))
    >>> adds = write_data_files(pa.table({"id": [1, 2], "day": [7, 7]}), storage=LocalStorage("/tmp/t"),
    ...                         schema=schema, partition_columns=["day"], configuration={})  # doctest: +SKIP
    >>> adds[0].path, adds[0].partition_values                                                # doctest: +SKIP
    ('day=7/part-00000-1f0c...-c000.snappy.parquet', {'day': '7'})
"""

from __future__ import annotations

import decimal
import functools
import string
import unicodedata
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_provider_delta.core.actions import AddFile
from airflow_provider_delta.core.partitions import encode_partition_value, partition_path
from airflow_provider_delta.core.schema.arrow import from_arrow_type, to_arrow_schema
from airflow_provider_delta.core.schema.arrow_input import arrow_table, physical_table
from airflow_provider_delta.core.schema.conform import as_list_array, is_any_list
from airflow_provider_delta.core.schema.mapping import column_mapping_mode, physical_name
from airflow_provider_delta.core.schema.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNtzType,
    TimestampType,
)
from airflow_provider_delta.core.storage.base import decode_relative
from airflow_provider_delta.core.write.parquet import OrderedFileWrites, dictionary_columns, leaf_paths
from airflow_provider_delta.core.write.stats import collect_stats
from airflow_provider_delta.exceptions import SchemaError, SchemaMismatchError

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from airflow_provider_delta.core.storage import Storage

__all__ = ["conform_to_table", "write_data_files"]

PartitionKey = tuple[str | None, ...]

# Spark names files part-<split>-<uuid>-c000<codec extension>.parquet (Parquet's codec extensions).
_CODEC_EXTENSIONS = {
    "snappy": ".snappy",
    "gzip": ".gz",
    "zstd": ".zstd",
    "lz4": ".lz4",
    "brotli": ".br",
    "none": "",
    "uncompressed": "",
}
_INTEGER_BITS: dict[type[DataType], int] = {ByteType: 8, ShortType: 16, IntegerType: 32, LongType: 64}
# java.net.URI keeps these ASCII characters in a path (unreserved, punct, "/" and "@"); Hadoop's
# Path.toUri().toString(), which gives Spark's add.path, percent-encodes every other ASCII one.
_URI_PATH_SAFE = frozenset(string.ascii_letters + string.digits + "-_.!~*'()" + ",;:$&+=" + "/@")
_URI_ENCODED_CATEGORIES = frozenset(("Cc", "Zs", "Zl", "Zp"))  # non-ASCII controls and spaces


def write_data_files(
    data: pa.Table | pa.RecordBatch | pa.RecordBatchReader,
    *,
    storage: Storage,
    schema: StructType,
    partition_columns: Sequence[str],
    configuration: Mapping[str, str],
    data_change: bool = True,
    target_file_rows: int = 1_000_000,
    file_prefix: str = "part",
    compression: str = "snappy",
    change_data: bool = False,
) -> list[AddFile]:
    """Write ``data`` as Parquet data files of the table and return their ``add`` actions.

    Args:
        data: the rows, with the table's logical column names (matched ignoring case). A
            ``RecordBatchReader`` is consumed batch by batch; per partition, rows are buffered until
            a file's worth (``target_file_rows``) is ready.
        storage: the table's storage; files go under its root.
        schema: the table's logical schema.
        partition_columns: the table's partition columns, in order.
        configuration: the table properties (column mapping mode, stats settings).
        data_change: ``dataChange`` of the actions (``False`` for rewrites such as compaction).
        target_file_rows: the most rows a file gets.
        file_prefix: first part of the file names (``part`` as Spark).
        compression: Parquet codec: ``snappy``, ``zstd``, ``gzip``, ``lz4``, ``brotli`` or ``none``.
        change_data: write change data files instead (PROTOCOL.md "Change Data Files"): under
            ``_change_data/<partition folders>/``, named ``cdc-NNNNN-<uuid>.c000.<codec>.parquet`` as
            Spark does, without statistics. ``schema`` then includes the ``_change_type`` column.

    Returns:
        One action per written file, in write order; ``[]`` when ``data`` has no rows.

    Raises:
        SchemaMismatchError: ``data`` does not fit the schema: missing NOT NULL or extra columns,
            types that cannot be cast safely, nulls in NOT NULL columns.
        SchemaError: a partition column is not in the schema or cannot be a partition column.
        ValueError: ``target_file_rows``, ``file_prefix`` or ``compression`` is invalid.
    """
    writer = _FileWriter.create(
        storage=storage,
        schema=schema,
        partition_columns=partition_columns,
        configuration=configuration,
        options=_Options(data_change, target_file_rows, file_prefix, compression, change_data),
    )
    pending = _Pending(target_file_rows)
    try:
        for table in _tables(data):
            conformed = _conform_table(table, schema, writer.logical_schema, storage.root)
            for key, part in _split_partitions(conformed, writer.partition_fields).items():
                for ready in pending.add(key, part.drop_columns(writer.partition_names)):
                    writer.write(ready, key)
        for key, ready in pending.drain():
            writer.write(ready, key)
    except BaseException:
        writer.writes.abort()  # delete the files already written: nothing will reference them
        raise
    return writer.writes.results()


def _tables(data: pa.Table | pa.RecordBatch | pa.RecordBatchReader) -> Iterator[pa.Table]:
    if isinstance(data, pa.RecordBatchReader):
        for batch in data:  # a stream stays a stream: converted batch by batch
            yield physical_table(pa.Table.from_batches([batch]))
    else:
        yield arrow_table(data, action="write data files")


@dataclass(frozen=True)
class _Options:
    data_change: bool
    target_file_rows: int
    file_prefix: str
    compression: str
    change_data: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.target_file_rows, bool) or self.target_file_rows < 1:
            raise ValueError(
                f"Cannot write data files: target_file_rows must be >= 1, found {self.target_file_rows!r}"
            )
        if not self.file_prefix or "/" in self.file_prefix:
            raise ValueError(f"Cannot write data files: invalid file_prefix {self.file_prefix!r}")
        if self.compression.lower() not in _CODEC_EXTENSIONS:
            raise ValueError(
                f"Cannot write data files: unknown compression {self.compression!r} "
                f"(expected one of {', '.join(sorted(_CODEC_EXTENSIONS))})"
            )


@dataclass
class _Pending:
    """Rows waiting per partition until a file's worth is there."""

    target_rows: int
    tables: dict[PartitionKey, list[pa.Table]] = field(default_factory=dict)
    rows: dict[PartitionKey, int] = field(default_factory=dict)

    def add(self, key: PartitionKey, table: pa.Table) -> list[pa.Table]:
        """Buffer ``table``; return the full files now ready for this partition."""
        self.tables.setdefault(key, []).append(table)
        self.rows[key] = self.rows.get(key, 0) + table.num_rows
        if self.rows[key] < self.target_rows:
            return []
        combined = pa.concat_tables(self.tables.pop(key))
        full = combined.num_rows - combined.num_rows % self.target_rows
        ready = [combined.slice(i, self.target_rows) for i in range(0, full, self.target_rows)]
        rest = combined.slice(full)
        self.rows[key] = rest.num_rows
        if rest.num_rows:
            self.tables[key] = [rest]
        return ready

    def drain(self) -> Iterator[tuple[PartitionKey, pa.Table]]:
        """The remaining rows, one (smaller than target) file per partition."""
        for key, tables in self.tables.items():
            combined = pa.concat_tables(tables)
            if combined.num_rows:
                yield key, combined
        self.tables.clear()
        self.rows.clear()


# --- input validation -----------------------------------------------------------------------------


def conform_to_table(data: pa.Table, schema: StructType, *, location: str | None = None) -> pa.Table:
    """Check ``data`` against the table schema and cast it to exactly ``to_arrow_schema(schema)``.

    Columns are matched by logical name (exactly, else ignoring case); nullable columns the data
    lacks are null-filled, recursively inside structs. Only safe casts are made: wider or
    value-checked integers, wider floats, value-checked decimals, any timestamp unit to microseconds
    (a zone-less timestamp is taken as UTC for ``timestamp``), large/view strings and binaries,
    dictionaries decoded.

    Args:
        data: the rows to write.
        schema: the table's logical schema.
        location: the table, named in the error message.

    Returns:
        The rows with the table's logical Arrow schema.

    Raises:
        SchemaMismatchError: naming every missing NOT NULL column, extra column, type that cannot be
            cast safely and NOT NULL column holding nulls, e.g. ``Cannot write to table '/data/t':
            column 'x' has type string, expected long``.

    Example:
        >>> from airflow_provider_delta.core.schema.types import LongType, StructField, StructType
        >>> conform_to_table(pa.table({"ID": pa.array([1], pa.int32())}),
        ...                  StructType((StructField("id", LongType()),))).schema
        id: int64
    """
    return _conform_table(data, schema, to_arrow_schema(schema), location)


def _conform_table(table: pa.Table, schema: StructType, target: pa.Schema, location: str | None) -> pa.Table:
    """Return ``table`` with exactly the Arrow schema ``target`` (= ``to_arrow_schema(schema)``).

    Raises:
        SchemaMismatchError: naming every missing, extra, mistyped or wrongly null column found.
    """
    problems: list[str] = []
    matches = _match_fields(table.column_names, schema, "", problems)
    columns: list[pa.ChunkedArray] = []
    for f, target_field, index in zip(schema.fields, target, matches, strict=True):
        if index is None:
            columns.append(pa.chunked_array([pa.nulls(table.num_rows, target_field.type)], target_field.type))
            continue
        chunks = [_coerce(c, f.type, target_field.type, f.name, problems) for c in table.column(index).chunks]
        column = pa.chunked_array(chunks, type=target_field.type)
        if not f.nullable and column.null_count:
            problems.append(f"column {f.name!r} is not nullable but has {column.null_count} null value(s)")
        columns.append(column)
    if problems:
        table = f"table {location!r}" if location else "table"
        raise SchemaMismatchError(f"Cannot write to {table}: " + "; ".join(dict.fromkeys(problems)))
    return pa.Table.from_arrays(columns, schema=target)


def _match_fields(
    names: Sequence[str], struct: StructType, parent: str, problems: list[str]
) -> list[int | None]:
    """For each field of ``struct``, the index of the input column or struct field that feeds it."""
    kind = "field" if parent else "column"
    used: set[int] = set()
    out: list[int | None] = []
    for f in struct.fields:
        where = f"{parent}{f.name}"
        exact = [i for i, n in enumerate(names) if n == f.name]
        found = exact or [i for i, n in enumerate(names) if n.casefold() == f.name.casefold()]
        if len(found) > 1:
            listed = ", ".join(repr(names[i]) for i in found)
            problems.append(f"{kind} {where!r} is ambiguous: the data has {listed}")
        elif not found and not f.nullable:
            problems.append(f"{kind} {where!r} is missing and not nullable")
        out.append(found[0] if len(found) == 1 else None)
        used.update(found)
    problems.extend(
        f"{kind} {parent + n!r} is not in the table schema" for i, n in enumerate(names) if i not in used
    )
    return out


def _type_name(arrow_type: pa.DataType) -> str:
    try:
        return from_arrow_type(arrow_type).simple_string()
    except SchemaError:
        return str(arrow_type)


def _mismatch(arr: pa.Array, dt: DataType, target: pa.DataType, path: str, problems: list[str]) -> pa.Array:
    problems.append(f"column {path!r} has type {_type_name(arr.type)}, expected {dt.simple_string()}")
    return pa.nulls(len(arr), target)


def _coerce(arr: pa.Array, dt: DataType, target: pa.DataType, path: str, problems: list[str]) -> pa.Array:
    """Cast one chunk to ``target`` if the cast is safe; else record a problem (and return nulls)."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), target)
    if isinstance(dt, StructType):
        return _coerce_struct(arr, dt, target, path, problems)
    if isinstance(dt, ArrayType):
        return _coerce_list(arr, dt, target, path, problems)
    if isinstance(dt, MapType):
        return _coerce_map(arr, dt, target, path, problems)
    if isinstance(dt, (TimestampType, TimestampNtzType)):
        return _coerce_timestamp(arr, dt, target, path, problems)
    if not _is_safe_cast(arr.type, dt):
        return _mismatch(arr, dt, target, path, problems)
    if arr.type.equals(target):
        return arr
    try:
        # safe=True: integer narrowing and decimal rescaling are checked value by value.
        return pc.cast(arr, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        problems.append(f"column {path!r} cannot be cast to {dt.simple_string()} ({err})")
        return pa.nulls(len(arr), target)


def _is_safe_cast(source: pa.DataType, dt: DataType) -> bool:
    """Whether values of ``source`` convert to ``dt`` without changing meaning (checked if narrowing)."""
    t = pa.types
    if type(dt) in _INTEGER_BITS:
        return bool(t.is_integer(source))
    if isinstance(dt, FloatType):
        return bool(t.is_float16(source) or t.is_float32(source))
    if isinstance(dt, DoubleType):
        return bool(t.is_floating(source))
    if isinstance(dt, DecimalType):
        return bool(t.is_decimal(source))
    if isinstance(dt, StringType):
        return bool(t.is_string(source) or t.is_large_string(source) or str(source) == "string_view")
    if isinstance(dt, BinaryType):
        return bool(
            t.is_binary(source)
            or t.is_large_binary(source)
            or t.is_fixed_size_binary(source)
            or str(source) == "binary_view"
        )
    if isinstance(dt, BooleanType):
        return bool(t.is_boolean(source))
    if isinstance(dt, DateType):
        return bool(t.is_date(source))
    return False


def _coerce_timestamp(
    arr: pa.Array, dt: TimestampType | TimestampNtzType, target: pa.DataType, path: str, problems: list[str]
) -> pa.Array:
    if not pa.types.is_timestamp(arr.type):
        return _mismatch(arr, dt, target, path, problems)
    if isinstance(dt, TimestampNtzType) and arr.type.tz is not None:
        return _mismatch(arr, dt, target, path, problems)
    # Arrow stores instants as UTC offsets from the epoch and the zone as a label: a zoned input keeps
    # its instants, a naive one is read as UTC (as Spark does); timestamp_ntz stays wall-clock time.
    relabelled = pa.timestamp(arr.type.unit, tz=target.tz)
    if arr.type != relabelled:
        arr = arr.view(relabelled)
    if arr.type.unit == target.unit:
        return arr
    # ns -> us truncates the nanoseconds Delta cannot store; s/ms -> us raises rather than overflows.
    options = pc.CastOptions(target, allow_time_truncate=True, allow_time_overflow=False)
    try:
        return pc.cast(arr, options=options)
    except pa.ArrowInvalid as err:
        problems.append(f"column {path!r} cannot be cast to {dt.simple_string()} ({err})")
        return pa.nulls(len(arr), target)


def _coerce_struct(
    arr: pa.Array, dt: StructType, target: pa.DataType, path: str, problems: list[str]
) -> pa.Array:
    if not pa.types.is_struct(arr.type):
        return _mismatch(arr, dt, target, path, problems)
    names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
    matches = _match_fields(names, dt, f"{path}.", problems)
    # flatten() applies the slice offset and folds the parent's validity into each child.
    source = arr.flatten()
    parent_valid = arr.is_valid() if arr.null_count else None
    target_fields = [target.field(i) for i in range(target.num_fields)]
    children: list[pa.Array] = []
    for f, target_field, index in zip(dt.fields, target_fields, matches, strict=True):
        if index is None:
            children.append(pa.nulls(len(arr), target_field.type))
            continue
        child = _coerce(source[index], f.type, target_field.type, f"{path}.{f.name}", problems)
        if not f.nullable:
            _check_no_nulls(child, parent_valid, f"{path}.{f.name}", problems)
        children.append(child)
    if not target_fields:
        return pa.Array.from_buffers(target, len(arr), [arr.buffers()[0]], offset=arr.offset)
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(children, fields=target_fields, mask=mask)


def _check_no_nulls(values: pa.Array, parent_valid: pa.Array | None, path: str, problems: list[str]) -> None:
    # A NOT NULL field inside a null struct is fine (Delta's invariant checks the same way).
    if parent_valid is None:
        count = values.null_count
    else:
        count = pc.sum(pc.and_(values.is_null(), parent_valid)).as_py()
    if count:
        problems.append(f"column {path!r} is not nullable but has {count} null value(s)")


def _coerce_list(
    arr: pa.Array, dt: ArrayType, target: pa.DataType, path: str, problems: list[str]
) -> pa.Array:
    if not is_any_list(arr.type):
        return _mismatch(arr, dt, target, path, problems)
    arr = as_list_array(arr)
    # offsets honour the slice and index into the full, unsliced values.
    values = _coerce(arr.values, dt.element_type, target.value_type, f"{path}.element", problems)
    mask = arr.is_null() if arr.null_count else None
    result = pa.ListArray.from_arrays(_offsets(arr, mask), values, type=target, mask=mask)
    if not dt.contains_null and pc.list_flatten(result).null_count:
        problems.append(f"column {path!r} does not allow null elements but has some")
    return result


def _offsets(arr: pa.Array, mask: pa.Array | None) -> pa.Array:
    # from_arrays refuses a null mask with sliced offsets (a slice of a list with nulls): copy them.
    return pa.concat_arrays([arr.offsets]) if mask is not None and arr.offset else arr.offsets


def _coerce_map(arr: pa.Array, dt: MapType, target: pa.DataType, path: str, problems: list[str]) -> pa.Array:
    if not pa.types.is_map(arr.type):
        return _mismatch(arr, dt, target, path, problems)
    keys = _coerce(arr.keys, dt.key_type, target.key_type, f"{path}.key", problems)
    items = _coerce(arr.items, dt.value_type, target.item_type, f"{path}.value", problems)
    mask = arr.is_null() if arr.null_count else None
    result = pa.MapArray.from_arrays(_offsets(arr, mask), keys, items, type=target, mask=mask)
    if not dt.value_contains_null and len(result):
        # The values of the valid maps only (a null map's slot may still span entries).
        values = pc.list_flatten(pa.ListArray.from_arrays(_offsets(arr, mask), items, mask=mask))
        if values.null_count:
            problems.append(f"column {path!r} does not allow null map values but has some")
    return result


# --- partitioning ---------------------------------------------------------------------------------


def _split_partitions(table: pa.Table, fields: Sequence[StructField]) -> dict[PartitionKey, pa.Table]:
    """Group rows by their serialized partition values (sort, then slice the runs of equal keys).

    Keys are the strings of ``partitionValues`` (``None`` for null and for the empty string), so
    values that serialize alike (NaN, ``""`` and null) share a file.
    """
    if table.num_rows == 0:
        return {}
    if not fields:
        return {(): table}
    names = [f.name for f in fields]
    if all(_is_constant(table.column(n)) for n in names):
        # The common case of a write into one partition: no sort, no copy.
        return {
            tuple(
                encode_partition_value(table.column(n)[0].as_py(), table.column(n).type) for n in names
            ): table
        }
    ordered = table.take(pc.sort_indices(table.select(names), sort_keys=[(n, "ascending") for n in names]))
    keys = [ordered.column(n).combine_chunks() for n in names]
    starts = _run_starts(keys, ordered.num_rows)
    runs: dict[PartitionKey, list[pa.Table]] = {}
    for start, end in zip(starts, [*starts[1:], ordered.num_rows], strict=True):
        key = tuple(encode_partition_value(k[start].as_py(), k.type) for k in keys)
        runs.setdefault(key, []).append(ordered.slice(start, end - start))
    return {key: parts[0] if len(parts) == 1 else pa.concat_tables(parts) for key, parts in runs.items()}


def _is_constant(column: pa.ChunkedArray) -> bool:
    """Whether every value is the same, or every value is null (floats: never, min_max ignores NaN)."""
    if column.null_count == len(column):
        return True
    if column.null_count or pa.types.is_floating(column.type):
        return False
    bounds = pc.min_max(column)
    return bool(bounds["min"] == bounds["max"])


def _run_starts(keys: Sequence[pa.Array], num_rows: int) -> list[int]:
    """Row numbers where a run of equal partition keys starts (rows are sorted by the keys)."""
    changed = np.zeros(max(num_rows - 1, 0), dtype=bool)
    for key in keys:
        later, earlier = key.slice(1), key.slice(0, num_rows - 1)
        differs = pc.fill_null(pc.not_equal(later, earlier), False)
        nullness = pc.xor(later.is_null(), earlier.is_null())
        changed |= pc.or_(differs, nullness).to_numpy(zero_copy_only=False)
    return [0, *(np.flatnonzero(changed) + 1).tolist()]


def _resolve_partition_fields(
    schema: StructType, partition_columns: Sequence[str]
) -> tuple[StructField, ...]:
    fields = []
    for name in partition_columns:
        f = schema.get(name, case_sensitive=False)
        if f is None:
            raise SchemaError(
                f"Cannot write to table: partition column {name!r} is not in the schema "
                f"(columns: {', '.join(schema.names)})"
            )
        if isinstance(f.type, (StructType, ArrayType, MapType)):
            raise SchemaError(
                f"Cannot write to table: partition column {f.name!r} has type {f.type.simple_string()}, "
                "which cannot be a partition column"
            )
        fields.append(f)
    return tuple(fields)


def _uri_encode(path: str) -> str:
    """Percent-encode a relative path the way Spark's ``add.path`` is (Hadoop ``Path.toUri``).

    ASCII outside ``java.net.URI``'s path characters (space, ``%``, ``"``, ``<``, ``|`` ...) becomes
    ``%XX``; other characters stay, except control and space characters, which are encoded as UTF-8.
    """
    out: list[str] = []
    for ch in path:
        if ch in _URI_PATH_SAFE or (
            ord(ch) > 0x7F and unicodedata.category(ch) not in _URI_ENCODED_CATEGORIES
        ):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
    return "".join(out)


# --- file output ----------------------------------------------------------------------------------


@dataclass
class _FileWriter:
    """Writes the Parquet files of one call (on a small thread pool) and collects their actions."""

    storage: Storage
    schema: StructType
    configuration: Mapping[str, str]
    options: _Options
    partition_fields: tuple[StructField, ...]
    partition_keys: tuple[str, ...]  # names in partitionValues and folders: physical under column mapping
    logical_schema: pa.Schema
    file_schema: pa.Schema  # physical names and field ids under column mapping; no partition columns
    writes: OrderedFileWrites[AddFile] = field(init=False)
    count: int = 0  # files started, numbers the file names in write order

    def __post_init__(self) -> None:
        self.writes = OrderedFileWrites(cleanup=self._delete)

    @classmethod
    def create(
        cls,
        *,
        storage: Storage,
        schema: StructType,
        partition_columns: Sequence[str],
        configuration: Mapping[str, str],
        options: _Options,
    ) -> _FileWriter:
        """Resolve names and Arrow schemas once for the whole call."""
        mode = column_mapping_mode(configuration)
        fields = _resolve_partition_fields(schema, partition_columns)
        partition_names = {f.name for f in fields}
        # Delta drops NullType (void) columns from the files and keeps them in the schema only.
        data_schema = StructType(tuple(
            f for f in schema.fields if f.name not in partition_names and not isinstance(f.type, NullType)
        ))
        return cls(
            storage=storage,
            schema=schema,
            configuration=configuration,
            options=options,
            partition_fields=fields,
            partition_keys=tuple(physical_name(f, mode=mode) for f in fields),
            logical_schema=to_arrow_schema(schema),
            # PROTOCOL.md "Column Mapping": files use physical names; Delta writes the ids as field ids.
            file_schema=to_arrow_schema(data_schema, physical=mode != "none"),
        )

    @property
    def partition_names(self) -> list[str]:
        """Logical names of the partition columns."""
        return [f.name for f in self.partition_fields]

    @functools.cached_property
    def nested_leaves(self) -> dict[str, list[str]]:
        """Parquet leaf paths of the nested file columns (they keep their dictionaries)."""
        return leaf_paths(self.file_schema)

    def write(self, table: pa.Table, key: PartitionKey) -> None:
        """Start writing one file of ``table`` (logical names, no partition columns) for partition ``key``."""
        values = dict(zip(self.partition_keys, key, strict=True))
        codec = _CODEC_EXTENSIONS[self.options.compression.lower()]
        folder = partition_path(self.partition_keys, values)
        if self.options.change_data:
            # Spark: _change_data/<partition folders>/cdc-00000-<uuid>.c000.snappy.parquet, no stats.
            name = f"cdc-{self.count:05d}-{uuid.uuid4()}.c000{codec}.parquet"
            folder = f"_change_data/{folder}" if folder else "_change_data"
        else:
            name = f"{self.options.file_prefix}-{self.count:05d}-{uuid.uuid4()}-c000{codec}.parquet"
        self.count += 1
        path = _uri_encode(f"{folder}/{name}" if folder else name)
        self.writes.submit(functools.partial(self._write_file, table, path, values))

    def _write_file(self, table: pa.Table, path: str, values: dict[str, str | None]) -> AddFile:
        stats = None
        if not self.options.change_data:
            stats = collect_stats(
                table, self.schema, configuration=self.configuration, partition_columns=self.partition_names
            )
        size, mtime = self._write_parquet(self._physical(table), path)
        return AddFile(
            path=path,
            partition_values=values,
            size=size,
            modification_time=mtime,
            data_change=self.options.data_change,
            stats=stats,
        )

    def _physical(self, table: pa.Table) -> pa.Table:
        # Same layout, other names (and field ids): a zero-copy view of every chunk.
        if table.num_columns != len(self.file_schema):  # void columns are not written
            table = table.select([i for i, f in enumerate(table.schema) if not pa.types.is_null(f.type)])
        columns = [
            pa.chunked_array([_relabel(chunk, f.type) for chunk in column.chunks], type=f.type)
            for column, f in zip(table.columns, self.file_schema, strict=True)
        ]
        return pa.Table.from_arrays(columns, schema=self.file_schema)

    def _write_parquet(self, table: pa.Table, path: str) -> tuple[int, int]:
        codec = self.options.compression.lower()
        leaves = self.nested_leaves if any(pa.types.is_nested(f.type) for f in table.schema) else {}

        def fill(sink: pa.NativeFile) -> None:
            pq.write_table(
                table,
                sink,
                compression="none" if codec == "uncompressed" else codec,
                coerce_timestamps="us",
                use_deprecated_int96_timestamps=False,
                use_dictionary=dictionary_columns(table, leaves),
            )

        # One PUT on object stores; on a local disk the stream goes straight to the file.
        return self.storage.write_stream(decode_relative(path), fill)

    def _delete(self, add: AddFile) -> None:
        self.storage.delete(decode_relative(add.path))


def _relabel(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """``arr`` with the file's names and field ids (same layout): a zero-copy view where possible.

    A NOT NULL field inside a null struct holds a placeholder null (a valid Delta row: the field is
    null because its parent is). Arrow refuses to view it and Parquet refuses to write it, so such
    levels are rebuilt around the same buffers, the placeholders given a value (never read).
    """
    if _has_strict_struct(target) and _nested_nulls(arr):
        return _rebuilt(arr, target)
    if arr.type.equals(target, check_metadata=True):
        return arr
    return arr.view(target)


@functools.lru_cache(maxsize=256)
def _has_strict_struct(t: pa.DataType) -> bool:
    """Whether a struct with a NOT NULL field is somewhere in ``t``."""
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        return any(not f.nullable or _has_strict_struct(f.type) for f in fields)
    if pa.types.is_map(t):
        return _has_strict_struct(t.key_type) or _has_strict_struct(t.item_type)
    if pa.types.is_list(t):
        return _has_strict_struct(t.value_type)
    return False


def _nested_nulls(arr: pa.Array) -> bool:
    if pa.types.is_struct(arr.type):
        return bool(arr.null_count) or any(_nested_nulls(arr.field(i)) for i in range(arr.type.num_fields))
    if pa.types.is_map(arr.type):
        return _nested_nulls(arr.keys) or _nested_nulls(arr.items)
    if pa.types.is_list(arr.type):
        return _nested_nulls(arr.values)
    return False


def _rebuilt(arr: pa.Array, target: pa.DataType) -> pa.Array:
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(target):
        fields = [target.field(i) for i in range(target.num_fields)]
        children = []
        for i, f in enumerate(fields):
            child = arr.field(i)
            if not f.nullable and child.null_count:  # only under null parents (conform checked the rest)
                child = _placeholders(child)
            children.append(_relabel(child, f.type))
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    if pa.types.is_map(target):
        keys, items = _relabel(arr.keys, target.key_type), _relabel(arr.items, target.item_type)
        return pa.MapArray.from_arrays(_offsets(arr, mask), keys, items, type=target, mask=mask)
    values = _relabel(arr.values, target.value_type)
    return pa.ListArray.from_arrays(_offsets(arr, mask), values, type=target, mask=mask)


def _placeholders(arr: pa.Array) -> pa.Array:
    """``arr`` without nulls: a null struct becomes a struct of placeholders, a null list an empty one."""
    t = arr.type
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        children = [_placeholders(arr.field(i)) if not f.nullable and arr.field(i).null_count else arr.field(i)
                    for i, f in enumerate(fields)]
        return pa.StructArray.from_arrays(children, fields=fields)
    if pa.types.is_map(t) or pa.types.is_list(t):
        return pc.fill_null(arr, pa.scalar([], t))
    return pc.fill_null(arr, _placeholder_value(t))


def _placeholder_value(t: pa.DataType) -> pa.Scalar:
    if pa.types.is_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_decimal(t):
        return pa.scalar(decimal.Decimal(0), t)
    if pa.types.is_date32(t):
        return pa.scalar(0, pa.int32()).cast(t)
    return pa.scalar(0, pa.int64()).cast(t)

"""Delta schema <-> Arrow schema, logical (display names) and physical (column-mapping names).

The Arrow form follows what Parquet readers produce: list items are called ``element``, map
entries have a non-null ``key`` and a ``value``; ``timestamp`` is ``timestamp[us, tz=UTC]`` and
``timestamp_ntz`` is ``timestamp[us]``::

    >>> import pyarrow as pa
    >>> from airflow_provider_delta.core.schema.types import LongType, StructField, StructType
    >>> to_arrow_schema(StructType((StructField("id", LongType(), nullable=False),)))
    id: int64 not null

With ``physical=True`` the fields are named by ``delta.columnMapping.physicalName`` and carry the
column mapping id as ``PARQUET:field_id`` metadata, which is how pyarrow writes Parquet field ids.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.schema.mapping import field_id, physical_name
from airflow_provider_delta.core.schema.types import (
    MAX_DECIMAL_PRECISION,
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
    UnsupportedType,
)
from airflow_provider_delta.exceptions import SchemaError, UnsupportedFeatureError

if TYPE_CHECKING:
    from collections.abc import Mapping

PARQUET_FIELD_ID_KEY = b"PARQUET:field_id"

_PRIMITIVE_TO_ARROW: dict[type[DataType], pa.DataType] = {
    StringType: pa.string(),
    LongType: pa.int64(),
    IntegerType: pa.int32(),
    ShortType: pa.int16(),
    ByteType: pa.int8(),
    FloatType: pa.float32(),
    DoubleType: pa.float64(),
    BooleanType: pa.bool_(),
    BinaryType: pa.binary(),
    DateType: pa.date32(),
    TimestampType: pa.timestamp("us", tz="UTC"),
    TimestampNtzType: pa.timestamp("us"),
    NullType: pa.null(),
}


def to_arrow_type(dt: DataType, *, physical: bool = False) -> pa.DataType:
    """Return the Arrow type of a Delta type.

    Args:
        dt: the Delta type.
        physical: name nested struct fields by their column-mapping physical names and attach
            ``PARQUET:field_id`` metadata.

    Raises:
        UnsupportedFeatureError: for an :class:`UnsupportedType`.
        SchemaError: for a map whose keys are ``void`` (Arrow map keys are never null).

    Example:
        >>> to_arrow_type(DecimalType(10, 2))
        Decimal128Type(decimal128(10, 2))
    """
    primitive = _PRIMITIVE_TO_ARROW.get(type(dt))
    if primitive is not None:
        return primitive
    if isinstance(dt, DecimalType):
        return pa.decimal128(dt.precision, dt.scale)
    if isinstance(dt, StructType):
        return pa.struct([to_arrow_field(f, physical=physical) for f in dt.fields])
    if isinstance(dt, ArrayType):
        element_type = to_arrow_type(dt.element_type, physical=physical)
        element = pa.field("element", element_type, _nullable(dt.contains_null, element_type))
        return pa.list_(element)
    if isinstance(dt, MapType):
        if isinstance(dt.key_type, NullType):
            raise SchemaError(f"Cannot convert type {dt.simple_string()} to Arrow: map keys cannot be void")
        key = pa.field("key", to_arrow_type(dt.key_type, physical=physical), nullable=False)
        value_type = to_arrow_type(dt.value_type, physical=physical)
        value = pa.field("value", value_type, _nullable(dt.value_contains_null, value_type))
        return pa.map_(key, value)
    if isinstance(dt, UnsupportedType):
        raise UnsupportedFeatureError(
            f"Cannot convert type {dt.name!r} to Arrow: the type is unsupported", features=(dt.name,)
        )
    raise UnsupportedFeatureError(f"Cannot convert type {dt!r} to Arrow: the type is unsupported")


def _nullable(nullable: bool, arrow_type: pa.DataType) -> bool:
    # Arrow refuses a non-nullable field of type null; a `void` column holds only nulls anyway.
    return nullable or pa.types.is_null(arrow_type)


def to_arrow_field(f: StructField, *, physical: bool = False) -> pa.Field:
    """Return the Arrow field of a struct field (see :func:`to_arrow_type`).

    A ``void`` field is always nullable in Arrow, whatever its ``nullable`` flag says.
    """
    arrow_type = to_arrow_type(f.type, physical=physical)
    nullable = _nullable(f.nullable, arrow_type)
    if not physical:
        return pa.field(f.name, arrow_type, nullable=nullable)
    column_id = field_id(f)
    metadata = None if column_id is None else {PARQUET_FIELD_ID_KEY: str(column_id).encode()}
    return pa.field(physical_name(f), arrow_type, nullable=nullable, metadata=metadata)


def to_arrow_schema(schema: StructType, *, physical: bool = False) -> pa.Schema:
    """Return the Arrow schema of a Delta schema.

    Args:
        schema: the Delta schema.
        physical: use column-mapping physical names (recursively; the logical name where a field has
            none) and attach ``PARQUET:field_id`` from ``delta.columnMapping.id``.

    Raises:
        UnsupportedFeatureError: if the schema contains an :class:`UnsupportedType`.
    """
    return pa.schema([to_arrow_field(f, physical=physical) for f in schema.fields])


def from_arrow_type(arrow_type: pa.DataType) -> DataType:
    """Return the Delta type of an Arrow type.

    Accepts the Arrow variants a Parquet or IPC reader may produce: large and view strings and
    binaries, fixed size binaries, large and fixed size lists, timestamps of any unit (time zone
    aware -> ``timestamp``, naive -> ``timestamp_ntz``), dictionaries (their value type), unsigned
    integers up to 32 bits (widened to the next signed type), ``float16`` (``float``) and ``date64``
    (``date``).

    Raises:
        SchemaError: if the Arrow type has no Delta equivalent (``uint64``, whose values ``long`` cannot
            all hold (delta-rs maps it to ``long``, Spark's Parquet reader to ``decimal(20,0)``),
            ``time64``, ``duration``, ...).
    """
    return _from_arrow(arrow_type, ())


def _unconvertible(arrow_type: pa.DataType, path: tuple[str, ...], reason: str) -> SchemaError:
    where = f"field {'.'.join(path)!r}" if path else f"Arrow type {arrow_type}"
    return SchemaError(f"Cannot convert {where} to Delta: {reason}")


def _from_arrow(arrow_type: pa.DataType, path: tuple[str, ...], keep: bool = False) -> DataType:
    t = pa.types
    for predicate, delta_type in _SIMPLE_FROM_ARROW:
        if predicate(arrow_type):
            return delta_type
    if t.is_timestamp(arrow_type):
        return TimestampType() if arrow_type.tz is not None else TimestampNtzType()
    if t.is_decimal(arrow_type):
        if arrow_type.precision > MAX_DECIMAL_PRECISION:
            reason = f"{arrow_type} exceeds the maximum precision {MAX_DECIMAL_PRECISION}"
            raise _unconvertible(arrow_type, path, reason)
        return DecimalType(arrow_type.precision, arrow_type.scale)
    if t.is_struct(arrow_type):
        fields = [arrow_type.field(i) for i in range(arrow_type.num_fields)]
        return StructType(tuple(_from_arrow_field(f, (*path, f.name), keep) for f in fields))
    if t.is_map(arrow_type):
        return MapType(
            _from_arrow(arrow_type.key_type, (*path, "key"), keep),
            _from_arrow(arrow_type.item_type, (*path, "value"), keep),
            arrow_type.item_field.nullable,
        )
    if _is_any_list(arrow_type):
        value_field = arrow_type.value_field
        return ArrayType(_from_arrow(value_field.type, (*path, "element"), keep), value_field.nullable)
    if t.is_dictionary(arrow_type) or t.is_run_end_encoded(arrow_type):
        return _from_arrow(arrow_type.value_type, path, keep)
    if isinstance(arrow_type, pa.ExtensionType):
        return _from_arrow(arrow_type.storage_type, path, keep)
    raise _unconvertible(arrow_type, path, f"Arrow type {arrow_type} has no Delta equivalent")


def _from_arrow_field(arrow_field: pa.Field, path: tuple[str, ...], keep: bool = False) -> StructField:
    data_type = _from_arrow(arrow_field.type, path, keep)
    metadata = field_metadata(arrow_field.metadata, path) if keep and arrow_field.metadata else {}
    return StructField(arrow_field.name, data_type, arrow_field.nullable, metadata)


#: Delta field metadata keys whose values are not strings (Delta's ``DeltaColumnMapping``,
#: ``IdentityColumn``, ``TypeWideningMetadata``): an Arrow field carries every value as a string.
_LONG_KEYS = frozenset({"delta.columnMapping.id", "parquet.field.id", "delta.identity.start",
                        "delta.identity.step", "delta.identity.highWaterMark"})
_BOOL_KEYS = frozenset({"delta.identity.allowExplicitInsert"})
_JSON_KEYS = frozenset({"delta.typeChanges", "delta.columnMapping.nested.ids", "parquet.field.nested.ids"})
#: Arrow/Parquet reader keys, not column metadata (``PARQUET:field_id`` is how pyarrow reads field ids).
_ARROW_ONLY_KEYS = frozenset({"PARQUET:field_id"})


def field_metadata(arrow_metadata: Mapping[bytes | str, bytes | str], path: tuple[str, ...] = ()) -> dict[str, Any]:
    """The Delta column metadata of an Arrow field's metadata (what ``DeltaTable.create`` keeps).

    As delta-rs and Delta Lake do, every key is kept (``comment``, ``delta.generationExpression``,
    ``delta.identity.*``, ``delta.columnMapping.*``, user keys), values as strings except the Delta keys
    whose values are numbers, booleans or JSON. pyarrow's own ``PARQUET:field_id`` is left out.

    Raises:
        SchemaError: a typed Delta key holds a value of another type (``delta.identity.step = 'x'``).
    """
    out: dict[str, Any] = {}
    for raw_key, raw_value in arrow_metadata.items():
        key = raw_key.decode() if isinstance(raw_key, bytes) else raw_key
        value = raw_value.decode() if isinstance(raw_value, bytes) else raw_value
        if key in _ARROW_ONLY_KEYS:
            continue
        try:
            out[key] = _typed_value(key, value)
        except ValueError:
            where = f"field {'.'.join(path)!r}" if path else "a field"
            raise SchemaError(f"Cannot take the metadata of {where}: {key!r} = {value!r} is not a valid value "
                              "for that key") from None
    return out


def _typed_value(key: str, value: str) -> Any:
    if key in _LONG_KEYS:
        return int(value)
    if key in _BOOL_KEYS:
        if value.lower() not in ("true", "false"):
            raise ValueError(value)
        return value.lower() == "true"
    if key in _JSON_KEYS:
        return json.loads(value)
    return value


def _is_any_list(arrow_type: pa.DataType) -> bool:
    t = pa.types
    return bool(
        t.is_list(arrow_type)
        or t.is_large_list(arrow_type)
        or t.is_fixed_size_list(arrow_type)
        or t.is_list_view(arrow_type)
        or t.is_large_list_view(arrow_type)
    )


_SIMPLE_FROM_ARROW = (
    (pa.types.is_null, NullType()),
    (pa.types.is_boolean, BooleanType()),
    (pa.types.is_int8, ByteType()),
    (pa.types.is_int16, ShortType()),
    (pa.types.is_int32, IntegerType()),
    (pa.types.is_int64, LongType()),
    (pa.types.is_uint8, ShortType()),
    (pa.types.is_uint16, IntegerType()),
    (pa.types.is_uint32, LongType()),
    (pa.types.is_float16, FloatType()),
    (pa.types.is_float32, FloatType()),
    (pa.types.is_float64, DoubleType()),
    (pa.types.is_string, StringType()),
    (pa.types.is_large_string, StringType()),
    (pa.types.is_string_view, StringType()),
    (pa.types.is_binary, BinaryType()),
    (pa.types.is_large_binary, BinaryType()),
    (pa.types.is_binary_view, BinaryType()),
    (pa.types.is_fixed_size_binary, BinaryType()),
    (pa.types.is_date, DateType()),
)


def from_arrow_field(arrow_field: pa.Field, *, with_metadata: bool = False) -> StructField:
    """Return the Delta field of an Arrow field (name, type, nullability; metadata with ``with_metadata``).

    Raises:
        SchemaError: if the field's type has no Delta equivalent.
    """
    return _from_arrow_field(arrow_field, (arrow_field.name,), with_metadata)


def from_arrow_schema(arrow_schema: pa.Schema, *, with_metadata: bool = False) -> StructType:
    """Return the Delta schema of an Arrow schema (see :func:`from_arrow_type`).

    With ``with_metadata`` the fields' metadata become Delta column metadata (:func:`field_metadata`),
    at every nesting level: what ``DeltaTable.create`` does. Writes compare types only, so they leave it out.

    Example:
        >>> import pyarrow as pa
        >>> from_arrow_schema(pa.schema([pa.field("id", pa.int64(), nullable=False)])).to_json()
        '{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}}]}'

    Raises:
        SchemaError: if a field's type has no Delta equivalent or two fields share a name.
    """
    return StructType(tuple(from_arrow_field(f, with_metadata=with_metadata) for f in arrow_schema))


__all__ = [
    "PARQUET_FIELD_ID_KEY",
    "field_metadata",
    "from_arrow_field",
    "from_arrow_schema",
    "from_arrow_type",
    "to_arrow_field",
    "to_arrow_schema",
    "to_arrow_type",
]


def rebased_offsets(arr: pa.Array) -> tuple[pa.Array, int, int]:
    """The offsets of a list or map array rebased to start at 0, and the child range ``[start, stop)``
    they index.

    A sliced list's or map's offsets still index the whole child array, and Arrow refuses such offsets
    together with a validity mask; rebasing also keeps the children as small as the slice.
    """
    offsets = arr.offsets
    if len(offsets) == 0:
        return offsets, 0, 0
    start, stop = offsets[0].as_py(), offsets[-1].as_py()
    if start != 0 or offsets.offset != 0:
        offsets = pc.subtract(offsets, pa.scalar(start, offsets.type))
    return offsets, start, stop

"""Delta schema types (:mod:`airflow_provider_delta.core.schema.types`) <-> ``pyspark.sql.types``.

A Delta schema is Spark's schema JSON, so every Delta type has exactly one Spark type::

    >>> from airflow_provider_delta.core.schema.types import LongType, StructField, StructType
    >>> delta = StructType((StructField("id", LongType(), nullable=False, metadata={"comment": "key"}),))
    >>> to_spark_schema(delta)
    StructType([StructField('id', LongType(), False)])
    >>> from_spark_schema(to_spark_schema(delta)) == delta
    True

Field metadata (column mapping ``delta.columnMapping.id`` / ``delta.columnMapping.physicalName``,
``comment``, generation expressions, ...) is copied both ways. ``timestamp`` is Spark's
``TimestampType`` (an instant, UTC-adjusted microseconds) and ``timestamp_ntz`` its
``TimestampNTZType`` (wall-clock microseconds).

Spark's ``char(n)``/``varchar(n)`` become ``string`` with the ``__CHAR_VARCHAR_TYPE_STRING`` field
metadata, which is how Spark itself writes them into a Delta log; the reverse direction keeps the
string (as Spark does when it reads such a table). Types Delta has but this engine does not honour
(``variant``, ``geometry``, ``geography``, collated strings) raise
:class:`~airflow_provider_delta.exceptions.UnsupportedFeatureError`; Spark types with no Delta
equivalent (``time``, intervals, user-defined types) raise
:class:`~airflow_provider_delta.exceptions.SchemaError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import types as st

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
    UnsupportedType,
)
from airflow_provider_delta.exceptions import SchemaError, UnsupportedFeatureError

#: Field metadata key under which Spark records a ``char``/``varchar`` column's declared type
#: (Spark's ``CharVarcharUtils.CHAR_VARCHAR_TYPE_STRING_METADATA_KEY``).
CHAR_VARCHAR_TYPE_STRING_KEY = "__CHAR_VARCHAR_TYPE_STRING"

# Spark's default string collation; any other one needs Delta's collations table feature.
_BINARY_COLLATION = "UTF8_BINARY"

_TO_SPARK_PRIMITIVE: dict[type[DataType], st.DataType] = {
    ByteType: st.ByteType(),
    ShortType: st.ShortType(),
    IntegerType: st.IntegerType(),
    LongType: st.LongType(),
    FloatType: st.FloatType(),
    DoubleType: st.DoubleType(),
    StringType: st.StringType(),
    BinaryType: st.BinaryType(),
    BooleanType: st.BooleanType(),
    DateType: st.DateType(),
    TimestampType: st.TimestampType(),
    TimestampNtzType: st.TimestampNTZType(),
    NullType: st.NullType(),
}

_FROM_SPARK_PRIMITIVE: dict[type[st.DataType], DataType] = {
    type(spark): delta() for delta, spark in _TO_SPARK_PRIMITIVE.items()
}

# The reader/writer table feature behind a Delta type this engine keeps as UnsupportedType
# (PROTOCOL.md "Variant Data Type", "Geospatial"; RFC "Collated String Type").
_TYPE_FEATURES: dict[str, str] = {
    "variant": "variantType",
    "geometry": "geospatial",
    "geography": "geospatial",
}


def _where(path: tuple[str, ...], what: str) -> str:
    return f"field {'.'.join(path)!r}" if path else what


def _plain(value: Any) -> Any:
    """A deep, mutable, JSON-shaped copy of metadata (mappings -> dict, sequences -> list)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------- Delta -> Spark


def to_spark_type(dt: DataType) -> st.DataType:
    """Return the Spark type of a Delta type.

    Args:
        dt: the Delta type; structs, arrays and maps are converted recursively, keeping
            ``containsNull``/``valueContainsNull``, nullability and field metadata.

    Returns:
        The ``pyspark.sql.types`` type.

    Raises:
        UnsupportedFeatureError: for a type this engine does not support (``variant``,
            ``geometry(...)``, any other :class:`UnsupportedType`).

    Example:
        >>> from airflow_provider_delta.core.schema.types import ArrayType, DecimalType
        >>> to_spark_type(ArrayType(DecimalType(10, 2), contains_null=False))
        ArrayType(DecimalType(10,2), False)
    """
    return _to_spark(dt, ())


def _to_spark(dt: DataType, path: tuple[str, ...]) -> st.DataType:
    primitive = _TO_SPARK_PRIMITIVE.get(type(dt))
    if primitive is not None:
        return primitive
    if isinstance(dt, DecimalType):
        return st.DecimalType(dt.precision, dt.scale)
    if isinstance(dt, StructType):
        return st.StructType([_to_spark_field(f, (*path, f.name)) for f in dt.fields])
    if isinstance(dt, ArrayType):
        return st.ArrayType(_to_spark(dt.element_type, (*path, "element")), dt.contains_null)
    if isinstance(dt, MapType):
        return st.MapType(
            _to_spark(dt.key_type, (*path, "key")),
            _to_spark(dt.value_type, (*path, "value")),
            dt.value_contains_null,
        )
    name = dt.name if isinstance(dt, UnsupportedType) else repr(dt)
    feature = _TYPE_FEATURES.get(name.split("(", 1)[0].strip().lower())
    reason = f"{'type ' + repr(name) if path else 'the type'} is unsupported"
    if feature is not None:
        reason += f" (table feature {feature!r})"
    raise UnsupportedFeatureError(
        f"Cannot convert {_where(path, f'type {name!r}')} to Spark: {reason}", features=(feature or name,)
    )


def to_spark_field(f: StructField) -> st.StructField:
    """Return the Spark field of a Delta field: name, type, nullability and a copy of its metadata.

    Raises:
        UnsupportedFeatureError: if the field's type is unsupported (see :func:`to_spark_type`).

    Example:
        >>> from airflow_provider_delta.core.schema.types import LongType
        >>> to_spark_field(StructField("id", LongType(), metadata={"delta.columnMapping.id": 1})).metadata
        {'delta.columnMapping.id': 1}
    """
    return _to_spark_field(f, (f.name,))


def _to_spark_field(f: StructField, path: tuple[str, ...]) -> st.StructField:
    return st.StructField(f.name, _to_spark(f.type, path), f.nullable, _plain(f.metadata))


def to_spark_schema(struct: StructType) -> st.StructType:
    """Return the Spark schema of a Delta schema (see :func:`to_spark_type`).

    Args:
        struct: the Delta schema, e.g. ``snapshot.schema``.

    Returns:
        A ``pyspark.sql.types.StructType`` for ``spark.createDataFrame``, ``mapInArrow`` or a reader.

    Raises:
        UnsupportedFeatureError: if a field's type is unsupported.

    Example:
        >>> from airflow_provider_delta.core.schema.types import TimestampNtzType
        >>> to_spark_schema(StructType((StructField("ts", TimestampNtzType()),))).simpleString()
        'struct<ts:timestamp_ntz>'
    """
    return st.StructType([_to_spark_field(f, (f.name,)) for f in struct.fields])


# ---------------------------------------------------------------------------------------- Spark -> Delta


def from_spark_type(spark_type: st.DataType) -> DataType:
    """Return the Delta type of a Spark type.

    ``char(n)``/``varchar(n)`` nested in the type become ``string`` (only a field can record the
    declared type; use :func:`from_spark_field` or :func:`from_spark_schema` to keep it).

    Args:
        spark_type: a ``pyspark.sql.types`` type.

    Returns:
        The Delta type.

    Raises:
        UnsupportedFeatureError: for ``variant``, ``geometry``, ``geography`` and collated strings,
            which need table features this engine does not support.
        SchemaError: for a type with no Delta equivalent (``time``, intervals, user-defined types).

    Example:
        >>> from_spark_type(st.MapType(st.StringType(), st.TimestampNTZType(), False))
        MapType(key_type=StringType(), value_type=TimestampNtzType(), value_contains_null=False)
    """
    return _from_spark(spark_type, ())


def _from_spark(spark_type: st.DataType, path: tuple[str, ...]) -> DataType:
    primitive = _FROM_SPARK_PRIMITIVE.get(type(spark_type))
    if primitive is not None:
        if isinstance(spark_type, st.StringType) and spark_type.collation != _BINARY_COLLATION:
            # RFC "Collated String Type": a collation needs the `collations` writer feature.
            where = _where(path, f"Spark type {spark_type.simpleString()!r}")
            raise UnsupportedFeatureError(
                f"Cannot convert {where} to Delta: collated strings are unsupported "
                f"(expected collation {_BINARY_COLLATION!r}, found {spark_type.collation!r})",
                features=("collations",),
            )
        return primitive
    if isinstance(spark_type, (st.CharType, st.VarcharType)):
        return StringType()
    if isinstance(spark_type, st.DecimalType):
        return DecimalType(spark_type.precision, spark_type.scale)
    if isinstance(spark_type, st.StructType):
        return _from_spark_struct(spark_type, path)
    if isinstance(spark_type, st.ArrayType):
        return ArrayType(_from_spark(spark_type.elementType, (*path, "element")), spark_type.containsNull)
    if isinstance(spark_type, st.MapType):
        return MapType(
            _from_spark(spark_type.keyType, (*path, "key")),
            _from_spark(spark_type.valueType, (*path, "value")),
            spark_type.valueContainsNull,
        )
    raise _unconvertible(spark_type, path)


def _unconvertible(spark_type: st.DataType, path: tuple[str, ...]) -> SchemaError | UnsupportedFeatureError:
    name = spark_type.simpleString()
    where = _where(path, f"Spark type {name!r}")
    subject = f"type {name!r}" if path else "the type"
    feature = _TYPE_FEATURES.get(name.split("(", 1)[0])
    if feature is not None:
        return UnsupportedFeatureError(
            f"Cannot convert {where} to Delta: {subject} is unsupported (table feature {feature!r})",
            features=(feature,),
        )
    if isinstance(spark_type, st.UserDefinedType):
        reason = f"{subject} is a user-defined type ({type(spark_type).__name__}) with no Delta equivalent"
        reason += f"; store its sqlType {spark_type.sqlType().simpleString()!r} instead"
    else:
        reason = f"{subject} has no Delta equivalent"
    return SchemaError(f"Cannot convert {where} to Delta: {reason}")


def _from_spark_struct(spark_struct: st.StructType, path: tuple[str, ...]) -> StructType:
    # Only the outermost field records a char/varchar type string (for a nested one, the whole type).
    record = not path
    fields = tuple(
        _from_spark_field(f, (*path, f.name), record_char_varchar=record) for f in spark_struct.fields
    )
    try:
        return StructType(fields)
    except SchemaError as err:  # duplicate names: Spark allows them in a DataFrame, Delta does not
        raise SchemaError(f"Cannot convert {_where(path, 'schema')} to Delta: {err}") from err


def from_spark_field(spark_field: st.StructField) -> StructField:
    """Return the Delta field of a Spark field: name, type, nullability and a copy of its metadata.

    A ``char(n)``/``varchar(n)`` anywhere in the field's type becomes ``string`` and the field's
    declared type is recorded in its ``__CHAR_VARCHAR_TYPE_STRING`` metadata, as Spark does when it
    writes a Delta schema (nested struct fields get no entry of their own).

    Raises:
        UnsupportedFeatureError: if the field's type needs an unsupported table feature.
        SchemaError: if the type has no Delta equivalent or the metadata is not JSON.

    Example:
        >>> from_spark_field(st.StructField("code", st.VarcharType(3))).metadata["__CHAR_VARCHAR_TYPE_STRING"]
        'varchar(3)'
    """
    return _from_spark_field(spark_field, (spark_field.name,), record_char_varchar=True)


def _from_spark_field(
    spark_field: st.StructField, path: tuple[str, ...], *, record_char_varchar: bool
) -> StructField:
    spark_type = spark_field.dataType
    metadata = _plain(spark_field.metadata or {})
    if record_char_varchar and _has_char_varchar(spark_type):
        # As Spark's CharVarcharUtils.replaceCharVarcharWithStringInSchema: the top-level field keeps
        # the declared type (``varchar(3)``, ``struct<x:char(4)>``); nested fields get no entry.
        metadata[CHAR_VARCHAR_TYPE_STRING_KEY] = spark_type.simpleString()
    delta_type = _from_spark(spark_type, path)
    try:
        return StructField(spark_field.name, delta_type, spark_field.nullable, metadata)
    except SchemaError as err:
        raise SchemaError(f"Cannot convert {_where(path, 'field')} to Delta: {err}") from err


def _has_char_varchar(spark_type: st.DataType) -> bool:
    if isinstance(spark_type, (st.CharType, st.VarcharType)):
        return True
    if isinstance(spark_type, st.ArrayType):
        return _has_char_varchar(spark_type.elementType)
    if isinstance(spark_type, st.MapType):
        return _has_char_varchar(spark_type.keyType) or _has_char_varchar(spark_type.valueType)
    if isinstance(spark_type, st.StructType):
        return any(_has_char_varchar(f.dataType) for f in spark_type.fields)
    return False


def from_spark_schema(spark_struct: st.StructType) -> StructType:
    """Return the Delta schema of a Spark schema (see :func:`from_spark_type`), e.g. of ``df.schema``.

    Args:
        spark_struct: a ``pyspark.sql.types.StructType``.

    Returns:
        The Delta schema, with each field's metadata copied.

    Raises:
        UnsupportedFeatureError: if a field's type needs an unsupported table feature (``variant``, ...).
        SchemaError: if a type has no Delta equivalent or two fields of a struct share a name.

    Example:
        >>> from_spark_schema(st.StructType([st.StructField("id", st.LongType(), False)])).to_json()
        '{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}}]}'
    """
    return _from_spark_struct(spark_struct, ())


__all__ = [
    "CHAR_VARCHAR_TYPE_STRING_KEY",
    "from_spark_field",
    "from_spark_schema",
    "from_spark_type",
    "to_spark_field",
    "to_spark_schema",
    "to_spark_type",
]

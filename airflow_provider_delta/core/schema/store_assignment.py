"""Spark's ANSI store assignment on Arrow arrays: the one cast MERGE, UPDATE and INSERT values go through.

Delta Lake casts an assigned value to its column's type with ``UpdateExpressionsSupport.castIfNeeded``:
structs by name (every field of the value must exist in the column's struct; with schema evolution the
struct may lack some of the column's fields, which become NULL), array elements and map keys and values
one by one, and every other pair with Spark's cast under ``spark.sql.storeAssignmentPolicy=ANSI``
(``Cast(..., ansiEnabled = true)``): any pair ``Cast.canAnsiCast`` allows is accepted when the statement is
planned, and a value that does not convert fails the command when it runs (malformed text:
``CAST_INVALID_INPUT``; out of range: ``CAST_OVERFLOW`` / ``DELTA_CAST_OVERFLOW_IN_TABLE_WRITE``).

Two functions carry the rule:

- :func:`assignment_problem` -- at planning: why a value of an Arrow type cannot be stored in a column
  of a Delta type (None when it can);
- :func:`store_assign` -- at run time: the values cast to the column's Arrow type, vectorised (Arrow
  compute and numpy, no per-row Python), raising :class:`~airflow_provider_delta.exceptions.CastError`
  naming the column and the first value that fails.

Time zones: zone-less text and dates are read in UTC (the engine's session time zone), as are
``timestamp`` values turned into dates or text.

Example:
    >>> import pyarrow as pa
    >>> from airflow_provider_delta.core.schema.types import LongType
    >>> store_assign(pa.array([" 12 ", None]), LongType(), column="n").to_pylist()
    [12, None]
    >>> assignment_problem(pa.date32(), LongType(), "n")
    "'n' has type bigint, the value has type date"
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.schema import text_cast
from airflow_provider_delta.core.schema.arrow import from_arrow_type, rebased_offsets, to_arrow_type
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
    StructType,
    TimestampNtzType,
    TimestampType,
)
from airflow_provider_delta.exceptions import CastError, SchemaError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["assignment_problem", "can_cast", "spark_name", "store_assign"]

_INTEGRAL: tuple[type[DataType], ...] = (ByteType, ShortType, IntegerType, LongType)
_FRACTIONAL: tuple[type[DataType], ...] = (FloatType, DoubleType, DecimalType)
_NUMERIC = _INTEGRAL + _FRACTIONAL
_DATETIME: tuple[type[DataType], ...] = (DateType, TimestampType, TimestampNtzType)
_BOUNDS: dict[type[DataType], int] = {ByteType: 2**7, ShortType: 2**15, IntegerType: 2**31, LongType: 2**63}
_SPARK_NAMES: dict[type[DataType], str] = {
    ByteType: "TINYINT", ShortType: "SMALLINT", IntegerType: "INT", LongType: "BIGINT", FloatType: "FLOAT",
    DoubleType: "DOUBLE", StringType: "STRING", BinaryType: "BINARY", BooleanType: "BOOLEAN", DateType: "DATE",
    TimestampType: "TIMESTAMP", TimestampNtzType: "TIMESTAMP_NTZ", NullType: "VOID",
}


def spark_name(dt: DataType) -> str:
    """The type as Spark's messages spell it (``BIGINT``, ``DECIMAL(10,2)``, ``ARRAY<INT>``)."""
    if isinstance(dt, DecimalType):
        return f"DECIMAL({dt.precision},{dt.scale})"
    if isinstance(dt, ArrayType):
        return f"ARRAY<{spark_name(dt.element_type)}>"
    if isinstance(dt, MapType):
        return f"MAP<{spark_name(dt.key_type)}, {spark_name(dt.value_type)}>"
    if isinstance(dt, StructType):
        return "STRUCT<" + ", ".join(f"{f.name}: {spark_name(f.type)}" for f in dt.fields) + ">"
    return _SPARK_NAMES.get(type(dt), dt.simple_string().upper())


# ------------------------------------------------------------------------------------------ planning


def can_cast(source: DataType, target: DataType) -> bool:
    """Spark's ``Cast.canAnsiCast`` for two Delta types (structs by position, as Spark's cast does).

    Example:
        >>> can_cast(StringType(), LongType()), can_cast(DateType(), LongType())
        (True, False)
    """
    if type(source) is type(target) and not isinstance(source, (ArrayType, MapType, StructType)):
        return True
    if isinstance(source, NullType) or isinstance(target, StringType):
        return True
    if isinstance(source, ArrayType):
        return isinstance(target, ArrayType) and can_cast(source.element_type, target.element_type)
    if isinstance(source, MapType):
        return (
            isinstance(target, MapType)
            and can_cast(source.key_type, target.key_type)
            and can_cast(source.value_type, target.value_type)
        )
    if isinstance(source, StructType):
        return (
            isinstance(target, StructType)
            and len(source) == len(target)
            and all(can_cast(a.type, b.type) for a, b in zip(source.fields, target.fields, strict=True))
        )
    return _can_cast_atomic(source, target)


def _can_cast_atomic(source: DataType, target: DataType) -> bool:
    if isinstance(target, _NUMERIC):
        return isinstance(source, (*_NUMERIC, StringType, BooleanType, TimestampType))
    if isinstance(target, BooleanType):
        return isinstance(source, (*_NUMERIC, StringType))
    if isinstance(target, BinaryType):
        return isinstance(source, StringType)
    if isinstance(target, DateType):
        return isinstance(source, (StringType, TimestampType, TimestampNtzType))
    if isinstance(target, TimestampType):
        return isinstance(source, (*_NUMERIC, StringType, DateType, TimestampNtzType))
    if isinstance(target, TimestampNtzType):
        return isinstance(source, (StringType, DateType, TimestampType))
    return False


def assignment_problem(
    value: pa.DataType | None, target: DataType, path: str, *, missing_fields: bool = True
) -> str | None:
    """Why a value of Arrow type ``value`` cannot be assigned to a column of type ``target``; None if it can.

    Delta's ``castIfNeeded``: a struct value is matched to the column's struct by name (ignoring case)
    and every field it has must exist there; ``missing_fields`` allows it to lack some of the column's
    fields (schema evolution); arrays and maps are checked element by element; other pairs follow
    :func:`can_cast`. A NULL literal (``pa.null()``) fits every column.

    Args:
        value: the Arrow type of the values (None: unknown, accepted).
        target: the column's type.
        path: the column, for the message.
        missing_fields: whether a struct value may lack fields of the column's struct.
    """
    if value is None or pa.types.is_null(value):
        return None
    if pa.types.is_dictionary(value):
        value = value.value_type
    try:
        source = from_arrow_type(value)
    except SchemaError:
        return f"the value type {value} is not a Delta type"
    return _problem(source, target, path, missing_fields)


def _problem(source: DataType, target: DataType, path: str, missing: bool) -> str | None:
    if isinstance(target, StructType) and isinstance(source, StructType):
        return _struct_problem(source, target, path, missing)
    if isinstance(target, ArrayType) and isinstance(source, ArrayType):
        return _problem(source.element_type, target.element_type, f"{path}.element", missing)
    if isinstance(target, MapType) and isinstance(source, MapType):
        return _problem(source.key_type, target.key_type, f"{path}.key", missing) or _problem(
            source.value_type, target.value_type, f"{path}.value", missing
        )
    if isinstance(source, (StructType, ArrayType, MapType)) and isinstance(target, StringType):
        return None
    if isinstance(source, (StructType, ArrayType, MapType)) or isinstance(target, (StructType, ArrayType, MapType)):
        return f"{path!r} has type {target.simple_string()}, the value has type {source.simple_string()}"
    if not can_cast(source, target):
        return f"{path!r} has type {spark_name(target).lower()}, the value has type {spark_name(source).lower()}"
    return None


def _struct_problem(source: StructType, target: StructType, path: str, missing: bool) -> str | None:
    for f in source.fields:
        if target.get(f.name, case_sensitive=False) is None:
            return f"the value has field {path + '.' + f.name!r}, which the target struct lacks"
    if not missing and len(source) != len(target):
        absent = [f.name for f in target.fields if source.get(f.name, case_sensitive=False) is None]
        return (
            f"the value lacks field(s) {', '.join(repr(path + '.' + n) for n in absent)} of the target struct "
            "(cannot cast the struct without schema evolution)"
        )
    for f in source.fields:
        column = target.get(f.name, case_sensitive=False)
        assert column is not None
        reason = _problem(f.type, column.type, f"{path}.{column.name}", missing)
        if reason:
            return reason
    return None


# ------------------------------------------------------------------------------------------ run time


def store_assign(
    values: pa.Array | pa.ChunkedArray, target: DataType, *, column: str
) -> pa.Array | pa.ChunkedArray:
    """``values`` cast to ``target``'s Arrow type with Spark's ANSI store assignment.

    Structs are matched by name (fields the value lacks become NULL; a NULL struct stays NULL), array
    elements and map keys and values are cast one by one, other values as Spark's ANSI cast does.

    Raises:
        CastError: a value is malformed for the type or out of its range (naming ``column`` and the value).
    """
    if isinstance(values, pa.ChunkedArray):
        arrow = to_arrow_type(target)
        return pa.chunked_array([_assign(c, target, column) for c in values.chunks], type=arrow)
    return _assign(values, target, column)


def _assign(arr: pa.Array, target: DataType, path: str) -> pa.Array:
    arrow = to_arrow_type(target)
    if arr.type.equals(arrow):
        return arr
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_null(arr.type) or isinstance(target, NullType):
        return pa.nulls(len(arr), arrow)
    source = _normalized_type(arr, path)
    try:
        arr = _normalize(arr, source)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
        raise CastError(f"Cannot assign to column {path!r}: values of type {arr.type}: {err}", column=path) from err
    if arr.type.equals(arrow):
        return arr
    if isinstance(target, StructType):
        return _assign_struct(arr, target, arrow, path)
    if isinstance(target, ArrayType):
        return _assign_list(arr, target, arrow, path)
    if isinstance(target, MapType):
        return _assign_map(arr, target, arrow, path)
    if isinstance(target, StringType):
        return text_cast.to_text(arr, source, path)
    cast = _CASTS.get(type(target))
    if cast is None or not _can_cast_atomic(source, target):
        raise CastError(
            f"Cannot assign to column {path!r}: a value of type {spark_name(source)} cannot be cast to "
            f"{spark_name(target)}",
            column=path,
        )
    return cast(arr, source, target, path)


def _normalized_type(arr: pa.Array, path: str) -> DataType:
    try:
        return from_arrow_type(arr.type)
    except SchemaError as err:
        raise CastError(f"Cannot assign to column {path!r}: {err}", column=path) from err


def _normalize(arr: pa.Array, source: DataType) -> pa.Array:
    """``arr`` as the Arrow type of its Delta type (large/view strings, other timestamp units, ...)."""
    if isinstance(source, (StructType, ArrayType, MapType)):
        if not (pa.types.is_struct(arr.type) or pa.types.is_map(arr.type) or pa.types.is_list(arr.type)):
            return pc.cast(arr, pa.list_(arr.type.value_field))
        return arr
    arrow = to_arrow_type(source)
    if arr.type.equals(arrow):
        return arr
    if pa.types.is_timestamp(arr.type):
        relabelled = pa.timestamp(arr.type.unit, tz=arrow.tz)
        arr = arr.view(relabelled) if arr.type != relabelled else arr
        options = pc.CastOptions(arrow, allow_time_truncate=True, allow_time_overflow=False)
        return pc.cast(arr, options=options)
    return pc.cast(arr, arrow)


# -------------------------------------------------------------------------------------- nested types


def _validity(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _assign_struct(arr: pa.Array, target: StructType, arrow: pa.DataType, path: str) -> pa.Array:
    if not pa.types.is_struct(arr.type):
        raise CastError(f"Cannot assign to column {path!r}: the value is not a struct", column=path)
    names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
    children = arr.flatten()  # applies the offset and the struct's validity
    fields = [arrow.field(i) for i in range(arrow.num_fields)]
    out: list[pa.Array] = []
    for f, field in zip(target.fields, fields, strict=True):
        index = next((i for i, n in enumerate(names) if n.lower() == f.name.lower()), None)
        if index is None:  # a field the value lacks (schema evolution): NULL
            out.append(pa.nulls(len(arr), field.type))
        else:
            out.append(_assign(children[index], f.type, f"{path}.{f.name}"))
    if not out:
        return pa.Array.from_buffers(arrow, len(arr), [arr.buffers()[0]], offset=arr.offset)
    return pa.StructArray.from_arrays(out, fields=fields, mask=_validity(arr))



def _assign_list(arr: pa.Array, target: ArrayType, arrow: pa.DataType, path: str) -> pa.Array:
    if not pa.types.is_list(arr.type):
        raise CastError(f"Cannot assign to column {path!r}: the value is not an array", column=path)
    offsets, start, stop = rebased_offsets(arr)
    values = _assign(arr.values.slice(start, stop - start), target.element_type, f"{path}.element")
    return pa.ListArray.from_arrays(offsets, values, type=arrow, mask=_validity(arr))


def _assign_map(arr: pa.Array, target: MapType, arrow: pa.DataType, path: str) -> pa.Array:
    if not pa.types.is_map(arr.type):
        raise CastError(f"Cannot assign to column {path!r}: the value is not a map", column=path)
    offsets, start, stop = rebased_offsets(arr)
    keys = _assign(arr.keys.slice(start, stop - start), target.key_type, f"{path}.key")
    items = _assign(arr.items.slice(start, stop - start), target.value_type, f"{path}.value")
    if keys.null_count:
        raise CastError(f"Cannot assign to column {path!r}: a map key cast to NULL", column=path)
    return pa.MapArray.from_arrays(offsets, keys, items, type=arrow, mask=_validity(arr))


# ------------------------------------------------------------------------------------------- atoms


def fail(arr: pa.Array, bad: np.ndarray, source: DataType, target: DataType, path: str) -> None:
    """Raise Spark's ``CAST_OVERFLOW`` for the first value where ``bad`` holds (nothing when none does)."""
    if not bad.any():
        return
    first = arr[int(np.flatnonzero(bad)[0])].as_py()
    raise CastError(
        f"Cannot assign to column {path!r}: the value {first!s} of type {spark_name(source)} cannot be cast "
        f"to {spark_name(target)} due to an overflow (CAST_OVERFLOW; in Delta's MERGE and UPDATE "
        "DELTA_CAST_OVERFLOW_IN_TABLE_WRITE). Help: correct the value, widen the "
        "column, or use try_cast in the assigned expression",
        column=path,
        value=str(first),
    )


def _checked(arr: pa.Array, arrow: pa.DataType, source: DataType, target: DataType, path: str) -> pa.Array:
    """``pc.cast`` with Arrow's checks (no silent overflow or truncation); a value that fails is an overflow."""
    try:
        return pc.cast(arr, arrow, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    bad = np.zeros(len(arr), dtype=bool)
    for i in range(len(arr)):  # only on the error path: find the first value that does not fit
        try:
            pc.cast(arr.slice(i, 1), arrow, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            bad[i] = True
            break
    fail(arr, bad, source, target, path)
    raise CastError(f"Cannot assign to column {path!r}: a value does not fit {spark_name(target)}", column=path)


def _mask(arr: pa.Array) -> np.ndarray:
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _int64(arr: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(arr.cast(pa.int64()), 0).to_numpy(zero_copy_only=False))


def _seconds(arr: pa.Array) -> pa.Array:
    """Timestamps as whole seconds since the epoch, rounded down (Spark's timestamp -> integral)."""
    return pa.array(np.floor_divide(_int64(arr), 1_000_000), pa.int64(), mask=_mask(arr))


def _to_integral(arr: pa.Array, source: DataType, target: DataType, path: str) -> pa.Array:
    arrow = to_arrow_type(target)
    if isinstance(source, StringType):
        return text_cast.parse_integral(arr, path, spark_name(target), _BOUNDS[type(target)]).cast(arrow)
    if isinstance(source, TimestampType):
        arr = _seconds(arr)
    elif isinstance(source, (FloatType, DoubleType, DecimalType)):
        arr = pc.trunc(arr)  # toward zero; NaN and infinities fail the checked cast below
    elif isinstance(source, BooleanType):
        return pc.cast(arr, arrow)
    return _checked(arr, arrow, source, target, path)


def _to_fractional(arr: pa.Array, source: DataType, target: DataType, path: str) -> pa.Array:
    if isinstance(source, StringType):
        arr = text_cast.parse_fractional(arr, path, spark_name(target))
    elif isinstance(source, TimestampType):
        arr = pc.divide(arr.cast(pa.int64()).cast(pa.float64()), 1_000_000.0)
    return pc.cast(arr, to_arrow_type(target), safe=False)


def _to_decimal(arr: pa.Array, source: DataType, target: DataType, path: str) -> pa.Array:
    assert isinstance(target, DecimalType)
    arrow = to_arrow_type(target)
    if isinstance(source, BooleanType):
        arr, source = pc.cast(arr, pa.int8()), ByteType()
    if isinstance(source, _INTEGRAL):
        arr = pc.cast(arr, pa.decimal256(76, 0))
    elif isinstance(source, DecimalType):
        arr = pc.cast(arr, pa.decimal256(76, source.scale))  # room for rounding up (99.995 -> 100.00)
    if isinstance(source, (FloatType, DoubleType, TimestampType)):
        numbers = _to_fractional(arr, source, DoubleType(), path)
        # Spark: NaN and infinities have no decimal (Decimal(double) throws NumberFormatException): NULL.
        numbers = pc.if_else(pc.is_finite(numbers), numbers, pa.scalar(None, pa.float64()))
        # Spark reads a double as the decimal of its shortest text (Double.toString), then rounds it.
        arr, source = text_cast.to_text(numbers, DoubleType(), path), StringType()
    if isinstance(source, StringType):
        arr, _scale = text_cast.parse_decimal_text(arr, path, spark_name(target))
    if pa.types.is_decimal(arr.type) and arr.type.scale > target.scale:
        arr = pc.round(arr, target.scale, round_mode="half_towards_infinity")  # Java's HALF_UP
    return _checked(arr, arrow, source, target, path)


def _to_boolean(arr: pa.Array, source: DataType, target: DataType, path: str) -> pa.Array:
    if isinstance(source, StringType):
        return text_cast.parse_boolean(arr, path)
    zero = pa.scalar(Decimal(0) if pa.types.is_decimal(arr.type) else 0, arr.type)
    return pc.not_equal(arr, zero)


def _to_date(arr: pa.Array, source: DataType, target: DataType, path: str) -> pa.Array:
    if isinstance(source, StringType):
        return text_cast.parse_date(arr, path)
    days = np.floor_divide(_int64(arr), 86_400_000_000)
    return pa.array(days.astype(np.int32), pa.date32(), mask=_mask(arr))


def _to_timestamp(arr: pa.Array, source: DataType, target: DataType, path: str) -> pa.Array:
    arrow = to_arrow_type(target)
    ntz = isinstance(target, TimestampNtzType)
    if isinstance(source, StringType):
        return text_cast.parse_timestamp(arr, path, ntz=ntz)
    if isinstance(source, DateType):
        micros = arr.cast(pa.int32()).cast(pa.int64())
        return pc.multiply(micros, 86_400_000_000).cast(arrow)
    if isinstance(source, (TimestampType, TimestampNtzType)):
        return arr.cast(pa.int64()).cast(arrow)  # the session time zone is UTC: same wall clock
    return _seconds_to_timestamp(arr, source, target, path)


def _seconds_to_timestamp(arr: pa.Array, source: DataType, target: DataType, path: str) -> pa.Array:
    """Numbers as seconds since the epoch (Spark's numeric -> timestamp), overflow checked."""
    arrow = to_arrow_type(target)
    if isinstance(source, _INTEGRAL):
        try:
            micros = pc.multiply_checked(arr.cast(pa.int64()), 1_000_000)
        except pa.ArrowInvalid:
            big = pc.fill_null(pc.greater(pc.abs(arr.cast(pa.float64())), 9.2e12), False)
            fail(arr, np.asarray(big.to_numpy(zero_copy_only=False), dtype=bool), source, target, path)
            raise
        return micros.cast(arrow)
    seconds = pc.multiply(arr.cast(pa.float64()), 1_000_000.0)
    return _checked(pc.trunc(seconds), pa.int64(), source, target, path).cast(arrow)


def _to_binary(arr: pa.Array, source: DataType, target: DataType, path: str) -> pa.Array:
    return pc.cast(arr, pa.binary())


_CASTS: dict[type[DataType], Callable[[pa.Array, DataType, DataType, str], pa.Array]] = {
    ByteType: _to_integral,
    ShortType: _to_integral,
    IntegerType: _to_integral,
    LongType: _to_integral,
    FloatType: _to_fractional,
    DoubleType: _to_fractional,
    DecimalType: _to_decimal,
    BooleanType: _to_boolean,
    DateType: _to_date,
    TimestampType: _to_timestamp,
    TimestampNtzType: _to_timestamp,
    BinaryType: _to_binary,
}

"""Values written as text the way Spark's ``CAST(value AS STRING)`` writes them.

Numbers as Java prints them (``1.0E10``, ``0.001``, ``1.0``), ``true``/``false``, dates
``yyyy-MM-dd``, timestamps ``yyyy-MM-dd HH:mm:ss[.ffffff]`` (trailing zeros of the fraction dropped,
``timestamp`` in UTC), binaries decoded as UTF-8, arrays ``[1, 2]``, maps ``{k -> v}``, structs
``{1, x}`` (a NULL inside is ``null``). Vectorised with Arrow's string kernels, except floating-point
numbers, which are formatted once per distinct value.

Example:
    >>> import pyarrow as pa
    >>> from airflow_provider_delta.core.schema.types import DoubleType
    >>> format_values(pa.array([1e10, 0.5, None]), DoubleType(), "c").to_pylist()
    ['1.0E10', '0.5', None]
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.schema.arrow import rebased_offsets
from airflow_provider_delta.core.schema.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    MapType,
    StringType,
    StructType,
    TimestampNtzType,
    TimestampType,
)
from airflow_provider_delta.exceptions import CastError

__all__ = ["format_values", "java_number"]


def format_values(arr: pa.Array, source: DataType, path: str) -> pa.Array:
    """``arr`` (values of Delta type ``source``, in its Arrow type) as Spark's text."""
    if isinstance(source, StringType):
        return pc.cast(arr, pa.string())
    if isinstance(source, BooleanType):
        return pc.if_else(arr, "true", "false")
    if isinstance(source, (FloatType, DoubleType)):
        return _floats(arr, single=isinstance(source, FloatType))
    if isinstance(source, DecimalType):
        return _decimals(arr)
    if isinstance(source, DateType):
        return pc.strftime(arr, format="%Y-%m-%d")
    if isinstance(source, (TimestampType, TimestampNtzType)):
        return _timestamps(arr)
    if isinstance(source, BinaryType):
        return _utf8(arr)
    if isinstance(source, ArrayType):
        return _list(arr, source, path)
    if isinstance(source, MapType):
        return _map(arr, source, path)
    if isinstance(source, StructType):
        return _struct(arr, source, path)
    try:
        return pc.cast(arr, pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise CastError(f"Cannot assign to column {path!r}: {err}", column=path) from err


def java_number(value: float, *, single: bool = False) -> str:
    """A float as Java's ``Double.toString`` (``Float.toString`` when ``single``) writes it.

    Example:
        >>> java_number(1e10), java_number(0.001), java_number(1e-4), java_number(12.0)
        ('1.0E10', '0.001', '1.0E-4', '12.0')
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    shortest = str(np.float32(value)) if single else repr(value)
    sign, digits, exponent = Decimal(shortest).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    exponent = int(exponent) + len(digits) - len(text)
    prefix = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        point = len(text) + exponent
        if exponent >= 0:
            return f"{prefix}{text}{'0' * exponent}.0"
        if point > 0:
            return f"{prefix}{text[:point]}.{text[point:]}"
        return f"{prefix}0.{'0' * -point}{text}"
    return f"{prefix}{text[0]}.{text[1:] or '0'}E{len(text) - 1 + exponent}"


def _floats(arr: pa.Array, *, single: bool) -> pa.Array:
    distinct = pc.unique(arr.cast(pa.float64()).drop_null())
    texts = pa.array([java_number(v, single=single) for v in distinct.to_pylist()], pa.string())
    return pc.take(texts, pc.index_in(arr.cast(pa.float64()), distinct, skip_nulls=True))


def _decimals(arr: pa.Array) -> pa.Array:
    """Decimals written plainly with all their scale digits, as Spark does (``0.00000010``, ``0.00000000``;
    Arrow's own text turns small values into ``1.0E-7``): the unscaled integer with a point put in."""
    scale = arr.type.scale
    if scale <= 0:
        return pc.cast(arr, pa.string())
    wide = pa.types.is_decimal256(arr.type)
    unscaled_type = (pa.decimal256 if wide else pa.decimal128)(arr.type.precision, 0)
    unscaled = pa.Array.from_buffers(unscaled_type, len(arr), arr.buffers(), offset=arr.offset)
    text = pc.cast(unscaled, pa.string())
    digits = pc.utf8_lpad(pc.utf8_ltrim(text, "-"), scale + 1, "0")
    plain = pc.binary_join_element_wise(
        pc.utf8_slice_codeunits(digits, 0, -scale), pc.utf8_slice_codeunits(digits, -scale), "."
    )
    signed = pc.binary_join_element_wise("-", plain, "")
    return pc.if_else(pc.starts_with(text, "-"), signed, plain)


def _timestamps(arr: pa.Array) -> pa.Array:
    text = pc.strftime(arr, format="%Y-%m-%d %H:%M:%S")
    text = pc.replace_substring_regex(text, r"(\.[0-9]*?)0+$", r"\1")
    return pc.replace_substring_regex(text, r"\.$", "")


def _utf8(arr: pa.Array) -> pa.Array:
    try:
        return pc.cast(arr, pa.string())
    except pa.ArrowInvalid:  # invalid UTF-8: Java decodes it with replacement characters
        values = [None if v is None else v.decode("utf-8", errors="replace") for v in arr.to_pylist()]
        return pa.array(values, pa.string())


def _null_text(arr: pa.Array) -> pa.Array:
    return pc.fill_null(arr, "null")



def _wrap(joined: pa.Array, left: str, right: str, arr: pa.Array) -> pa.Array:
    out = pc.binary_join_element_wise(left, joined, right, "")
    return pc.if_else(arr.is_valid(), out, pa.scalar(None, pa.string()))


def _list(arr: pa.Array, source: ArrayType, path: str) -> pa.Array:
    offsets, start, stop = rebased_offsets(arr)
    values = _null_text(format_values(arr.values.slice(start, stop - start), source.element_type, path))
    lists = pa.ListArray.from_arrays(offsets, values)
    return _wrap(pc.binary_join(lists, ", "), "[", "]", arr)


def _map(arr: pa.Array, source: MapType, path: str) -> pa.Array:
    offsets, start, stop = rebased_offsets(arr)
    keys = format_values(arr.keys.slice(start, stop - start), source.key_type, path)
    items = _null_text(format_values(arr.items.slice(start, stop - start), source.value_type, path))
    entries = pa.ListArray.from_arrays(offsets, pc.binary_join_element_wise(keys, items, " -> "))
    return _wrap(pc.binary_join(entries, ", "), "{", "}", arr)


def _struct(arr: pa.Array, source: StructType, path: str) -> pa.Array:
    if not len(source):
        return _wrap(pa.array([""] * len(arr), pa.string()), "{", "}", arr)
    children = arr.flatten()
    texts = [_null_text(format_values(c, f.type, path)) for c, f in zip(children, source.fields, strict=True)]
    return _wrap(pc.binary_join_element_wise(*texts, ", "), "{", "}", arr)

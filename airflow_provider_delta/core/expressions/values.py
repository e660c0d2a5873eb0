"""Python values against Arrow types: a literal's Spark type, and Spark-style CAST of Python values.

Shared by every stage: parsing folds constant CASTs with :func:`_convert_value`, binding coerces
literals to column types, rendering picks a literal's SQL spelling from :func:`_infer_type`, and file
skipping turns JSON statistics into comparable values.

Example:
    >>> _convert_value("2020-01-02 10:00:00", pa.date32())
    datetime.date(2020, 1, 2)
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core.partitions import format_timestamp, parse_timestamp
from airflow_provider_delta.exceptions import PredicateError

if TYPE_CHECKING:
    from collections.abc import Callable


def _infer_type(value: Any) -> pa.DataType:
    if value is None:
        return pa.null()
    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return pa.int32()
        if -(2**63) <= value < 2**63:
            return pa.int64()
        return pa.decimal128(38, 0)
    if isinstance(value, float):
        return pa.float64()
    if isinstance(value, decimal.Decimal):
        return _decimal_type(value)
    if isinstance(value, str):
        return pa.string()
    if isinstance(value, (bytes, bytearray)):
        return pa.binary()
    if isinstance(value, dt.datetime):
        return pa.timestamp("us", tz="UTC" if value.tzinfo is not None else None)
    if isinstance(value, dt.date):
        return pa.date32()
    raise PredicateError(f"Cannot build literal {value!r}: unsupported Python type {type(value).__name__}")


def _decimal_type(value: decimal.Decimal) -> pa.DataType:
    if not value.is_finite():
        raise PredicateError(f"Cannot build literal {value!r}: decimal literals must be finite")
    _, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    scale = max(-exponent, 0)
    precision = max(len(digits) + max(exponent, 0), scale, 1)
    if precision > 38:
        raise PredicateError(f"Cannot build literal {value!r}: more than 38 digits")
    return pa.decimal128(precision, scale)


def _is_string_type(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or str(t) == "string_view")


def _is_binary_type(t: pa.DataType) -> bool:
    return bool(pa.types.is_binary(t) or pa.types.is_large_binary(t) or str(t) == "binary_view")


def _is_numeric_type(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


_DATE_PREFIX_RE = re.compile(r"\s*([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:[ T].*)?\s*")


def _parse_number(text: str) -> int | decimal.Decimal:
    stripped = text.strip()
    if re.fullmatch(r"[+-]?[0-9]+", stripped):
        return int(stripped)
    value = decimal.Decimal(stripped)  # raises decimal.InvalidOperation (an ArithmeticError)
    if not value.is_finite():
        raise ValueError(f"not a finite number: {text!r}")
    return value


def _convert_value(value: Any, t: pa.DataType) -> Any:
    """Convert a Python value to the Python value of Arrow type ``t`` the way a Spark CAST would."""
    if value is None:
        return None
    if _is_string_type(t):
        return _to_string(value)
    for accepts, convert in _CONVERTERS:
        if accepts(t):
            result = convert(value, t)
            if result is not _NOT_CONVERTED:
                return result
            break
    raise TypeError(f"cannot convert {type(value).__name__} {value!r} to {t}")


# Each converter returns _NOT_CONVERTED for a value its type cannot be cast from.
_NOT_CONVERTED = object()


def _to_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, dt.datetime):
        return format_timestamp(value)
    if isinstance(value, (dt.date, int, float)):
        return str(value)
    return format(value, "f") if isinstance(value, decimal.Decimal) else str(value)


def _to_binary(value: Any, t: pa.DataType) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return _NOT_CONVERTED


def _to_boolean(value: Any, t: pa.DataType) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, bool) or _is_number(value):
        return bool(value)
    return _NOT_CONVERTED


def _to_integer(value: Any, t: pa.DataType) -> Any:
    number = _parse_number(value) if isinstance(value, str) else value
    if not (_is_number(number) or isinstance(number, bool)):
        return _NOT_CONVERTED
    result = int(number)  # truncates toward zero, like Spark's cast
    bits = t.bit_width
    lo, hi = (0, 2**bits) if pa.types.is_unsigned_integer(t) else (-(2 ** (bits - 1)), 2 ** (bits - 1))
    if not lo <= result < hi:
        raise ValueError(f"{value!r} is out of range for {t}")
    return result


def _to_float(value: Any, t: pa.DataType) -> Any:
    if isinstance(value, str):
        special = {"nan": math.nan, "infinity": math.inf, "-infinity": -math.inf, "inf": math.inf}
        lowered = value.strip().lower()
        return special[lowered] if lowered in special else float(_parse_number(value))
    if _is_number(value):
        return float(value)
    return _NOT_CONVERTED


def _to_decimal(value: Any, t: pa.DataType) -> Any:
    number = _parse_number(value) if isinstance(value, str) else value
    if not _is_number(number):
        return _NOT_CONVERTED
    exact = decimal.Decimal(repr(number)) if isinstance(number, float) else decimal.Decimal(number)
    quantized = exact.quantize(decimal.Decimal(1).scaleb(-t.scale), rounding=decimal.ROUND_HALF_UP)
    if len(quantized.as_tuple().digits) > t.precision and quantized != 0:
        raise ValueError(f"{value!r} does not fit {t}")
    return quantized


def _to_date(value: Any, t: pa.DataType) -> Any:
    if isinstance(value, dt.datetime):
        return (value.astimezone(dt.timezone.utc) if value.tzinfo else value).date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        match = _DATE_PREFIX_RE.fullmatch(value)
        if match is None:
            raise ValueError(f"{value!r} is not a date")
        return dt.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    return _NOT_CONVERTED


def _to_timestamp(value: Any, t: pa.DataType) -> Any:
    zoned = t.tz is not None
    if isinstance(value, str):
        return parse_timestamp(value, zoned=zoned)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.timezone.utc) if zoned else value
        utc = value.astimezone(dt.timezone.utc)
        return utc if zoned else utc.replace(tzinfo=None)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc if zoned else None)
    return _NOT_CONVERTED


def _is_binary_like(t: pa.DataType) -> bool:
    return _is_binary_type(t) or bool(pa.types.is_fixed_size_binary(t))


# Checked in order; the first type family that accepts ``t`` decides.
_CONVERTERS: tuple[tuple[Callable[[pa.DataType], bool], Callable[[Any, pa.DataType], Any]], ...] = (
    (_is_binary_like, _to_binary),
    (pa.types.is_boolean, _to_boolean),
    (pa.types.is_integer, _to_integer),
    (pa.types.is_floating, _to_float),
    (pa.types.is_decimal, _to_decimal),
    (pa.types.is_date, _to_date),
    (pa.types.is_timestamp, _to_timestamp),
)

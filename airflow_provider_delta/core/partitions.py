"""Partition values: the protocol's string form, typed Python values, Arrow columns and Hive-style paths.

PROTOCOL.md "Partition Value Serialization": every partition value is stored in ``add.partitionValues``
as a string (or JSON ``null``); an empty string means ``null`` for every type. Directory names follow
Hive's convention (``a=1/b=__HIVE_DEFAULT_PARTITION__``), with the characters Hive cannot keep in a path
escaped as ``%XX``. The directory layout is only a convention: readers take values from the log.

Example:
    >>> import pyarrow as pa
    >>> decode_partition_value("2021-09-08 11:11:11", pa.timestamp("us", tz="UTC"))
    datetime.datetime(2021, 9, 8, 11, 11, 11, tzinfo=datetime.timezone.utc)
    >>> partition_path(["a", "b"], {"a": "x/y", "b": None})
    'a=x%2Fy/b=__HIVE_DEFAULT_PARTITION__'
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import struct
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.exceptions import LogCorruptedError, SchemaMismatchError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "HIVE_DEFAULT_PARTITION",
    "decode_partition_value",
    "decode_partition_values",
    "encode_partition_value",
    "escape_partition_path_component",
    "format_timestamp",
    "parse_timestamp",
    "partition_column",
    "partition_path",
    "unescape_partition_path_component",
]

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
"""Directory name Hive and Spark use for a ``null`` (or empty) partition value."""

_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?")
_FLOAT_SPECIALS = {
    "nan": math.nan,
    "+nan": math.nan,
    "-nan": math.nan,
    "infinity": math.inf,
    "+infinity": math.inf,
    "inf": math.inf,
    "+inf": math.inf,
    "-infinity": -math.inf,
    "-inf": -math.inf,
}
_DECIMAL_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})")
# Spark writes "yyyy-MM-dd HH:mm:ss[.SSSSSS]"; Delta Kernel and delta-rs also write ISO-8601 with "T"
# and "Z" or an offset (kernel-timestamp-partition-col-ISO8601 in the conformance corpus).
_TIMESTAMP_RE = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
    r"(?:[ T](?P<h>[0-9]{1,2}):(?P<mi>[0-9]{2})(?::(?P<s>[0-9]{2})(?:\.(?P<f>[0-9]{1,9}))?)?)?"
    r"\s*(?P<tz>Z|UTC|[+-][0-9]{2}(?::?[0-9]{2})?)?"
)
_INT_RANGES = {
    8: (-(2**7), 2**7 - 1),
    16: (-(2**15), 2**15 - 1),
    32: (-(2**31), 2**31 - 1),
    64: (-(2**63), 2**63 - 1),
}
# Hive's ExternalCatalogUtils.escapePathName escapes these plus the ASCII control characters.
_PATH_ESCAPED = frozenset("\"#%'*/:=?\\\x7f{[]^")
_UNESCAPE_RE = re.compile(r"%([0-9A-Fa-f]{2})")


def _corrupt(column: str | None, raw: str, arrow_type: pa.DataType, reason: str) -> LogCorruptedError:
    name = f"partition column {column!r} value" if column is not None else "partition value"
    return LogCorruptedError(f"Cannot decode {name} {raw!r} as {arrow_type}: {reason}")


def decode_partition_value(raw: str | None, arrow_type: pa.DataType, *, column: str | None = None) -> Any:
    """Decode one serialized partition value into a Python value of ``arrow_type``.

    ``None`` and the empty string decode to ``None`` for every type (PROTOCOL.md: "An empty string for
    any type translates to a null partition value"). Timestamps come back as timezone-aware
    ``datetime`` in UTC for zoned types (a zone-less value is read as UTC) and naive ``datetime`` for
    ``timestamp_ntz``; binary values are the UTF-8 bytes of the string, as Delta Kernel reads them.

    Args:
        raw: The value from ``add.partitionValues``.
        arrow_type: The column's Arrow type.
        column: The column name, for the error message.

    Returns:
        ``None``, ``bool``, ``int``, ``float``, ``decimal.Decimal``, ``str``, ``bytes``,
        ``datetime.date`` or ``datetime.datetime``.

    Raises:
        LogCorruptedError: ``raw`` is not a valid serialization for the type.

    Example:
        >>> decode_partition_value("", pa.string()) is None
        True
        >>> decode_partition_value("11.01", pa.decimal128(10, 2))
        Decimal('11.01')
    """
    if raw is None or raw == "":
        return None
    t = arrow_type
    if pa.types.is_dictionary(t):
        return decode_partition_value(raw, t.value_type, column=column)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or _is_view(t, "string_view"):
        return raw
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or _is_view(t, "binary_view"):
        return raw.encode("utf-8")
    if pa.types.is_fixed_size_binary(t):
        data = raw.encode("utf-8")
        if len(data) != t.byte_width:
            raise _corrupt(column, raw, t, f"expected {t.byte_width} bytes, found {len(data)}")
        return data
    if pa.types.is_boolean(t):
        lowered = raw.lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        raise _corrupt(column, raw, t, "expected 'true' or 'false'")
    if pa.types.is_integer(t):
        return _decode_int(raw, t, column)
    if pa.types.is_floating(t):
        return _decode_float(raw, t, column)
    if pa.types.is_decimal(t):
        return _decode_decimal(raw, t, column)
    if pa.types.is_date(t):
        return _decode_date(raw, t, column)
    if pa.types.is_timestamp(t):
        return _decode_timestamp(raw, t, column)
    raise _corrupt(column, raw, t, "type cannot be a partition column")


def _is_view(t: pa.DataType, name: str) -> bool:
    # string_view / binary_view exist from pyarrow 16; compare by name to stay version-neutral.
    return str(t) == name


def _decode_int(raw: str, t: pa.DataType, column: str | None) -> int:
    if not _INT_RE.fullmatch(raw):
        raise _corrupt(column, raw, t, "not an integer")
    value = int(raw)
    bits = t.bit_width
    lo, hi = (0, 2**bits - 1) if pa.types.is_unsigned_integer(t) else _INT_RANGES[bits]
    if not lo <= value <= hi:
        raise _corrupt(column, raw, t, f"out of range [{lo}, {hi}]")
    return value


def _decode_float(raw: str, t: pa.DataType, column: str | None) -> float:
    special = _FLOAT_SPECIALS.get(raw.lower())
    if special is not None:
        return special
    if not _FLOAT_RE.fullmatch(raw):
        raise _corrupt(column, raw, t, "not a floating-point number")
    # Java's Float/Double.toString never writes the "f"/"d" suffix, but Java's parser accepts it.
    value = float(raw.rstrip("fFdD"))
    if t.bit_width == 32 and math.isfinite(value):
        try:
            value = _to_float32(value)  # the value Arrow stores, so comparisons agree with the data
        except OverflowError as err:
            raise _corrupt(column, raw, t, "out of range for float") from err
    return value


def _to_float32(value: float) -> float:
    result: float = struct.unpack("f", struct.pack("f", value))[0]
    return result


def _decode_decimal(raw: str, t: pa.DataType, column: str | None) -> decimal.Decimal:
    if not _DECIMAL_RE.fullmatch(raw):
        raise _corrupt(column, raw, t, "not a decimal number")
    context = decimal.Context(prec=max(t.precision, 1) + 2, traps=[decimal.Inexact, decimal.InvalidOperation])
    try:
        value = decimal.Decimal(raw).quantize(decimal.Decimal(1).scaleb(-t.scale), context=context)
    except decimal.DecimalException as err:
        raise _corrupt(column, raw, t, f"does not fit scale {t.scale}") from err
    digits = len(value.as_tuple().digits)
    if value != 0 and digits > t.precision:
        raise _corrupt(column, raw, t, f"more than {t.precision} digits")
    return value


def _decode_date(raw: str, t: pa.DataType, column: str | None) -> dt.date:
    match = _DATE_RE.fullmatch(raw)
    if match is None:
        raise _corrupt(column, raw, t, "expected yyyy-MM-dd")
    try:
        return dt.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError as err:
        raise _corrupt(column, raw, t, str(err)) from err


def _decode_timestamp(raw: str, t: pa.DataType, column: str | None) -> dt.datetime:
    try:
        value = parse_timestamp(raw, zoned=t.tz is not None)
    except ValueError as err:
        raise _corrupt(column, raw, t, str(err)) from err
    return value


def parse_timestamp(text: str, *, zoned: bool) -> dt.datetime:
    """Parse a Delta timestamp string (Spark's ``yyyy-MM-dd HH:mm:ss[.SSSSSS]`` or ISO-8601).

    For ``zoned`` results a zone-less text is read as UTC and the result is aware, in UTC; otherwise
    the result is naive (an explicit zone is first converted to UTC wall-clock time).

    Args:
        text: The text to parse.
        zoned: Whether the target is a zoned timestamp.

    Returns:
        The parsed timestamp.

    Raises:
        ValueError: The text is not a timestamp or has sub-microsecond digits.
    """
    match = _TIMESTAMP_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError("expected 'yyyy-MM-dd HH:mm:ss[.SSSSSS]' or ISO-8601")
    fraction = match.group("f") or ""
    if len(fraction) > 6 and fraction[6:].strip("0"):
        raise ValueError("sub-microsecond precision is not supported")
    micros = int((fraction[:6]).ljust(6, "0")) if fraction else 0
    value = dt.datetime(
        int(match.group("y")),
        int(match.group("mo")),
        int(match.group("d")),
        int(match.group("h") or 0),
        int(match.group("mi") or 0),
        int(match.group("s") or 0),
        micros,
        tzinfo=_zone(match.group("tz")),
    )
    value = value.astimezone(dt.timezone.utc)
    return value if zoned else value.replace(tzinfo=None)


def format_timestamp(value: dt.datetime) -> str:
    """Format a timestamp as Spark writes partition values: ``yyyy-MM-dd HH:mm:ss.SSSSSS`` in UTC.

    Args:
        value: An aware timestamp (converted to UTC) or a naive one (written as is).

    Returns:
        The text, with a four-digit year.

    Example:
        >>> format_timestamp(dt.datetime(999, 1, 2, 3, 4, 5))
        '0999-01-02 03:04:05.000000'
    """
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value.isoformat(sep=" ", timespec="microseconds")


def _zone(text: str | None) -> dt.tzinfo:
    if text is None or text in ("Z", "UTC"):
        return dt.timezone.utc
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    return dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes))


def decode_partition_values(values: Mapping[str, str | None], schema: pa.Schema) -> dict[str, Any]:
    """Decode every partition value of a file whose column appears in ``schema``.

    Args:
        values: ``add.partitionValues`` (keys are the names used in the log).
        schema: Arrow schema holding the partition columns under the same names.

    Returns:
        Column name -> decoded Python value; columns missing from ``values`` are ``None``.

    Raises:
        LogCorruptedError: A value cannot be decoded.

    Example:
        >>> decode_partition_values({"d": "2020-01-01"}, pa.schema([("d", pa.date32())]))
        {'d': datetime.date(2020, 1, 1)}
    """
    return {
        name: decode_partition_value(values.get(name), schema.field(name).type, column=name)
        for name in schema.names
    }


def partition_column(
    raw: str | None, arrow_type: pa.DataType, length: int, *, column: str | None = None
) -> pa.Array:
    """Build the constant Arrow column a file's rows get for one partition value.

    Args:
        raw: The serialized value from ``add.partitionValues``.
        arrow_type: The column's Arrow type.
        length: Number of rows.
        column: The column name, for the error message.

    Returns:
        An array of ``length`` copies of the decoded value (or nulls).

    Raises:
        LogCorruptedError: The value cannot be decoded.

    Example:
        >>> partition_column("7", pa.int32(), 2).to_pylist()
        [7, 7]
    """
    value = decode_partition_value(raw, arrow_type, column=column)
    if value is None:
        return pa.nulls(length, type=arrow_type)
    return pa.repeat(pa.scalar(value, type=arrow_type), length)


def encode_partition_value(value: Any, arrow_type: pa.DataType) -> str | None:
    """Serialize a Python value the way Spark writes ``add.partitionValues``.

    ``None`` and the empty string encode to ``None`` (Spark stores an empty string partition value as
    null). Timestamps are written as ``yyyy-MM-dd HH:mm:ss.SSSSSS`` in UTC (naive values of a zoned
    column are taken as UTC); floats as Java prints them for NaN and infinities.

    Args:
        value: The partition value.
        arrow_type: The column's Arrow type.

    Returns:
        The string for ``partitionValues``, or ``None`` for a null value.

    Raises:
        SchemaMismatchError: The value does not fit the type.

    Example:
        >>> encode_partition_value(dt.date(2020, 1, 2), pa.date32())
        '2020-01-02'
    """
    if value is None:
        return None
    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    try:
        text = _encode(value, t)
    except (TypeError, ValueError, OverflowError, decimal.DecimalException) as err:
        raise SchemaMismatchError(f"Cannot encode partition value {value!r} as {t}: {err}") from err
    except LogCorruptedError as err:  # the range checks are shared with decoding
        reason = str(err).rpartition(": ")[2]
        raise SchemaMismatchError(f"Cannot encode partition value {value!r} as {t}: {reason}") from err
    return text if text != "" else None


def _encode(value: Any, t: pa.DataType) -> str:
    if pa.types.is_string(t) or pa.types.is_large_string(t) or _is_view(t, "string_view"):
        return _expect(value, str)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        # The inverse of decoding as UTF-8; Delta Kernel writes undecodable bytes lossily as well.
        return bytes(_expect(value, (bytes, bytearray, memoryview))).decode("utf-8", "replace")
    if pa.types.is_boolean(t):
        return "true" if _expect(value, bool) else "false"
    if pa.types.is_integer(t):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected int, found {type(value).__name__}")
        return str(_decode_int(str(value), t, None))
    if pa.types.is_floating(t):
        return _encode_float(value, t)
    if pa.types.is_decimal(t):
        number = value if isinstance(value, decimal.Decimal) else decimal.Decimal(_expect(value, (int, str)))
        return format(_decode_decimal(format(number, "f"), t, None), "f")
    if pa.types.is_date(t):
        if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
            raise TypeError(f"expected date, found {type(value).__name__}")
        return value.isoformat()
    if pa.types.is_timestamp(t):
        return format_timestamp(_expect(value, dt.datetime))
    raise TypeError(f"type {t} cannot be a partition column")


def _expect(value: Any, types: type | tuple[type, ...]) -> Any:
    if not isinstance(value, types):
        raise TypeError(f"unexpected Python type {type(value).__name__}")
    return value


def _encode_float(value: Any, t: pa.DataType) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected float, found {type(value).__name__}")
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if t.bit_width == 32:
        # Shortest text that reads back as the same float32 (Java's Float.toString does the same).
        single = _to_float32(number)
        for digits in range(1, 10):
            text = f"{single:.{digits}g}"
            if _to_float32(float(text)) == single:
                return repr(float(text))
    return repr(number)


def escape_partition_path_component(text: str) -> str:
    """Escape a partition column name or value for a directory name, as Hive and Spark do.

    Control characters below ``0x20`` and ``"#%'*/:=?\\{[]^`` and DEL become ``%XX`` (uppercase hex);
    everything else, including spaces and non-ASCII characters, is kept.

    Args:
        text: Column name or serialized value.

    Returns:
        The escaped text.

    Example:
        >>> escape_partition_path_component("2021-01-01 10:00:00")
        '2021-01-01 10%3A00%3A00'
    """
    if not any(ch in _PATH_ESCAPED or ch < " " for ch in text):
        return text
    return "".join(f"%{ord(ch):02X}" if ch in _PATH_ESCAPED or ch < " " else ch for ch in text)


def unescape_partition_path_component(text: str) -> str:
    """Undo :func:`escape_partition_path_component`; a ``%`` not followed by two hex digits stays.

    Args:
        text: An escaped directory name component.

    Returns:
        The original text.

    Example:
        >>> unescape_partition_path_component("a%3Db")
        'a=b'
    """
    if "%" not in text:
        return text
    return _UNESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), text)


def partition_path(partition_columns: Sequence[str], values: Mapping[str, str | None]) -> str:
    """Build the Hive-style relative directory for a file's serialized partition values.

    The result is a file-system path; ``add.path`` additionally URI-encodes it (``%`` -> ``%25``).

    Args:
        partition_columns: The table's partition columns, in order.
        values: Serialized values (as in ``partitionValues``); ``None`` or ``""`` is null.

    Returns:
        ``col=value/...`` with nulls as ``__HIVE_DEFAULT_PARTITION__``, or ``""`` when unpartitioned.

    Example:
        >>> partition_path(["a", "b"], {"a": "1", "b": None})
        'a=1/b=__HIVE_DEFAULT_PARTITION__'
    """
    parts = []
    for name in partition_columns:
        raw = values.get(name)
        value = HIVE_DEFAULT_PARTITION if raw is None or raw == "" else escape_partition_path_component(raw)
        parts.append(f"{escape_partition_path_component(name)}={value}")
    return "/".join(parts)

"""Text in Spark's ANSI casts: strings parsed as numbers, booleans, dates and timestamps, values written as text.

The grammar is Spark's (``UTF8String.toLong``, ``Double.parseDouble``, ``java.math.BigDecimal``,
``StringUtils.isTrueString``, ``DateTimeUtils.stringToDate`` / ``stringToTimestamp``, ``Cast``'s
``castToString``); parsing is vectorised with Arrow's RE2 regular expressions and numpy arithmetic.
:mod:`airflow_provider_delta.core.schema.store_assignment` calls these; each parser raises
:class:`~airflow_provider_delta.exceptions.CastError` naming the first malformed value.

Example:
    >>> import pyarrow as pa
    >>> parse_boolean(pa.array([" yes", "0", None]), "flag").to_pylist()
    [True, False, None]
"""

from __future__ import annotations

import zoneinfo
from decimal import Decimal
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.schema import text_format
from airflow_provider_delta.exceptions import CastError

if TYPE_CHECKING:
    from airflow_provider_delta.core.schema.types import DataType

__all__ = [
    "parse_boolean",
    "parse_date",
    "parse_decimal_text",
    "parse_fractional",
    "parse_integral",
    "parse_timestamp",
    "to_text",
]

# UTF8String.trimAll / Java's String.trim: ASCII control characters and the space.
_TRIM = "".join(chr(c) for c in range(33)) + chr(127)
_INTEGRAL = r"^[+-]?[0-9]+$"
_JAVA_DOUBLE = r"^[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)$"
_JAVA_HEX_DOUBLE = r"^[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?$"
_BIG_DECIMAL = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_TRUE = ("t", "true", "y", "yes", "1")
_FALSE = ("f", "false", "n", "no", "0")
_DATE = (
    r"^(?P<sign>[+-]?)(?P<y>[0-9]{4,7})(?:-(?P<mo>[0-9]{1,2})(?:-(?P<d>[0-9]{1,2})(?P<rest>[ T].*)?)?)?$"
)
_TIMESTAMP = (
    r"^(?P<sign>[+-]?)(?P<y>[0-9]{4,7})(?:-(?P<mo>[0-9]{1,2})(?:-(?P<d>[0-9]{1,2})"
    r"(?:[ T](?P<h>[0-9]{1,2})(?::(?P<mi>[0-9]{1,2})(?::(?P<s>[0-9]{1,2})(?:\.(?P<f>[0-9]*))?)?)?"
    r"(?P<z>[^0-9].*)?)?)?)?$"
)
_OFFSET = r"^(?:(?:UTC|GMT|UT)?(?P<sign>[+-])(?P<h>[0-9]{1,2})(?::?(?P<m>[0-9]{2})(?::?(?P<s>[0-9]{2}))?)?)$"
_UTC_NAMES = ("Z", "UTC", "GMT", "UT")
_MICROS_PER_DAY = 86_400_000_000


def trimmed(arr: pa.Array) -> pa.Array:
    """``arr`` as ``string`` with leading and trailing ASCII control characters and spaces removed."""
    if not pa.types.is_string(arr.type):
        arr = pc.cast(arr, pa.string())
    return pc.utf8_trim(arr, characters=_TRIM)


def _bad(arr: pa.Array, ok: pa.Array) -> np.ndarray:
    """Rows holding a value (not null) for which ``ok`` is false or null."""
    filled = pc.fill_null(ok, False)
    return np.asarray(pc.and_(arr.is_valid(), pc.invert(filled)).to_numpy(zero_copy_only=False), dtype=bool)


def malformed(original: pa.Array, bad: np.ndarray, target: str, path: str) -> None:
    """Raise Spark's ``CAST_INVALID_INPUT`` for the first row where ``bad`` holds (nothing when none)."""
    if not bad.any():
        return
    value = original[int(np.flatnonzero(bad)[0])].as_py()
    raise CastError(
        f"Cannot assign to column {path!r}: the value {value!r} of type STRING cannot be cast to {target} "
        "because it is malformed (CAST_INVALID_INPUT). Help: correct the value, or use try_cast in the "
        "assigned expression",
        column=path,
        value=str(value),
    )


# ------------------------------------------------------------------------------------------ numbers


def parse_integral(arr: pa.Array, path: str, target: str, bound: int) -> pa.Array:
    """Strings as ``int64``: an optional sign and ASCII digits only, within ``[-bound, bound)`` (Spark's
    ANSI ``toLongExact`` / ``toIntExact`` ...: a number out of range is malformed text too)."""
    text = trimmed(arr)
    malformed(arr, _bad(text, pc.match_substring_regex(text, _INTEGRAL)), target, path)
    digits = pc.replace_substring_regex(pc.replace_substring_regex(text, r"^\+", ""), r"^(-?)0+([0-9])", r"\1\2")
    short = pc.less_equal(pc.utf8_length(digits), 18)  # fits int64 whatever it is
    long_rows = _bad(arr, short)
    for i in np.flatnonzero(long_rows):  # only the rows of 19 digits or more
        long_rows[i] = not -(2**63) <= int(digits[int(i)].as_py()) < 2**63
    malformed(arr, long_rows, target, path)
    values = pc.cast(digits, pa.int64())
    if bound < 2**63:
        inside = pc.and_(pc.greater_equal(values, -bound), pc.less(values, bound))
        malformed(arr, _bad(values, inside), target, path)
    return values


def parse_fractional(arr: pa.Array, path: str, target: str) -> pa.Array:
    """Strings as ``float64`` as Java's ``Double.parseDouble`` reads them, plus Spark's ``inf``/``nan``
    spellings (any case, optional sign); ``1e400`` is infinity, as in Java."""
    text = trimmed(arr)
    lower = pc.utf8_lower(text)
    special = pc.is_in(lower, pa.array(["inf", "+inf", "infinity", "+infinity", "-inf", "-infinity", "nan"]))
    hexadecimal = pc.match_substring_regex(text, _JAVA_HEX_DOUBLE)
    ok = pc.or_(pc.or_(pc.match_substring_regex(text, _JAVA_DOUBLE), special), hexadecimal)
    malformed(arr, _bad(text, ok), target, path)
    if pc.any(pc.fill_null(hexadecimal, False)).as_py():
        return _hex_doubles(text, hexadecimal, lower)
    text = pc.replace_substring_regex(text, r"([0-9.])[fFdD]$", r"\1")
    text = pc.replace_substring_regex(pc.replace_substring_regex(text, r"^\+", ""), r"(?i)^(-?)inf(inity)?$", r"\1inf")
    text = pc.replace_substring_regex(text, r"^-?(?i:nan)$", "nan")
    return _parse_double(text)


def _hex_doubles(text: pa.Array, hexadecimal: pa.Array, lower: pa.Array) -> pa.Array:
    """Java's hexadecimal floating-point text (``0x1p3`` is 8.0); only columns holding such text come here."""
    rows = np.asarray(pc.fill_null(hexadecimal, False).to_numpy(zero_copy_only=False), dtype=bool)
    out: list[float | None] = []
    for i, value in enumerate(text.to_pylist()):
        if value is None:
            out.append(None)
        elif rows[i]:
            out.append(float.fromhex(value.rstrip("fFdD")))
        else:
            out.append(_parse_double(pa.array([_java_spelling(value, lower[i].as_py())]))[0].as_py())
    return pa.array(out, pa.float64())


def _java_spelling(value: str, lower: str) -> str:
    if lower in ("inf", "+inf", "infinity", "+infinity"):
        return "inf"
    if lower in ("-inf", "-infinity"):
        return "-inf"
    return "nan" if lower.lstrip("+-") == "nan" else value.rstrip("fFdD").lstrip("+")


def _parse_double(text: pa.Array) -> pa.Array:
    try:
        return pc.cast(text, pa.float64())
    except pa.ArrowInvalid:  # exponents beyond the double range: Java gives +-infinity or 0
        values = [None if v is None else float(v) for v in text.to_pylist()]
        return pa.array(values, pa.float64())


def parse_decimal_text(arr: pa.Array, path: str, target: str) -> tuple[pa.Array, int]:
    """Strings as an exact ``decimal256`` (Java's ``BigDecimal`` grammar), and that decimal's scale."""
    text = trimmed(arr)
    malformed(arr, _bad(text, pc.match_substring_regex(text, _BIG_DECIMAL)), target, path)
    plain = _plain_decimal_text(text)
    fraction = pc.utf8_length(pc.replace_substring_regex(plain, r"^[^.]*\.?", ""))
    integral = pc.replace_substring_regex(pc.replace_substring_regex(plain, r"\..*$", ""), r"^[+-]?0*", "")
    whole = pc.utf8_length(integral)
    digits = int(pc.max(whole).as_py() or 0)
    if digits > 76:  # far beyond any decimal column (Spark too refuses more than 38 integral digits)
        malformed(arr, _bad(text, pc.less_equal(whole, 38)), target, path)
    scale = min(int(pc.max(fraction).as_py() or 0), 76 - digits)
    return pc.cast(plain, pa.decimal256(76, scale), safe=False), scale


def _plain_decimal_text(text: pa.Array) -> pa.Array:
    """Decimal text without an exponent (``1.5e2`` -> ``150``), vectorised on the rows that have one."""
    has_exp = pc.fill_null(pc.match_substring(text, "e", ignore_case=True), False)
    if not pc.any(has_exp).as_py():
        return text
    rows = np.flatnonzero(np.asarray(has_exp.to_numpy(zero_copy_only=False), dtype=bool))
    out = text.to_pylist()
    for i in rows:  # only rows written with an exponent: Python's Decimal rewrites them without one
        out[i] = format(Decimal(out[i]), "f")
    return pa.array(out, pa.string())


# ------------------------------------------------------------------------------------------ booleans


def parse_boolean(arr: pa.Array, path: str) -> pa.Array:
    """Strings as booleans: ``t true y yes 1`` / ``f false n no 0`` in any case (Spark's ``isTrueString``)."""
    text = pc.utf8_lower(trimmed(arr))
    true = pc.is_in(text, pa.array(_TRUE))
    false = pc.is_in(text, pa.array(_FALSE))
    malformed(arr, _bad(text, pc.or_(true, false)), "BOOLEAN", path)
    return pc.if_else(arr.is_valid(), true, pa.scalar(None, pa.bool_()))


# ------------------------------------------------------------------------------------ dates and times


def _numbers(parts: pa.StructArray, name: str, default: int) -> np.ndarray:
    column = pc.struct_field(parts, name)
    column = pc.if_else(pc.equal(column, ""), pa.scalar(None, pa.string()), column)
    return np.asarray(pc.fill_null(pc.cast(column, pa.int64()), default).to_numpy(zero_copy_only=False))


def _days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (H. Hinnant's algorithm), vectorised."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _days_in_month(y: np.ndarray, m: np.ndarray) -> np.ndarray:
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    lengths = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
    return lengths[np.clip(m, 1, 12) - 1] + ((m == 2) & leap)


def _date_parts(text: pa.Array, pattern: str) -> tuple[pa.StructArray, np.ndarray, np.ndarray]:
    """Regex groups, whether the row matched, and its day number (where the date is valid)."""
    matched = pc.match_substring_regex(text, pattern)
    parts = pc.extract_regex(pc.if_else(pc.fill_null(matched, False), text, pa.scalar("0000", pa.string())), pattern)
    sign = np.where(np.asarray(pc.equal(pc.struct_field(parts, "sign"), "-").to_numpy(zero_copy_only=False)), -1, 1)
    y, m, d = sign * _numbers(parts, "y", 1970), _numbers(parts, "mo", 1), _numbers(parts, "d", 1)
    ok = np.asarray(pc.fill_null(matched, False).to_numpy(zero_copy_only=False), dtype=bool)
    ok &= (m >= 1) & (m <= 12) & (d >= 1) & (d <= _days_in_month(y, m))
    return parts, ok, _days_from_civil(y, m, d)


def parse_date(arr: pa.Array, path: str) -> pa.Array:
    """Strings as dates: ``[+-]yyyy[-m[m][-d[d][ |T]...]]`` (Spark's ``stringToDate``; the rest ignored)."""
    text = trimmed(arr)
    _parts, ok, days = _date_parts(text, _DATE)
    valid = np.asarray(text.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    malformed(arr, valid & ~ok, "DATE", path)
    return pa.array(days.astype(np.int32), pa.date32(), mask=~valid)


def parse_timestamp(arr: pa.Array, path: str, *, ntz: bool) -> pa.Array:
    """Strings as timestamps (Spark's ``stringToTimestamp``): a date, then optionally ``[ T]h:m[:s[.f]]``
    and a zone (``Z``, ``+hh:mm``, ``UTC+h``, ``GMT``, a region such as ``Europe/Paris``). Zone-less text
    is UTC; ``timestamp_ntz`` keeps the wall-clock time and ignores a zone. Fractions past the
    microsecond are truncated."""
    text = trimmed(arr)
    parts, ok, days = _date_parts(text, _TIMESTAMP)
    h, mi, s = _numbers(parts, "h", 0), _numbers(parts, "mi", 0), _numbers(parts, "s", 0)
    fraction = pc.utf8_slice_codeunits(pc.fill_null(pc.struct_field(parts, "f"), ""), 0, 6)
    micros_text = pc.utf8_rpad(fraction, 6, "0")
    micros = np.asarray(pc.cast(micros_text, pa.int64()).to_numpy(zero_copy_only=False))
    ok &= (h <= 23) & (mi <= 59) & (s <= 59)
    zones = pc.utf8_trim_whitespace(pc.fill_null(pc.struct_field(parts, "z"), ""))
    offsets, zone_ok = _zone_offsets(zones, days * _MICROS_PER_DAY + ((h * 60 + mi) * 60 + s) * 1_000_000 + micros, ntz)
    valid = np.asarray(text.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    ok &= zone_ok
    malformed(arr, valid & ~ok, "TIMESTAMP_NTZ" if ntz else "TIMESTAMP", path)
    local = days * _MICROS_PER_DAY + ((h * 60 + mi) * 60 + s) * 1_000_000 + micros
    arrow = pa.timestamp("us") if ntz else pa.timestamp("us", tz="UTC")
    return pa.array(np.where(ok, local - offsets, 0), arrow, mask=~valid)


def _zone_offsets(zones: pa.Array, local: np.ndarray, ntz: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the zone's offset from UTC in microseconds at that local time, and whether the zone is valid."""
    offsets = np.zeros(len(zones), dtype=np.int64)
    ok = np.ones(len(zones), dtype=bool)
    distinct = pc.unique(zones).to_pylist()
    for zone in distinct:  # per distinct zone name (a handful), not per row
        if zone in ("", *_UTC_NAMES):
            continue
        rows = np.asarray(pc.equal(zones, zone).to_numpy(zero_copy_only=False), dtype=bool)
        offset = _fixed_offset(zone)
        if offset is not None:
            offsets[rows] = 0 if ntz else offset
            continue
        try:
            tz = zoneinfo.ZoneInfo(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            ok[rows] = False
            continue
        if not ntz:
            offsets[rows] = _region_offsets(local[rows], tz)
    return offsets, ok


def _fixed_offset(zone: str) -> int | None:
    parts = pc.extract_regex(pa.array([zone]), _OFFSET)[0]
    if not parts.is_valid:
        return None
    fields = parts.as_py()
    seconds = int(fields["h"]) * 3600 + int(fields["m"] or 0) * 60 + int(fields["s"] or 0)
    return (-1 if fields["sign"] == "-" else 1) * seconds * 1_000_000


def _region_offsets(local: np.ndarray, tz: zoneinfo.ZoneInfo) -> np.ndarray:
    naive = pa.array(local, pa.timestamp("us"))
    instants = pc.assume_timezone(naive, timezone=tz.key, ambiguous="earliest", nonexistent="earliest")
    return local - np.asarray(instants.cast(pa.int64()).to_numpy(zero_copy_only=False))


# -------------------------------------------------------------------------------------------- to text


def to_text(arr: pa.Array, source: DataType, path: str) -> pa.Array:
    """Values written as Spark's ``CAST(... AS STRING)`` writes them."""
    return text_format.format_values(arr, source, path)

"""Spark's date and time functions over Arrow date32 and timestamp columns.

Timestamps are Spark's ``TIMESTAMP`` (microseconds, UTC): the engine evaluates in UTC, so results equal
Spark's when ``spark.sql.session.timeZone`` is UTC. Strings given where a date or timestamp is expected
are parsed as Spark casts them; a string that is no date fails, as in Spark's ANSI mode. Format
patterns are Spark's datetime patterns (``yyyy MM dd HH mm ss SSS a E MMM MMMM`` and quoted text);
formatting is vectorised, parsing with a pattern is done once per distinct string.

Example:
    >>> from airflow_provider_delta.core.expressions import bind, evaluate, parse_expression
    >>> t = pa.table({"d": pa.array([18291], pa.date32())})
    >>> evaluate(bind(parse_expression("date_format(add_months(d, 1), 'yyyy/MM/dd')"), t.schema), t).to_pylist()
    ['2020/02/29']
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.expressions.functions.registry import (
    ArgValue,
    FunctionRuntimeError,
    as_array,
    cast_to,
    constant,
    literal_value,
    null_mask,
    register,
    require,
    type_of,
    with_nulls,
)
from airflow_provider_delta.core.expressions.nodes import Cast, Expr, Function
from airflow_provider_delta.core.expressions.values import _convert_value, _is_string_type

if TYPE_CHECKING:
    from collections.abc import Callable

TIMESTAMP = pa.timestamp("us", tz="UTC")
_DAY_US = 86_400_000_000


def as_date(expr: Expr, name: str) -> Expr:
    """``expr`` as a date: strings parsed as ``to_date`` does, timestamps cut to their (UTC) date."""
    t = type_of(expr)
    if pa.types.is_date32(t) or pa.types.is_null(t):
        return cast_to(expr, pa.date32())
    if _is_string_type(t):
        return Function("to_date", (cast_to(expr, pa.string()),), pa.date32())
    require(pa.types.is_timestamp(t) or pa.types.is_date(t), f"{name} needs a date, found {t}")
    return Cast(expr, pa.date32())


def as_timestamp(expr: Expr, name: str) -> Expr:
    """``expr`` as a timestamp (microseconds, UTC)."""
    t = type_of(expr)
    if t == TIMESTAMP or pa.types.is_null(t):
        return cast_to(expr, TIMESTAMP)
    if _is_string_type(t):
        return Function("to_timestamp", (cast_to(expr, pa.string()),), TIMESTAMP)
    require(pa.types.is_timestamp(t) or pa.types.is_date(t), f"{name} needs a timestamp, found {t}")
    return Cast(expr, TIMESTAMP)


def _days(column: pa.Array) -> np.ndarray:
    return np.asarray(column.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)


def _micros(column: pa.Array) -> np.ndarray:
    return np.asarray(column.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)


def _ymd(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    dates = days.astype("datetime64[D]")
    months = dates.astype("datetime64[M]")
    year = months.astype("datetime64[Y]").astype(np.int64) + 1970
    month = months.astype(np.int64) % 12 + 1
    day = (dates - months.astype("datetime64[D]")).astype(np.int64) + 1
    return year, month, day


def _month_length(month_index: np.ndarray) -> np.ndarray:
    """Days in each month (months since 1970-01)."""
    start = month_index.astype("datetime64[M]").astype("datetime64[D]")
    end = (month_index + 1).astype("datetime64[M]").astype("datetime64[D]")
    return (end - start).astype(np.int64)


def _to_date_array(days: np.ndarray, mask: np.ndarray) -> pa.Array:
    return pa.array(days.astype(np.int32), pa.int32(), mask=mask).cast(pa.date32())


# ---------------------------------------------------------------------------------- arithmetic


def _type_date_add(args: list[Expr], name: str) -> tuple[list[Expr], pa.DataType]:
    t = type_of(args[1])
    small = pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t)
    require(
        small or pa.types.is_null(t), f"{name} needs an int, smallint or tinyint number of days, found {t}"
    )
    return [as_date(args[0], name), cast_to(args[1], pa.int32())], pa.date32()


def _date_add(args: list[ArgValue], result: pa.DataType, n: int, sign: int) -> pa.Array:
    days, delta = as_array(args[0], n), as_array(args[1], n)
    mask = null_mask(days, delta)
    shifted = _days(days) + sign * np.asarray(
        delta.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64
    )
    return _to_date_array(shifted, mask)


register(
    "date_add",
    "datetime",
    (2, 2),
    lambda a: _type_date_add(a, "date_add"),
    lambda a, r, n: _date_add(a, r, n, 1),
    aliases=("dateadd",),
)
register(
    "date_sub",
    "datetime",
    (2, 2),
    lambda a: _type_date_add(a, "date_sub"),
    lambda a, r, n: _date_add(a, r, n, -1),
)


def _datediff(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    end, start = as_array(args[0], n), as_array(args[1], n)
    return pa.array((_days(end) - _days(start)).astype(np.int32), pa.int32(), mask=null_mask(end, start))


register(
    "datediff",
    "datetime",
    (2, 2),
    lambda a: ([as_date(x, "datediff") for x in a], pa.int32()),
    _datediff,
    aliases=("date_diff",),
)


def _add_months(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    dates, delta = as_array(args[0], n), as_array(args[1], n)
    year, month, day = _ymd(_days(dates))
    index = (
        (year - 1970) * 12
        + (month - 1)
        + np.asarray(delta.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    )
    first = index.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    return _to_date_array(first + np.minimum(day, _month_length(index)) - 1, null_mask(dates, delta))


register(
    "add_months",
    "datetime",
    (2, 2),
    lambda a: ([as_date(a[0], "add_months"), cast_to(a[1], pa.int32())], pa.date32()),
    _add_months,
)


def _make_date(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    parts = [as_array(a, n) for a in args]
    mask = null_mask(*parts)
    y, m, d = (np.asarray(p.fill_null(1).to_numpy(zero_copy_only=False), dtype=np.int64) for p in parts)
    index = (y - 1970) * 12 + (m - 1)
    bad = (
        (m < 1) | (m > 12) | (d < 1) | (d > np.where((m >= 1) & (m <= 12), _month_length(index), 31))
    ) & ~mask
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise FunctionRuntimeError(
            f"[DATETIME_FIELD_OUT_OF_BOUNDS] Invalid date {y[row]}-{m[row]}-{d[row]} (make_date)"
        )
    first = index.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    return _to_date_array(first + d - 1, mask)


register(
    "make_date", "datetime", (3, 3), lambda a: ([cast_to(x, pa.int32()) for x in a], pa.date32()), _make_date
)


def _months_between(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    first, second = as_array(args[0], n), as_array(args[1], n)
    round_off = True if len(args) == 2 else bool(constant(args[2])[1])
    t1, t2 = _micros(first), _micros(second)
    d1, d2 = np.floor_divide(t1, _DAY_US), np.floor_divide(t2, _DAY_US)
    (y1, m1, day1), (y2, m2, day2) = _ymd(d1), _ymd(d2)
    months = ((y1 * 12 + m1) - (y2 * 12 + m2)).astype(np.float64)
    last1 = day1 == _month_length((y1 - 1970) * 12 + m1 - 1)
    last2 = day2 == _month_length((y2 - 1970) * 12 + m2 - 1)
    whole = (day1 == day2) | (last1 & last2)
    seconds = ((t1 - d1 * _DAY_US) - (t2 - d2 * _DAY_US)) / 1e6
    diff = months + ((day1 - day2) * 86400 + seconds) / (31 * 86400.0)
    diff = np.where(whole, months, diff)
    if round_off:
        diff = np.round(diff * 1e8) / 1e8
    return pa.array(diff, pa.float64(), mask=null_mask(first, second))


def _type_months_between(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    out = [as_timestamp(args[0], "months_between"), as_timestamp(args[1], "months_between")]
    if len(args) == 3:
        require(
            isinstance(literal_value(args[2], "months_between's roundOff"), bool),
            "roundOff must be a boolean",
        )
        out.append(args[2])
    return out, pa.float64()


register("months_between", "datetime", (2, 3), _type_months_between, _months_between)


# ------------------------------------------------------------------------------------ fields


def _type_field(
    convert: Callable[[Expr, str], Expr], name: str, args: list[Expr]
) -> tuple[list[Expr], pa.DataType]:
    return [convert(args[0], name)], pa.int32()


def _field(kind: str) -> Any:
    def kernel(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
        column = as_array(args[0], n)
        return pc.call_function(kind, [column]).cast(pa.int32())

    return kernel


for _name, _arrow, _of in (
    ("year", "year", "date"),
    ("month", "month", "date"),
    ("day", "day", "date"),
    ("quarter", "quarter", "date"),
    ("dayofyear", "day_of_year", "date"),
    ("weekofyear", "iso_week", "date"),
    ("hour", "hour", "timestamp"),
    ("minute", "minute", "timestamp"),
    ("second", "second", "timestamp"),
):
    convert = as_date if _of == "date" else as_timestamp
    register(
        _name,
        "datetime",
        (1, 1),
        functools.partial(_type_field, convert, _name),
        _field(_arrow),
        aliases=("dayofmonth",) if _name == "day" else (),
    )


def _dayofweek(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    # Spark: 1 = Sunday ... 7 = Saturday
    return pc.add(pc.day_of_week(as_array(args[0], n), count_from_zero=True, week_start=7), 1).cast(
        pa.int32()
    )


register("dayofweek", "datetime", (1, 1), lambda a: ([as_date(a[0], "dayofweek")], pa.int32()), _dayofweek)


def _last_day(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    dates = as_array(args[0], n)
    year, month, _day = _ymd(_days(dates))
    index = (year - 1970) * 12 + month - 1
    first = index.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    return _to_date_array(first + _month_length(index) - 1, null_mask(dates))


register("last_day", "datetime", (1, 1), lambda a: ([as_date(a[0], "last_day")], pa.date32()), _last_day)


# ------------------------------------------------------------------------------- truncation

_TRUNC_UNITS = {
    "year": "year",
    "yyyy": "year",
    "yy": "year",
    "quarter": "quarter",
    "month": "month",
    "mon": "month",
    "mm": "month",
    "week": "week",
    "day": "day",
    "dd": "day",
    "hour": "hour",
    "minute": "minute",
    "second": "second",
    "millisecond": "millisecond",
    "microsecond": "microsecond",
}
_DATE_UNITS = {"year", "quarter", "month", "week"}


def _truncated(column: pa.Array, unit: Any, *, dates_only: bool) -> pa.Array | None:
    found = _TRUNC_UNITS.get(str(unit).lower()) if isinstance(unit, str) else None
    if found is None or (dates_only and found not in _DATE_UNITS):
        return None
    return pc.floor_temporal(column, unit=found, week_starts_monday=True)


def _date_trunc(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    known, unit = constant(args[0])
    column = as_array(args[1], n)
    if not known:
        raise FunctionRuntimeError("date_trunc needs a constant unit")
    truncated = _truncated(column, unit, dates_only=False)
    return pa.nulls(n, TIMESTAMP) if truncated is None else truncated


def _trunc(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    known, unit = constant(args[1])
    if not known:
        raise FunctionRuntimeError("trunc needs a constant unit")
    truncated = _truncated(as_array(args[0], n), unit, dates_only=True)
    return pa.nulls(n, pa.date32()) if truncated is None else truncated


register(
    "date_trunc",
    "datetime",
    (2, 2),
    lambda a: ([cast_to(a[0], pa.string()), as_timestamp(a[1], "date_trunc")], TIMESTAMP),
    _date_trunc,
)
register(
    "trunc",
    "datetime",
    (2, 2),
    lambda a: ([as_date(a[0], "trunc"), cast_to(a[1], pa.string())], pa.date32()),
    _trunc,
)


# ---------------------------------------------------------------------- parsing and formatting

_TOKEN = re.compile(r"'(?:[^']|'')*'|([a-zA-Z])\1*|.", re.DOTALL)
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _padded(values: pa.Array, width: int) -> pa.Array:
    return pc.utf8_lpad(values.cast(pa.string()), width=width, padding="0")


def _format_token(token: str, ts: pa.Array) -> pa.Array | str:
    letter, size = token[0], len(token)
    if letter == "'":
        return token[1:-1].replace("''", "'") if size > 1 else "'"
    numeric = {
        "y": "year",
        "M": "month",
        "d": "day",
        "H": "hour",
        "m": "minute",
        "s": "second",
        "D": "day_of_year",
    }
    if letter == "y":
        years = pc.year(ts)
        return pc.utf8_slice_codeunits(_padded(years, 2), -2) if size == 2 else _padded(years, size)
    if letter == "M" and size >= 3:
        names = pa.array([m if size == 4 else m[:3] for m in _MONTHS])
        return names.take(pc.subtract(pc.month(ts), 1))
    if letter == "E":
        names = pa.array([d if size == 4 else d[:3] for d in _DAYS])
        return names.take(pc.day_of_week(ts))
    if letter in numeric:
        return _padded(pc.call_function(numeric[letter], [ts]), size)
    if letter == "h":
        return _padded(pc.add(pc.remainder(pc.add(pc.hour(ts), 11), 12), 1), size)
    if letter == "a":
        return pc.if_else(pc.less(pc.hour(ts), 12), "AM", "PM")
    if letter == "S":
        micros = pc.add(pc.multiply(pc.millisecond(ts), 1000), pc.microsecond(ts))
        return pc.utf8_slice_codeunits(_padded(micros, 6), 0, size)
    if letter.isalpha():
        raise FunctionRuntimeError(f"unsupported datetime pattern letter {letter!r} (in {token!r})")
    return token


def format_timestamps(ts: pa.Array, pattern: str) -> pa.Array:
    """Timestamps (UTC) as text in a Spark datetime pattern."""
    parts = [_format_token(m.group(0), ts) for m in _TOKEN.finditer(pattern)]
    if not parts:
        return with_nulls(pa.array([""] * len(ts)), null_mask(ts))
    arrays = [p if isinstance(p, (pa.Array, pa.ChunkedArray)) else pa.scalar(p) for p in parts]
    if not any(isinstance(p, pa.Array) for p in arrays):
        return with_nulls(pa.array(["".join(parts)] * len(ts)), null_mask(ts))
    return pc.binary_join_element_wise(*arrays, "")


_PYTHON_FORMAT = {
    "yyyy": "%Y",
    "yy": "%y",
    "MM": "%m",
    "M": "%m",
    "dd": "%d",
    "d": "%d",
    "HH": "%H",
    "H": "%H",
    "hh": "%I",
    "mm": "%M",
    "m": "%M",
    "ss": "%S",
    "s": "%S",
    "a": "%p",
    "MMM": "%b",
    "MMMM": "%B",
    "SSS": "%f",
    "SSSSSS": "%f",
    "EEE": "%a",
    "E": "%a",
    "EEEE": "%A",
    "D": "%j",
    "DDD": "%j",
}


def _python_format(pattern: str) -> str:
    out = []
    for m in _TOKEN.finditer(pattern):
        token = m.group(0)
        if token[0] == "'":
            out.append((token[1:-1].replace("''", "'") if len(token) > 1 else "'").replace("%", "%%"))
        elif token[0].isalpha():
            if token not in _PYTHON_FORMAT:
                raise FunctionRuntimeError(f"unsupported datetime pattern {token!r} for parsing")
            out.append(_PYTHON_FORMAT[token])
        else:
            out.append(token.replace("%", "%%"))
    return "".join(out)


def _parse_distinct(strings: pa.Array, parse: Any, result: pa.DataType, what: str) -> pa.Array:
    """``parse`` once per distinct string; a string it cannot parse fails (Spark's ANSI mode)."""
    distinct = pc.unique(strings.drop_null())
    parsed = []
    for text in distinct.to_pylist():
        try:
            parsed.append(parse(text))
        except (TypeError, ValueError, ArithmeticError) as err:
            raise FunctionRuntimeError(
                f"[CANNOT_PARSE_TIMESTAMP] Text {text!r} could not be parsed as {what}"
            ) from err
    values = pa.array(parsed, result)
    return values.take(pc.index_in(strings, distinct))


def _parser(fmt: str | None, result: pa.DataType) -> Any:
    if fmt is None:
        return lambda text: _convert_value(text, result)
    python = _python_format(fmt)

    def parse(text: str) -> Any:
        value = dt.datetime.strptime(text, python)
        return value.date() if pa.types.is_date(result) else value.replace(tzinfo=dt.timezone.utc)

    return parse


def _to_datetime(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    column = as_array(args[0], n)
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return column.cast(result)
    known, fmt = constant(args[1]) if len(args) == 2 else (True, None)
    if not known:
        raise FunctionRuntimeError("the datetime pattern must be a constant")
    if len(args) == 2 and fmt is None:
        return pa.nulls(n, result)
    return _parse_distinct(
        column, _parser(fmt, result), result, "a date" if pa.types.is_date(result) else "a timestamp"
    )


def _type_to(args: list[Expr], result: pa.DataType, name: str) -> tuple[list[Expr], pa.DataType]:
    t = type_of(args[0])
    first = cast_to(args[0], pa.string()) if _is_string_type(t) else args[0]
    if not _is_string_type(t):
        first = as_timestamp(args[0], name) if pa.types.is_timestamp(result) else as_date(args[0], name)
    return [first, *[cast_to(a, pa.string()) for a in args[1:]]], result


register("to_date", "datetime", (1, 2), lambda a: _type_to(a, pa.date32(), "to_date"), _to_datetime)
register("to_timestamp", "datetime", (1, 2), lambda a: _type_to(a, TIMESTAMP, "to_timestamp"), _to_datetime)


def _date_format(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    known, fmt = constant(args[1])
    if not known:
        raise FunctionRuntimeError("date_format needs a constant pattern")
    if fmt is None:
        return pa.nulls(n, pa.string())
    ts = as_array(args[0], n)
    return with_nulls(format_timestamps(ts, fmt), null_mask(ts))


register(
    "date_format",
    "datetime",
    (2, 2),
    lambda a: ([as_timestamp(a[0], "date_format"), cast_to(a[1], pa.string())], pa.string()),
    _date_format,
)

_DEFAULT_PATTERN = "yyyy-MM-dd HH:mm:ss"


def _from_unixtime(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    seconds = as_array(args[0], n)
    ts = pc.multiply_checked(seconds.cast(pa.int64()), 1_000_000).cast(TIMESTAMP)
    return _date_format([ts, args[1] if len(args) == 2 else pa.scalar(_DEFAULT_PATTERN)], result, n)


register(
    "from_unixtime",
    "datetime",
    (1, 2),
    lambda a: ([cast_to(a[0], pa.int64()), *[cast_to(x, pa.string()) for x in a[1:]]], pa.string()),
    _from_unixtime,
)


def _unix_timestamp(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    if not args:
        now = int(dt.datetime.now(dt.timezone.utc).timestamp())
        return pa.array(np.full(n, now, dtype=np.int64))
    column = as_array(args[0], n)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        fmt = args[1] if len(args) == 2 else pa.scalar(_DEFAULT_PATTERN)
        column = _to_datetime([column, fmt], TIMESTAMP, n)
    micros = column.cast(TIMESTAMP).cast(pa.int64())
    return pc.floor(pc.divide(micros.cast(pa.float64()), 1e6)).cast(pa.int64()) if len(micros) else micros


def _type_unix_timestamp(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    if not args:
        return [], pa.int64()
    t = type_of(args[0])
    first = cast_to(args[0], pa.string()) if _is_string_type(t) else as_timestamp(args[0], "unix_timestamp")
    return [first, *[cast_to(a, pa.string()) for a in args[1:]]], pa.int64()


register(
    "unix_timestamp",
    "datetime",
    (0, 2),
    _type_unix_timestamp,
    _unix_timestamp,
    aliases=("to_unix_timestamp",),
)

# current_date()/current_timestamp() are Arrow scalars (arrow.py), fixed once per evaluation.
register("current_date", "datetime", (0, 0), lambda a: (a, pa.date32()))
register("current_timestamp", "datetime", (0, 0), lambda a: (a, TIMESTAMP), aliases=("now",))

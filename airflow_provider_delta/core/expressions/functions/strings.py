"""Spark's string functions over Arrow string columns.

Positions and lengths count characters (code points), 1-based as in Spark. Patterns of
``regexp_replace``, ``regexp_extract`` and ``split`` are Java regular expressions in Spark and RE2 here
(the same for the usual syntax; look-around and back-references are RE2 errors); ``$1`` in a
replacement is group 1, as in Java. Constant patterns and widths run vectorised in ``pyarrow.compute``;
a pattern or width that varies by row, a multi-character pad and ``format_number`` are computed row by
row in Python.

Example:
    >>> from airflow_provider_delta.core.expressions import bind, evaluate, parse_expression
    >>> t = pa.table({"s": ["hello wORLD", None]})
    >>> evaluate(bind(parse_expression("initcap(s)"), t.schema), t).to_pylist()
    ['Hello World', None]
"""

from __future__ import annotations

import decimal
import functools
import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.expressions.functions.arrays import concat_arrays, reverse_array
from airflow_provider_delta.core.expressions.functions.registry import (
    ArgValue,
    FunctionRuntimeError,
    as_array,
    cast_to,
    common_type,
    constant,
    is_list_type,
    null_mask,
    per_row,
    register,
    require,
    type_of,
    with_nulls,
)
from airflow_provider_delta.core.expressions.values import _is_binary_type

if TYPE_CHECKING:
    from airflow_provider_delta.core.expressions.nodes import Expr


def _strings(*types: pa.DataType | None) -> Any:
    """A typer casting every argument to string (``types[i]`` overrides argument ``i``), returning ``result``."""

    def typer_for(result: pa.DataType) -> Any:
        def typer(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
            out = []
            for i, a in enumerate(args):
                wanted = types[i] if i < len(types) and types[i] is not None else pa.string()
                out.append(cast_to(a, wanted))
            return out, result

        return typer

    return typer_for


_STRING_IN = _strings()


def _literal_or_rows(args: list[ArgValue], n: int, fast: Any, slow: Any, result: pa.DataType) -> pa.Array:
    """``fast(column, *constants)`` when every argument after the first is a constant, else ``slow`` per row."""
    known = [constant(a) for a in args[1:]]
    if all(is_const for is_const, _ in known):
        values = [v for _, v in known]
        if any(v is None for v in values):
            return pa.nulls(n, result)
        return fast(as_array(args[0], n), *values)
    return per_row(args, n, slow, result)


# ------------------------------------------------------------------------------------ concat


def _type_concat(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    types = [type_of(a) for a in args]
    if any(is_list_type(t) for t in types):
        require(
            all(is_list_type(t) or pa.types.is_null(t) for t in types),
            "concat cannot mix arrays and other values",
        )
        target = common_type(types, "concat")
        return [cast_to(a, target) for a in args], target
    if types and all(_is_binary_type(t) for t in types):
        return [cast_to(a, pa.binary()) for a in args], pa.binary()
    return [cast_to(a, pa.string()) for a in args], pa.string()


def _concat(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    if is_list_type(result):
        return concat_arrays(args, result, n)
    if not args:
        return as_array(pa.scalar("", result), n)
    return pc.binary_join_element_wise(
        *[as_array(a, n) for a in args], pa.scalar(b"" if result == pa.binary() else "", result)
    )


register("concat", "string", (0, None), _type_concat, _concat)


def _type_concat_ws(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    out = [cast_to(args[0], pa.string())]
    for a in args[1:]:
        t = type_of(a)
        out.append(cast_to(a, pa.list_(pa.string())) if is_list_type(t) else cast_to(a, pa.string()))
    return out, pa.string()


def _concat_ws(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    separator = as_array(args[0], n)
    if len(args) == 1:
        return with_nulls(as_array(pa.scalar(""), n), null_mask(separator))
    if any(is_list_type(a.type) for a in args[1:]):

        def join(sep: str, *parts: Any) -> str:
            items: list[str] = []
            for p in parts:
                items.extend(x for x in (p if isinstance(p, list) else [p]) if x is not None)
            return sep.join(items)

        columns = [as_array(a, n).to_pylist() for a in args]
        out = [None if row[0] is None else join(*row) for row in zip(*columns, strict=True)]
        return pa.array(out, pa.string())
    parts = [as_array(a, n) for a in args[1:]]
    return pc.binary_join_element_wise(*parts, separator, null_handling="skip")


register("concat_ws", "string", (1, None), _type_concat_ws, _concat_ws)


# --------------------------------------------------------------------- case, trim, length (Arrow)

register("upper", "string", (1, 1), _STRING_IN(pa.string()), aliases=("ucase",))
register("lower", "string", (1, 1), _STRING_IN(pa.string()), aliases=("lcase",))
for _name in ("trim", "ltrim", "rtrim"):
    register(_name, "string", (1, 1), _STRING_IN(pa.string()))


def _type_length(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    t = type_of(args[0])
    return ([args[0]] if _is_binary_type(t) else [cast_to(args[0], pa.string())]), pa.int32()


register("length", "string", (1, 1), _type_length, aliases=("char_length", "character_length"))


def _initcap(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    words = pc.split_pattern(pc.utf8_lower(as_array(args[0], n)), " ")
    capitalized = pc.utf8_capitalize(pc.list_flatten(words))
    lengths = np.asarray(pc.list_value_length(words).fill_null(0), dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    rebuilt = pa.ListArray.from_arrays(pa.array(offsets), capitalized, mask=words.is_null())
    return pc.binary_join(rebuilt, " ")


register("initcap", "string", (1, 1), _STRING_IN(pa.string()), _initcap)


# ------------------------------------------------------------------------------ substrings


def _substring_value(value: str, pos: int, length: int | None = None) -> str:
    # Spark (UTF8String.substringSQL): 1-based; 0 acts as 1; negative counts from the end.
    size = len(value)
    start = pos - 1 if pos > 0 else (size + pos if pos < 0 else 0)
    end = size if length is None else start + length
    if length is not None and length <= 0:
        return ""
    start, end = max(start, 0), min(end, size)
    return value[start:end] if start < end else ""


def _substring(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    return per_row(args, n, _substring_value, pa.string())


register(
    "substring",
    "string",
    (2, 3),
    _strings(None, pa.int32(), pa.int32())(pa.string()),
    _substring,
    aliases=("substr",),
)


def _left(args: list[ArgValue], result: pa.DataType, n: int, *, right: bool) -> pa.Array:
    def fast(column: pa.Array, count: int) -> pa.Array:
        if count <= 0:
            return with_nulls(as_array(pa.scalar(""), n), null_mask(column))
        if right:
            return pc.utf8_slice_codeunits(column, -count)
        return pc.utf8_slice_codeunits(column, 0, count)

    def slow(value: str, count: int) -> str:
        if count <= 0:
            return ""
        return value[-count:] if right else value[:count]

    return _literal_or_rows(args, n, fast, slow, pa.string())


register(
    "left",
    "string",
    (2, 2),
    _strings(None, pa.int32())(pa.string()),
    lambda a, r, n: _left(a, r, n, right=False),
)
register(
    "right",
    "string",
    (2, 2),
    _strings(None, pa.int32())(pa.string()),
    lambda a, r, n: _left(a, r, n, right=True),
)


def _find(haystack: pa.Array, needle: str, n: int) -> pa.Array:
    """1-based character position of ``needle`` in each string (0 when absent)."""
    found = pc.add(pc.find_substring(haystack, needle), 1).cast(pa.int32())  # a byte position
    wide = pc.invert(pc.fill_null(pc.string_is_ascii(haystack), True))
    if not pc.any(wide).as_py():
        return found
    # Strings with multi-byte characters: their character position, computed for them alone.
    rows = np.flatnonzero(np.asarray(wide.to_numpy(zero_copy_only=False), dtype=bool))
    text = haystack.take(pa.array(rows)).to_pylist()
    fixed = np.asarray(found.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int32).copy()
    fixed[rows] = [s.find(needle) + 1 for s in text]
    return pa.array(fixed, pa.int32(), mask=null_mask(haystack))


def _instr(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    return _literal_or_rows(
        args, n, lambda col, sub: _find(col, sub, n), lambda s, sub: s.find(sub) + 1, pa.int32()
    )


def _locate_value(sub: str, value: str, pos: int = 1) -> int:
    if pos < 1:
        return 0
    return value.find(sub, pos - 1) + 1


def _locate(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    sub_known, sub = constant(args[0])
    pos_known, pos = constant(args[2]) if len(args) == 3 else (True, 1)
    if sub_known and pos_known and sub is not None and pos == 1:
        return _find(as_array(args[1], n), sub, n)
    return per_row(args, n, _locate_value, pa.int32())


register("instr", "string", (2, 2), _STRING_IN(pa.int32()), _instr)
register(
    "locate", "string", (2, 3), _strings(None, None, pa.int32())(pa.int32()), _locate, aliases=("position",)
)


def _affix(args: list[ArgValue], result: pa.DataType, n: int, *, kind: str) -> pa.Array:
    arrow = {"startswith": "starts_with", "endswith": "ends_with", "contains": "match_substring"}[kind]
    python = {"startswith": str.startswith, "endswith": str.endswith, "contains": str.__contains__}[kind]
    return _literal_or_rows(
        args,
        n,
        lambda col, pattern: pc.call_function(arrow, [col], pc.MatchSubstringOptions(pattern)),
        python,
        pa.bool_(),
    )


for _kind in ("startswith", "endswith", "contains"):
    register(_kind, "string", (2, 2), _STRING_IN(pa.bool_()), functools.partial(_affix, kind=_kind))


# ------------------------------------------------------------------------- replace and regexps


def _replace(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    full = [*args, pa.scalar("")] if len(args) == 2 else args

    def fast(column: pa.Array, search: str, replacement: str) -> pa.Array:
        return column if search == "" else pc.replace_substring(column, search, replacement)

    return _literal_or_rows(full, n, fast, lambda s, a, b: s if a == "" else s.replace(a, b), pa.string())


register("replace", "string", (2, 3), _STRING_IN(pa.string()), _replace)

_JAVA_GROUP = re.compile(r"\$(\d)|\\(.)")


def _re2_replacement(java: str) -> str:
    """A Java replacement (``$1``, ``\\$``) in RE2's syntax (``\\1``, ``$``)."""
    return _JAVA_GROUP.sub(
        lambda m: "\\" + m.group(1) if m.group(1) else m.group(2).replace("\\", "\\\\"), java
    )


def _python_replacement(java: str) -> str:
    return _JAVA_GROUP.sub(
        lambda m: "\\g<" + m.group(1) + ">" if m.group(1) else m.group(2).replace("\\", "\\\\"), java
    )


def _regexp_replace(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    def fast(column: pa.Array, pattern: str, replacement: str) -> pa.Array:
        try:
            return pc.replace_substring_regex(column, pattern, _re2_replacement(replacement))
        except pa.ArrowInvalid as err:
            raise FunctionRuntimeError(f"invalid regular expression {pattern!r}: {err}") from err

    return _literal_or_rows(args, n, fast, lambda s, p, r: re.sub(p, _python_replacement(r), s), pa.string())


register("regexp_replace", "string", (3, 3), _STRING_IN(pa.string()), _regexp_replace)


def _rlike(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    return _literal_or_rows(
        args,
        n,
        lambda col, p: pc.match_substring_regex(col, p),
        lambda s, p: re.search(p, s) is not None,
        pa.bool_(),
    )


register("rlike", "string", (2, 2), _STRING_IN(pa.bool_()), _rlike, aliases=("regexp", "regexp_like"))


def _named_groups(pattern: str) -> tuple[str, int]:
    """``pattern`` with every capturing group named ``g<i>`` and wrapped whole as ``g0``; and its group count."""
    out, count, i, in_class = [], 0, 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class:
            in_class = False
        elif ch == "(" and not in_class and not pattern.startswith("(?", i):
            count += 1
            out.append(f"(?P<g{count}>")
            i += 1
            continue
        out.append(ch)
        i += 1
    return f"(?P<g0>{''.join(out)})", count


def _regexp_extract(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    full = [*args, pa.scalar(1, pa.int32())] if len(args) == 2 else args

    def fast(column: pa.Array, pattern: str, index: int) -> pa.Array:
        named, groups = _named_groups(pattern)
        if not 0 <= index <= groups:
            raise FunctionRuntimeError(
                f"[INVALID_PARAMETER_VALUE.REGEX_GROUP_INDEX] regexp_extract: the pattern has {groups} groups, "
                f"found index {index}"
            )
        matched = pc.extract_regex(column, named)
        found = pc.fill_null(matched.field(f"g{index}"), "") if len(column) else pa.array([], pa.string())
        return with_nulls(found, null_mask(column))

    def slow(value: str, pattern: str, index: int) -> str:
        match = re.search(pattern, value)
        return "" if match is None else (match.group(index) or "")

    return _literal_or_rows(full, n, fast, slow, pa.string())


register("regexp_extract", "string", (2, 3), _strings(None, None, pa.int32())(pa.string()), _regexp_extract)


def _split_value(value: str, pattern: str, limit: int = -1) -> list[str]:
    if pattern == "":
        parts = list(value) if value else [""]
        return (
            parts if limit <= 0 or len(parts) <= limit else [*parts[: limit - 1], "".join(parts[limit - 1 :])]
        )
    return re.split(pattern, value, maxsplit=max(limit - 1, 0))


def _split(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    full = [*args, pa.scalar(-1, pa.int32())] if len(args) == 2 else args

    def fast(column: pa.Array, pattern: str, limit: int) -> pa.Array:
        if pattern == "":
            return per_row([column], n, lambda s: _split_value(s, "", limit), result)
        return pc.split_pattern_regex(column, pattern, max_splits=limit - 1 if limit > 0 else None)

    return _literal_or_rows(full, n, fast, _split_value, result)


register("split", "string", (2, 3), _strings(None, None, pa.int32())(pa.list_(pa.string())), _split)


# ------------------------------------------------------------------------------ padding and more


def _pad_value(value: str, width: int, pad: str, *, left: bool) -> str:
    if width <= 0:
        return ""
    if len(value) >= width or pad == "":
        return value[:width]
    fill = (pad * (width // len(pad) + 1))[: width - len(value)]
    return fill + value if left else value + fill


def _pad(args: list[ArgValue], result: pa.DataType, n: int, *, left: bool) -> pa.Array:
    full = [*args, pa.scalar(" ")] if len(args) == 2 else args

    def fast(column: pa.Array, width: int, pad: str) -> pa.Array:
        if len(pad) != 1 or width <= 0:
            return per_row([column], n, lambda s: _pad_value(s, width, pad, left=left), pa.string())
        cut = pc.utf8_slice_codeunits(column, 0, width)
        return (pc.utf8_lpad if left else pc.utf8_rpad)(cut, width=width, padding=pad)

    return _literal_or_rows(full, n, fast, lambda s, w, p: _pad_value(s, w, p, left=left), pa.string())


register(
    "lpad",
    "string",
    (2, 3),
    _strings(None, pa.int32())(pa.string()),
    lambda a, r, n: _pad(a, r, n, left=True),
)
register(
    "rpad",
    "string",
    (2, 3),
    _strings(None, pa.int32())(pa.string()),
    lambda a, r, n: _pad(a, r, n, left=False),
)


def _repeat(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    times = as_array(args[1], n).cast(pa.int64())
    clipped = pc.max_element_wise(times, pa.scalar(0, pa.int64()))
    return pc.binary_repeat(as_array(args[0], n), clipped)


register("repeat", "string", (2, 2), _strings(None, pa.int32())(pa.string()), _repeat)


def _type_reverse(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    t = type_of(args[0])
    if is_list_type(t):
        return args, t
    return [cast_to(args[0], pa.string())], pa.string()


def _reverse(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    if is_list_type(result):
        return reverse_array(args, result, n)
    return pc.utf8_reverse(as_array(args[0], n))


register("reverse", "string", (1, 1), _type_reverse, _reverse)


def _format_number_value(value: Any, digits: int) -> str | None:
    if digits < 0:
        return None
    exact = decimal.Decimal(value) if not isinstance(value, decimal.Decimal) else value
    if isinstance(value, float) and not np.isfinite(value):
        return "NaN" if np.isnan(value) else ("\u221e" if value > 0 else "-\u221e")
    rounded = exact.quantize(decimal.Decimal(1).scaleb(-digits), rounding=decimal.ROUND_HALF_EVEN)
    return f"{rounded:,.{digits}f}"


def _type_format_number(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    t = type_of(args[0])
    require(
        pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_null(t),
        f"format_number needs a number, found {t}",
    )
    require(pa.types.is_integer(type_of(args[1])), "format_number needs an integer number of decimal places")
    return [args[0], cast_to(args[1], pa.int32())], pa.string()


register(
    "format_number",
    "string",
    (2, 2),
    _type_format_number,
    lambda a, r, n: per_row(a, n, _format_number_value, pa.string()),
)

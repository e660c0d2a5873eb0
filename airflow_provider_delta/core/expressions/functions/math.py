"""Spark's math functions: rounding (``round`` is HALF_UP, ``bround`` HALF_EVEN), ``ceil``/``floor``,
powers and logarithms, ``pmod`` and ``sign``.

Result types are Spark's: ``round`` keeps integer and float types and gives decimals Spark's precision;
``ceil``/``floor`` give ``bigint`` (or ``decimal(p - s + 1, 0)``); the others ``double``. A logarithm of
a number <= 0 is NULL; ``pmod`` by zero fails, as Spark's ANSI mode does. Doubles round as their
shortest decimal text does (``round(1.005D, 2)`` is 1.01), as in Spark.

Example:
    >>> from airflow_provider_delta.core.expressions import bind, evaluate, parse_expression
    >>> t = pa.table({"x": [2.5, -2.5, 1.005]})
    >>> evaluate(bind(parse_expression("round(x, 2)"), t.schema), t).to_pylist()
    [2.5, -2.5, 1.01]
"""

from __future__ import annotations

import decimal
import math
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.expressions.functions.registry import (
    ArgValue,
    FunctionRuntimeError,
    Kernel,
    as_array,
    cast_to,
    coerce_all,
    constant,
    literal_value,
    null_mask,
    register,
    require,
    type_of,
    with_nulls,
)
from airflow_provider_delta.core.expressions.values import _is_numeric_type

if TYPE_CHECKING:
    from airflow_provider_delta.core.expressions.nodes import Expr


def _number(expr: Expr, name: str) -> pa.DataType:
    t = type_of(expr)
    require(_is_numeric_type(t) or pa.types.is_null(t), f"{name} needs a number, found {t}")
    return t


# ------------------------------------------------------------------------------------- rounding


def _round_type(args: list[Expr], name: str) -> tuple[list[Expr], pa.DataType]:
    t = _number(args[0], name)
    digits = 0
    if len(args) == 2:
        digits = literal_value(args[1], f"{name}'s scale")
        require(
            isinstance(digits, int) and not isinstance(digits, bool), f"{name}'s scale must be an integer"
        )
    if pa.types.is_null(t):
        return [cast_to(args[0], pa.float64()), *args[1:]], pa.float64()
    if pa.types.is_decimal(t):
        scale = max(min(t.scale, digits), 0)
        return args, pa.decimal128(min(t.precision - t.scale + scale + 1, 38), scale)
    return args, t


def _rounded(value: float, digits: int, mode: str) -> float:
    if not math.isfinite(value):
        return value
    exact = decimal.Decimal(repr(value))  # the shortest text of the double, as Scala's BigDecimal(d)
    return float(exact.quantize(decimal.Decimal(1).scaleb(-digits), rounding=mode))


def _round_floats(column: pa.Array, digits: int, mode: str, result: pa.DataType) -> pa.Array:
    values = np.asarray(column.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64)
    with np.errstate(all="ignore"):
        scale = 10.0**digits
        scaled = np.abs(values) * scale
        fraction = scaled - np.floor(scaled)
        near_half = np.isfinite(scaled) & (np.abs(fraction - 0.5) < 1e-6)
        if mode == decimal.ROUND_HALF_UP:
            rounded = np.sign(values) * np.floor(scaled + 0.5) / scale
        else:
            rounded = np.sign(values) * np.round(scaled) / scale
        rounded = np.where(np.isfinite(values), rounded, values)
    for i in np.flatnonzero(near_half):  # decided by the decimal digits, not the binary value
        rounded[i] = _rounded(float(values[i]), digits, mode)
    rounded = rounded + 0.0  # a result of zero is +0.0, as Spark's BigDecimal gives
    return pa.array(rounded, pa.float64(), mask=null_mask(column)).cast(result)


def _round_integers(column: pa.Array, digits: int, mode: str, result: pa.DataType) -> pa.Array:
    if digits >= 0:
        return column
    values = (
        [
            None
            if v is None
            else int(decimal.Decimal(v).quantize(decimal.Decimal(1).scaleb(-digits), rounding=mode))
            for v in column.to_pylist()
        ]
        if -digits > 18
        else None
    )
    if values is not None:
        return pa.array(values, result)
    q = 10 ** (-digits)
    ints = np.asarray(column.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    magnitude, remainder = np.divmod(np.abs(ints), q)
    half = remainder * 2
    up = (half > q) | ((half == q) & ((mode == decimal.ROUND_HALF_UP) | (magnitude % 2 == 1)))
    rounded = np.sign(ints) * (magnitude + up) * q
    return pa.array(rounded, pa.int64(), mask=null_mask(column)).cast(result)


def _round(args: list[ArgValue], result: pa.DataType, n: int, mode: str) -> pa.Array:
    column = as_array(args[0], n)
    digits = 0 if len(args) == 1 else int(constant(args[1])[1])
    if pa.types.is_decimal(result):
        arrow_mode = "half_towards_infinity" if mode == decimal.ROUND_HALF_UP else "half_to_even"
        return pc.round(column, max(digits, -38), round_mode=arrow_mode).cast(result)
    if pa.types.is_integer(result):
        return _round_integers(column, digits, mode, result)
    return _round_floats(column.cast(pa.float64()), digits, mode, result)


register(
    "round",
    "math",
    (1, 2),
    lambda a: _round_type(a, "round"),
    lambda a, r, n: _round(a, r, n, decimal.ROUND_HALF_UP),
)
register(
    "bround",
    "math",
    (1, 2),
    lambda a: _round_type(a, "bround"),
    lambda a, r, n: _round(a, r, n, decimal.ROUND_HALF_EVEN),
)


def _ceil_type(args: list[Expr], name: str) -> tuple[list[Expr], pa.DataType]:
    t = _number(args[0], name)
    if pa.types.is_decimal(t):
        return args, pa.decimal128(min(t.precision - t.scale + 1, 38), 0)
    return args, pa.int64()


def _ceil(args: list[ArgValue], result: pa.DataType, n: int, *, up: bool) -> pa.Array:
    column = as_array(args[0], n)
    if pa.types.is_integer(column.type):
        return column.cast(pa.int64())
    rounded = (pc.ceil if up else pc.floor)(column)
    if pa.types.is_decimal(result):
        return rounded.cast(result)
    values = np.asarray(
        rounded.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64
    )
    too_big = np.abs(values) >= 2.0**63
    if np.any(too_big & ~null_mask(column)):
        raise FunctionRuntimeError("[ARITHMETIC_OVERFLOW] overflow (ceil/floor of a value beyond bigint)")
    return pa.array(
        np.where(np.isnan(values), 0, values).astype(np.int64), pa.int64(), mask=null_mask(column)
    )


register(
    "ceil",
    "math",
    (1, 1),
    lambda a: _ceil_type(a, "ceil"),
    lambda a, r, n: _ceil(a, r, n, up=True),
    aliases=("ceiling",),
)
register("floor", "math", (1, 1), lambda a: _ceil_type(a, "floor"), lambda a, r, n: _ceil(a, r, n, up=False))


# ------------------------------------------------------------------------ powers and logarithms


def _doubles(args: list[Expr], name: str) -> tuple[list[Expr], pa.DataType]:
    for a in args:
        _number(a, name)
    return [cast_to(a, pa.float64()) for a in args], pa.float64()


def _unary(function: str) -> Kernel:
    def kernel(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
        return pc.call_function(function, [as_array(args[0], n)])

    return kernel


register("sqrt", "math", (1, 1), lambda a: _doubles(a, "sqrt"), _unary("sqrt"))
register("exp", "math", (1, 1), lambda a: _doubles(a, "exp"), _unary("exp"))
register(
    "pow",
    "math",
    (2, 2),
    lambda a: _doubles(a, "pow"),
    lambda a, r, n: pc.power(as_array(a[0], n), as_array(a[1], n)),
    aliases=("power",),
)


def _log_of(values: pa.Array, base: float | None) -> pa.Array:
    x = np.asarray(values.fill_null(1).to_numpy(zero_copy_only=False), dtype=np.float64)
    with np.errstate(all="ignore"):
        out = (
            np.log(x)
            if base is None
            else (np.log2(x) if base == 2 else (np.log10(x) if base == 10 else np.log(x) / np.log(base)))
        )
    return pa.array(out, pa.float64(), mask=null_mask(values) | (x <= 0))


def _log(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    if len(args) == 1:
        return _log_of(as_array(args[0], n), None)
    base, value = as_array(args[0], n), as_array(args[1], n)
    b = np.asarray(base.fill_null(1).to_numpy(zero_copy_only=False), dtype=np.float64)
    x = np.asarray(value.fill_null(1).to_numpy(zero_copy_only=False), dtype=np.float64)
    with np.errstate(all="ignore"):
        out = np.log(x) / np.log(b)
    return pa.array(out, pa.float64(), mask=null_mask(base, value) | (x <= 0) | (b <= 0))


register("ln", "math", (1, 1), lambda a: _doubles(a, "ln"), lambda a, r, n: _log_of(as_array(a[0], n), None))
register("log", "math", (1, 2), lambda a: _doubles(a, "log"), _log)
register(
    "log10", "math", (1, 1), lambda a: _doubles(a, "log10"), lambda a, r, n: _log_of(as_array(a[0], n), 10)
)
register("log2", "math", (1, 1), lambda a: _doubles(a, "log2"), lambda a, r, n: _log_of(as_array(a[0], n), 2))
register("e", "math", (0, 0), lambda a: (a, pa.float64()), lambda a, r, n: as_array(pa.scalar(math.e), n))
register("pi", "math", (0, 0), lambda a: (a, pa.float64()), lambda a, r, n: as_array(pa.scalar(math.pi), n))


# -------------------------------------------------------------------------------- sign and mod


def _type_sign(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    _number(args[0], "sign")
    return args, pa.float64()


def _sign(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    column = as_array(args[0], n).cast(pa.float64())
    x = np.asarray(column.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64)
    return pa.array(
        np.where(x == 0, x, np.sign(x)), pa.float64(), mask=null_mask(column)
    )  # Math.signum(-0.0) = -0.0


register(
    "sign",
    "math",
    (1, 1),
    _type_sign,
    _sign,
    aliases=("signum",),
)
register(
    "positive", "math", (1, 1), lambda a: (a, _number(a[0], "positive")), lambda a, r, n: as_array(a[0], n)
)
register("abs", "math", (1, 1), lambda a: (a, _number(a[0], "abs")))
register("negative", "math", (1, 1), lambda a: (a, _number(a[0], "negative")))


def _pmod(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    left, right = as_array(args[0], n), as_array(args[1], n)
    zero = pc.fill_null(pc.equal(right, pa.scalar(0, right.type).cast(right.type)), False)
    if pc.any(pc.and_(zero, pc.is_valid(left))).as_py():
        raise FunctionRuntimeError("[REMAINDER_BY_ZERO] Remainder by zero (pmod)")
    safe_right = pc.if_else(zero, pa.scalar(1, right.type).cast(right.type), right)
    remainder = pc.call_function("remainder_checked", [left, safe_right])
    negative = pc.less(remainder, pa.scalar(0, result).cast(remainder.type))
    wrapped = pc.call_function("remainder_checked", [pc.add_checked(remainder, safe_right), safe_right])
    return with_nulls(pc.if_else(negative, wrapped, remainder).cast(result), null_mask(left, right))


def _type_pmod(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    for a in args:
        _number(a, "pmod")
    return coerce_all(args, "pmod")


register("pmod", "math", (2, 2), _type_pmod, _pmod)

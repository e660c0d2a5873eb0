"""The Spark SQL function library of the local engine: one :class:`FunctionSpec` per function.

A spec says how many arguments a function takes, how binding types it (Spark's implicit casts and its
result type, see :func:`common_type`) and how it is computed over Arrow arrays (its kernel: a
vectorised ``pyarrow.compute`` / numpy computation over whole columns; literal arguments arrive as
``pa.Scalar``). Families register their functions on import (:mod:`.arrays`, :mod:`.maps`,
:mod:`.strings`, :mod:`.datetimes`, :mod:`.conditional`, :mod:`.math`, :mod:`.hashing`).

Example:
    >>> from airflow_provider_delta.core.expressions.functions import lookup
    >>> lookup("CARDINALITY").name, lookup("no_such_function") is None
    ('size', True)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.expressions.nodes import Cast, Expr, Literal, _type_of
from airflow_provider_delta.core.expressions.values import (
    _convert_value,
    _is_binary_type,
    _is_numeric_type,
    _is_string_type,
)

ArgValue = Union[pa.Array, pa.Scalar]  # noqa: UP007 - a runtime alias
Typer = Callable[[list[Expr]], tuple[list[Expr], pa.DataType]]
Kernel = Callable[[list[ArgValue], pa.DataType, int], pa.Array]


class FunctionTypeError(Exception):
    """The arguments do not fit the function (binding turns it into a ``PredicateError``)."""


class FunctionRuntimeError(Exception):
    """A row makes the function fail, as Spark's ANSI mode fails (evaluation reports it)."""


@dataclass(frozen=True)
class FunctionSpec:
    """A Spark SQL function: its name, family, arity, typer and kernel."""

    name: str
    family: str
    min_args: int
    max_args: int | None
    typer: Typer
    kernel: Kernel | None = None
    #: Evaluated on the rows each argument decides (CASE, IF, NVL2): see ``arrow._evaluate_reached``.
    conditional: bool = False


REGISTRY: dict[str, FunctionSpec] = {}
ALIASES: dict[str, str] = {}


def register(
    name: str,
    family: str,
    arity: tuple[int, int | None],
    typer: Typer,
    kernel: Kernel | None = None,
    *,
    aliases: Sequence[str] = (),
    conditional: bool = False,
) -> None:
    """Add a function to the library (``aliases`` are other spellings Spark accepts)."""
    REGISTRY[name] = FunctionSpec(name, family, arity[0], arity[1], typer, kernel, conditional)
    for alias in aliases:
        ALIASES[alias] = name


def lookup(name: str) -> FunctionSpec | None:
    """The spec of ``name`` (any case, aliases resolved), or None."""
    key = name.lower()
    return REGISTRY.get(ALIASES.get(key, key))


def check_arity(spec: FunctionSpec, count: int) -> str | None:
    """Why ``count`` arguments do not fit ``spec`` (None when they do)."""
    if count < spec.min_args or (spec.max_args is not None and count > spec.max_args):
        if spec.max_args == spec.min_args:
            wanted = str(spec.min_args)
        elif spec.max_args is None:
            wanted = f"at least {spec.min_args}"
        else:
            wanted = f"{spec.min_args} to {spec.max_args}"
        return f"{spec.name} takes {wanted} argument{'s' if wanted != '1' else ''}, found {count}"
    return None


# ------------------------------------------------------------------------------------------ typing


def type_of(expr: Expr) -> pa.DataType:
    """The bound expression's type (null when unknown)."""
    found = _type_of(expr)
    return pa.null() if found is None else found


def cast_to(expr: Expr, target: pa.DataType) -> Expr:
    """``expr`` as ``target``: literals converted now (as Spark folds constants), others wrapped in a Cast."""
    current = type_of(expr)
    if current == target:
        return expr
    if _is_string_type(target) and not _is_simple(current):
        raise FunctionTypeError(f"cannot use {current} where a string is expected")
    if isinstance(expr, Literal):
        if expr.value is None:
            return Literal(None, target)
        if _is_simple(target):
            try:
                return Literal(_convert_value(expr.value, target), target)
            except (TypeError, ValueError, ArithmeticError) as err:
                raise FunctionTypeError(f"cannot convert {expr.value!r} to {target}: {err}") from err
    return Cast(expr, target)


def _is_simple(t: pa.DataType) -> bool:
    return not (
        pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t) or pa.types.is_struct(t)
    )


def _integer_rank(t: pa.DataType) -> int:
    return {8: 0, 16: 1, 32: 2, 64: 3}[t.bit_width]


def _decimal_of_integer(t: pa.DataType) -> pa.DataType:
    return pa.decimal128({8: 3, 16: 5, 32: 10, 64: 20}[t.bit_width], 0)


def _wider_decimal(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    scale = max(a.scale, b.scale)
    digits = max(a.precision - a.scale, b.precision - b.scale)
    return pa.decimal128(min(digits + scale, 38), scale if digits + scale <= 38 else max(38 - digits, 0))


def wider_type(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """Spark's common type of two types (``findWiderTypeForTwo``, numeric and datetime cases), or None."""
    if a == b or pa.types.is_null(b):
        return a
    if pa.types.is_null(a):
        return b
    if _is_string_type(a) and _is_string_type(b):
        return pa.string()
    if _is_binary_type(a) and _is_binary_type(b):
        return pa.binary()
    if _is_numeric_type(a) and _is_numeric_type(b):
        return _wider_numeric(a, b)
    if pa.types.is_date(a) and pa.types.is_timestamp(b):
        return b
    if pa.types.is_timestamp(a) and pa.types.is_date(b):
        return a
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b):
        return a if a.tz is not None else b
    if _is_string_type(a) or _is_string_type(b):
        return _with_string(b if _is_string_type(a) else a)
    return _wider_nested(a, b)


def _with_string(other: pa.DataType) -> pa.DataType | None:
    """Spark's ANSI common type of a string and ``other`` (the string is cast to it)."""
    if pa.types.is_integer(other):
        return pa.int64()
    if pa.types.is_floating(other) or pa.types.is_decimal(other):
        return pa.float64()
    if pa.types.is_date(other) or pa.types.is_timestamp(other) or pa.types.is_boolean(other):
        return other
    return pa.binary() if _is_binary_type(other) else None


def _wider_numeric(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    if pa.types.is_floating(a) or pa.types.is_floating(b):
        both_float32 = pa.types.is_float32(a) and pa.types.is_float32(b)
        one_float32 = pa.types.is_float32(a) or pa.types.is_float32(b)
        other = b if pa.types.is_float32(a) else a
        if both_float32 or (one_float32 and pa.types.is_integer(other)):
            return pa.float32()
        return pa.float64()
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        return a if _integer_rank(a) >= _integer_rank(b) else b
    da = _decimal_of_integer(a) if pa.types.is_integer(a) else a
    db = _decimal_of_integer(b) if pa.types.is_integer(b) else b
    return _wider_decimal(da, db)


def _wider_nested(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    if is_list_type(a) and is_list_type(b):
        inner = wider_type(a.value_type, b.value_type)
        return None if inner is None else pa.list_(inner)
    if pa.types.is_map(a) and pa.types.is_map(b):
        key, item = wider_type(a.key_type, b.key_type), wider_type(a.item_type, b.item_type)
        return None if key is None or item is None else pa.map_(key, item)
    if pa.types.is_struct(a) and pa.types.is_struct(b) and a.num_fields == b.num_fields:
        fields = []
        for fa, fb in zip(a, b, strict=True):
            if fa.name.lower() != fb.name.lower():
                return None
            inner = wider_type(fa.type, fb.type)
            if inner is None:
                return None
            fields.append(pa.field(fa.name, inner))
        return pa.struct(fields)
    return None


def common_type(types: Sequence[pa.DataType], what: str) -> pa.DataType:
    """The type all of ``types`` convert to, or :class:`FunctionTypeError` naming ``what``."""
    result: pa.DataType = pa.null()
    for t in types:
        wider = wider_type(result, t)
        if wider is None:
            shown = ", ".join(str(x) for x in types)
            raise FunctionTypeError(f"{what} needs arguments of one type, found {shown}")
        result = wider
    return result


def coerce_all(args: Sequence[Expr], what: str) -> tuple[list[Expr], pa.DataType]:
    """Every argument cast to their common type."""
    target = common_type([type_of(a) for a in args], what)
    return [cast_to(a, target) for a in args], target


def is_list_type(t: pa.DataType) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t))


def require(condition: bool, message: str) -> None:
    """Raise :class:`FunctionTypeError` with ``message`` unless ``condition``."""
    if not condition:
        raise FunctionTypeError(message)


def literal_value(expr: Expr, what: str) -> Any:
    """The value of a literal argument (Spark requires some arguments to be constants)."""
    if not isinstance(expr, Literal):
        raise FunctionTypeError(f"{what} must be a constant")
    return expr.value


# ----------------------------------------------------------------------------------------- kernels


def as_array(value: ArgValue, num_rows: int) -> pa.Array:
    """A scalar repeated ``num_rows`` times, or the array itself (chunks combined)."""
    if isinstance(value, pa.ChunkedArray):
        return value.combine_chunks()
    if isinstance(value, pa.Array):
        return value
    if not value.is_valid:
        return pa.nulls(num_rows, value.type)
    one = pa.array([value.as_py()], value.type)
    return one.take(pa.array(np.zeros(num_rows, dtype=np.int64)))


def constant(value: ArgValue) -> tuple[bool, Any]:
    """(True, its Python value) for a scalar argument, (False, None) for a column."""
    if isinstance(value, pa.Scalar):
        return True, value.as_py()
    return False, None


def null_mask(*values: pa.Array) -> np.ndarray:
    """Rows where any of ``values`` is null."""
    mask = np.zeros(len(values[0]), dtype=bool)
    for value in values:
        if value.null_count:
            mask |= np.asarray(value.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    return mask


def with_nulls(result: pa.Array, mask: np.ndarray) -> pa.Array:
    """``result`` with the rows of ``mask`` set to null."""
    if not mask.any():
        return result
    return pc.if_else(pa.array(mask), pa.scalar(None, result.type), result)


def per_row(
    args: Sequence[ArgValue], num_rows: int, fn: Callable[..., Any], result_type: pa.DataType
) -> pa.Array:
    """``fn`` over each row's Python values, null where any argument is null (the rare functions)."""
    columns = [as_array(a, num_rows).to_pylist() for a in args]
    out = [None if any(v is None for v in row) else fn(*row) for row in zip(*columns, strict=True)]
    return pa.array(out, result_type)


def today_utc() -> dt.date:
    """The current date in UTC (``current_date`` and friends)."""
    return dt.datetime.now(dt.timezone.utc).date()

"""Data skipping: decide from partition values and per-file statistics whether a file may match.

Partition-only parts of a predicate are evaluated exactly (:mod:`.scalar`); comparisons over data
columns use the file's ``minValues``/``maxValues``/``nullCount`` conservatively, so a file is skipped
only when no row can match.

Example:
    >>> from airflow_provider_delta.core.expressions import bind, parse_predicate
    >>> schema = pa.schema([("x", pa.int64())])
    >>> pred = bind(parse_predicate("x IS NULL OR x < 0"), schema)
    >>> stats = {"numRecords": 3, "minValues": {"x": 1}, "nullCount": {"x": 0}}
    >>> file_may_match(pred, partition_values={}, stats=stats)
    False
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from airflow_provider_delta.core.expressions.nodes import (
    And,
    Between,
    Column,
    Comparison,
    ComparisonOp,
    Expr,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    Or,
    _walk,
)
from airflow_provider_delta.core.expressions.scalar import _UNKNOWN, _eval_scalar
from airflow_provider_delta.core.expressions.values import _convert_value, _is_number, _is_string_type
from airflow_provider_delta.core.partitions import parse_timestamp

_MISSING = object()
_NEGATED: dict[str, ComparisonOp] = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_FLIPPED: dict[str, ComparisonOp] = {
    "=": "=",
    "!=": "!=",
    "<": ">",
    "<=": ">=",
    ">": "<",
    ">=": "<=",
    "<=>": "<=>",
}
_TIMESTAMP_STAT_SLACK = dt.timedelta(milliseconds=1)


def file_may_match(
    expr: Expr,
    *,
    partition_values: Mapping[str, Any],
    stats: Mapping[str, Any] | None,
    string_prefix_length: int = 32,
) -> bool:
    """Decide whether a data file may hold rows matching a predicate (data skipping).

    The answer is conservative: ``True`` whenever the file cannot be ruled out (missing or partial stats,
    expressions over data columns other than simple comparisons, types without usable bounds). Partition
    columns are evaluated exactly; data columns use ``minValues``/``maxValues``/``nullCount``:
    timestamp maxima are widened by 1 ms (Spark truncates them to milliseconds), string maxima of
    ``string_prefix_length`` or more characters are treated as prefixes (Delta truncates long strings),
    float bounds that are NaN are ignored, and ``nullCount == numRecords`` means all values are null.

    Args:
        expr: A bound predicate (see :func:`bind`; unbound columns only use numeric stats).
        partition_values: Decoded partition values of the file, keyed by column name.
        stats: The parsed ``add.stats`` JSON (logical column names), or None.
        string_prefix_length: ``delta.dataSkippingStringPrefixLength`` of the table.

    Returns:
        False only when no row of the file can satisfy the predicate.

    Example:
        >>> from airflow_provider_delta.core.expressions import bind, parse_predicate
        >>> schema = pa.schema([("p", pa.string()), ("x", pa.int64())])
        >>> pred = bind(parse_predicate("p = 'a' AND x > 10"), schema)
        >>> file_may_match(pred, partition_values={"p": "a"}, stats={"numRecords": 3, "maxValues": {"x": 7}})
        False
    """
    skipper = _Skipper(partition_values, stats or {}, string_prefix_length)
    if skipper.num_records == 0:
        return False
    return skipper.may(expr)


@dataclass(frozen=True)
class _Bounds:
    lo: Any = None  # None: unknown
    hi: Any = None
    hi_is_prefix: bool = False  # the true maximum starts with ``hi`` (a truncated string)
    exact: bool = False  # lo and hi are the true minimum and maximum
    all_null: bool = False
    no_null: bool = False


class _Skipper:
    def __init__(
        self, partition_values: Mapping[str, Any], stats: Mapping[str, Any], prefix_length: int
    ) -> None:
        self.partition_values = partition_values
        self.stats = stats
        self.prefix_length = prefix_length
        records = stats.get("numRecords")
        self.num_records = records if isinstance(records, int) and not isinstance(records, bool) else None

    # -- predicate structure

    def may(self, expr: Expr) -> bool:
        if self.is_partition_only(expr):
            value = _eval_scalar(expr, self.partition_values)
            return value is _UNKNOWN or value is True
        if isinstance(expr, And):
            return self.may(expr.left) and self.may(expr.right)
        if isinstance(expr, Or):
            return self.may(expr.left) or self.may(expr.right)
        if isinstance(expr, Not):
            return self.may_not(expr.operand)
        if isinstance(expr, Comparison):
            return self.comparison(expr)
        if isinstance(expr, (IsNull, IsNotNull)) and isinstance(expr.operand, Column):
            bounds = self.bounds(expr.operand)
            return not (bounds.no_null if isinstance(expr, IsNull) else bounds.all_null)
        if isinstance(expr, In) and isinstance(expr.operand, Column):
            return any(self.comparison(Comparison("=", expr.operand, v)) for v in expr.values)
        if isinstance(expr, Between):
            low, high = Comparison(">=", expr.operand, expr.low), Comparison("<=", expr.operand, expr.high)
            return self.may(And(low, high))
        if isinstance(expr, Column):
            return self.comparison(Comparison("=", expr, Literal(True)))
        return True

    def may_not(self, expr: Expr) -> bool:
        """Whether ``NOT expr`` may be true for some row (NOT pushed down through the tree)."""
        if self.is_partition_only(expr):
            value = _eval_scalar(expr, self.partition_values)
            return value is _UNKNOWN or value is False
        if isinstance(expr, Not):
            return self.may(expr.operand)
        if isinstance(expr, And):
            return self.may_not(expr.left) or self.may_not(expr.right)
        if isinstance(expr, Or):
            return self.may_not(expr.left) and self.may_not(expr.right)
        if isinstance(expr, Comparison) and expr.op != "<=>":
            return self.comparison(Comparison(_NEGATED[expr.op], expr.left, expr.right))
        if isinstance(expr, IsNull):
            return self.may(IsNotNull(expr.operand))
        if isinstance(expr, IsNotNull):
            return self.may(IsNull(expr.operand))
        if isinstance(expr, Between):
            low, high = Comparison("<", expr.operand, expr.low), Comparison(">", expr.operand, expr.high)
            return self.may(Or(low, high))
        if isinstance(expr, In) and isinstance(expr.operand, Column):
            return self.not_in(expr.operand, expr.values)
        if isinstance(expr, Column):
            return self.comparison(Comparison("=", expr, Literal(False)))
        return True

    def is_partition_only(self, expr: Expr) -> bool:
        return all(
            isinstance(node.qualifier, type(None))
            and len(node.path) == 1
            and node.path[0] in self.partition_values
            for node in _walk(expr)
            if isinstance(node, Column)
        )

    # -- leaves over data columns

    def comparison(self, expr: Comparison) -> bool:
        if isinstance(expr.left, Column) and isinstance(expr.right, Literal):
            column, op, literal = expr.left, expr.op, expr.right
        elif isinstance(expr.right, Column) and isinstance(expr.left, Literal):
            column, op, literal = expr.right, _FLIPPED[expr.op], expr.left
        else:
            return True
        if self.is_partition_only(column):
            return self.may(expr)
        value = literal.value
        bounds = self.bounds(column)
        if op == "<=>":
            if value is None:
                return not bounds.no_null
            op = "="
        if value is None or bounds.all_null:
            return False  # a comparison with NULL is never true
        if isinstance(value, float) and math.isnan(value):
            return True
        try:
            return self.compare(bounds, op, value)
        except TypeError:
            return True

    def compare(self, b: _Bounds, op: str, value: Any) -> bool:
        if op == "=":
            return (b.lo is None or b.lo <= value) and (b.hi is None or self.hi_at_least(b, value))
        if op == "!=":
            return not (b.exact and b.lo is not None and b.lo == b.hi == value)
        if op == "<":
            return b.lo is None or b.lo < value
        if op == "<=":
            return b.lo is None or b.lo <= value
        if op == ">":
            return b.hi is None or self.hi_above(b, value)
        if op == ">=":
            return b.hi is None or self.hi_at_least(b, value)
        return True

    @staticmethod
    def hi_at_least(b: _Bounds, value: Any) -> bool:
        if b.hi_is_prefix:
            return bool(b.hi >= value or value.startswith(b.hi))
        return bool(b.hi >= value)

    @staticmethod
    def hi_above(b: _Bounds, value: Any) -> bool:
        if b.hi_is_prefix:
            return bool(b.hi > value or value.startswith(b.hi))
        return bool(b.hi > value)

    def not_in(self, column: Column, values: tuple[Expr, ...]) -> bool:
        if self.is_partition_only(column):
            return self.may_not(In(column, values))
        literals = [v.value for v in values if isinstance(v, Literal)]
        if len(literals) < len(values):
            return True
        if any(v is None for v in literals):
            return False  # x NOT IN (..., NULL) is never true
        bounds = self.bounds(column)
        if bounds.all_null:
            return False
        try:
            return not (
                bounds.exact and bounds.lo is not None and bounds.lo == bounds.hi and bounds.lo in literals
            )
        except TypeError:
            return True

    # -- statistics

    def bounds(self, column: Column) -> _Bounds:
        if column.qualifier is not None:
            return _Bounds()
        null_count = _lookup(self.stats.get("nullCount"), column.path)
        all_null = no_null = False
        if isinstance(null_count, int) and not isinstance(null_count, bool):
            no_null = null_count == 0
            all_null = self.num_records is not None and null_count == self.num_records
        raw_lo = _lookup(self.stats.get("minValues"), column.path)
        raw_hi = _lookup(self.stats.get("maxValues"), column.path)
        lo, lo_exact = _stat_value(raw_lo, column.dtype, is_max=False)
        hi, hi_exact = _stat_value(raw_hi, column.dtype, is_max=True)
        hi_is_prefix = False
        if isinstance(hi, str) and len(hi) >= self.prefix_length:
            hi, hi_is_prefix, hi_exact = hi[: self.prefix_length], True, False
        if isinstance(lo, str) and len(lo) >= self.prefix_length:
            lo_exact = False
        return _Bounds(lo, hi, hi_is_prefix, lo_exact and hi_exact, all_null, no_null)


def _lookup(tree: Any, path: tuple[str, ...]) -> Any:
    node = tree
    for part in path:
        if not isinstance(node, Mapping):
            return _MISSING
        if part in node:
            node = node[part]
            continue
        matches = [key for key in node if isinstance(key, str) and key.lower() == part.lower()]
        if len(matches) != 1:
            return _MISSING
        node = node[matches[0]]
    return node


def _stat_value(raw: Any, dtype: pa.DataType | None, *, is_max: bool) -> tuple[Any, bool]:
    """Convert a JSON stats value to a comparable Python value; returns (value or None, is_exact)."""
    if raw is _MISSING or raw is None or isinstance(raw, (Mapping, list)):
        return None, False
    if dtype is None:  # unbound: only plain numbers are safe to compare
        if _is_number(raw) and not (isinstance(raw, float) and math.isnan(raw)):
            return raw, not isinstance(raw, float)
        return None, False
    try:
        if pa.types.is_integer(dtype):
            if isinstance(raw, int) and not isinstance(raw, bool):
                return raw, True
            return (int(raw), True) if isinstance(raw, float) and raw.is_integer() else (None, False)
        if pa.types.is_floating(dtype):
            value = _convert_value(raw, dtype) if isinstance(raw, (str, int, float)) else None
            if value is None or math.isnan(value):
                return None, False
            # NaN rows may be left out of float stats by some writers: never claim exact bounds.
            return value, False
        if pa.types.is_decimal(dtype):
            return _decimal_stat(raw, dtype, is_max=is_max)
        if pa.types.is_date(dtype):
            return (_convert_value(raw, dtype), True) if isinstance(raw, str) else (None, False)
        if pa.types.is_timestamp(dtype):
            if not isinstance(raw, str):
                return None, False
            value = parse_timestamp(raw, zoned=dtype.tz is not None)
            # Spark writes timestamp stats truncated to milliseconds (PROTOCOL.md "Per-file Statistics").
            return (value + _TIMESTAMP_STAT_SLACK if is_max else value), False
        if _is_string_type(dtype):
            return (raw, True) if isinstance(raw, str) else (None, False)
        if pa.types.is_boolean(dtype):
            return (raw, True) if isinstance(raw, bool) else (None, False)
    except (TypeError, ValueError, ArithmeticError):
        return None, False
    return None, False


def _decimal_stat(raw: Any, dtype: pa.DataType, *, is_max: bool) -> tuple[Any, bool]:
    if isinstance(raw, float):  # Spark writes decimals as JSON numbers, parsed here as floats
        if not math.isfinite(raw):
            return None, False
        if dtype.precision <= 15:
            # A double tells apart every decimal of up to 15 significant digits: exact.
            return decimal.Decimal(f"{raw:.15g}"), True
        return decimal.Decimal(math.nextafter(raw, math.inf if is_max else -math.inf)), False
    return (decimal.Decimal(raw), True) if isinstance(raw, (int, str)) else (None, False)

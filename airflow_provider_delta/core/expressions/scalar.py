"""Evaluate expressions over one row of Python values (a file's partition values) with SQL semantics.

File skipping decides partition-only predicates exactly with :func:`_eval_scalar`; whatever cannot be
computed here (other columns, unsupported functions, values of types that do not compare) is
``_UNKNOWN``, which keeps the file.

Example:
    >>> from airflow_provider_delta.core.expressions import parse_predicate
    >>> _eval_scalar(parse_predicate("p IN ('a', NULL)"), {"p": "b"}) is None
    True
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.expressions.nodes import (
    And,
    Arithmetic,
    Between,
    Column,
    Comparison,
    Expr,
    Function,
    In,
    IsNotNull,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
)
from airflow_provider_delta.core.expressions.values import _is_number

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


class _Unknown:
    """The value of a partition-only expression this module cannot compute in Python."""

    def __repr__(self) -> str:
        return "UNKNOWN"


_UNKNOWN = _Unknown()


def _comparable(a: Any, b: Any) -> bool:
    if _is_number(a) and _is_number(b):
        return not (isinstance(a, float) and isinstance(b, decimal.Decimal)) and not (
            isinstance(a, decimal.Decimal) and isinstance(b, float)
        )
    if isinstance(a, dt.datetime) or isinstance(b, dt.datetime):
        return (
            isinstance(a, dt.datetime)
            and isinstance(b, dt.datetime)
            and ((a.tzinfo is None) == (b.tzinfo is None))
        )
    return any(isinstance(a, kind) and isinstance(b, kind) for kind in (bool, str, bytes, dt.date))


_PY_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, b: bool(a == b),
    "!=": lambda a, b: bool(a != b),
    "<": lambda a, b: bool(a < b),
    "<=": lambda a, b: bool(a <= b),
    ">": lambda a, b: bool(a > b),
    ">=": lambda a, b: bool(a >= b),
}


def _eval_scalar(expr: Expr, row: Mapping[str, Any]) -> Any:
    """Evaluate over one row of Python values with SQL semantics; ``_UNKNOWN`` when not computable."""
    if isinstance(expr, Column):
        if expr.qualifier is None and len(expr.path) == 1 and expr.path[0] in row:
            return row[expr.path[0]]
        return _UNKNOWN
    if isinstance(expr, Literal):
        return expr.value
    if isinstance(expr, (And, Or)):
        return _logical_scalar(expr, row)
    if isinstance(expr, Not):
        value = _eval_scalar(expr.operand, row)
        return (
            value
            if value is None or value is _UNKNOWN
            else (not value if isinstance(value, bool) else _UNKNOWN)
        )
    if isinstance(expr, (IsNull, IsNotNull)):
        value = _eval_scalar(expr.operand, row)
        return value if value is _UNKNOWN else ((value is None) == isinstance(expr, IsNull))
    if isinstance(expr, Comparison):
        return _compare_scalar(expr.op, _eval_scalar(expr.left, row), _eval_scalar(expr.right, row))
    if isinstance(expr, Between):
        low = Comparison(">=", expr.operand, expr.low)
        return _eval_scalar(And(low, Comparison("<=", expr.operand, expr.high)), row)
    if isinstance(expr, In):
        return _in_scalar(expr, row)
    if isinstance(expr, Like):
        return _like_scalar(expr, row)
    if isinstance(expr, Arithmetic):
        return _arithmetic_scalar(expr.op, _eval_scalar(expr.left, row), _eval_scalar(expr.right, row))
    if isinstance(expr, Function):
        return _function_scalar(expr, [_eval_scalar(a, row) for a in expr.args])
    return _UNKNOWN


def _logical_scalar(expr: And | Or, row: Mapping[str, Any]) -> Any:
    left, right = _eval_scalar(expr.left, row), _eval_scalar(expr.right, row)
    decisive = isinstance(expr, Or)  # True decides an OR, False decides an AND
    if left is decisive or right is decisive:
        return decisive
    if left is _UNKNOWN or right is _UNKNOWN:
        return _UNKNOWN
    return None if left is None or right is None else not decisive


def _in_scalar(expr: In, row: Mapping[str, Any]) -> Any:
    value = _eval_scalar(expr.operand, row)
    result: Any = False
    for candidate in expr.values:
        equal = _compare_scalar("=", value, _eval_scalar(candidate, row))
        if equal is True or equal is _UNKNOWN:
            return equal
        if equal is None:
            result = None
    return result


def _like_scalar(expr: Like, row: Mapping[str, Any]) -> Any:
    value, pattern = _eval_scalar(expr.operand, row), _eval_scalar(expr.pattern, row)
    if value is _UNKNOWN or pattern is _UNKNOWN:
        return _UNKNOWN
    if value is None or pattern is None:
        return None
    if not isinstance(value, str) or not isinstance(pattern, str):
        return _UNKNOWN
    flags = re.IGNORECASE | re.DOTALL if expr.case_insensitive else re.DOTALL
    return re.fullmatch(_like_regex(pattern), value, flags) is not None


def _compare_scalar(op: str, left: Any, right: Any) -> Any:
    if left is _UNKNOWN or right is _UNKNOWN:
        return _UNKNOWN
    if op == "<=>":
        if left is None or right is None:
            return left is None and right is None
        op = "="
    if left is None or right is None:
        return None
    if not _comparable(left, right):
        return _UNKNOWN
    return _PY_COMPARE[op](left, right)


def _like_regex(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return "".join(out)


def _arithmetic_scalar(op: str, left: Any, right: Any) -> Any:
    if left is _UNKNOWN or right is _UNKNOWN:
        return _UNKNOWN
    if left is None or right is None:
        return None
    if not (_is_number(left) and _is_number(right) and _comparable(left, right)):
        return _UNKNOWN
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        return _UNKNOWN  # Arrow raises, Spark returns NULL or raises: do not decide
    if op == "/":
        return left / right if not (isinstance(left, int) and isinstance(right, int)) else float(left) / right
    if isinstance(left, int) and isinstance(right, int):
        remainder = abs(left) % abs(right)
        return -remainder if left < 0 else remainder
    return math.fmod(left, right) if isinstance(left, float) or isinstance(right, float) else left % right


# Functions computed here; others (conditional ones among them: a NULL argument does not make them NULL)
# are unknown, which keeps the file.
_SCALAR_FUNCTIONS = frozenset(
    {"coalesce", "concat", "abs", "negative", "lower", "upper", "length", "trim", "ltrim", "rtrim", "substring"}
)


def _function_scalar(expr: Function, args: list[Any]) -> Any:
    name = expr.name
    if name not in _SCALAR_FUNCTIONS:
        return _UNKNOWN
    if name == "coalesce":
        for arg in args:
            if arg is _UNKNOWN:
                return _UNKNOWN
            if arg is not None:
                return arg
        return None
    if any(a is _UNKNOWN for a in args) or name in ("current_date", "current_timestamp") or not args:
        return _UNKNOWN
    if any(a is None for a in args):
        return None
    value = args[0]
    if name == "concat":
        return "".join(args) if all(isinstance(a, str) for a in args) else _UNKNOWN
    if name == "abs" and _is_number(value):
        return abs(value)
    if name == "negative" and _is_number(value):
        return -value
    if not isinstance(value, str):
        return len(value) if name == "length" and isinstance(value, bytes) else _UNKNOWN
    if name in ("lower", "upper"):
        return value.lower() if name == "lower" else value.upper()
    if name == "length":
        return len(value)
    if name in ("trim", "ltrim", "rtrim"):
        return {"trim": value.strip, "ltrim": value.lstrip, "rtrim": value.rstrip}[name](" ")
    if name == "substring" and all(isinstance(a, int) for a in args[1:]):
        pos = args[1]
        start = pos - 1 if pos > 0 else max(len(value) + pos, 0) if pos < 0 else 0
        if len(args) == 2:
            return value[start:]
        if pos < 0 and len(value) + pos < 0:  # the window starts before the string
            return value[: max(args[2] + len(value) + pos, 0)]
        return value[start : start + max(args[2], 0)]
    return _UNKNOWN

"""Render expressions as Spark SQL that the parser reads back to the same tree.

``str(expr)`` and error messages use :func:`to_sql`; literals keep their type through the round trip
(``5L``, ``1.5D``, ``DATE '...'``, ``CAST(... AS ...)``).

Example:
    >>> from airflow_provider_delta.core.expressions import col, lit
    >>> to_sql(In(col("my col"), (lit(1, pa.int64()), lit(2.5, pa.float64()))))
    '`my col` IN (1L, 2.5D)'
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core.expressions.nodes import (
    And,
    Arithmetic,
    Between,
    Cast,
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
    set_renderer,
)
from airflow_provider_delta.core.expressions.values import _decimal_type, _infer_type, _is_string_type
from airflow_provider_delta.core.partitions import format_timestamp
from airflow_provider_delta.exceptions import PredicateError

if TYPE_CHECKING:
    from collections.abc import Callable

_SPARK_TYPE_NAMES: tuple[tuple[Callable[[pa.DataType], bool], str], ...] = (
    (pa.types.is_int8, "TINYINT"),
    (pa.types.is_int16, "SMALLINT"),
    (pa.types.is_int32, "INT"),
    (pa.types.is_int64, "BIGINT"),
    (pa.types.is_float32, "FLOAT"),
    (pa.types.is_float64, "DOUBLE"),
    (pa.types.is_boolean, "BOOLEAN"),
    (pa.types.is_date, "DATE"),
    (pa.types.is_binary, "BINARY"),
    (pa.types.is_large_binary, "BINARY"),
)
_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _spark_type(t: pa.DataType) -> str:
    for check, name in _SPARK_TYPE_NAMES:
        if check(t):
            return name
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP" if t.tz is not None else "TIMESTAMP_NTZ"
    if _is_string_type(t):
        return "STRING"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"ARRAY<{_spark_type(t.value_type)}>"
    if pa.types.is_map(t):
        return f"MAP<{_spark_type(t.key_type)}, {_spark_type(t.item_type)}>"
    if pa.types.is_struct(t):
        return "STRUCT<" + ", ".join(f"{_quote_identifier(f.name)}: {_spark_type(f.type)}" for f in t) + ">"
    if pa.types.is_null(t):
        return "VOID"
    return str(t).upper()


def _quote_identifier(name: str) -> str:
    return name if _IDENTIFIER_RE.fullmatch(name) else "`" + name.replace("`", "``") + "`"


def _literal_sql(value: Any, t: pa.DataType) -> str:
    if value is None:
        return "NULL" if pa.types.is_null(t) else f"CAST(NULL AS {_spark_type(t)})"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        text = "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return text if _is_string_type(t) else f"CAST({text} AS {_spark_type(t)})"
    if isinstance(value, (bytes, bytearray)):
        return f"X'{bytes(value).hex().upper()}'"
    if isinstance(value, dt.datetime):
        text = format_timestamp(value)
        return f"TIMESTAMP '{text}Z'" if value.tzinfo is not None else f"TIMESTAMP_NTZ '{text}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, int) and t == _infer_type(value):
        return str(value)
    if isinstance(value, int) and pa.types.is_int64(t):
        return f"{value}L"
    if isinstance(value, float) and pa.types.is_float64(t) and math.isfinite(value):
        return f"{value!r}D"
    if isinstance(value, decimal.Decimal) and t == _decimal_type(value) and "." in format(value, "f"):
        return format(value, "f")
    number = format(value, "f") if isinstance(value, decimal.Decimal) else repr(value)
    if isinstance(value, float) and not math.isfinite(value):
        number = "'" + ("NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")) + "'"
    return f"CAST({number} AS {_spark_type(t)})"


def to_sql(expr: Expr) -> str:
    """Render an expression as Spark SQL that :func:`parse_expression` reads back to the same tree.

    Args:
        expr: Any expression.

    Returns:
        SQL text.

    Example:
        >>> from airflow_provider_delta.core.expressions import col, lit
        >>> to_sql(And(Comparison("=", col("a"), lit(1)), IsNull(col("b", "c"))))
        'a = 1 AND b.c IS NULL'
    """
    if isinstance(expr, Column):
        parts = (expr.qualifier, *expr.path) if expr.qualifier else expr.path
        return ".".join(_quote_identifier(p) for p in parts)
    if isinstance(expr, Literal):
        return _literal_sql(expr.value, expr.dtype)
    if isinstance(expr, Comparison):
        return f"{_operand_sql(expr.left)} {expr.op} {_operand_sql(expr.right)}"
    if isinstance(expr, And):
        return " AND ".join(
            f"({to_sql(e)})" if isinstance(e, Or) else to_sql(e) for e in (expr.left, expr.right)
        )
    if isinstance(expr, Or):
        return f"{to_sql(expr.left)} OR {to_sql(expr.right)}"
    if isinstance(expr, Not):
        return _not_sql(expr.operand)
    if isinstance(expr, IsNull):
        return f"{_operand_sql(expr.operand)} IS NULL"
    if isinstance(expr, IsNotNull):
        return f"{_operand_sql(expr.operand)} IS NOT NULL"
    if isinstance(expr, In):
        return f"{_operand_sql(expr.operand)} IN ({', '.join(to_sql(v) for v in expr.values)})"
    if isinstance(expr, Between):
        low, high = _operand_sql(expr.low), _operand_sql(expr.high)
        return f"{_operand_sql(expr.operand)} BETWEEN {low} AND {high}"
    if isinstance(expr, Like):
        keyword = "ILIKE" if expr.case_insensitive else "LIKE"
        return f"{_operand_sql(expr.operand)} {keyword} {_operand_sql(expr.pattern)}"
    if isinstance(expr, Cast):
        return f"CAST({to_sql(expr.operand)} AS {_spark_type(expr.to)})"
    if isinstance(expr, Arithmetic):
        return f"{_operand_sql(expr.left)} {expr.op} {_operand_sql(expr.right)}"
    if isinstance(expr, Function):
        return _function_sql(expr)
    raise PredicateError(f"Cannot render expression {expr!r}: unknown node type {type(expr).__name__}")


def _not_sql(inner: Expr) -> str:
    if isinstance(inner, In):
        return to_sql(inner).replace(" IN (", " NOT IN (", 1)
    if isinstance(inner, Like):
        return to_sql(inner).replace(" LIKE ", " NOT LIKE ", 1)
    if isinstance(inner, Between):
        return to_sql(inner).replace(" BETWEEN ", " NOT BETWEEN ", 1)
    return f"NOT {_operand_sql(inner)}"


def _function_sql(expr: Function) -> str:
    if expr.name == "negative" and len(expr.args) == 1:
        return f"-{_operand_sql(expr.args[0])}"
    if expr.name in ("current_date", "current_timestamp") and not expr.args:
        return expr.name
    if expr.name == "case" and len(expr.args) % 2 == 1:
        pairs = zip(expr.args[0:-1:2], expr.args[1:-1:2], strict=True)
        branches = " ".join(f"WHEN {to_sql(c)} THEN {to_sql(v)}" for c, v in pairs)
        default = expr.args[-1]
        untyped_null = isinstance(default, Literal) and default.value is None and pa.types.is_null(default.dtype)
        tail = "" if untyped_null else f" ELSE {to_sql(default)}"
        return f"CASE {branches}{tail} END"
    if expr.name == "[]" and len(expr.args) == 2:
        return f"{_operand_sql(expr.args[0])}[{to_sql(expr.args[1])}]"
    return f"{expr.name}({', '.join(to_sql(a) for a in expr.args)})"


def _operand_sql(expr: Expr) -> str:
    atomic = (Column, Literal, Function, Cast)
    return to_sql(expr) if isinstance(expr, atomic) else f"({to_sql(expr)})"


set_renderer(to_sql)

"""Bind expressions to a schema: resolve column names and qualifiers, coerce literals as Spark does.

Binding gives every :class:`~airflow_provider_delta.core.expressions.nodes.Column` its schema spelling
and Arrow type and turns literals compared with a column into that column's type, so evaluation and
file skipping compare like with like.

Example:
    >>> from airflow_provider_delta.core.expressions import parse_predicate
    >>> schema = pa.schema([("Id", pa.int64())])
    >>> str(bind(parse_predicate("id IN ('1', 2)"), schema))
    'Id IN (1L, 2L)'
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core.expressions.functions import FunctionTypeError, check_arity, lookup
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
    _type_of,
)
from airflow_provider_delta.core.expressions.render import to_sql
from airflow_provider_delta.core.expressions.values import (
    _convert_value,
    _is_binary_type,
    _is_number,
    _is_numeric_type,
    _is_string_type,
    _parse_number,
)
from airflow_provider_delta.exceptions import PredicateError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


def bind(
    expr: Expr,
    schema: pa.Schema,
    *,
    case_sensitive: bool = False,
    qualifiers: Mapping[str, pa.Schema] | None = None,
) -> Expr:
    """Resolve columns against ``schema`` and coerce literals to the column types, as Spark does.

    Column names match case-insensitively unless ``case_sensitive`` (Delta column names are case
    insensitive); nested fields resolve through structs. A qualified column ``t.x`` resolves in
    ``qualifiers["t"]`` when given, else in a struct column ``t`` of ``schema`` (the layout
    :func:`evaluate` reads qualified columns from). Literals compared with a column take its type: a
    string against a date becomes a date, an integer against a decimal a decimal, a string against a
    timestamp a timestamp (zone-less text is UTC); a number compared with a string column casts the
    column, as Spark does.

    Args:
        expr: An unbound (or bound) expression.
        schema: The Arrow schema of the rows it will see.
        case_sensitive: Match column names exactly.
        qualifiers: Schemas of table aliases, for expressions such as merge conditions.

    Returns:
        The bound expression: every :class:`Column` has its schema spelling and ``dtype``.

    Raises:
        PredicateError: A column cannot be resolved or a literal cannot be compared with its column.

    Example:
        >>> from airflow_provider_delta.core.expressions import parse_predicate
        >>> schema = pa.schema([("Id", pa.int64()), ("day", pa.date32())])
        >>> str(bind(parse_predicate("id = 1 AND day = '2020-01-01'"), schema))
        "Id = 1L AND day = DATE '2020-01-01'"
    """
    return _Binder(expr, schema, case_sensitive, qualifiers or {}).bind(expr)


class _Binder:
    def __init__(
        self, expr: Expr, schema: pa.Schema, case_sensitive: bool, qualifiers: Mapping[str, pa.Schema]
    ) -> None:
        self.text = to_sql(expr)
        self.schema = schema
        self.case_sensitive = case_sensitive
        self.qualifiers = dict(qualifiers)

    def error(self, reason: str) -> PredicateError:
        return PredicateError(f"Cannot bind predicate {self.text!r}: {reason}")

    def bind(self, expr: Expr) -> Expr:
        if isinstance(expr, Column):
            return self.column(expr)
        if isinstance(expr, Literal):
            return expr
        if isinstance(expr, Comparison):
            left, right = self.coerce_pair(self.bind(expr.left), self.bind(expr.right))
            return Comparison(expr.op, left, right)
        if isinstance(expr, In):
            return self.in_(expr)
        if isinstance(expr, Between):
            operand, low = self.coerce_pair(self.bind(expr.operand), self.bind(expr.low))
            operand, high = self.coerce_pair(operand, self.bind(expr.high))
            return Between(operand, low, high)
        if isinstance(expr, Like):
            operand, pattern = self.bind(expr.operand), self.bind(expr.pattern)
            if not (isinstance(pattern, Literal) and isinstance(pattern.value, str)):
                raise self.error(f"LIKE needs a string literal pattern, found {to_sql(pattern)!r}")
            operand_type = _type_of(operand)
            if operand_type is not None and not _is_string_type(operand_type):
                operand = Cast(operand, pa.string())
            return Like(operand, pattern, expr.case_insensitive)
        if isinstance(expr, Arithmetic):
            left, right = self.coerce_pair(self.bind(expr.left), self.bind(expr.right), arithmetic=True)
            return Arithmetic(expr.op, left, right)
        if isinstance(expr, Function):
            return self.function(expr)
        if isinstance(expr, (And, Or)):
            return type(expr)(self.bind(expr.left), self.bind(expr.right))
        if isinstance(expr, (Not, IsNull, IsNotNull)):
            return type(expr)(self.bind(expr.operand))
        if isinstance(expr, Cast):
            return Cast(self.bind(expr.operand), expr.to)
        raise self.error(f"unknown node type {type(expr).__name__}")

    # -- columns

    def column(self, column: Column) -> Column:
        path = column.path
        if column.qualifier is None and len(path) > 1:
            scope = self.find(list(self.qualifiers), path[0])
            if scope is not None and self.resolve(self.qualifiers[scope], path[1:]) is not None:
                return self.column(Column(scope, path[1:]))
        if column.qualifier is not None:
            scope = self.find(list(self.qualifiers), column.qualifier)
            if scope is not None:
                found = self.resolve(self.qualifiers[scope], path)
                if found is not None:
                    return Column(scope, found[0], found[1])
                raise self.unresolved(column, self.qualifiers[scope])
            found = self.resolve(self.schema, (column.qualifier, *path))
            if found is not None:
                return Column(found[0][0], found[0][1:], found[1])
            raise self.unresolved(column, self.schema)
        found = self.resolve(self.schema, path)
        if found is None:
            raise self.unresolved(column, self.schema)
        return Column(None, found[0], found[1])

    def find(self, names: Sequence[str], wanted: str) -> str | None:
        if wanted in names:
            return wanted
        if self.case_sensitive:
            return None
        matches = [n for n in names if n.lower() == wanted.lower()]
        if len(matches) > 1:
            raise self.error(f"column name {wanted!r} is ambiguous: {', '.join(matches)}")
        return matches[0] if matches else None

    def resolve(self, fields: Any, path: Sequence[str]) -> tuple[tuple[str, ...], pa.DataType] | None:
        names = [fields.field(i).name for i in range(len(fields))]
        # Try the path as nested fields first, then dotted top-level names ("a.b" as one column).
        for stop in range(1, len(path) + 1):
            name = self.find(names, ".".join(path[:stop]))
            if name is None:
                continue
            dtype = fields.field(names.index(name)).type
            if stop == len(path):
                return (name,), dtype
            if pa.types.is_struct(dtype):
                inner = self.resolve(dtype, path[stop:])
                if inner is not None:
                    return (name, *inner[0]), inner[1]
        return None

    def unresolved(self, column: Column, fields: Any) -> PredicateError:
        available = ", ".join(_field_names(fields)[:50])
        return PredicateError(
            f"Cannot resolve column {column.name!r} in predicate {self.text!r}: available columns {available}"
        )

    # -- coercion

    def coerce_pair(self, left: Expr, right: Expr, *, arithmetic: bool = False) -> tuple[Expr, Expr]:
        if isinstance(right, Literal) and not isinstance(left, Literal):
            cast_to, right = self.coerce_literal(right, _type_of(left), left, arithmetic=arithmetic)
            return (Cast(left, cast_to) if cast_to is not None else left), right
        if isinstance(left, Literal) and not isinstance(right, Literal):
            cast_to, left = self.coerce_literal(left, _type_of(right), right, arithmetic=arithmetic)
            return left, (Cast(right, cast_to) if cast_to is not None else right)
        lt, rt = _type_of(left), _type_of(right)
        if lt is None or rt is None or lt == rt or arithmetic:
            return left, right
        if pa.types.is_date(lt) and pa.types.is_timestamp(rt):
            return Cast(left, rt), right
        if pa.types.is_timestamp(lt) and pa.types.is_date(rt):
            return left, Cast(right, lt)
        if _is_string_type(lt) and _is_numeric_type(rt):
            return Cast(left, rt), right
        if _is_numeric_type(lt) and _is_string_type(rt):
            return left, Cast(right, lt)
        return left, right

    def coerce_literal(
        self, literal: Literal, target: pa.DataType | None, other: Expr, *, arithmetic: bool = False
    ) -> tuple[pa.DataType | None, Literal]:
        """Return (type to cast the other side to, or None; the coerced literal)."""
        value = literal.value
        if target is None or pa.types.is_null(target):
            return None, literal
        if value is None:
            return None, Literal(None, target)
        if arithmetic:
            if pa.types.is_decimal(target) and isinstance(value, int) and not isinstance(value, bool):
                return None, Literal(decimal.Decimal(value))
            return None, literal
        try:
            if _is_string_type(target):
                return (None, Literal(value, target)) if isinstance(value, str) else (literal.dtype, literal)
            if pa.types.is_boolean(target):
                if isinstance(value, bool) or (isinstance(value, str) and value.lower() in ("true", "false")):
                    return None, Literal(_convert_value(value, target), target)
            elif pa.types.is_integer(target) or pa.types.is_decimal(target):
                number = _parse_number(value) if isinstance(value, str) else value
                if isinstance(number, float):
                    return None, Literal(number)
                if _is_number(number):
                    return None, _exact_literal(number, target)
            elif pa.types.is_floating(target):
                if _is_number(value) or isinstance(value, str):
                    return None, Literal(_convert_value(value, target), target)
            elif pa.types.is_date(target):
                if isinstance(value, dt.datetime):
                    return literal.dtype, literal
                if isinstance(value, (dt.date, str)):
                    return None, Literal(_convert_value(value, target), target)
            elif pa.types.is_timestamp(target):
                if isinstance(value, (dt.date, str)):
                    return None, Literal(_convert_value(value, target), target)
            elif _is_binary_type(target):
                if isinstance(value, (str, bytes)):
                    return None, Literal(_convert_value(value, target), target)
            else:
                return None, literal
        except (TypeError, ValueError, ArithmeticError) as err:
            raise self.mismatch(other, target, literal) from err
        raise self.mismatch(other, target, literal)

    def mismatch(self, other: Expr, target: pa.DataType, literal: Literal) -> PredicateError:
        return self.error(f"cannot compare {to_sql(other)!r} of type {target} with {to_sql(literal)}")

    def in_(self, expr: In) -> Expr:
        operand = self.bind(expr.operand)
        values = []
        cast_to = None
        for value in expr.values:
            bound = self.bind(value)
            if isinstance(bound, Literal):
                cast, bound = self.coerce_literal(bound, _type_of(operand), operand)
                cast_to = cast_to or cast
            values.append(bound)
        if cast_to is not None:
            operand = Cast(operand, cast_to)
            values = [
                Literal(_convert_value(v.value, cast_to), cast_to) if isinstance(v, Literal) else v
                for v in values
            ]
        return In(operand, tuple(values))

    def function(self, expr: Function) -> Expr:
        args = [self.bind(a) for a in expr.args]
        spec = lookup(expr.name)
        if spec is None:
            raise self.error(f"the function {expr.name!r} is not supported by the local engine")
        reason = check_arity(spec, len(args))
        if reason is not None:
            raise self.error(reason)
        try:
            typed, result = spec.typer(args)
        except FunctionTypeError as err:
            raise self.error(str(err)) from err
        return Function(spec.name, tuple(typed), result)


def _exact_literal(number: int | decimal.Decimal, target: pa.DataType) -> Literal:
    """The literal in the column's type when that is exact, else in its own (wider) type."""
    try:
        converted = _convert_value(number, target)
    except ValueError:
        converted = None
    if converted is not None and converted == number:
        return Literal(converted, target)
    if isinstance(number, decimal.Decimal) and number == number.to_integral_value():
        number = int(number)
    if isinstance(number, int) and not -(2**63) <= number < 2**63:
        number = decimal.Decimal(number)
    return Literal(number, pa.int64() if isinstance(number, int) else None)


def _field_names(fields: Any, prefix: str = "") -> list[str]:
    names = []
    for i in range(len(fields)):
        f = fields.field(i)
        names.append(prefix + f.name)
        if pa.types.is_struct(f.type):
            names.extend(_field_names(f.type, prefix + f.name + "."))
    return names


def require_boolean(bound: Expr, text: Any) -> None:
    """Raise unless a bound predicate yields booleans (``delete("id")`` is a mistake, not a filter).

    Raises:
        PredicateError: the expression yields another type (named in the message).
    """
    result_type = _type_of(bound)
    if result_type is not None and not pa.types.is_boolean(result_type) and not pa.types.is_null(result_type):
        shown = text if isinstance(text, str) else str(text)
        raise PredicateError(f"Cannot use {shown!r} as a predicate: it yields {result_type}, expected boolean")

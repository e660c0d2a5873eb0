"""The expression model: immutable AST nodes, their constructors and structural queries.

Nodes are frozen dataclasses; a :class:`Column` gets its ``dtype`` from
:func:`~airflow_provider_delta.core.expressions.bind`, a :class:`Literal` carries Spark's type for its
value. Queries here look at the tree only (its columns, its top-level ANDs, a bound node's result type).

Example:
    >>> pred = And(Comparison("=", col("a"), lit(1)), IsNull(col("s", "x")))
    >>> sorted(referenced_columns(pred)), str(pred)
    ([('a',), ('s', 'x')], 'a = 1 AND s.x IS NULL')
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any
from typing import Literal as TypingLiteral

import pyarrow as pa

from airflow_provider_delta.core.expressions.values import _infer_type

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterator

ComparisonOp = TypingLiteral["=", "!=", "<", "<=", ">", ">=", "<=>"]
ArithmeticOp = TypingLiteral["+", "-", "*", "/", "%"]


_RENDERER: list[Callable[[Expr], str]] = [repr]


def set_renderer(render: Callable[[Expr], str]) -> None:
    """Install the function behind ``str(expr)`` (called once by :mod:`.render`)."""
    _RENDERER[0] = render


@dataclass(frozen=True)
class Expr:
    """Base of every expression node; ``str(expr)`` renders Spark SQL."""

    def __str__(self) -> str:
        # The renderer lives in .render (which imports these nodes) and registers itself on import;
        # the package's __init__ imports it, so every Expr in use renders.
        return _RENDERER[0](self)

    def children(self) -> tuple[Expr, ...]:
        """Return the direct sub-expressions, left to right."""
        found: list[Expr] = []
        for item in (getattr(self, f.name) for f in fields(self)):
            if isinstance(item, Expr):
                found.append(item)
            elif isinstance(item, tuple):
                found.extend(e for e in item if isinstance(e, Expr))
        return tuple(found)


@dataclass(frozen=True)
class Column(Expr):
    """A column reference: ``qualifier`` is a table alias (``t`` in ``t.id``), ``path`` the field path.

    ``dtype`` is set by :func:`bind`.
    """

    qualifier: str | None
    path: tuple[str, ...]
    dtype: pa.DataType | None = None

    @property
    def name(self) -> str:
        """The dotted name, qualifier included."""
        return ".".join((self.qualifier, *self.path) if self.qualifier else self.path)


@dataclass(frozen=True)
class Literal(Expr):
    """A constant. ``dtype`` defaults to Spark's type for the Python value.

    ``int`` -> int32 (int64 or decimal(38,0) when larger), ``Decimal`` -> decimal(p,s) of its digits,
    ``float`` -> double, ``str`` -> string, ``bytes`` -> binary, ``date`` -> date32, ``datetime`` ->
    timestamp (aware values are converted to UTC; naive ones are timestamp_ntz), ``None`` -> null.
    """

    value: Any
    dtype: pa.DataType = None

    def __post_init__(self) -> None:
        if isinstance(self.value, dt.datetime) and self.value.tzinfo is not None:
            object.__setattr__(self, "value", self.value.astimezone(dt.timezone.utc))
        if self.dtype is None:
            object.__setattr__(self, "dtype", _infer_type(self.value))


@dataclass(frozen=True)
class Comparison(Expr):
    """``left <op> right``; ``<=>`` is Spark's null-safe equality."""

    op: ComparisonOp
    left: Expr
    right: Expr


@dataclass(frozen=True)
class And(Expr):
    """Logical AND (three-valued)."""

    left: Expr
    right: Expr


@dataclass(frozen=True)
class Or(Expr):
    """Logical OR (three-valued)."""

    left: Expr
    right: Expr


@dataclass(frozen=True)
class Not(Expr):
    """Logical NOT (three-valued: NOT NULL is NULL)."""

    operand: Expr


@dataclass(frozen=True)
class IsNull(Expr):
    """``operand IS NULL``."""

    operand: Expr


@dataclass(frozen=True)
class IsNotNull(Expr):
    """``operand IS NOT NULL``."""

    operand: Expr


@dataclass(frozen=True)
class In(Expr):
    """``operand IN (values...)``; ``NOT IN`` is ``Not(In(...))``."""

    operand: Expr
    values: tuple[Expr, ...]


@dataclass(frozen=True)
class Between(Expr):
    """``operand BETWEEN low AND high`` (inclusive)."""

    operand: Expr
    low: Expr
    high: Expr


@dataclass(frozen=True)
class Like(Expr):
    """``operand LIKE pattern`` (``%``, ``_``, backslash escapes); ``ILIKE`` when ``case_insensitive``."""

    operand: Expr
    pattern: Expr
    case_insensitive: bool = False


@dataclass(frozen=True)
class Cast(Expr):
    """``CAST(operand AS to)``."""

    operand: Expr
    to: pa.DataType


@dataclass(frozen=True)
class Arithmetic(Expr):
    """``left <op> right`` for ``+ - * / %``; ``/`` of integers gives a double, as in Spark."""

    op: ArithmeticOp
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Function(Expr):
    """A call of a Spark SQL function (its canonical lower-case name, see ``expressions.functions``).

    ``dtype`` is the result type, set by :func:`bind`. Two names are syntax rather than calls:
    ``case`` (``CASE WHEN c1 THEN v1 ... ELSE e END`` as ``(c1, v1, ..., e)``) and ``[]`` (``x[i]``).
    """

    name: str
    args: tuple[Expr, ...] = field(default=())
    dtype: pa.DataType | None = None


def col(name: str, *path: str, qualifier: str | None = None) -> Column:
    """Build a column reference: ``col("a", "b")`` is the nested field ``a.b``.

    Args:
        name: First path element.
        *path: Further nested field names.
        qualifier: Optional table alias.

    Returns:
        An unbound :class:`Column`.

    Example:
        >>> col("a", "b").name
        'a.b'
    """
    return Column(qualifier, (name, *path))


def lit(value: Any, dtype: pa.DataType | None = None) -> Literal:
    """Build a literal, inferring Spark's type unless ``dtype`` is given.

    Args:
        value: Python value.
        dtype: Arrow type.

    Returns:
        A :class:`Literal`.

    Example:
        >>> lit(1).dtype
        DataType(int32)
    """
    return Literal(value, dtype)


def conjuncts(expr: Expr) -> list[Expr]:
    """Split a predicate on its top-level ANDs.

    Args:
        expr: A predicate.

    Returns:
        The AND-ed terms, left to right.

    Example:
        >>> from airflow_provider_delta.core.expressions import parse_predicate
        >>> [str(e) for e in conjuncts(parse_predicate("a = 1 AND (b = 2 AND c = 3)"))]
        ['a = 1', 'b = 2', 'c = 3']
    """
    if isinstance(expr, And):
        return conjuncts(expr.left) + conjuncts(expr.right)
    return [expr]


def _walk(expr: Expr) -> Iterator[Expr]:
    yield expr
    for child in expr.children():
        yield from _walk(child)


def referenced_columns(expr: Expr) -> set[tuple[str, ...]]:
    """Return the field paths of every column the expression reads (qualifiers left out).

    Args:
        expr: Any expression.

    Returns:
        Set of paths such as ``("a",)`` and ``("s", "x")``.

    Example:
        >>> from airflow_provider_delta.core.expressions import parse_predicate
        >>> sorted(referenced_columns(parse_predicate("a = 1 OR s.x > b")))
        [('a',), ('b',), ('s', 'x')]
    """
    return {node.path for node in _walk(expr) if isinstance(node, Column)}


def is_partition_only(expr: Expr, partition_columns: Collection[str]) -> bool:
    """Whether the expression reads partition columns only (case-insensitive; constants count too).

    Args:
        expr: Any expression.
        partition_columns: The table's partition column names.

    Returns:
        True when every referenced column is a top-level partition column.

    Example:
        >>> from airflow_provider_delta.core.expressions import parse_predicate
        >>> is_partition_only(parse_predicate("Date = '2020-01-01'"), ["date"])
        True
    """
    names = {name.lower() for name in partition_columns}
    return all(len(path) == 1 and path[0].lower() in names for path in referenced_columns(expr))


def _type_of(expr: Expr) -> pa.DataType | None:
    """Best-effort result type of a bound expression (``None`` when unknown)."""
    if isinstance(expr, Column):
        return expr.dtype
    if isinstance(expr, Literal):
        return expr.dtype
    if isinstance(expr, (Comparison, And, Or, Not, IsNull, IsNotNull, In, Between, Like)):
        return pa.bool_()
    if isinstance(expr, Cast):
        return expr.to
    if isinstance(expr, Arithmetic):
        left, right = _type_of(expr.left), _type_of(expr.right)
        if left is None or right is None:
            return None
        if expr.op == "/" and pa.types.is_integer(left) and pa.types.is_integer(right):
            return pa.float64()
        for t in (left, right):
            if pa.types.is_floating(t):
                return pa.float64()
        if pa.types.is_integer(left) and pa.types.is_integer(right):
            return left if left.bit_width >= right.bit_width else right
        return left if pa.types.is_decimal(left) or not pa.types.is_integer(right) else right
    if isinstance(expr, Function) and expr.dtype is not None:
        return expr.dtype
    if isinstance(expr, Function):
        if expr.name in ("lower", "upper", "concat", "substring", "trim", "ltrim", "rtrim"):
            return pa.string()
        if expr.name == "length":
            return pa.int32()
        if expr.name == "current_date":
            return pa.date32()
        if expr.name == "current_timestamp":
            return pa.timestamp("us", tz="UTC")
        types = [_type_of(a) for a in expr.args]
        return next((t for t in types if t is not None and not pa.types.is_null(t)), None)
    return None

"""Predicates and value expressions as Delta users write them: parsing, binding, evaluation, file skipping.

Text is parsed with sqlglot (Spark dialect) into a small immutable AST; DNF filter tuples as pyarrow and
delta-rs accept them map onto the same AST. :func:`bind` resolves columns against an Arrow schema and
coerces literals to the column types the way Spark does; bound expressions evaluate over Arrow tables
with SQL three-valued logic and decide, from partition values and per-file statistics, whether a data
file may hold matching rows.

Example:
    >>> import pyarrow as pa
    >>> schema = pa.schema([("d", pa.date32()), ("n", pa.int64())])
    >>> pred = bind(parse_predicate("d >= '2020-01-02' AND n IN (1, 2)"), schema)
    >>> table = pa.table({"d": pa.array([18262, 18263], pa.date32()), "n": [1, 2]})
    >>> evaluate(pred, table).to_pylist()
    [False, True]
    >>> file_may_match(pred, partition_values={}, stats={"numRecords": 2, "minValues": {"n": 5}})
    False
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any
from typing import Literal as TypingLiteral

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import sqlglot
from sqlglot import exp

from airflow_provider_delta.core.partitions import format_timestamp, parse_timestamp
from airflow_provider_delta.exceptions import PredicateError

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterator

__all__ = [
    "FUNCTIONS",
    "And",
    "Arithmetic",
    "ArithmeticOp",
    "Between",
    "Cast",
    "Column",
    "Comparison",
    "ComparisonOp",
    "Expr",
    "Function",
    "In",
    "IsNotNull",
    "IsNull",
    "Like",
    "Literal",
    "Not",
    "Or",
    "bind",
    "col",
    "conjuncts",
    "evaluate",
    "file_may_match",
    "is_partition_only",
    "lit",
    "parse_expression",
    "parse_filter",
    "parse_predicate",
    "referenced_columns",
    "to_arrow_expression",
    "to_sql",
]

ComparisonOp = TypingLiteral["=", "!=", "<", "<=", ">", ">=", "<=>"]
ArithmeticOp = TypingLiteral["+", "-", "*", "/", "%"]
FUNCTIONS = frozenset(
    {
        "abs",
        "coalesce",
        "concat",
        "current_date",
        "current_timestamp",
        "length",
        "lower",
        "ltrim",
        "negative",
        "rtrim",
        "substring",
        "trim",
        "upper",
    }
)


# --------------------------------------------------------------------------------------------- AST


@dataclass(frozen=True)
class Expr:
    """Base of every expression node; ``str(expr)`` renders Spark SQL."""

    def __str__(self) -> str:
        return to_sql(self)

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
    """A call of one of :data:`FUNCTIONS` (lower-case name)."""

    name: str
    args: tuple[Expr, ...] = field(default=())


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


def _infer_type(value: Any) -> pa.DataType:
    if value is None:
        return pa.null()
    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return pa.int32()
        if -(2**63) <= value < 2**63:
            return pa.int64()
        return pa.decimal128(38, 0)
    if isinstance(value, float):
        return pa.float64()
    if isinstance(value, decimal.Decimal):
        return _decimal_type(value)
    if isinstance(value, str):
        return pa.string()
    if isinstance(value, (bytes, bytearray)):
        return pa.binary()
    if isinstance(value, dt.datetime):
        return pa.timestamp("us", tz="UTC" if value.tzinfo is not None else None)
    if isinstance(value, dt.date):
        return pa.date32()
    raise PredicateError(f"Cannot build literal {value!r}: unsupported Python type {type(value).__name__}")


def _decimal_type(value: decimal.Decimal) -> pa.DataType:
    if not value.is_finite():
        raise PredicateError(f"Cannot build literal {value!r}: decimal literals must be finite")
    _, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    scale = max(-exponent, 0)
    precision = max(len(digits) + max(exponent, 0), scale, 1)
    if precision > 38:
        raise PredicateError(f"Cannot build literal {value!r}: more than 38 digits")
    return pa.decimal128(precision, scale)


def conjuncts(expr: Expr) -> list[Expr]:
    """Split a predicate on its top-level ANDs.

    Args:
        expr: A predicate.

    Returns:
        The AND-ed terms, left to right.

    Example:
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
        >>> is_partition_only(parse_predicate("Date = '2020-01-01'"), ["date"])
        True
    """
    names = {name.lower() for name in partition_columns}
    return all(len(path) == 1 and path[0].lower() in names for path in referenced_columns(expr))


# ------------------------------------------------------------------------------------------ parsing


def parse_expression(text: str, *, qualifiers: Collection[str] = ()) -> Expr:
    """Parse a Spark SQL value expression (``a + 1``, ``coalesce(b, 'x')``, ``t.c``).

    Dotted names are field paths (``a.b.c``); when the first part is one of ``qualifiers`` it becomes
    the column's qualifier instead (``t.id`` with ``qualifiers=("t", "s")``).

    Args:
        text: SQL text.
        qualifiers: Table aliases that may prefix column names.

    Returns:
        The parsed, unbound expression.

    Raises:
        PredicateError: The text does not parse or uses unsupported SQL.

    Example:
        >>> parse_expression("t.id", qualifiers=["t"])
        Column(qualifier='t', path=('id',), dtype=None)
    """
    return _Converter(text, qualifiers, "expression").convert(_parse_sql(text, "expression"))


def parse_predicate(text: str, *, qualifiers: Collection[str] = ()) -> Expr:
    """Parse a Spark SQL boolean condition (``a = 1 AND b IS NOT NULL``).

    Args:
        text: SQL text.
        qualifiers: Table aliases that may prefix column names (see :func:`parse_expression`).

    Returns:
        The parsed, unbound predicate.

    Raises:
        PredicateError: The text does not parse, uses unsupported SQL or is not a condition.

    Example:
        >>> str(parse_predicate("`my col` NOT IN (1, 2)"))
        '`my col` NOT IN (1, 2)'
    """
    expr = _Converter(text, qualifiers, "predicate").convert(_parse_sql(text, "predicate"))
    boolean = (Comparison, And, Or, Not, IsNull, IsNotNull, In, Between, Like, Column)
    if isinstance(expr, boolean) or (isinstance(expr, Literal) and expr.dtype in (pa.bool_(), pa.null())):
        return expr
    if isinstance(expr, Cast) and expr.to == pa.bool_():
        return expr
    if isinstance(expr, Function) and expr.name == "coalesce":
        return expr
    raise PredicateError(f"Cannot parse predicate {text!r}: {to_sql(expr)!r} is not a condition")


def _parse_sql(text: str, kind: str) -> exp.Expr:
    if not isinstance(text, str) or not text.strip():
        raise PredicateError(f"Cannot parse {kind} {text!r}: empty text")
    try:
        node = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.SqlglotError as err:
        reason = str(err).splitlines()[0]
        raise PredicateError(f"Cannot parse {kind} {text!r}: {reason}") from err
    if node is None:
        raise PredicateError(f"Cannot parse {kind} {text!r}: empty text")
    return node


_SIMPLE_COMPARISONS: dict[type[exp.Expr], ComparisonOp] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.NullSafeEQ: "<=>",
}
_ARITHMETIC: dict[type[exp.Expr], ArithmeticOp] = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
}
_UNARY_FUNCTIONS: dict[type[exp.Expr], str] = {
    exp.Lower: "lower",
    exp.Upper: "upper",
    exp.Abs: "abs",
    exp.Length: "length",
}
_SQL_TYPES: dict[str, pa.DataType] = {
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "TEXT": pa.string(),
    "VARCHAR": pa.string(),
    "CHAR": pa.string(),
    "BINARY": pa.binary(),
    "VARBINARY": pa.binary(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"),
    "TIMESTAMPLTZ": pa.timestamp("us", tz="UTC"),
    "TIMESTAMPNTZ": pa.timestamp("us"),
}


class _Converter:
    """Turns a sqlglot tree into our AST, refusing anything outside the supported subset."""

    def __init__(self, text: str, qualifiers: Collection[str], kind: str) -> None:
        self.text = text
        self.kind = kind
        self.qualifiers = {q.lower(): q for q in qualifiers}

    def fail(self, node: exp.Expr, reason: str = "unsupported SQL") -> PredicateError:
        return PredicateError(
            f"Cannot parse {self.kind} {self.text!r}: {reason} {node.sql(dialect='spark')!r}"
        )

    def convert(self, node: exp.Expr) -> Expr:
        if isinstance(node, exp.Paren):
            return self.convert(node.this)
        if isinstance(node, (exp.Column, exp.Dot, exp.Identifier)):
            return self.column(node)
        if isinstance(node, exp.Literal):
            return self.literal(node)
        if isinstance(node, exp.Boolean):
            return Literal(bool(node.this))
        if isinstance(node, exp.Null):
            return Literal(None)
        if isinstance(node, exp.HexString):
            return Literal(bytes.fromhex(node.this))
        op = _SIMPLE_COMPARISONS.get(type(node))
        if op is not None:
            return Comparison(op, self.convert(node.this), self.convert(node.expression))
        if isinstance(node, exp.NullSafeNEQ):
            return Not(Comparison("<=>", self.convert(node.this), self.convert(node.expression)))
        if isinstance(node, exp.And):
            return And(self.convert(node.this), self.convert(node.expression))
        if isinstance(node, exp.Or):
            return Or(self.convert(node.this), self.convert(node.expression))
        if isinstance(node, exp.Not):
            return self.negate(self.convert(node.this))
        if isinstance(node, exp.Is):
            return self.is_(node)
        if isinstance(node, exp.In):
            return self.in_(node)
        if isinstance(node, exp.Between):
            if node.args.get("symmetric"):
                raise self.fail(node)
            return Between(
                self.convert(node.this), self.convert(node.args["low"]), self.convert(node.args["high"])
            )
        if isinstance(node, (exp.Like, exp.ILike)):
            like = Like(self.convert(node.this), self.convert(node.expression), isinstance(node, exp.ILike))
            return Not(like) if node.args.get("negate") else like
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self.cast(node)
        arith = _ARITHMETIC.get(type(node))
        if arith is not None:
            return Arithmetic(arith, self.convert(node.this), self.convert(node.expression))
        if isinstance(node, exp.Neg):
            return self.neg(node)
        return self.function(node)

    def negate(self, inner: Expr) -> Expr:
        if isinstance(inner, IsNull):
            return IsNotNull(inner.operand)
        return Not(inner)

    def column(self, node: exp.Expr) -> Column:
        parts: list[str] = []
        for part in _column_parts(node):
            if not isinstance(part, exp.Identifier) or not isinstance(part.this, str):
                raise self.fail(node)
            parts.append(part.this)
        if len(parts) > 1 and parts[0].lower() in self.qualifiers:
            return Column(self.qualifiers[parts[0].lower()], tuple(parts[1:]))
        return Column(None, tuple(parts))

    def literal(self, node: exp.Literal) -> Literal:
        text = str(node.this)
        if node.is_string:
            return Literal(text)
        if re.fullmatch(r"[0-9]+", text):
            return Literal(int(text))
        if re.fullmatch(r"[0-9]*\.[0-9]*", text):
            value = decimal.Decimal(text)
            return Literal(value) if len(value.as_tuple().digits) <= 38 else Literal(float(text))
        try:
            return Literal(float(text))
        except ValueError as err:
            raise self.fail(node, "unsupported literal") from err

    def neg(self, node: exp.Neg) -> Expr:
        inner = self.convert(node.this)
        if isinstance(inner, Literal) and isinstance(inner.value, (int, float, decimal.Decimal)):
            if isinstance(inner.value, bool):
                raise self.fail(node)
            keep = pa.types.is_decimal(inner.dtype) or pa.types.is_floating(inner.dtype)
            return Literal(-inner.value, inner.dtype if keep else None)
        return Function("negative", (inner,))

    def is_(self, node: exp.Is) -> Expr:
        operand, target = self.convert(node.this), node.expression
        if isinstance(target, exp.Null):
            return IsNull(operand)
        if isinstance(target, exp.Boolean):
            return Comparison("<=>", operand, Literal(bool(target.this)))
        raise self.fail(node)

    def in_(self, node: exp.In) -> Expr:
        if any(node.args.get(key) for key in ("query", "unnest", "field")):
            raise self.fail(node, "subqueries are unsupported:")
        values = tuple(self.convert(v) for v in node.expressions)
        if not values:
            raise self.fail(node, "empty IN list")
        return In(self.convert(node.this), values)

    def cast(self, node: exp.Cast) -> Expr:
        to = node.to
        name = to.this.name if isinstance(to, exp.DataType) else ""
        if name == "DECIMAL":
            params = [int(p.this.this) if isinstance(p.this, exp.Literal) else -1 for p in to.expressions]
            precision, scale = (params + [10, 0][len(params) :])[:2] if params else (10, 0)
            if not 0 < precision <= 38 or not 0 <= scale <= precision:
                raise self.fail(node, "invalid decimal type in")
            target: pa.DataType = pa.decimal128(precision, scale)
        elif name in _SQL_TYPES:
            target = _SQL_TYPES[name]
        else:
            raise self.fail(node, "unsupported type in")
        operand = self.convert(node.this)
        if isinstance(operand, Literal):
            # Fold constants (DATE '2020-01-01', TIMESTAMP '...', 1.5D, 5L) so they can drive file skipping.
            try:
                return Literal(_convert_value(operand.value, target), target)
            except (TypeError, ValueError, ArithmeticError) as err:
                raise self.fail(node, f"cannot convert ({err}):") from err
        return Cast(operand, target)

    def function(self, node: exp.Expr) -> Expr:
        unary = _UNARY_FUNCTIONS.get(type(node))
        if unary is not None:
            return Function(unary, (self.convert(node.this),))
        if isinstance(node, exp.Coalesce):
            return Function("coalesce", tuple(self.convert(a) for a in [node.this, *node.expressions]))
        if isinstance(node, (exp.Concat, exp.DPipe)):
            items = node.expressions if isinstance(node, exp.Concat) else [node.this, node.expression]
            args = tuple(self.convert(a) for a in items)
            if all(isinstance(a, Literal) and isinstance(a.value, str) for a in args):
                return Literal("".join(a.value for a in args if isinstance(a, Literal)))
            return Function("concat", args)
        if isinstance(node, exp.Substring):
            parts = [node.this, node.args.get("start"), node.args.get("length")]
            return Function("substring", tuple(self.convert(a) for a in parts if a is not None))
        if isinstance(node, exp.Trim):
            if node.expression is not None:
                raise self.fail(node)
            position = str(node.args.get("position") or "BOTH").upper()
            name = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "trim")
            return Function(name, (self.convert(node.this),))
        if isinstance(node, exp.CurrentDate):
            return Function("current_date")
        if isinstance(node, exp.CurrentTimestamp):
            return Function("current_timestamp")
        if isinstance(node, exp.Anonymous):
            raise self.fail(node, f"unsupported function {str(node.this).lower()!r} in")
        raise self.fail(node)


def _column_parts(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, exp.Dot):
        return [*_column_parts(node.this), node.expression]
    if isinstance(node, exp.Column):
        return list(node.parts)
    return [node]


# ---------------------------------------------------------------------------------------- DNF filters

_DNF_OPS: dict[str, ComparisonOp] = {
    "=": "=",
    "==": "=",
    "!=": "!=",
    "<>": "!=",
    "<": "<",
    "<=": "<=",
    ">": ">",
    ">=": ">=",
}


def parse_filter(filter: str | Sequence[Any] | Expr) -> Expr:
    """Accept a predicate as text, as an expression, or in pyarrow/delta-rs DNF tuple form.

    ``[("a", "=", 1), ("b", "in", [1, 2])]`` is an AND of terms; ``[[...], [...]]`` an OR of such
    ANDs. Operators: ``= == != <> < <= > >= in "not in"``. A column is a name (dots separate nested
    fields) or a tuple of field names; ``("a", "=", None)`` means ``a IS NULL`` and ``("a", "!=", None)``
    ``a IS NOT NULL``. Values are plain Python values; strings are coerced to the column type by
    :func:`bind` (``("d", "=", "2020-01-01")`` on a date column).

    Args:
        filter: SQL text, an :class:`Expr`, or DNF terms.

    Returns:
        The predicate; an empty DNF list is ``TRUE``.

    Raises:
        PredicateError: The filter is malformed.

    Example:
        >>> str(parse_filter([[("a", "=", 1)], [("b", "not in", ["x", "y"])]]))
        "a = 1 OR b NOT IN ('x', 'y')"
    """
    if isinstance(filter, Expr):
        return filter
    if isinstance(filter, str):
        return parse_predicate(filter)
    if not isinstance(filter, Sequence):
        raise PredicateError(f"Cannot parse filter {filter!r}: expected SQL text, an Expr or DNF tuples")
    if not filter:
        return Literal(True)
    if _is_term(filter[0]):
        return _and_all([_dnf_term(term, filter) for term in filter])
    disjuncts = []
    for group in filter:
        if isinstance(group, (str, bytes)) or not isinstance(group, Sequence) or not group:
            raise PredicateError(f"Cannot parse filter {filter!r}: expected a list of (column, op, value)")
        disjuncts.append(_and_all([_dnf_term(term, filter) for term in group]))
    result = disjuncts[0]
    for item in disjuncts[1:]:
        result = Or(result, item)
    return result


def _is_term(item: Any) -> bool:
    return isinstance(item, tuple) and len(item) == 3 and isinstance(item[1], str)


def _and_all(terms: list[Expr]) -> Expr:
    result = terms[0]
    for term in terms[1:]:
        result = And(result, term)
    return result


def _dnf_term(term: Any, whole: Any) -> Expr:
    if not _is_term(term):
        raise PredicateError(f"Cannot parse filter {whole!r}: {term!r} is not a (column, op, value) tuple")
    name, op, value = term
    if isinstance(name, str):
        column = Column(None, tuple(name.split(".")))
    elif isinstance(name, tuple) and name and all(isinstance(p, str) for p in name):
        column = Column(None, name)
    else:
        raise PredicateError(f"Cannot parse filter {whole!r}: column {name!r} must be a name or tuple")
    op_key = " ".join(op.lower().split())
    if op_key in ("in", "not in"):
        if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, set, frozenset)) or not value:
            raise PredicateError(f"Cannot parse filter {whole!r}: {op!r} needs a non-empty list of values")
        members = In(column, tuple(_dnf_literal(v, whole) for v in value))
        return members if op_key == "in" else Not(members)
    comparison = _DNF_OPS.get(op_key)
    if comparison is None:
        raise PredicateError(f"Cannot parse filter {whole!r}: unknown operator {op!r}")
    if value is None and comparison in ("=", "!="):
        return IsNull(column) if comparison == "=" else IsNotNull(column)
    return Comparison(comparison, column, _dnf_literal(value, whole))


def _dnf_literal(value: Any, whole: Any) -> Literal:
    if isinstance(value, Literal):
        return value
    try:
        return Literal(value)
    except PredicateError as err:
        raise PredicateError(f"Cannot parse filter {whole!r}: {err}") from err


# ------------------------------------------------------------------------------------------ to_sql

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
        inner = expr.operand
        if isinstance(inner, In):
            return to_sql(inner).replace(" IN (", " NOT IN (", 1)
        if isinstance(inner, Like):
            return to_sql(inner).replace(" LIKE ", " NOT LIKE ", 1)
        if isinstance(inner, Between):
            return to_sql(inner).replace(" BETWEEN ", " NOT BETWEEN ", 1)
        return f"NOT {_operand_sql(inner)}"
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
        if expr.name == "negative" and len(expr.args) == 1:
            return f"-{_operand_sql(expr.args[0])}"
        if expr.name in ("current_date", "current_timestamp") and not expr.args:
            return expr.name
        return f"{expr.name}({', '.join(to_sql(a) for a in expr.args)})"
    raise PredicateError(f"Cannot render expression {expr!r}: unknown node type {type(expr).__name__}")


def _operand_sql(expr: Expr) -> str:
    atomic = (Column, Literal, Function, Cast)
    return to_sql(expr) if isinstance(expr, atomic) else f"({to_sql(expr)})"


# --------------------------------------------------------------------------------- type conversions


def _is_string_type(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or str(t) == "string_view")


def _is_binary_type(t: pa.DataType) -> bool:
    return bool(pa.types.is_binary(t) or pa.types.is_large_binary(t) or str(t) == "binary_view")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


_DATE_PREFIX_RE = re.compile(r"\s*([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:[ T].*)?\s*")


def _parse_number(text: str) -> int | decimal.Decimal:
    stripped = text.strip()
    if re.fullmatch(r"[+-]?[0-9]+", stripped):
        return int(stripped)
    value = decimal.Decimal(stripped)  # raises decimal.InvalidOperation (an ArithmeticError)
    if not value.is_finite():
        raise ValueError(f"not a finite number: {text!r}")
    return value


def _convert_value(value: Any, t: pa.DataType) -> Any:
    """Convert a Python value to the Python value of Arrow type ``t`` the way a Spark CAST would."""
    if value is None:
        return None
    if _is_string_type(t):
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (bytes, bytearray)):
            return bytes(value).decode("utf-8", "replace")
        if isinstance(value, dt.datetime):
            return format_timestamp(value)
        if isinstance(value, (dt.date, int, float)):
            return str(value)
        return format(value, "f") if isinstance(value, decimal.Decimal) else str(value)
    if _is_binary_type(t) or pa.types.is_fixed_size_binary(t):
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
    elif pa.types.is_boolean(t):
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if isinstance(value, bool) or _is_number(value):
            return bool(value)
    elif pa.types.is_integer(t):
        number = _parse_number(value) if isinstance(value, str) else value
        if _is_number(number) or isinstance(number, bool):
            result = int(number)  # truncates toward zero, like Spark's cast
            bits = t.bit_width
            lo, hi = (
                (0, 2**bits) if pa.types.is_unsigned_integer(t) else (-(2 ** (bits - 1)), 2 ** (bits - 1))
            )
            if not lo <= result < hi:
                raise ValueError(f"{value!r} is out of range for {t}")
            return result
    elif pa.types.is_floating(t):
        if isinstance(value, str):
            special = {"nan": math.nan, "infinity": math.inf, "-infinity": -math.inf, "inf": math.inf}
            lowered = value.strip().lower()
            return special[lowered] if lowered in special else float(_parse_number(value))
        if _is_number(value):
            return float(value)
    elif pa.types.is_decimal(t):
        number = _parse_number(value) if isinstance(value, str) else value
        if _is_number(number):
            exact = decimal.Decimal(repr(number)) if isinstance(number, float) else decimal.Decimal(number)
            quantized = exact.quantize(decimal.Decimal(1).scaleb(-t.scale), rounding=decimal.ROUND_HALF_UP)
            if len(quantized.as_tuple().digits) > t.precision and quantized != 0:
                raise ValueError(f"{value!r} does not fit {t}")
            return quantized
    elif pa.types.is_date(t):
        if isinstance(value, dt.datetime):
            return (value.astimezone(dt.timezone.utc) if value.tzinfo else value).date()
        if isinstance(value, dt.date):
            return value
        if isinstance(value, str):
            match = _DATE_PREFIX_RE.fullmatch(value)
            if match is None:
                raise ValueError(f"{value!r} is not a date")
            return dt.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    elif pa.types.is_timestamp(t):
        zoned = t.tz is not None
        if isinstance(value, str):
            return parse_timestamp(value, zoned=zoned)
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                return value.replace(tzinfo=dt.timezone.utc) if zoned else value
            utc = value.astimezone(dt.timezone.utc)
            return utc if zoned else utc.replace(tzinfo=None)
        if isinstance(value, dt.date):
            return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc if zoned else None)
    raise TypeError(f"cannot convert {type(value).__name__} {value!r} to {t}")


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
        return left if pa.types.is_decimal(left) or not pa.types.is_integer(right) else right
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


# -------------------------------------------------------------------------------------------- bind


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
        if expr.name not in FUNCTIONS:
            raise self.error(f"unsupported function {expr.name!r}")
        if expr.name == "coalesce":
            target = next((_type_of(a) for a in args if not isinstance(a, Literal)), None)
            args = [self.coerce_literal(a, target, args[0])[1] if isinstance(a, Literal) else a for a in args]
        elif expr.name == "concat":
            args = [a if _is_string_type(_type_of(a) or pa.string()) else Cast(a, pa.string()) for a in args]
        elif expr.name == "substring" and not _is_substring_call(args):
            raise self.error("substring needs a string and integer literal position and length")
        return Function(expr.name, tuple(args))


def _is_substring_call(args: Sequence[Expr]) -> bool:
    return 2 <= len(args) <= 3 and all(isinstance(a, Literal) and isinstance(a.value, int) for a in args[1:])


def _is_numeric_type(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


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


# ---------------------------------------------------------------------------------- Arrow evaluation

_ARROW_COMPARISONS = {
    "=": "equal",
    "!=": "not_equal",
    "<": "less",
    "<=": "less_equal",
    ">": "greater",
    ">=": "greater_equal",
}
_ARROW_ARITHMETIC = {
    "+": "add_checked",
    "-": "subtract_checked",
    "*": "multiply_checked",
    "/": "divide_checked",
    "%": "remainder_checked",
}
_NULL_BOOL = pa.scalar(None, pa.bool_())


def _call(name: str, args: Sequence[Any], options: Any = None) -> pc.Expression:
    return pc.Expression._call(name, list(args), options)


def to_arrow_expression(expr: Expr) -> pc.Expression:
    """Translate an expression into a ``pyarrow.compute.Expression`` (for datasets and ``Table.filter``).

    Nested fields become ``pc.field("a", "b")``; a qualified column ``t.x`` reads ``pc.field("t", "x")``,
    i.e. a struct column named after the alias. ``current_date``/``current_timestamp`` are fixed (UTC)
    when translated. Bind first so literals have the column types.

    Args:
        expr: A (preferably bound) expression.

    Returns:
        The equivalent Arrow expression, with SQL null semantics (a filter keeps only true rows).

    Raises:
        PredicateError: The expression uses something Arrow cannot compute.

    Example:
        >>> t = pa.table({"a": [{"b": 1}, {"b": 2}]})
        >>> t.filter(to_arrow_expression(bind(parse_predicate("a.b > 1"), t.schema))).to_pylist()
        [{'a': {'b': 2}}]
    """
    return _ArrowTranslator(to_sql(expr)).translate(expr)


class _ArrowTranslator:
    def __init__(self, text: str) -> None:
        self.text = text
        self.now = dt.datetime.now(dt.timezone.utc)

    def error(self, reason: str) -> PredicateError:
        return PredicateError(f"Cannot translate expression {self.text!r} to Arrow: {reason}")

    def translate(self, expr: Expr) -> pc.Expression:
        if isinstance(expr, Column):
            return pc.field(*((expr.qualifier, *expr.path) if expr.qualifier else expr.path))
        if isinstance(expr, Literal):
            try:
                return pc.scalar(pa.scalar(expr.value, type=expr.dtype))
            except (pa.ArrowException, TypeError, ValueError) as err:
                raise self.error(f"bad literal {expr.value!r} for {expr.dtype}") from err
        if isinstance(expr, Comparison):
            left, right = self.translate(expr.left), self.translate(expr.right)
            if expr.op == "<=>":
                both_null = _call("and_kleene", [left.is_null(), right.is_null()])
                return _call("coalesce", [_call("equal", [left, right]), both_null])
            return _call(_ARROW_COMPARISONS[expr.op], [left, right])
        if isinstance(expr, And):
            return _call("and_kleene", [self.translate(expr.left), self.translate(expr.right)])
        if isinstance(expr, Or):
            return _call("or_kleene", [self.translate(expr.left), self.translate(expr.right)])
        if isinstance(expr, Not):
            return _call("invert", [self.translate(expr.operand)])
        if isinstance(expr, IsNull):
            return self.translate(expr.operand).is_null()
        if isinstance(expr, IsNotNull):
            return self.translate(expr.operand).is_valid()
        if isinstance(expr, In):
            return self.in_(expr)
        if isinstance(expr, Between):
            operand = self.translate(expr.operand)
            low = _call("greater_equal", [operand, self.translate(expr.low)])
            return _call("and_kleene", [low, _call("less_equal", [operand, self.translate(expr.high)])])
        if isinstance(expr, Like):
            if not (isinstance(expr.pattern, Literal) and isinstance(expr.pattern.value, str)):
                raise self.error("LIKE needs a string literal pattern")
            options = pc.MatchSubstringOptions(expr.pattern.value, ignore_case=expr.case_insensitive)
            return _call("match_like", [self.translate(expr.operand)], options)
        if isinstance(expr, Cast):
            return self.translate(expr.operand).cast(expr.to)
        if isinstance(expr, Arithmetic):
            return self.arithmetic(expr)
        if isinstance(expr, Function):
            return self.function(expr)
        raise self.error(f"unknown node type {type(expr).__name__}")

    def in_(self, expr: In) -> pc.Expression:
        operand = self.translate(expr.operand)
        if not all(isinstance(v, Literal) for v in expr.values):
            result = _call("equal", [operand, self.translate(expr.values[0])])
            for value in expr.values[1:]:
                result = _call("or_kleene", [result, _call("equal", [operand, self.translate(value)])])
            return result
        values = [v.value for v in expr.values if isinstance(v, Literal) and v.value is not None]
        has_null = len(values) < len(expr.values)
        value_type = next(
            (v.dtype for v in expr.values if isinstance(v, Literal) and v.value is not None), None
        )
        if not values:
            return _call("if_else", [operand.is_valid(), pc.scalar(_NULL_BOOL), pc.scalar(_NULL_BOOL)])
        try:
            value_set = pa.array(values, type=value_type)
        except (pa.ArrowException, TypeError, ValueError) as err:
            raise self.error(f"IN list values do not share one type: {err}") from err
        found = _call("is_in", [operand], pc.SetLookupOptions(value_set, skip_nulls=True))
        if has_null:  # x IN (1, NULL) is NULL unless x = 1 (three-valued logic)
            found = _call("or_kleene", [found, pc.scalar(_NULL_BOOL)])
        return _call("if_else", [operand.is_valid(), found, pc.scalar(_NULL_BOOL)])

    def arithmetic(self, expr: Arithmetic) -> pc.Expression:
        left, right = self.translate(expr.left), self.translate(expr.right)
        if expr.op == "/":
            lt, rt = _type_of(expr.left), _type_of(expr.right)
            if lt is not None and rt is not None and pa.types.is_integer(lt) and pa.types.is_integer(rt):
                left, right = left.cast(pa.float64()), right.cast(pa.float64())
        return _call(_ARROW_ARITHMETIC[expr.op], [left, right])

    def function(self, expr: Function) -> pc.Expression:
        name, args = expr.name, [self.translate(a) for a in expr.args]
        if name == "current_date":
            return pc.scalar(pa.scalar(self.now.date(), pa.date32()))
        if name == "current_timestamp":
            return pc.scalar(pa.scalar(self.now, pa.timestamp("us", tz="UTC")))
        if not args:
            raise self.error(f"{name} needs arguments")
        simple = {
            "lower": "utf8_lower",
            "upper": "utf8_upper",
            "abs": "abs_checked",
            "negative": "negate_checked",
            "coalesce": "coalesce",
        }
        if name in simple:
            return _call(simple[name], args)
        if name == "length":
            arg_type = _type_of(expr.args[0])
            return _call(
                "binary_length" if arg_type is not None and _is_binary_type(arg_type) else "utf8_length", args
            )
        if name in ("trim", "ltrim", "rtrim"):
            # Spark's TRIM removes spaces only, not all whitespace.
            return _call(f"utf8_{name}", args, pc.TrimOptions(" "))
        if name == "concat":
            return _call("binary_join_element_wise", [*args, pc.scalar("")])
        if name == "substring":
            return self.substring(expr, args[0])
        raise self.error(f"unsupported function {name!r}")

    def substring(self, expr: Function, operand: pc.Expression) -> pc.Expression:
        bounds = [a.value for a in expr.args[1:] if isinstance(a, Literal) and isinstance(a.value, int)]
        if len(bounds) != len(expr.args) - 1 or not 1 <= len(bounds) <= 2:
            raise self.error("substring needs integer literal position and length")
        pos = bounds[0]  # Spark: 1-based; 0 acts as 1; negative counts from the end
        start = pos - 1 if pos > 0 else pos
        if len(bounds) == 1:
            return _call("utf8_slice_codeunits", [operand], pc.SliceOptions(start))
        length = max(bounds[1], 0)
        stop = start + length
        if start < 0 <= stop:
            return _call("utf8_slice_codeunits", [operand], pc.SliceOptions(start))
        return _call("utf8_slice_codeunits", [operand], pc.SliceOptions(start, stop))


def evaluate(expr: Expr, table: pa.Table) -> pa.Array:
    """Evaluate an expression over every row of ``table``.

    Predicates give booleans with SQL three-valued logic (comparisons with NULL are NULL); to filter,
    keep the rows where the result is true: ``table.filter(evaluate(pred, table))``.

    Args:
        expr: A bound expression (see :func:`bind`).
        table: The rows.

    Returns:
        One value per row.

    Raises:
        PredicateError: Arrow cannot compute the expression on this table (missing column, bad types,
            overflow, division by zero).

    Example:
        >>> t = pa.table({"a": [1, None, 3]})
        >>> evaluate(bind(parse_predicate("a > 1"), t.schema), t).to_pylist()
        [False, None, True]
    """
    arrow_expr = to_arrow_expression(expr)
    try:
        # Sequential scan: keeps row order without relying on the scanner's ordering guarantees.
        result = ds.dataset(table).to_table(columns={"value": arrow_expr}, use_threads=False).column(0)
    except (pa.ArrowException, TypeError, ValueError) as err:
        raise PredicateError(f"Cannot evaluate expression {to_sql(expr)!r}: {err}") from err
    return result.combine_chunks()


# ------------------------------------------------------------------------------------------ skipping


class _Unknown:
    """The value of a partition-only expression this module cannot compute in Python."""

    def __repr__(self) -> str:
        return "UNKNOWN"


_UNKNOWN = _Unknown()
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
            if isinstance(raw, float):  # Spark writes decimals as JSON numbers, parsed here as floats
                if not math.isfinite(raw):
                    return None, False
                if dtype.precision <= 15:
                    # A double tells apart every decimal of up to 15 significant digits: exact.
                    return decimal.Decimal(f"{raw:.15g}"), True
                return decimal.Decimal(math.nextafter(raw, math.inf if is_max else -math.inf)), False
            return (decimal.Decimal(raw), True) if isinstance(raw, (int, str)) else (None, False)
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


# ------------------------------------------------------------------- scalar evaluation (partitions)


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
        left, right = _eval_scalar(expr.left, row), _eval_scalar(expr.right, row)
        decisive = isinstance(expr, Or)  # True decides an OR, False decides an AND
        if left is decisive or right is decisive:
            return decisive
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        return None if left is None or right is None else not decisive
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
        value = _eval_scalar(expr.operand, row)
        result: Any = False
        for candidate in expr.values:
            equal = _compare_scalar("=", value, _eval_scalar(candidate, row))
            if equal is True or equal is _UNKNOWN:
                return equal
            if equal is None:
                result = None
        return result
    if isinstance(expr, Like):
        value, pattern = _eval_scalar(expr.operand, row), _eval_scalar(expr.pattern, row)
        if value is _UNKNOWN or pattern is _UNKNOWN:
            return _UNKNOWN
        if value is None or pattern is None:
            return None
        if not isinstance(value, str) or not isinstance(pattern, str):
            return _UNKNOWN
        flags = re.IGNORECASE | re.DOTALL if expr.case_insensitive else re.DOTALL
        return re.fullmatch(_like_regex(pattern), value, flags) is not None
    if isinstance(expr, Arithmetic):
        return _arithmetic_scalar(expr.op, _eval_scalar(expr.left, row), _eval_scalar(expr.right, row))
    if isinstance(expr, Function):
        return _function_scalar(expr, [_eval_scalar(a, row) for a in expr.args])
    return _UNKNOWN


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


def _function_scalar(expr: Function, args: list[Any]) -> Any:
    name = expr.name
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

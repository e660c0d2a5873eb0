"""Parse predicates and value expressions into the expression model.

SQL text is parsed with sqlglot (Spark dialect) and converted node by node, refusing anything outside
the supported subset with a :class:`~airflow_provider_delta.exceptions.PredicateError`; filters in the
pyarrow/delta-rs DNF tuple form map onto the same nodes.

Example:
    >>> str(parse_predicate("a = 1 AND b IS NOT NULL"))
    'a = 1 AND b IS NOT NULL'
    >>> str(parse_filter([("a", "=", 1), ("b", "in", [1, 2])]))
    'a = 1 AND b IN (1, 2)'
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark

from airflow_provider_delta.core.expressions.functions import check_arity, lookup
from airflow_provider_delta.core.expressions.nodes import (
    And,
    Arithmetic,
    ArithmeticOp,
    Between,
    Cast,
    Column,
    Comparison,
    ComparisonOp,
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
from airflow_provider_delta.core.expressions.render import to_sql
from airflow_provider_delta.core.expressions.values import _convert_value
from airflow_provider_delta.exceptions import PredicateError

if TYPE_CHECKING:
    from collections.abc import Collection


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
    if isinstance(expr, Function):  # its type is known after binding (require_boolean)
        return expr
    raise PredicateError(f"Cannot parse predicate {text!r}: {to_sql(expr)!r} is not a condition")


# sqlglot's expression classes as the SQL a user wrote, for parse errors.
_OPERATORS = {
    "GT": ">", "GTE": ">=", "LT": "<", "LTE": "<=", "EQ": "=", "NEQ": "!=", "NullSafeEQ": "<=>",
    "And": "AND", "Or": "OR", "Not": "NOT", "Like": "LIKE", "ILike": "ILIKE", "In": "IN", "Is": "IS",
    "Between": "BETWEEN", "Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Mod": "%",
}
_MISSING = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>")


def _unclosed_quote(text: str) -> int | None:
    """The 1-based position of a quote that opens a string never closed, if any."""
    opened: tuple[str, int] | None = None
    i = 0
    while i < len(text):
        char = text[i]
        if opened is None and char in "'\"`":
            opened = (char, i)
        elif opened is not None and char == opened[0]:
            if text[i + 1 : i + 2] == char:  # a doubled quote inside the string
                i += 1
            else:
                opened = None
        i += 1
    return opened[1] + 1 if opened is not None else None


def parse_error_reason(err: sqlglot.errors.SqlglotError, text: str) -> str:
    """What is wrong with ``text`` in SQL terms, with the 1-based position (not sqlglot's wording).

    Example:
        >>> parse_error_reason(_error_of("id >"), "id >")
        "'>' at position 4 has no value on its right"
    """
    quote = _unclosed_quote(text)
    if quote is not None:
        return f"the string starting at position {quote} is not closed (add the closing {text[quote - 1]})"
    details = getattr(err, "errors", None) or []
    if not details:
        return str(err).splitlines()[0]
    first = details[0]
    description, highlight = str(first.get("description", "")), str(first.get("highlight") or "")
    col = int(first.get("col") or 0)
    start = max(1, col - len(highlight) + 1)
    missing = _MISSING.match(description)
    if missing:
        keyword, cls = missing.groups()
        op = _OPERATORS.get(cls, cls.upper())
        if keyword == "expression" and highlight:
            return f"{highlight!r} at position {start} has no value on its right"
        # The error points past the operator: find where the operator itself is.
        at = text.upper().rfind(op, 0, max(start - 1, 0) + len(op)) + 1 or start
        if cls == "Between":
            return f"'BETWEEN' at position {at} needs '<low> AND <high>'"
        if keyword == "this" and cls != "Not":
            return f"{op!r} at position {at} has no value on its left"
        return f"{op!r} at position {at} has no value on its right"
    if description.startswith("Expecting )"):
        return f"a '(' is not closed: expected ')' after position {col}"
    if "Unexpected token" in description or "Invalid expression" in description:
        return f"unexpected {highlight!r} at position {start}"
    return f"{description} at position {start}"


def _error_of(text: str) -> sqlglot.errors.SqlglotError:
    try:
        sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.SqlglotError as err:
        return err
    raise AssertionError(f"{text!r} parses")


class _CallsByName(Spark):
    """Spark SQL where every ``f(args)`` stays a call with its arguments in order (``exp.Anonymous``).

    sqlglot's own Spark functions rewrite calls into other dialects' shapes (``date_sub(d, 1)`` becomes
    an addition of ``1 * -1``, ``log10(x)`` a two-argument log); here the engine maps Spark's names.
    """

    class Parser(Spark.Parser):  # type: ignore[misc,valid-type]
        FUNCTIONS: dict[str, Any] = {}  # noqa: RUF012 - sqlglot's class-level table


def _parse_sql(text: str, kind: str) -> exp.Expr:
    if not isinstance(text, str) or not text.strip():
        raise PredicateError(f"Cannot parse {kind} {text!r}: empty text")
    try:
        node = sqlglot.parse_one(text, read=_CallsByName)
    except sqlglot.errors.SqlglotError as err:
        raise PredicateError(f"Cannot parse {kind} {text!r}: {parse_error_reason(err, text)}") from err
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
            return self.between(node)
        if isinstance(node, (exp.Like, exp.ILike)):
            return self.like(node)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self.cast(node)
        arith = _ARITHMETIC.get(type(node))
        if arith is not None:
            return Arithmetic(arith, self.convert(node.this), self.convert(node.expression))
        if isinstance(node, exp.Neg):
            return self.neg(node)
        return self.function(node)

    def between(self, node: exp.Between) -> Expr:
        if node.args.get("symmetric"):
            raise self.fail(node)
        return Between(
            self.convert(node.this), self.convert(node.args["low"]), self.convert(node.args["high"])
        )

    def like(self, node: exp.Like | exp.ILike) -> Expr:
        like = Like(self.convert(node.this), self.convert(node.expression), isinstance(node, exp.ILike))
        return Not(like) if node.args.get("negate") else like

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
        if node.args.get("safe"):
            raise self.fail(node, "try_cast is not supported by the local engine:")
        target = self.sql_type(node, node.to)
        operand = self.convert(node.this)
        if isinstance(operand, Literal) and not _is_nested(target):
            # Fold constants (DATE '2020-01-01', TIMESTAMP '...', 1.5D, 5L) so they can drive file skipping.
            try:
                return Literal(_convert_value(operand.value, target), target)
            except (TypeError, ValueError, ArithmeticError) as err:
                raise self.fail(node, f"cannot convert ({err}):") from err
        return Cast(operand, target)

    def sql_type(self, node: exp.Expr, to: exp.Expr) -> pa.DataType:
        """The Arrow type of a SQL type (nested ARRAY, MAP and STRUCT types included)."""
        name = to.this.name if isinstance(to, exp.DataType) else ""
        inner = [e.args.get("kind", e) if isinstance(e, exp.ColumnDef) else e for e in to.expressions]
        if name == "DECIMAL":
            params = [int(p.this.this) if isinstance(p.this, exp.Literal) else -1 for p in to.expressions]
            precision, scale = (params + [10, 0][len(params) :])[:2] if params else (10, 0)
            if not 0 < precision <= 38 or not 0 <= scale <= precision:
                raise self.fail(node, "invalid decimal type in")
            return pa.decimal128(precision, scale)
        if name == "ARRAY" and len(inner) == 1:
            return pa.list_(self.sql_type(node, inner[0]))
        if name == "MAP" and len(inner) == 2:
            return pa.map_(self.sql_type(node, inner[0]), self.sql_type(node, inner[1]))
        if name == "STRUCT" and all(isinstance(e, exp.ColumnDef) for e in to.expressions):
            return pa.struct([pa.field(e.name, self.sql_type(node, e.args["kind"])) for e in to.expressions])
        if name in _SQL_TYPES:
            return _SQL_TYPES[name]
        raise self.fail(node, "unsupported type in")

    def function(self, node: exp.Expr) -> Expr:
        if isinstance(node, exp.Anonymous):
            return self.call(node, str(node.this), list(node.expressions))
        if isinstance(node, exp.Substring):
            parts = [node.this, node.args.get("start"), node.args.get("length")]
            return self.call(node, "substring", [a for a in parts if a is not None])
        if isinstance(node, exp.Trim):
            if node.expression is not None:
                raise self.fail(node)
            position = str(node.args.get("position") or "BOTH").upper()
            name = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "trim")
            return Function(name, (self.convert(node.this),))
        if isinstance(node, exp.If):
            args = [node.this, node.args.get("true"), node.args.get("false") or exp.Null()]
            return Function("if", tuple(self.convert(a) for a in args))
        if isinstance(node, exp.Case):
            return self.case(node)
        if isinstance(node, exp.Bracket) and len(node.expressions) == 1 and not node.args.get("offset"):
            return Function("[]", (self.convert(node.this), self.convert(node.expressions[0])))
        if isinstance(node, exp.DPipe):
            return self.call(node, "concat", [node.this, node.expression])
        if isinstance(node, exp.Concat):  # adjacent string literals
            return self.call(node, "concat", list(node.expressions))
        if isinstance(node, exp.CurrentDate):
            return Function("current_date")
        if isinstance(node, exp.CurrentTimestamp):
            return Function("current_timestamp")
        if isinstance(node, exp.Initcap):  # sqlglot adds a default delimiter argument
            return self.call(node, "initcap", [node.this])
        if isinstance(node, exp.Array):  # sqlglot's reading of `array(...)[i]` loses arguments: refuse it
            raise self.fail(node)
        if isinstance(node, exp.RegexpLike):  # x RLIKE p, x REGEXP p
            return self.call(node, "rlike", [node.this, node.expression])
        if isinstance(node, exp.StrPosition):  # POSITION(sub IN str)
            return self.call(node, "locate", [node.args["substr"], node.this])
        if isinstance(node, exp.Func) and not isinstance(node, (exp.Cast, exp.Extract)):
            # Parsed by a sqlglot rule of its own (TRANSFORM, OVERLAY, ...): not one of the engine's.
            return self.call(node, node.sql_name(), [a for a in node.args.values() if isinstance(a, exp.Expr)])
        raise self.fail(node)

    def call(self, node: exp.Expr, name: str, items: list[exp.Expr]) -> Expr:
        """A function call by its Spark name; names the local engine lacks are refused here."""
        lowered = name.lower()
        if any(isinstance(a, exp.Lambda) for a in items):
            raise self.fail(node, f"{lowered}() with a lambda function is not supported by the local engine in")
        args = tuple(self.convert(a) for a in items)
        if lowered in ("isnull", "isnotnull") and len(args) == 1:
            return IsNull(args[0]) if lowered == "isnull" else IsNotNull(args[0])
        if lowered == "mod" and len(args) == 2:
            return Arithmetic("%", args[0], args[1])
        spec = lookup(lowered)
        if spec is None or spec.name in ("case", "[]"):
            raise PredicateError(
                f"Cannot parse {self.kind} {self.text!r}: the function {lowered!r} is not supported by the local "
                "engine. Help: the Spark executor runs every Spark SQL function (merge_delta / merge_delta_sql, "
                "or engine=\"spark\" for the merge job); the README lists the functions the local engine has"
            )
        reason = check_arity(spec, len(args))
        if reason is not None:
            raise self.fail(node, f"{reason}:")
        if spec.name == "concat" and args and all(isinstance(a, Literal) and isinstance(a.value, str) for a in args):
            return Literal("".join(a.value for a in args if isinstance(a, Literal)))
        return Function(spec.name, args)

    def case(self, node: exp.Case) -> Expr:
        subject = self.convert(node.this) if node.this is not None else None
        args: list[Expr] = []
        for branch in node.args.get("ifs") or []:
            condition = self.convert(branch.this)
            if subject is not None:
                condition = Comparison("=", subject, condition)
            args += [condition, self.convert(branch.args["true"])]
        default = node.args.get("default")
        args.append(self.convert(default) if default is not None else Literal(None))
        return Function("case", tuple(args))


def _is_nested(t: pa.DataType) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_map(t) or pa.types.is_struct(t))


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

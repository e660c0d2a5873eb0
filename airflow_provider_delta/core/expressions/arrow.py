"""Arrow execution: translate bound expressions into ``pyarrow.compute`` expressions and evaluate them.

:func:`to_arrow_expression` gives an expression ``pyarrow.dataset`` scans and ``Table.filter`` accept;
:func:`evaluate` computes it over a table, one value per row, with SQL three-valued logic. As in Spark,
an operand of ``AND``, ``OR`` and ``coalesce`` is only computed on the rows that reach it, so
``x <> 0 AND 10 / x > 1`` never divides by zero: Arrow computes the whole expression at once, and when
that fails (overflow, division by zero, a failing cast), the expression is computed again operand by
operand on the rows each operand sees; only an error on such a row is raised.

Example:
    >>> from airflow_provider_delta.core.expressions import bind, parse_expression
    >>> t = pa.table({"a": [1, None, 3]})
    >>> evaluate(bind(parse_expression("a * 2"), t.schema), t).to_pylist()
    [2, None, 6]
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from airflow_provider_delta.core.expressions.functions import FunctionRuntimeError, lookup
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
from airflow_provider_delta.core.expressions.values import _is_binary_type
from airflow_provider_delta.exceptions import PredicateError

if TYPE_CHECKING:
    from collections.abc import Sequence

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
# Functions with an Arrow expression (for dataset filters); the others run as kernels (see functions/).
_TRANSLATED = frozenset({
    "lower", "upper", "abs", "negative", "coalesce", "length", "trim", "ltrim", "rtrim", "concat", "substring",
    "current_date", "current_timestamp",
})


def _translatable_function(expr: Function) -> bool:
    if expr.name not in _TRANSLATED:
        return False
    if expr.name == "concat":
        return expr.dtype is None or pa.types.is_string(expr.dtype)
    if expr.name == "substring":
        return all(isinstance(a, Literal) and isinstance(a.value, int) for a in expr.args[1:])
    return True


def _translatable(expr: Expr) -> bool:
    """Whether every function in ``expr`` has an Arrow expression."""
    if isinstance(expr, Function) and not _translatable_function(expr):
        return False
    return all(_translatable(child) for child in expr.children())


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
        >>> from airflow_provider_delta.core.expressions import bind, parse_predicate
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
        if not _translatable_function(expr):
            raise self.error(f"the function {expr.name!r} has no Arrow expression (evaluate() computes it)")
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
    """Evaluate an expression over every row of ``table``, each operand only on the rows that reach it.

    Predicates give booleans with SQL three-valued logic (comparisons with NULL are NULL); to filter,
    keep the rows where the result is true: ``table.filter(evaluate(pred, table))``.

    Args:
        expr: A bound expression (see :func:`bind`).
        table: The rows.

    Returns:
        One value per row.

    Raises:
        PredicateError: Arrow cannot compute the expression on this table (missing column, bad types),
            or a row that reaches an operand makes it fail (overflow, division by zero, a failing cast).

    Example:
        >>> from airflow_provider_delta.core.expressions import bind, parse_predicate
        >>> t = pa.table({"a": [1, None, 3]})
        >>> evaluate(bind(parse_predicate("a > 1"), t.schema), t).to_pylist()
        [False, None, True]
    """
    try:
        return _evaluate_at_once(expr, table)
    except _EvaluationError:
        if table.num_rows == 0:
            raise
    # Some operand failed on some row: compute again, each operand on the rows that reach it.
    try:
        return _evaluate_reached(expr, table)
    except _EvaluationError as err:
        text = to_sql(expr)
        where = "" if err.text == text else f" (in {err.text!r})"
        raise PredicateError(f"Cannot evaluate expression {text!r}: {err.reason}{where}") from err


class _EvaluationError(PredicateError):
    def __init__(self, text: str, reason: str) -> None:
        super().__init__(f"Cannot evaluate expression {text!r}: {reason}")
        self.text = text
        self.reason = reason


def _evaluate_at_once(expr: Expr, table: pa.Table) -> pa.Array:
    if not _translatable(expr):
        return _evaluate_eager(expr, table)
    arrow_expr = to_arrow_expression(expr)
    try:
        # Sequential scan: keeps row order without relying on the scanner's ordering guarantees.
        result = ds.dataset(table).to_table(columns={"value": arrow_expr}, use_threads=False).column(0)
    except (pa.ArrowException, TypeError, ValueError) as err:
        raise _EvaluationError(to_sql(expr), str(err)) from err
    return result.combine_chunks()


def _evaluate_eager(expr: Expr, table: pa.Table) -> pa.Array:
    """A tree with kernel functions: each such function over its arguments' arrays, the rest in Arrow."""
    if isinstance(expr, Function) and not _translatable_function(expr):
        return _apply_kernel(expr, [_argument(a, table) for a in expr.args], table.num_rows)
    values = [None if isinstance(c, (Column, Literal)) else _evaluate_at_once(c, table) for c in expr.children()]
    return _node_over(expr, table, values)


def _argument(expr: Expr, table: pa.Table) -> pa.Array | pa.Scalar:
    """A kernel's argument: a literal as a scalar (some functions need constants), else its array."""
    if isinstance(expr, Literal):
        try:
            return pa.scalar(expr.value, type=expr.dtype)
        except (pa.ArrowException, TypeError, ValueError) as err:
            raise _EvaluationError(to_sql(expr), f"bad literal {expr.value!r} for {expr.dtype}") from err
    return _evaluate_at_once(expr, table)


def _apply_kernel(expr: Function, args: Sequence[pa.Array | pa.Scalar], num_rows: int) -> pa.Array:
    spec = lookup(expr.name)
    if spec is None or spec.kernel is None or expr.dtype is None:
        raise _EvaluationError(to_sql(expr), f"the function {expr.name!r} must be bound before evaluation")
    try:
        result = spec.kernel(list(args), expr.dtype, num_rows)
    except FunctionRuntimeError as err:
        raise _EvaluationError(to_sql(expr), str(err)) from err
    except (pa.ArrowException, TypeError, ValueError, ArithmeticError) as err:
        raise _EvaluationError(to_sql(expr), str(err)) from err
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    return result if result.type == expr.dtype else result.cast(expr.dtype)


# ------------------------------------------------------------------------- operands on reached rows
#
# Spark computes an expression row by row and skips operands whose value cannot matter: the right side
# of AND where the left is false and of OR where it is true, coalesce's later arguments once one is
# not null, and the right operand of arithmetic and comparisons where the left is null. Which rows
# reach an operand only changes whether it can fail, never a result, so the fast path computes
# everything at once and this slower path runs only after a failure.


def spread(values: pa.Array | pa.ChunkedArray, positions: np.ndarray, num_rows: int) -> pa.Array:
    """An array of ``num_rows`` values: ``values`` at ``positions`` (ascending), null elsewhere.

    Example:
        >>> spread(pa.array([7, 8]), np.array([1, 3]), 4).to_pylist()
        [None, 7, None, 8]
    """
    index = np.zeros(num_rows, dtype=np.int64)
    index[positions] = np.arange(len(positions), dtype=np.int64)
    unreached = np.ones(num_rows, dtype=bool)
    unreached[positions] = False
    taken = values.take(pa.array(index, mask=unreached))
    return taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken


def _on_rows(expr: Expr, table: pa.Table, reached: pa.Array) -> pa.Array:
    """``expr`` computed only on the rows where ``reached`` is true; null on the others."""
    positions = np.flatnonzero(np.asarray(reached.to_numpy(zero_copy_only=False), dtype=bool))
    if len(positions) == table.num_rows:
        return _evaluate_reached(expr, table)
    values = _evaluate_reached(expr, table.take(pa.array(positions, pa.int64())))
    return spread(values, positions, table.num_rows)


def _evaluate_reached(expr: Expr, table: pa.Table) -> pa.Array:
    if isinstance(expr, (Column, Literal)):
        return _evaluate_at_once(expr, table)
    if isinstance(expr, Between):  # Spark parses it as low <= x AND x <= high
        low, high = Comparison(">=", expr.operand, expr.low), Comparison("<=", expr.operand, expr.high)
        return _evaluate_reached(And(low, high), table)
    if isinstance(expr, (And, Or)):
        left = _evaluate_reached(expr.left, table)
        decided = not isinstance(expr, And)  # AND is decided where the left is false, OR where true
        right = _on_rows(expr.right, table, pc.invert(pc.fill_null(pc.equal(left, decided), False)))
        return pc.and_kleene(left, right) if isinstance(expr, And) else pc.or_kleene(left, right)
    if isinstance(expr, Function) and expr.name == "coalesce":
        result = _evaluate_reached(expr.args[0], table)
        for arg in expr.args[1:]:
            value = _on_rows(arg, table, result.is_null())
            result = pc.coalesce(result, value if value.type == result.type else value.cast(result.type))
        return result
    if isinstance(expr, Function) and expr.name in ("if", "case", "nvl2"):
        return _conditional_reached(expr, table)
    children = expr.children()
    first_set: pa.Array | None = None  # x <op> y: y only where x is not null
    if _null_intolerant(expr) and not all(isinstance(c, (Column, Literal)) for c in children[1:]):
        first_set = _evaluate_reached(children[0], table).is_valid()
    values: list[pa.Array | None] = []
    for i, child in enumerate(children):
        if isinstance(child, (Column, Literal)):
            values.append(None)  # computed with the node: cannot fail, and some nodes need literals
        elif i > 0 and first_set is not None:
            values.append(_on_rows(child, table, first_set))
        else:
            values.append(_evaluate_reached(child, table))
    return _node_over(expr, table, values)


def _node_over(expr: Expr, table: pa.Table, values: Sequence[pa.Array | None]) -> pa.Array:
    """The node itself over its operands' values (as columns of a table beside the row's own columns)."""
    operands = {f"__operand_{i}": (i, v) for i, v in enumerate(values) if v is not None}
    inputs = table.drop_columns([n for n in operands if n in table.column_names])
    replaced: dict[int, Expr] = {}
    for name, (i, value) in operands.items():
        inputs = inputs.append_column(name, value)
        replaced[i] = Column(None, (name,), value.type)
    return _evaluate_at_once(_with_children(expr, replaced), inputs)


def _conditional_reached(expr: Function, table: pa.Table) -> pa.Array:
    """IF, CASE and NVL2 with each branch computed only on the rows that take it."""
    args = expr.args
    if expr.name == "nvl2":
        first = _evaluate_reached(args[0], table)
        present = first.is_valid()
        chosen = [first, _on_rows(args[1], table, present), _on_rows(args[2], table, pc.invert(present))]
        return _apply_kernel(expr, chosen, table.num_rows)
    remaining = pa.array(np.ones(table.num_rows, dtype=bool))
    out: list[pa.Array | pa.Scalar] = []
    for condition, value in zip(args[0:-1:2], args[1:-1:2], strict=True):
        holds = pc.and_(pc.fill_null(_on_rows(condition, table, remaining), False), remaining)
        out += [holds, _on_rows(value, table, holds)]
        remaining = pc.and_(remaining, pc.invert(holds))
    out.append(_on_rows(args[-1], table, remaining))
    return _apply_kernel(expr, out, table.num_rows)


def _null_intolerant(expr: Expr) -> bool:
    """Whether Spark skips the later operands of ``expr`` where the first is null."""
    return isinstance(expr, (Arithmetic, In)) or (isinstance(expr, Comparison) and expr.op != "<=>")


def _with_children(expr: Expr, replaced: dict[int, Expr]) -> Expr:
    """``expr`` with its ``i``-th child (in :meth:`Expr.children` order) replaced by ``replaced[i]``."""
    position = 0
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(expr):
        item = getattr(expr, f.name)
        if isinstance(item, Expr):
            changes[f.name] = replaced.get(position, item)
            position += 1
        elif isinstance(item, tuple):
            items = []
            for e in item:
                if isinstance(e, Expr):
                    e = replaced.get(position, e)
                    position += 1
                items.append(e)
            changes[f.name] = tuple(items)
    return dataclasses.replace(expr, **changes)

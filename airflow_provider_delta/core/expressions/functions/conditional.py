"""Spark's conditional functions: ``if``, ``CASE``, ``coalesce`` (``nvl``, ``ifnull``), ``nullif``, ``nvl2``,
``greatest`` and ``least``.

Branches take their common type (Spark's type widening); a NULL condition counts as false. ``if``,
``CASE`` and ``nvl2`` are conditional: a branch is computed only on the rows that take it (see
``arrow._evaluate_reached``), so ``CASE WHEN x <> 0 THEN 10 / x END`` never divides by zero.
``greatest`` and ``least`` skip NULLs and rank ``NaN`` above every other number.

Example:
    >>> from airflow_provider_delta.core.expressions import bind, evaluate, parse_expression
    >>> t = pa.table({"x": [0, 5, None]})
    >>> case = parse_expression("CASE WHEN x > 1 THEN 'big' WHEN x = 0 THEN 'zero' END")
    >>> evaluate(bind(case, t.schema), t).to_pylist()
    ['zero', 'big', None]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.expressions.functions.registry import (
    ArgValue,
    as_array,
    cast_to,
    coerce_all,
    common_type,
    null_mask,
    register,
    require,
    type_of,
)

if TYPE_CHECKING:
    from airflow_provider_delta.core.expressions.nodes import Expr


def _condition(expr: Expr, name: str) -> Expr:
    t = type_of(expr)
    require(pa.types.is_boolean(t) or pa.types.is_null(t), f"{name} needs a boolean condition, found {t}")
    return cast_to(expr, pa.bool_())


def _holds(value: ArgValue, n: int) -> pa.Array:
    return pc.fill_null(as_array(value, n), False)


def _type_if(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    branches, result = coerce_all(args[1:], "if")
    return [_condition(args[0], "if"), *branches], result


def _if(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    return pc.if_else(_holds(args[0], n), as_array(args[1], n), as_array(args[2], n)).cast(result)


register("if", "conditional", (3, 3), _type_if, _if, conditional=True)


def _type_case(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    conditions = [_condition(c, "CASE WHEN") for c in args[0:-1:2]]
    values, result = coerce_all([*args[1:-1:2], args[-1]], "CASE")
    out: list[Expr] = []
    for condition, value in zip(conditions, values[:-1], strict=True):
        out += [condition, value]
    return [*out, values[-1]], result


def case_kernel(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    """``CASE WHEN c1 THEN v1 ... ELSE e END`` from ``(c1, v1, ..., e)``."""
    conditions = [_holds(c, n) for c in args[0:-1:2]]
    values = [as_array(v, n).cast(result) for v in [*args[1:-1:2], args[-1]]]
    selector = pa.StructArray.from_arrays(conditions, [f"c{i}" for i in range(len(conditions))])
    return pc.case_when(selector, *values)


# Arguments: condition, value, ..., else (NULL when absent); rendered as CASE WHEN ... END.
register("case", "conditional", (3, None), _type_case, case_kernel, conditional=True)


def _type_coalesce(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    return coerce_all(args, "coalesce")


register("coalesce", "conditional", (1, None), _type_coalesce, aliases=("nvl", "ifnull"))


def _type_nullif(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    common = common_type([type_of(a) for a in args], "nullif")
    return [cast_to(args[0], common), cast_to(args[1], common)], common


def _nullif(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    left, right = as_array(args[0], n), as_array(args[1], n)
    return pc.if_else(pc.fill_null(pc.equal(left, right), False), pa.scalar(None, result), left)


register("nullif", "conditional", (2, 2), _type_nullif, _nullif)


def _type_nvl2(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    branches, result = coerce_all(args[1:], "nvl2")
    return [args[0], *branches], result


def _nvl2(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    present = pa.array(~null_mask(as_array(args[0], n)))
    return pc.if_else(present, as_array(args[1], n), as_array(args[2], n)).cast(result)


register("nvl2", "conditional", (3, 3), _type_nvl2, _nvl2, conditional=True)


def _extreme(args: list[ArgValue], result: pa.DataType, n: int, *, largest: bool) -> pa.Array:
    columns = [as_array(a, n).cast(result) for a in args]
    pick = pc.max_element_wise if largest else pc.min_element_wise
    if not pa.types.is_floating(result):
        return pick(*columns, skip_nulls=True)
    nan = [
        np.asarray(pc.fill_null(pc.is_nan(c), False).to_numpy(zero_copy_only=False), dtype=bool)
        for c in columns
    ]
    plain = [pc.if_else(pa.array(m), pa.scalar(None, result), c) for c, m in zip(columns, nan, strict=True)]
    found = pick(*plain, skip_nulls=True)
    any_nan = np.logical_or.reduce(nan)
    # NaN is the largest value: greatest is NaN when any is; least only when nothing else is there.
    use_nan = any_nan if largest else any_nan & null_mask(found)
    return pc.if_else(pa.array(use_nan), pa.scalar(float("nan"), result), found)


def _type_extreme(args: list[Expr], name: str) -> tuple[list[Expr], pa.DataType]:
    cast, result = coerce_all(args, name)
    require(not (pa.types.is_struct(result) or pa.types.is_map(result)), f"{name} cannot compare {result}")
    return cast, result


register(
    "greatest",
    "conditional",
    (2, None),
    lambda a: _type_extreme(a, "greatest"),
    lambda a, r, n: _extreme(a, r, n, largest=True),
)
register(
    "least",
    "conditional",
    (2, None),
    lambda a: _type_extreme(a, "least"),
    lambda a, r, n: _extreme(a, r, n, largest=False),
)

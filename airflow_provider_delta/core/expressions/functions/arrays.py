"""Spark's array functions, vectorised over Arrow list columns (see :mod:`.lists`).

Semantics follow Spark 4 in ANSI mode: set functions (``array_distinct``, ``array_union``,
``array_intersect``, ``array_except``) keep the first occurrence in order, treat ``NaN`` as equal to
``NaN``, ``-0.0`` as equal to ``0.0`` and keep one NULL; indexes are 1-based for ``element_at``,
``array_position`` and ``slice`` (negative counts from the end) and 0-based for ``arr[i]``; an index
out of range fails (``element_at``, ``arr[i]``) as Spark's ANSI mode does.

Example:
    >>> from airflow_provider_delta.core.expressions import bind, evaluate, parse_expression
    >>> t = pa.table({"a": [[1, 2, 2, None]], "b": [[3, None, 1]]})
    >>> evaluate(bind(parse_expression("array_union(a, b)"), t.schema), t).to_pylist()
    [[1, 2, None, 3]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.expressions.functions.lists import (
    Rows,
    any_per_row,
    build_list,
    element_codes,
    first_occurrences,
    keep_elements,
    normalized,
    row_keys,
    sort_order,
    take_rows,
)
from airflow_provider_delta.core.expressions.functions.registry import (
    ArgValue,
    FunctionRuntimeError,
    as_array,
    cast_to,
    coerce_all,
    common_type,
    constant,
    is_list_type,
    literal_value,
    null_mask,
    register,
    require,
    type_of,
    with_nulls,
)

if TYPE_CHECKING:
    from airflow_provider_delta.core.expressions.nodes import Expr


def _list_arg(expr: Expr, name: str) -> pa.DataType:
    t = type_of(expr)
    require(is_list_type(t), f"{name} needs an array argument, found {t}")
    return t


def _same_arrays(args: list[Expr], name: str) -> tuple[list[Expr], pa.DataType]:
    for a in args:
        _list_arg(a, name)
    element = common_type([type_of(a).value_type for a in args], name)
    target = pa.list_(element)
    return [cast_to(a, target) for a in args], target


def _array_and_element(args: list[Expr], name: str) -> tuple[list[Expr], pa.DataType]:
    t = _list_arg(args[0], name)
    value_type = type_of(args[1])
    require(not pa.types.is_null(value_type), f"{name} cannot take an untyped NULL as its value")
    element = common_type([t.value_type, value_type], name)
    return [cast_to(args[0], pa.list_(element)), cast_to(args[1], element)], pa.list_(element)


# ------------------------------------------------------------------------------ constructors


def _type_array(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    cast, element = coerce_all(args, "array") if args else ([], pa.null())
    return cast, pa.list_(element)


def _array(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    k = len(args)
    if k == 0:
        return build_list(pa.nulls(0, pa.null()), np.zeros(n, np.int64), np.ones(n, bool), result)
    columns = [as_array(a, n).cast(result.value_type) for a in args]
    joined = pa.concat_arrays(columns)
    index = (np.arange(k)[None, :] * n + np.arange(n)[:, None]).ravel()  # row by row, argument order
    return build_list(joined.take(pa.array(index)), np.full(n, k), np.ones(n, bool), result)


register("array", "array", (0, None), _type_array, _array)


# ---------------------------------------------------------------------------------- set functions


def _distinct_in(rows: Rows, valid: np.ndarray, result: pa.DataType, codes: np.ndarray) -> pa.Array:
    keep = first_occurrences(row_keys(rows.parents, codes))
    return keep_elements(_normal(rows), keep, valid, result)


def _normal(rows: Rows) -> Rows:
    return Rows(normalized(rows.values), rows.parents, rows.starts, rows.lengths, rows.valid)


def _array_distinct(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    rows = Rows.of(as_array(args[0], n))
    (codes,) = element_codes(rows.values)
    return _distinct_in(rows, rows.valid, result, codes)


def _merged(left: Rows, right: Rows) -> tuple[Rows, np.ndarray]:
    """The rows of ``left`` followed, row by row, by those of ``right``; and the merged elements' codes."""
    lvalues = left.values.cast(right.values.type)
    lcodes, rcodes = element_codes(lvalues, right.values)
    lengths = left.lengths + right.lengths
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    # Where each element lands: its row's start, after the row's left elements for right ones.
    left_at = starts[left.parents] + np.arange(len(lvalues)) - left.starts[left.parents]
    right_offset = left.lengths[right.parents] - right.starts[right.parents]
    right_at = starts[right.parents] + right_offset + np.arange(len(right.values))
    order = np.empty(len(lvalues) + len(right.values), dtype=np.int64)
    order[left_at] = np.arange(len(lvalues))
    order[right_at] = len(lvalues) + np.arange(len(right.values))
    values = pa.concat_arrays([lvalues, right.values]).take(pa.array(order))
    parents = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    merged = Rows(values, parents, starts, lengths, left.valid & right.valid)
    return merged, np.concatenate([lcodes, rcodes])[order]


def _array_union(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    merged, codes = _merged(Rows.of(as_array(args[0], n)), Rows.of(as_array(args[1], n)))
    return _distinct_in(merged, merged.valid, result, codes)


def _filter_by_other(args: list[ArgValue], result: pa.DataType, n: int, *, inside: bool) -> pa.Array:
    left, right = Rows.of(as_array(args[0], n)), Rows.of(as_array(args[1], n))
    lcodes, rcodes = element_codes(left.values, right.values.cast(left.values.type))
    width = int(max(lcodes.max(initial=0), rcodes.max(initial=0))) + 1
    lkeys, rkeys = left.parents * width + lcodes, right.parents * width + rcodes
    keep = first_occurrences(lkeys) & (np.isin(lkeys, rkeys) == inside)
    return keep_elements(_normal(left), keep, left.valid & right.valid, result)


def _array_intersect(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    return _filter_by_other(args, result, n, inside=True)


def _array_except(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    return _filter_by_other(args, result, n, inside=False)


register("array_distinct", "array", (1, 1), lambda a: (a, _list_arg(a[0], "array_distinct")), _array_distinct)
register("array_union", "array", (2, 2), lambda a: _same_arrays(a, "array_union"), _array_union)
register("array_intersect", "array", (2, 2), lambda a: _same_arrays(a, "array_intersect"), _array_intersect)
register("array_except", "array", (2, 2), lambda a: _same_arrays(a, "array_except"), _array_except)


# ------------------------------------------------------------------------- element membership


def _matches(args: list[ArgValue], n: int) -> tuple[Rows, np.ndarray, np.ndarray, np.ndarray]:
    """(rows, element equals the row's value, element is null, row's value is null)."""
    rows = Rows.of(as_array(args[0], n))
    value = as_array(args[1], n)
    per_element = value.take(pa.array(rows.parents))
    ecodes, vcodes = element_codes(rows.values, per_element.cast(rows.values.type))
    element_null = null_mask(rows.values) if len(rows.values) else np.zeros(0, bool)
    equal = (ecodes == vcodes) & ~element_null
    return rows, equal, element_null, null_mask(value)


def _array_contains(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    rows, equal, element_null, value_null = _matches(args, n)
    found = any_per_row(rows.parents, equal, n)
    has_null = any_per_row(rows.parents, element_null, n)
    unknown = ~rows.valid | value_null | (~found & has_null)
    return pa.array(found, pa.bool_(), mask=unknown)


def _array_remove(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    rows, equal, _element_null, value_null = _matches(args, n)
    return keep_elements(rows, ~equal, rows.valid & ~value_null, result)


def _array_position(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    rows, equal, _element_null, value_null = _matches(args, n)
    hits = np.flatnonzero(equal)
    position = np.zeros(n, dtype=np.int64)
    first_rows, first = np.unique(rows.parents[hits], return_index=True)
    position[first_rows] = hits[first] - rows.starts[first_rows] + 1
    return pa.array(position, pa.int64(), mask=~rows.valid | value_null)


def _arrays_overlap(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    left, right = Rows.of(as_array(args[0], n)), Rows.of(as_array(args[1], n))
    lcodes, rcodes = element_codes(left.values, right.values.cast(left.values.type))
    lnull, rnull = null_mask(left.values), null_mask(right.values)
    width = int(max(lcodes.max(initial=0), rcodes.max(initial=0))) + 1
    lkeys, rkeys = left.parents * width + lcodes, right.parents * width + rcodes
    common = any_per_row(left.parents, np.isin(lkeys, rkeys[~rnull]) & ~lnull, n)
    nulls = any_per_row(left.parents, lnull, n) | any_per_row(right.parents, rnull, n)
    unknown = ~common & nulls & (left.lengths > 0) & (right.lengths > 0)
    return pa.array(common, pa.bool_(), mask=~(left.valid & right.valid) | unknown)


def _type_membership(
    args: list[Expr], name: str, result: pa.DataType | None
) -> tuple[list[Expr], pa.DataType]:
    cast, list_type = _array_and_element(args, name)
    return cast, list_type if result is None else result


register(
    "array_contains",
    "array",
    (2, 2),
    lambda a: _type_membership(a, "array_contains", pa.bool_()),
    _array_contains,
)
register("array_remove", "array", (2, 2), lambda a: _type_membership(a, "array_remove", None), _array_remove)
register(
    "array_position",
    "array",
    (2, 2),
    lambda a: _type_membership(a, "array_position", pa.int64()),
    _array_position,
)
register(
    "arrays_overlap",
    "array",
    (2, 2),
    lambda a: (_same_arrays(a, "arrays_overlap")[0], pa.bool_()),
    _arrays_overlap,
)


# ---------------------------------------------------------------------------------- indexing


def _element_index(
    rows: Rows, index: pa.Array, *, one_based: bool, name: str
) -> tuple[np.ndarray, np.ndarray]:
    """Flat positions of each row's element at ``index`` and the rows that have none (null result)."""
    missing = ~rows.valid | null_mask(index)
    i = np.asarray(index.fill_null(1 if one_based else 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    if one_based:
        if np.any((i == 0) & ~missing):
            raise FunctionRuntimeError(
                "[INVALID_INDEX_OF_ZERO] The index 0 is invalid. An index shall be either < 0 or > 0 "
                "(the first element has index 1)"
            )
        offset = np.where(i > 0, i - 1, rows.lengths + i)
    else:
        offset = i
    out_of_range = ((offset < 0) | (offset >= rows.lengths)) & ~missing
    if out_of_range.any():
        row = int(np.flatnonzero(out_of_range)[0])
        code = "INVALID_ARRAY_INDEX_IN_ELEMENT_AT" if one_based else "INVALID_ARRAY_INDEX"
        raise FunctionRuntimeError(
            f"[{code}] The index {int(i[row])} is out of bounds. The array has {int(rows.lengths[row])} "
            f"elements ({name})"
        )
    return np.where(missing, 0, rows.starts + offset), missing


def array_element(args: list[ArgValue], result: pa.DataType, n: int, *, one_based: bool) -> pa.Array:
    """``element_at(array, i)`` (1-based) or ``array[i]`` (0-based) of an array column."""
    rows = Rows.of(as_array(args[0], n))
    positions, missing = _element_index(rows, as_array(args[1], n), one_based=one_based, name="element_at")
    if len(rows.values) == 0:
        return pa.nulls(n, result)
    taken = rows.values.take(pa.array(positions))
    return with_nulls(taken if taken.type == result else taken.cast(result), missing)


def _size(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    rows = Rows.of(as_array(args[0], n))
    return pa.array(rows.lengths.astype(np.int32), pa.int32(), mask=~rows.valid)


def _type_size(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    t = type_of(args[0])
    require(is_list_type(t) or pa.types.is_map(t), f"size needs an array or a map, found {t}")
    return args, pa.int32()


register("size", "array", (1, 1), _type_size, _size, aliases=("cardinality", "array_size"))


def _slice(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    rows = Rows.of(as_array(args[0], n))
    start_arr, length_arr = as_array(args[1], n), as_array(args[2], n)
    valid = rows.valid & ~null_mask(start_arr, length_arr)
    start = np.asarray(start_arr.fill_null(1).to_numpy(zero_copy_only=False), dtype=np.int64)
    length = np.asarray(length_arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    if np.any((start == 0) & valid):
        raise FunctionRuntimeError("[INVALID_PARAMETER_VALUE.START] slice: `start` must not be 0")
    if np.any((length < 0) & valid):
        raise FunctionRuntimeError("[INVALID_PARAMETER_VALUE.LENGTH] slice: `length` must be >= 0")
    offset = np.where(start > 0, start - 1, rows.lengths + start)
    inside = (offset >= 0) & (offset < rows.lengths)
    count = np.where(inside, np.minimum(length, rows.lengths - offset), 0)
    return take_rows(rows, rows.starts + np.where(inside, offset, 0), count, valid, result)


def _type_slice(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    t = _list_arg(args[0], "slice")
    for a in args[1:]:
        require(pa.types.is_integer(type_of(a)) or pa.types.is_null(type_of(a)), "slice needs integer bounds")
    return [args[0], cast_to(args[1], pa.int32()), cast_to(args[2], pa.int32())], t


register("slice", "array", (3, 3), _type_slice, _slice)


# ------------------------------------------------------------------------------ order and shape


def _sorted(
    args: list[ArgValue], result: pa.DataType, n: int, *, descending: bool, nulls_first: bool
) -> pa.Array:
    rows = Rows.of(as_array(args[0], n))
    order = sort_order(rows, descending=descending, nulls_first=nulls_first)
    return build_list(rows.values.take(pa.array(order)), rows.lengths, rows.valid, result)


def _sort_array(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    ascending = True if len(args) == 1 else bool(constant(args[1])[1])
    return _sorted(args[:1], result, n, descending=not ascending, nulls_first=ascending)


def _type_sort_array(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    t = _list_arg(args[0], "sort_array")
    if len(args) == 2:
        require(
            isinstance(literal_value(args[1], "sort_array's order"), bool),
            "sort_array's order must be a boolean",
        )
    return args, t


register("sort_array", "array", (1, 2), _type_sort_array, _sort_array)
register(
    "array_sort",
    "array",
    (1, 1),
    lambda a: (a, _list_arg(a[0], "array_sort")),
    lambda args, result, n: _sorted(args, result, n, descending=False, nulls_first=False),
)


def _bound(args: list[ArgValue], result: pa.DataType, n: int, *, largest: bool) -> pa.Array:
    rows = Rows.of(as_array(args[0], n))
    order = sort_order(rows, descending=largest, nulls_first=False)
    first = (
        rows.values.take(pa.array(order)).take(pa.array(np.where(rows.lengths > 0, rows.starts, 0)))
        if len(order)
        else None
    )
    if first is None:
        return pa.nulls(n, result)
    return with_nulls(first.cast(result), ~rows.valid | (rows.lengths == 0))


register(
    "array_max",
    "array",
    (1, 1),
    lambda a: (a, _list_arg(a[0], "array_max").value_type),
    lambda args, result, n: _bound(args, result, n, largest=True),
)
register(
    "array_min",
    "array",
    (1, 1),
    lambda a: (a, _list_arg(a[0], "array_min").value_type),
    lambda args, result, n: _bound(args, result, n, largest=False),
)


def _flatten(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    outer = Rows.of(as_array(args[0], n))
    inner = Rows.of(outer.values)
    inner_null = ~inner.valid
    valid = outer.valid & ~(np.bincount(outer.parents[inner_null], minlength=n) > 0)
    lengths = np.bincount(outer.parents, weights=inner.lengths, minlength=n).astype(np.int64)
    return build_list(inner.values, lengths, valid, result)


def _type_flatten(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    t = _list_arg(args[0], "flatten")
    require(is_list_type(t.value_type), f"flatten needs an array of arrays, found {t}")
    return args, pa.list_(t.value_type.value_type)


register("flatten", "array", (1, 1), _type_flatten, _flatten)


def concat_arrays(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    """``concat`` of array columns: null when any is null."""
    parts = [Rows.of(as_array(a, n)) for a in args]
    values = pa.concat_arrays([p.values.cast(result.value_type) for p in parts])
    parents = np.concatenate([p.parents for p in parts])
    order = np.argsort(parents, kind="stable")
    valid = np.logical_and.reduce([p.valid for p in parts])
    lengths = np.sum([p.lengths for p in parts], axis=0)
    return build_list(values.take(pa.array(order)), lengths, valid, result)


def reverse_array(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    """``reverse`` of an array column."""
    rows = Rows.of(as_array(args[0], n))
    total = len(rows.values)
    ends = rows.starts + rows.lengths - 1
    index = np.repeat(ends + rows.starts, rows.lengths) - np.arange(total, dtype=np.int64)
    return build_list(rows.values.take(pa.array(index)), rows.lengths, rows.valid, result)


def _array_join(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    rows = Rows.of(as_array(args[0], n))
    values = rows.values.cast(pa.string())
    if len(args) == 3:
        replacement = as_array(args[2], n).take(pa.array(rows.parents))
        keep = np.ones(len(values), dtype=bool)
        values = pc.coalesce(values, replacement)
        keep &= ~null_mask(values) if len(values) else keep
    else:
        keep = ~null_mask(values) if len(values) else np.ones(0, bool)
    lists = keep_elements(
        Rows(values, rows.parents, rows.starts, rows.lengths, rows.valid),
        keep,
        rows.valid,
        pa.list_(pa.string()),
    )
    separator = args[1] if isinstance(args[1], pa.Scalar) else as_array(args[1], n)
    joined = pc.binary_join(lists, separator)
    if len(args) == 3:  # a NULL replacement makes the result NULL, as in Spark
        joined = with_nulls(joined, null_mask(as_array(args[2], n)))
    return joined


def _type_array_join(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    _list_arg(args[0], "array_join")
    rest = [cast_to(a, pa.string()) for a in args[1:]]
    return [cast_to(args[0], pa.list_(pa.string())), *rest], pa.string()


register("array_join", "array", (2, 3), _type_array_join, _array_join)

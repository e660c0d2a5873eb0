"""Spark's map and struct functions, and element access (``element_at``, ``x[i]``) on arrays and maps.

``map`` and ``map_concat`` fail on a NULL or duplicate key (Spark's default
``spark.sql.mapKeyDedupPolicy=EXCEPTION``); a missing key reads as NULL. ``struct`` names its fields
after the columns it is given (``col<n>`` for other values), as Spark does.

Example:
    >>> from airflow_provider_delta.core.expressions import bind, evaluate, parse_expression
    >>> t = pa.table({"k": ["a", "b"], "v": [1, 2]})
    >>> evaluate(bind(parse_expression("element_at(map(k, v), 'a')"), t.schema), t).to_pylist()
    [1, None]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from airflow_provider_delta.core.expressions.functions.arrays import array_element
from airflow_provider_delta.core.expressions.functions.lists import Rows, element_codes, row_keys
from airflow_provider_delta.core.expressions.functions.registry import (
    ArgValue,
    FunctionRuntimeError,
    as_array,
    cast_to,
    coerce_all,
    common_type,
    is_list_type,
    literal_value,
    null_mask,
    register,
    require,
    type_of,
    with_nulls,
)
from airflow_provider_delta.core.expressions.nodes import Column, Expr


def _map_arg(expr: Expr, name: str) -> pa.DataType:
    t = type_of(expr)
    require(pa.types.is_map(t), f"{name} needs a map argument, found {t}")
    return t


def _check_keys(keys: pa.Array, parents: np.ndarray) -> None:
    if keys.null_count:
        raise FunctionRuntimeError("[NULL_MAP_KEY] Cannot use null as map key")
    (codes,) = element_codes(keys)
    unique, index = np.unique(row_keys(parents, codes), return_index=True)
    if len(unique) < len(keys):
        duplicate = np.setdiff1d(np.arange(len(keys)), index)[0]
        raise FunctionRuntimeError(
            f"[DUPLICATED_MAP_KEY] Duplicate map key {keys[int(duplicate)].as_py()!r} was found"
        )


def _build_map(
    keys: pa.Array, items: pa.Array, lengths: np.ndarray, valid: np.ndarray, result: pa.DataType
) -> pa.Array:
    offsets = np.concatenate([[0], np.cumsum(np.where(valid, lengths, 0))]).astype(np.int32)
    built = pa.MapArray.from_arrays(
        pa.array(offsets), keys.cast(result.key_type), items.cast(result.item_type)
    )
    return with_nulls(built, ~valid) if not valid.all() else built


def _map(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    pairs = len(args) // 2
    if pairs == 0:
        return _build_map(
            pa.nulls(0, result.key_type),
            pa.nulls(0, result.item_type),
            np.zeros(n, np.int64),
            np.ones(n, bool),
            result,
        )
    index = (np.arange(pairs)[None, :] * n + np.arange(n)[:, None]).ravel()
    keys = pa.concat_arrays([as_array(a, n).cast(result.key_type) for a in args[0::2]]).take(pa.array(index))
    items = pa.concat_arrays([as_array(a, n).cast(result.item_type) for a in args[1::2]]).take(
        pa.array(index)
    )
    _check_keys(keys, np.repeat(np.arange(n, dtype=np.int64), pairs))
    return _build_map(keys, items, np.full(n, pairs), np.ones(n, bool), result)


def _type_map(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    require(len(args) % 2 == 0, f"map needs key/value pairs, found {len(args)} arguments")
    keys, key_type = coerce_all(args[0::2], "map's keys") if args else ([], pa.null())
    values, value_type = coerce_all(args[1::2], "map's values") if args else ([], pa.null())
    if args:
        require(not pa.types.is_null(key_type), "map's keys cannot be NULL")
    out: list[Expr] = [x for pair in zip(keys, values, strict=True) for x in pair]
    return out, pa.map_(key_type if args else pa.string(), value_type if args else pa.string())


register("map", "map", (0, None), _type_map, _map)


def _entries(args: list[ArgValue], n: int) -> tuple[Rows, pa.Array, pa.Array]:
    rows = Rows.of(as_array(args[0], n))
    return rows, rows.values.field(0), rows.values.field(1)


def _rows_to_list(rows: Rows, values: pa.Array, result: pa.DataType) -> pa.Array:
    offsets = np.concatenate([[0], np.cumsum(rows.lengths)]).astype(np.int32)
    built = pa.ListArray.from_arrays(
        pa.array(offsets), values.cast(result.value_type), mask=pa.array(~rows.valid)
    )
    return built


register(
    "map_keys",
    "map",
    (1, 1),
    lambda a: (a, pa.list_(_map_arg(a[0], "map_keys").key_type)),
    lambda args, result, n: _rows_to_list(*_entries(args, n)[:2], result),
)
register(
    "map_values",
    "map",
    (1, 1),
    lambda a: (a, pa.list_(_map_arg(a[0], "map_values").item_type)),
    lambda args, result, n: _rows_to_list(_entries(args, n)[0], _entries(args, n)[2], result),
)


def _key_positions(args: list[ArgValue], n: int) -> tuple[Rows, pa.Array, np.ndarray, np.ndarray]:
    """(rows, values, flat position of each row's key, rows without the key or with a NULL map/key)."""
    rows, keys, items = _entries(args, n)
    wanted = as_array(args[1], n)
    per_entry = wanted.take(pa.array(rows.parents))
    kcodes, wcodes = element_codes(keys, per_entry.cast(keys.type))
    hits = np.flatnonzero((kcodes == wcodes) & ~null_mask(per_entry)) if len(keys) else np.zeros(0, np.int64)
    found_rows, first = np.unique(rows.parents[hits], return_index=True)
    position = np.zeros(n, dtype=np.int64)
    found = np.zeros(n, dtype=bool)
    position[found_rows] = hits[first]
    found[found_rows] = True
    return rows, items, position, ~found | ~rows.valid | null_mask(wanted)


def map_value(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    """The value of each row's key (NULL when the key is missing)."""
    _rows, items, position, missing = _key_positions(args, n)
    if len(items) == 0:
        return pa.nulls(n, result)
    return with_nulls(items.take(pa.array(position)).cast(result), missing)


def _map_contains_key(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    rows, _items, _position, missing = _key_positions(args, n)
    unknown = ~rows.valid | null_mask(as_array(args[1], n))
    return pa.array(~missing, pa.bool_(), mask=unknown)


def _type_key_lookup(args: list[Expr], name: str) -> tuple[list[Expr], pa.DataType]:
    t = _map_arg(args[0], name)
    key = common_type([t.key_type, type_of(args[1])], name)
    require(key == t.key_type, f"{name} needs a key of type {t.key_type}, found {type_of(args[1])}")
    return [args[0], cast_to(args[1], key)], t.item_type


register(
    "map_contains_key",
    "map",
    (2, 2),
    lambda a: (_type_key_lookup(a, "map_contains_key")[0], pa.bool_()),
    _map_contains_key,
)


def _map_concat(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    parts = [Rows.of(as_array(a, n)) for a in args]
    entries = pa.concat_arrays(
        [
            pa.StructArray.from_arrays(
                [p.values.field(0).cast(result.key_type), p.values.field(1).cast(result.item_type)],
                ["key", "value"],
            )
            for p in parts
        ]
    )
    parents = np.concatenate([p.parents for p in parts])
    order = np.argsort(parents, kind="stable")
    entries = entries.take(pa.array(order))
    valid = np.logical_and.reduce([p.valid for p in parts])
    keep = valid[parents[order]]
    entries = entries.filter(pa.array(keep))
    _check_keys(entries.field(0), parents[order][keep])
    lengths = np.where(valid, np.sum([p.lengths for p in parts], axis=0), 0)
    return _build_map(entries.field(0), entries.field(1), lengths, valid, result)


def _type_map_concat(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    for a in args:
        _map_arg(a, "map_concat")
    target = common_type([type_of(a) for a in args], "map_concat")
    return [cast_to(a, target) for a in args], target


register("map_concat", "map", (1, None), _type_map_concat, _map_concat)


# ---------------------------------------------------------------------------- element access


def _type_element_at(args: list[Expr], name: str) -> tuple[list[Expr], pa.DataType]:
    t = type_of(args[0])
    if pa.types.is_map(t):
        return _type_key_lookup(args, name)
    require(is_list_type(t), f"{name} needs an array or a map, found {t}")
    index = type_of(args[1])
    require(
        pa.types.is_integer(index) or pa.types.is_null(index), f"{name} needs an integer index, found {index}"
    )
    return [args[0], cast_to(args[1], pa.int32())], t.value_type


def _element_at(args: list[ArgValue], result: pa.DataType, n: int, *, one_based: bool) -> pa.Array:
    if pa.types.is_map(args[0].type):
        return map_value(args, result, n)
    return array_element(args, result, n, one_based=one_based)


register(
    "element_at",
    "map",
    (2, 2),
    lambda a: _type_element_at(a, "element_at"),
    lambda args, result, n: _element_at(args, result, n, one_based=True),
)
# ``x[i]``: rendered as a subscript, never written as a call (the name cannot be parsed as one).
register(
    "[]",
    "map",
    (2, 2),
    lambda a: _type_element_at(a, "[]"),
    lambda args, result, n: _element_at(args, result, n, one_based=False),
)


# ------------------------------------------------------------------------------------ structs


def _struct(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    columns = [as_array(a, n).cast(f.type) for a, f in zip(args, result, strict=True)]
    return pa.StructArray.from_arrays(columns, fields=list(result))


def _type_struct(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    names = [a.path[-1] if isinstance(a, Column) else f"col{i + 1}" for i, a in enumerate(args)]
    return args, pa.struct([pa.field(name, _nullable_type(a)) for name, a in zip(names, args, strict=True)])


def _nullable_type(expr: Expr) -> pa.DataType:
    t = type_of(expr)
    return pa.string() if pa.types.is_null(t) else t


def _type_named_struct(args: list[Expr]) -> tuple[list[Expr], pa.DataType]:
    require(len(args) % 2 == 0, "named_struct needs name/value pairs")
    names = [literal_value(a, "named_struct's field name") for a in args[0::2]]
    require(all(isinstance(x, str) for x in names), "named_struct's field names must be strings")
    values = list(args[1::2])
    return args, pa.struct([pa.field(name, _nullable_type(v)) for name, v in zip(names, values, strict=True)])


register("struct", "struct", (1, None), _type_struct, _struct)
register(
    "named_struct",
    "struct",
    (2, None),
    _type_named_struct,
    lambda args, result, n: _struct(args[1::2], result, n),
)

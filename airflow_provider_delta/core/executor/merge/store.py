"""Store a MERGE value into a column as Delta does: structs by name, at every level of nesting.

Delta Lake (``UpdateExpressionsSupport.castIfNeeded``, delta-spark 4.4.0, with its defaults
``resolveMergeUpdateStructsByName`` and ``merge.preserveNullSourceStructs`` on) stores a value of
struct type field by field, matching names ignoring case:

- every field of the value must exist in the column's struct (else the statement is refused);
  without schema evolution the two structs must also have the same fields (a field the value lacks
  is refused too: :func:`struct_mismatch` says why, at planning time);
- a field the value lacks is NULL, except in ``UPDATE SET *`` with schema evolution, where it keeps
  the target row's value (``TargetOnlyStructFieldBehavior.PRESERVE``): through structs nested in
  structs, not inside array elements or map values (Delta cannot pair those with the target's);
- a NULL struct stays NULL; in ``UPDATE SET *`` with evolution it becomes a struct (holding the kept
  target fields) when the target row's struct is not NULL and the column has fields the value lacks;
- arrays and maps are stored element by element (keys and values), without the target's elements;
- other values are cast to the column's type with Spark's ANSI store assignment
  (:func:`~airflow_provider_delta.core.schema.store_assignment.store_assign`).

Example:
    >>> from airflow_provider_delta.core.schema.arrow import from_arrow_type
    >>> value = pa.array([{"a": 0, "c": 0}])
    >>> old = pa.array([{"a": 1, "b": 10, "c": 100}])
    >>> column = from_arrow_type(old.type)
    >>> store_value(value, column, original=old).to_pylist()
    [{'a': 0, 'b': 10, 'c': 0}]
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.schema.arrow import rebased_offsets, to_arrow_type
from airflow_provider_delta.core.schema.store_assignment import store_assign
from airflow_provider_delta.core.schema.types import ArrayType, DataType, MapType, StructType

__all__ = ["store_value", "struct_mismatch"]


def _child_index(value_type: pa.StructType, name: str) -> int | None:
    folded = name.casefold()
    for i in range(value_type.num_fields):
        if value_type.field(i).name.casefold() == folded:
            return i
    return None


def struct_mismatch(value: pa.DataType, column: DataType, path: str, *, allow_missing: bool) -> str | None:
    """Why Delta refuses to store a value of type ``value`` into ``column`` for its structs, or None.

    In Delta's order (``castIfNeeded``), struct by struct from the outside in: a field of the value the
    column's struct lacks (its data would be lost); then, without schema evolution (``allow_missing``
    false), a field of the column's struct the value lacks; then the fields both have, in the column's
    order. Looks into array elements and map keys and values.
    """
    if isinstance(column, StructType) and pa.types.is_struct(value):
        for i in range(value.num_fields):
            if _field_index(column, value.field(i).name) is None:
                return f"the value has field {path + '.' + value.field(i).name!r}, which the column lacks"
        if not allow_missing and value.num_fields != len(column.fields):
            lacking = next(f.name for f in column.fields if _child_index(value, f.name) is None)
            return (
                f"the value has no field {path + '.' + lacking!r} (without schema evolution a struct "
                "value must have every field of the column's struct)"
            )
        for f in column.fields:
            j = _child_index(value, f.name)
            if j is None:
                continue
            reason = struct_mismatch(value.field(j).type, f.type, f"{path}.{f.name}", allow_missing=allow_missing)
            if reason:
                return reason
        return None
    if isinstance(column, ArrayType) and (pa.types.is_list(value) or pa.types.is_large_list(value)):
        return struct_mismatch(
            value.value_type, column.element_type, f"{path}.element", allow_missing=allow_missing
        )
    if isinstance(column, MapType) and pa.types.is_map(value):
        return struct_mismatch(
            value.key_type, column.key_type, f"{path}.key", allow_missing=allow_missing
        ) or struct_mismatch(value.item_type, column.value_type, f"{path}.value", allow_missing=allow_missing)
    return None


def _field_index(column: StructType, name: str) -> int | None:
    folded = name.casefold()
    return next((i for i, f in enumerate(column.fields) if f.name.casefold() == folded), None)


def _has_fields_to_keep(value: pa.StructType, column: StructType) -> bool:
    """Whether the column's struct has a field the value lacks, here or in structs nested in structs
    (Delta's ``hasExtraStructFieldsToPreserveValue``: not inside arrays or maps)."""
    for f in column.fields:
        i = _child_index(value, f.name)
        if i is None:
            return True
        child = value.field(i).type
        if (
            isinstance(f.type, StructType)
            and pa.types.is_struct(child)
            and _has_fields_to_keep(child, f.type)
        ):
            return True
    return False


def store_value(
    values: pa.Array, column: DataType, *, original: pa.Array | None = None, path: str = "value"
) -> pa.Array:
    """``values`` stored into a column of type ``column`` (see the module docstring).

    Args:
        values: the assigned values (any Arrow type Delta maps).
        column: the column's (evolved) type.
        original: the target rows' current values in ``column``'s type, for ``UPDATE SET *`` with
            schema evolution (fields the value lacks keep them); None elsewhere.
        path: the column's name, for errors.

    Raises:
        CastError: a value cannot be cast to its field's type (Spark's ANSI store assignment).
    """
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if pa.types.is_null(values.type):
        return pa.nulls(len(values), to_arrow_type(column))
    if isinstance(column, StructType) and pa.types.is_struct(values.type):
        return _store_struct(values, column, original, path)
    if isinstance(column, ArrayType) and (
        pa.types.is_list(values.type) or pa.types.is_large_list(values.type)
    ):
        return _store_list(values, column, path)
    if isinstance(column, MapType) and pa.types.is_map(values.type):
        return _store_map(values, column, path)
    out = store_assign(values, column, column=path)
    assert isinstance(out, pa.Array)
    return out


def _store_struct(
    values: pa.StructArray, column: StructType, original: pa.Array | None, path: str
) -> pa.Array:
    target = to_arrow_type(column)
    if values.type.equals(target) and original is None:
        return values
    children = values.flatten()  # the parent's validity applied to each child
    kept = original.flatten() if original is not None else None
    out: list[pa.Array] = []
    for k, f in enumerate(column.fields):
        i = _child_index(values.type, f.name)
        before = kept[k] if kept is not None else None
        if i is not None:
            inner = before if isinstance(f.type, StructType) else None
            out.append(store_value(children[i], f.type, original=inner, path=f"{path}.{f.name}"))
        else:
            out.append(before if before is not None else pa.nulls(len(values), to_arrow_type(f.type)))
    null = values.is_null()
    if original is not None and _has_fields_to_keep(values.type, column):
        null = pc.and_(null, original.is_null())
    fields = [target.field(i) for i in range(target.num_fields)]
    mask = null if null.true_count else None
    return pa.StructArray.from_arrays(out, fields=fields, mask=mask)


def _store_list(values: pa.Array, column: ArrayType, path: str) -> pa.Array:
    target = to_arrow_type(column)
    if values.type.equals(target):
        return values
    if pa.types.is_large_list(values.type):
        values = values.cast(pa.list_(values.type.value_field))
    offsets, start, stop = rebased_offsets(values)
    elements = store_value(values.values.slice(start, stop - start), column.element_type, path=f"{path}.element")
    mask = values.is_null() if values.null_count else None
    return pa.ListArray.from_arrays(offsets, elements, type=target, mask=mask)


def _store_map(values: pa.MapArray, column: MapType, path: str) -> pa.Array:
    target = to_arrow_type(column)
    if values.type.equals(target):
        return values
    offsets, start, stop = rebased_offsets(values)
    keys = store_value(values.keys.slice(start, stop - start), column.key_type, path=f"{path}.key")
    items = store_value(values.items.slice(start, stop - start), column.value_type, path=f"{path}.value")
    mask = values.is_null() if values.null_count else None
    return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)



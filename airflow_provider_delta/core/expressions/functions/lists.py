"""Arrow list (and map) arrays as flat values plus per-row ranges: the vectorised core of the array functions.

A :class:`Rows` holds, for ``n`` rows, the flat element values, each element's row (``parents``),
each row's first element (``starts``) and length, and which rows are valid. Functions compute on the
flat values with ``pyarrow.compute`` and numpy, then :func:`build_list` puts rows back together.
Element equality follows Spark's (``NaN = NaN``, ``-0.0 = 0.0``, nulls equal for set functions):
:func:`element_codes` gives equal elements equal integer codes.

Example:
    >>> rows = Rows.of(pa.array([[1, 2], None, []]))
    >>> rows.parents.tolist(), rows.lengths.tolist(), rows.valid.tolist()
    ([0, 0], [2, 0, 0], [True, False, True])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.expressions.functions.registry import as_array, null_mask


@dataclass(frozen=True)
class Rows:
    """A list (or map, as its key/value structs) column as flat values and per-row ranges."""

    values: pa.Array
    parents: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    valid: np.ndarray

    @property
    def num_rows(self) -> int:
        return len(self.lengths)

    @classmethod
    def of(cls, column: pa.Array | pa.Scalar, num_rows: int | None = None) -> Rows:
        """Split a list or map column (a scalar is repeated ``num_rows`` times)."""
        array = as_array(column, num_rows or 0) if not isinstance(column, pa.Array) else column
        valid = ~null_mask(array)
        if pa.types.is_map(array.type):
            offsets = np.asarray(array.offsets, dtype=np.int64)
            lengths = np.where(valid, np.diff(offsets), 0)
            values = array.values.take(pa.array(ragged_index(offsets[:-1], lengths)))
        else:
            lengths = np.asarray(pc.list_value_length(array).fill_null(0), dtype=np.int64)
            values = pc.list_flatten(array)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        parents = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
        return cls(values, parents, starts, lengths, valid)


def ragged_index(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The indices ``starts[i] .. starts[i] + counts[i] - 1`` of every row, concatenated."""
    counts = np.maximum(counts, 0)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return np.repeat(starts - first, counts) + np.arange(total, dtype=np.int64)


def build_list(values: pa.Array, lengths: np.ndarray, valid: np.ndarray, list_type: pa.DataType) -> pa.Array:
    """A list column of ``len(lengths)`` rows from flat ``values`` (null where not ``valid``)."""
    if not valid.all():  # values of rows that become NULL go
        values = values.filter(pa.array(np.repeat(valid, lengths)))
    offsets = np.concatenate([[0], np.cumsum(np.where(valid, lengths, 0))]).astype(np.int32)
    element = list_type.value_type
    if values.type != element:
        values = values.cast(element)
    result = pa.ListArray.from_arrays(pa.array(offsets), values, mask=pa.array(~valid))
    return result if result.type == list_type else result.cast(list_type)


def take_rows(
    rows: Rows, starts: np.ndarray, counts: np.ndarray, valid: np.ndarray, list_type: pa.DataType
) -> pa.Array:
    """Each row's ``counts[i]`` elements from flat index ``starts[i]`` on, as a list column."""
    counts = np.where(valid, np.maximum(counts, 0), 0)
    index = ragged_index(starts, counts)
    return build_list(rows.values.take(pa.array(index)), counts, valid, list_type)


def keep_elements(rows: Rows, keep: np.ndarray, valid: np.ndarray, list_type: pa.DataType) -> pa.Array:
    """The elements where ``keep`` (in order), per row, as a list column."""
    kept = np.flatnonzero(keep)
    lengths = np.bincount(rows.parents[kept], minlength=rows.num_rows)
    return build_list(rows.values.take(pa.array(kept)), lengths, valid, list_type)


# ------------------------------------------------------------------------------------- equality


def normalized(values: pa.Array) -> pa.Array:
    """Values as Spark's set functions return them (``-0.0`` as ``0.0``)."""
    return _normalized(values)


def _normalized(values: pa.Array) -> pa.Array:
    if pa.types.is_floating(values.type):
        return pc.add(values, pa.scalar(0.0, values.type))  # -0.0 + 0.0 = 0.0: one code for both zeros
    if pa.types.is_dictionary(values.type):
        return values.dictionary_decode()
    return values


def element_codes(*parts: pa.Array) -> list[np.ndarray]:
    """Integer codes for the elements of ``parts`` (one type): equal codes for Spark-equal values, nulls too."""
    arrays = [_normalized(p) for p in parts]
    joined = pa.concat_arrays(arrays) if len(arrays) > 1 else arrays[0]
    try:
        codes = np.asarray(pc.dictionary_encode(joined, null_encoding="encode").indices, dtype=np.int64)
    except pa.ArrowNotImplementedError:  # nested elements: by their Python values
        seen: dict[Any, int] = {}
        codes = np.array(
            [seen.setdefault(_hashable(v), len(seen)) for v in joined.to_pylist()], dtype=np.int64
        )
    out, at = [], 0
    for a in arrays:
        out.append(codes[at : at + len(a)])
        at += len(a)
    return out


def _hashable(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return ("NaN",)
    if isinstance(value, dict):
        return tuple((k, _hashable(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, tuple):  # map entries
        return tuple(_hashable(v) for v in value)
    return value


def row_keys(parents: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """One int64 per (row, element code): equal for equal elements of the same row."""
    width = int(codes.max()) + 1 if len(codes) else 1
    return parents * width + codes


def first_occurrences(keys: np.ndarray) -> np.ndarray:
    """A boolean mask of the first occurrence of every key (keys in row order)."""
    keep = np.zeros(len(keys), dtype=bool)
    if len(keys):
        keep[np.unique(keys, return_index=True)[1]] = True
    return keep


def any_per_row(parents: np.ndarray, flags: np.ndarray, num_rows: int) -> np.ndarray:
    """Rows where any of their elements' ``flags`` is set."""
    return np.bincount(parents[flags], minlength=num_rows) > 0


def sort_order(rows: Rows, *, descending: bool, nulls_first: bool) -> np.ndarray:
    """Flat indices that sort every row's elements as Spark does (NaN largest, -0.0 before 0.0)."""
    values = _normalized(rows.values) if pa.types.is_dictionary(rows.values.type) else rows.values
    is_null = np.asarray(values.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    rank = np.ones(len(values), dtype=np.int8)
    if pa.types.is_floating(values.type):  # -0.0 and 0.0 are equal (the sort is stable)
        floats = np.asarray(values.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64)
        rank[np.isnan(floats)] = 0 if descending else 2
        values = pa.array(np.where(np.isnan(floats), 0, floats), values.type)
    rank[is_null] = 0 if nulls_first else 3
    table = pa.table({"p": rows.parents, "r": rank, "v": values})
    keys = [("p", "ascending"), ("r", "ascending"), ("v", "descending" if descending else "ascending")]
    return np.asarray(pc.sort_indices(table, sort_keys=keys), dtype=np.int64)

"""Join a MERGE's target files with its source one file at a time, on one integer key.

The local executor's usual join is Arrow's hash join over every target row at once, which has to wait
until all candidate files are read. When the ON condition's equality is one integer column on each
side (the common ``t.id = s.id``), the source key is sorted once here and each target file is probed
against it as soon as it is read (a binary search per row, in numpy, which releases the GIL), on the
thread that read it. The pairs are those of the hash join: equal values match, nulls match nothing,
every source row holding a key pairs with every target row holding it.

Example:
    >>> keys = SortedKeys.build(pa.chunked_array([[5, 1, None, 5]]), np.arange(4))
    >>> keys.probe(pa.chunked_array([[1, 2, 5]]), None)
    (array([0, 2, 2]), array([1, 0, 3]))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_delta.core.executor.merge.plan import JoinKey

__all__ = ["SortedKeys", "probes_one_integer_key"]


def probes_one_integer_key(keys: Sequence[JoinKey]) -> bool:
    """Whether the join is on one key whose both sides are integers that fit a signed 64-bit value."""
    return len(keys) == 1 and all(
        pa.types.is_integer(t) and not pa.types.is_uint64(t) for t in (keys[0].target_type, keys[0].source_type)
    )


def _values(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """The integers as int64 (nulls as 0) and, when there are nulls, which values are valid."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if column.type != pa.int64():
        column = pc.cast(column, pa.int64())
    valid = None
    if column.null_count:
        valid = np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        column = column.fill_null(0)
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64), valid


@dataclass(frozen=True)
class SortedKeys:
    """The source's key values sorted, with the source row of each."""

    keys: np.ndarray
    rows: np.ndarray
    unique: bool

    @classmethod
    def build(cls, column: pa.ChunkedArray | pa.Array, rows: np.ndarray) -> SortedKeys:
        """Sort the key ``column`` of the source rows ``rows`` (``column`` holds only those rows)."""
        values, valid = _values(column)
        if valid is not None:
            values, rows = values[valid], rows[valid]
        order = np.argsort(values)  # not stable: equal keys pair with every one of their rows anyway
        keys = values[order]
        return cls(keys, rows[order], not bool(np.any(keys[1:] == keys[:-1])))

    def probe(self, column: pa.ChunkedArray | pa.Array, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(target row, source row) pairs of equal keys: ``column`` is a file's key, ``rows`` the rows to
        probe (None: all), the pairs in target row order."""
        values, valid = _values(column)
        candidates = np.arange(len(values)) if rows is None else rows
        if valid is not None:
            candidates = candidates[valid[candidates]]
        probed = values if rows is None and valid is None else values[candidates]
        if not len(self.keys) or not len(probed):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        lo = np.searchsorted(self.keys, probed, side="left")
        if self.unique:
            hit = self.keys[np.minimum(lo, len(self.keys) - 1)] == probed
            return candidates[hit], self.rows[lo[hit]]
        counts = np.searchsorted(self.keys, probed, side="right") - lo
        hit = counts > 0
        target, lo, counts = candidates[hit], lo[hit], counts[hit]
        # Each target row pairs with the run of equal source keys starting at lo.
        offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        return np.repeat(target, counts), self.rows[np.repeat(lo, counts) + offsets]

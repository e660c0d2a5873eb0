"""How a bin's rows become files: one file (compaction), or Z-ordered files of a target size.

The layouts are picklable dataclasses: the executor (local or Spark tasks) calls them with the bin's
files and their live rows.

**Z-order** (Delta's ``MultiDimClustering``): each column's values become range ids (at most
1,000 ranges: one per distinct value when there are fewer, else ranges of equal row counts; null is 0),
the ids' bits are interleaved round-robin from the most significant (the Z-curve), the rows are
sorted by the interleaved key, and the sorted rows are cut into ``max(1, bin bytes /
max_file_size)`` files. Delta samples range boundaries and range-partitions without sorting inside
files; ranking every row gives the same curve without sampling noise, and sorted files.

Example:
    >>> ZOrder(("x", "y"), max_file_size=1 << 30)(files, rows)  # doctest: +SKIP
    [pyarrow.Table ...]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.exceptions import SchemaError

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy.typing as npt

    from airflow_provider_delta.core.actions import AddFile

__all__ = ["NUM_RANGES", "Coalesce", "ZOrder", "range_ids", "zorder_permutation"]

NUM_RANGES = 1000
_BITS = 10  # bits of a range id: 2**10 >= NUM_RANGES
_WORD_BITS = 60


@dataclass(frozen=True)
class Coalesce:
    """Compaction: the bin's rows, in file order, as one file."""

    def __call__(self, files: Sequence[AddFile], rows: pa.Table) -> list[pa.Table]:
        """One table: all the rows."""
        return [rows]


def _column(rows: pa.Table, path: str) -> pa.Array:
    names = path.split(".")
    column = rows.column(names[0]).combine_chunks() if rows.num_rows else pa.array([], rows.schema.field(names[0]).type)
    for name in names[1:]:
        column = pc.struct_field(column, name)
    return column


def range_ids(values: pa.Array, num_ranges: int = NUM_RANGES) -> npt.NDArray[np.uint64]:
    """Each value's range id, as Delta's ``range_partition_id(col, num_ranges)``; null is 0.

    With at most ``num_ranges`` distinct values each value is its own range (ids ``0..d-1`` in value
    order); with more, the rows are cut into ``num_ranges`` ranges of equal row counts by rank
    (equal values share a range).

    Raises:
        SchemaError: the type has no order (nested types, maps).
    """
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    try:
        dense = pc.rank(values, sort_keys="ascending", tiebreaker="dense")
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
        raise SchemaError(f"Cannot Z-order by a column of type {values.type}: its values have no order") from err
    nulls = np.asarray(values.is_null().to_numpy(zero_copy_only=False), dtype=bool) if values.null_count else None
    ids = np.asarray(dense.to_numpy(zero_copy_only=False), dtype=np.uint64) - np.uint64(1)
    distinct = int(ids[~nulls].max()) + 1 if nulls is not None and (~nulls).any() else int(ids.max()) + 1
    if distinct > num_ranges:
        # Nulls rank last, so the non-null rows hold ranks 1..m.
        first = pc.rank(values, sort_keys="ascending", tiebreaker="min")
        m = n - values.null_count
        ids = (np.asarray(first.to_numpy(zero_copy_only=False), dtype=np.uint64) - np.uint64(1)) * np.uint64(
            num_ranges
        ) // np.uint64(m)
    if nulls is not None:
        ids[nulls] = 0
    return ids


def zorder_permutation(rows: pa.Table, columns: Sequence[str]) -> npt.NDArray[np.int64]:
    """The row order along the Z-curve of ``columns`` (stable for equal keys)."""
    ids = [range_ids(_column(rows, c)) for c in columns]
    total_bits = _BITS * len(ids)
    words = [np.zeros(rows.num_rows, dtype=np.uint64) for _ in range(-(-total_bits // _WORD_BITS))]
    position = 0
    for bit in range(_BITS - 1, -1, -1):  # most significant bit first, round-robin over the columns
        for column_ids in ids:
            word = position // _WORD_BITS
            words[word] = (words[word] << np.uint64(1)) | ((column_ids >> np.uint64(bit)) & np.uint64(1))
            position += 1
    # np.lexsort sorts by the last key first: the most significant word goes last.
    return np.lexsort(tuple(reversed(words))).astype(np.int64)


@dataclass(frozen=True)
class ZOrder:
    """ZORDER BY ``columns``: rows sorted along the Z-curve, cut into files of about ``max_file_size``."""

    columns: tuple[str, ...]
    max_file_size: int

    def __call__(self, files: Sequence[AddFile], rows: pa.Table) -> list[pa.Table]:
        """The sorted rows in ``max(1, bin bytes // max_file_size)`` slices of equal row counts."""
        ordered = rows.take(pa.array(zorder_permutation(rows, self.columns)))
        num_files = max(1, min(rows.num_rows, sum(f.size for f in files) // max(1, self.max_file_size)))
        step = -(-rows.num_rows // num_files)
        return [ordered.slice(start, step) for start in range(0, rows.num_rows, step)]

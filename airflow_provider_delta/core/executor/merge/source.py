"""The MERGE source as the planner sees it: a schema, a summary of its join keys, an SQL typer.

Planning needs three things from the source, whatever engine holds its rows: its Arrow schema
(columns for ``*``, schema evolution, binding), a :class:`SourceSummary` of the join-key values of
the rows the ON condition can match (the key range that prunes target files), and, for an engine
whose SQL is wider than core's expressions (Spark), a :class:`SqlTyper` that types the clause
conditions and values core cannot parse. :class:`ArrowMergeSource` is the local one (a pyarrow
Table); the Spark one wraps a DataFrame (``airflow_provider_delta.spark.merge``).

Example:
    >>> src = ArrowMergeSource(pa.table({"id": [3, 1, None]}))
    >>> summary = src.summarize(None, [(("id",), False)])
    >>> summary.num_rows, summary.keys[0].non_null, summary.keys[0].bounds.to_pylist()
    (3, 2, [1, 3])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from airflow_provider_delta.core.expressions import evaluate
from airflow_provider_delta.exceptions import MergeError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_delta.core.expressions import Expr

__all__ = [
    "IN_LIST_LIMIT",
    "ArrowMergeSource",
    "KeySummary",
    "MergeSource",
    "SourceSummary",
    "SqlTyper",
    "as_merge_source",
    "as_source_table",
    "source_key_column",
]

IN_LIST_LIMIT = 1000
"""Partition keys prune with an IN list of the source's distinct values up to this many."""


@dataclass(frozen=True)
class KeySummary:
    """One join key's values in the source rows the ON condition can match.

    Attributes:
        non_null: how many of those rows have a non-null key.
        bounds: ``[min, max]`` of the non-null values (source type), None when there are none or the
            type has no order.
        distinct: the distinct non-null values, sorted, when asked for (partition keys) and at most
            :data:`IN_LIST_LIMIT` of them; else None.
    """

    non_null: int
    bounds: pa.Array | None = None
    distinct: pa.Array | None = None


@dataclass(frozen=True)
class SourceSummary:
    """``num_rows`` of the source; ``matchable_rows`` of them pass the ON condition's source-only terms."""

    num_rows: int
    matchable_rows: int
    keys: tuple[KeySummary, ...]


class SqlTyper(Protocol):
    """Types SQL that core's expression engine does not parse, with the executing engine's analyzer."""

    def type_of(self, sql: str, scope: Mapping[str, pa.Schema], *, where: str) -> pa.DataType:
        """The Arrow type of ``sql`` over rows whose columns are ``scope`` (alias -> schema).

        Raises:
            MergeError: the SQL does not resolve (naming ``where`` and the column).
        """
        ...


@runtime_checkable
class MergeSource(Protocol):
    """The source of a MERGE, as planning sees it (see the module docstring)."""

    @property
    def schema(self) -> pa.Schema:
        """The source's columns, logical Arrow types."""
        ...

    def summarize(self, filter: Expr | None, keys: Sequence[tuple[tuple[str, ...], bool]]) -> SourceSummary:  # noqa: A002
        """Summarise the rows where ``filter`` holds: each key ``(path, want_distinct)``'s values."""
        ...

    def sql_typer(self) -> SqlTyper | None:
        """The typer for SQL outside core's expressions, or None (such SQL is then an error)."""
        ...


def source_key_column(source: pa.Table, path: Sequence[str]) -> pa.ChunkedArray:
    """The source column (or nested field) at ``path``."""
    column = source.column(path[0])
    for name in path[1:]:
        column = pc.struct_field(column, name)
    return column


class ArrowMergeSource:
    """A pyarrow Table as the MERGE source (the local executor joins these rows in this process)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    @property
    def schema(self) -> pa.Schema:
        """The table's schema."""
        return self.table.schema

    def summarize(self, filter: Expr | None, keys: Sequence[tuple[tuple[str, ...], bool]]) -> SourceSummary:  # noqa: A002
        """Key counts, bounds and (for partition keys) distinct values, computed with Arrow."""
        rows = self.table
        if filter is not None and rows.num_rows:
            rows = rows.filter(pc.fill_null(evaluate(filter, rows), False))
        summaries = []
        for path, want_distinct in keys:
            values = source_key_column(rows, path).drop_null()
            summaries.append(_summary(values, want_distinct))
        return SourceSummary(self.table.num_rows, rows.num_rows, tuple(summaries))

    def sql_typer(self) -> SqlTyper | None:
        """None: the local executor evaluates core's expressions only."""
        return None


def _summary(values: pa.ChunkedArray, want_distinct: bool) -> KeySummary:
    if len(values) == 0:
        return KeySummary(0)
    distinct = None
    bounds = None
    try:
        if want_distinct:
            unique = pc.unique(values)
            if len(unique) <= IN_LIST_LIMIT:
                distinct = pc.take(unique, pc.sort_indices(unique))
        minmax = pc.min_max(values)
        bounds = pa.array([minmax["min"].as_py(), minmax["max"].as_py()], values.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass  # no order on this type: no pruning on this key
    return KeySummary(len(values), bounds, distinct)


def as_source_table(source: Any) -> pa.Table:
    """The merge source as one Arrow table (a Table, RecordBatch, RecordBatchReader or dataset).

    Raises:
        MergeError: the source is of another type.
    """
    if isinstance(source, pa.Table):
        return source
    if isinstance(source, pa.RecordBatch):
        return pa.Table.from_batches([source])
    if isinstance(source, pa.RecordBatchReader):
        return source.read_all()
    if isinstance(source, ds.Dataset):
        return source.to_table()
    if hasattr(source, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(source).read_all()
    raise MergeError(
        f"Cannot merge from a source of type {type(source).__name__!r}: expected a pyarrow Table, "
        "RecordBatch, RecordBatchReader or dataset"
    )


def as_merge_source(source: Any) -> MergeSource:
    """``source`` when it already is a :class:`MergeSource`, else its rows as an :class:`ArrowMergeSource`."""
    if isinstance(source, MergeSource) and not isinstance(source, (pa.Table, Mapping)):
        return source
    return ArrowMergeSource(as_source_table(source))

"""Arrow data handed to the engine: one place that turns it into the engine's physical Arrow types.

Users hand over what their library produces: pyarrow tables, record batches, readers and datasets,
and through the Arrow C stream interface polars and arro3 frames, which use view strings and binaries
and large lists. Every command's input goes through :func:`arrow_table` (or :func:`physical_table`
for a table already in hand), which returns a ``pyarrow.Table`` whose columns have exactly the Arrow
types of their Delta types (``to_arrow_type(from_arrow_type(t))``):

- ``string_view``/``large_string`` -> ``string``; ``binary_view``/``large_binary``/``fixed_size_binary``
  -> ``binary``; ``large_list``, ``list_view``, ``large_list_view``, ``fixed_size_list`` -> ``list``;
- dictionary-encoded, run-end-encoded and extension columns -> their values;
- unsigned integers up to 32 bits -> the next wider signed type; ``float16`` -> ``float``;
  ``date64`` -> ``date``;
- timestamps of any unit -> microseconds (nanoseconds truncated), time zone aware -> UTC, naive stays
  naive (``timestamp_ntz``);
- the same, recursively, inside structs, lists and maps; nulls keep their place at every level.

Types with no Delta equivalent (``uint64``, ``time32/64``, ``duration``, ``interval``, decimals wider
than 38 digits, unions) are refused with a :class:`~airflow_provider_delta.exceptions.SchemaError` naming the
column.

Example:
    >>> import pyarrow as pa
    >>> physical_table(pa.table({"s": pa.array(["a"], pa.string_view())})).schema
    s: string
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.dataset as ds

from airflow_provider_delta.core.schema.arrow import from_arrow_type, to_arrow_type
from airflow_provider_delta.core.schema.conform import conform_array
from airflow_provider_delta.exceptions import DeltaError, SchemaError, SchemaMismatchError

if TYPE_CHECKING:
    from airflow_provider_delta.core.schema.types import DataType

__all__ = ["arrow_table", "input_schema", "is_arrow_input", "physical_schema", "physical_table"]


def is_arrow_input(data: Any) -> bool:
    """Whether ``data`` is something :func:`arrow_table` takes."""
    return isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader, ds.Dataset)) or hasattr(
        data, "__arrow_c_stream__"
    ) or hasattr(data, "__arrow_c_array__")


def arrow_table(data: Any, *, action: str = "write rows", error: type[DeltaError] = SchemaMismatchError) -> pa.Table:
    """``data`` as one ``pyarrow.Table`` with the engine's physical types (see the module docstring).

    Args:
        data: a pyarrow ``Table``, ``RecordBatch``, ``RecordBatchReader`` or dataset, or any object
            with ``__arrow_c_stream__`` / ``__arrow_c_array__`` (polars, arro3, nanoarrow ...).
        action: what the caller does, for the error message (``"merge"``, ``"write rows"``).
        error: the error type for data that is not Arrow data.

    Raises:
        DeltaError: ``error`` when ``data`` is not Arrow data.
        SchemaError: a column's type has no Delta equivalent, or a value does not fit the Delta type.
    """
    return physical_table(_read(data, action, error))


def _read(data: Any, action: str, error: type[DeltaError]) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if isinstance(data, ds.Dataset):
        return data.to_table()
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data).read_all()
    if hasattr(data, "__arrow_c_array__"):
        return pa.Table.from_batches([pa.record_batch(data)])
    raise error(
        f"Cannot {action}: expected Arrow data (a pyarrow Table, RecordBatch, RecordBatchReader or dataset, "
        f"or an object with __arrow_c_stream__ such as a polars DataFrame), found {type(data).__name__!r}"
    )


def input_schema(data: Any, *, action: str = "write rows", error: type[DeltaError] = SchemaMismatchError) -> pa.Schema:
    """The schema :func:`arrow_table` gives ``data``, read without consuming it (a reader stays unread).

    Raises:
        DeltaError: ``error`` when ``data`` is not Arrow data, or is a one-shot stream without a schema.
        SchemaError: a field's type has no Delta equivalent.
    """
    if isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader, ds.Dataset)):
        return physical_schema(data.schema)
    if hasattr(data, "__arrow_c_schema__"):
        return physical_schema(pa.schema(data))
    if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
        raise error(f"Cannot {action}: a {type(data).__name__!r} tells its schema only by being read; pass a "
                    "pyarrow Table or RecordBatchReader (pyarrow.RecordBatchReader.from_stream(data))")
    _read(data, action, error)  # raises: not Arrow data
    raise AssertionError("unreachable")


def physical_schema(schema: pa.Schema) -> pa.Schema:
    """The schema :func:`physical_table` gives a table of ``schema``.

    Raises:
        SchemaError: a field's type has no Delta equivalent.
    """
    return pa.schema([pa.field(f.name, _physical_type(f), f.nullable) for f in schema])


def physical_table(table: pa.Table) -> pa.Table:
    """``table`` with every column converted to the Arrow type of its Delta type.

    Columns already in that form are kept as they are (no copy).

    Raises:
        SchemaError: a column's type has no Delta equivalent, or a value does not fit it (a timestamp
            beyond the microsecond range).
    """
    changed = False
    columns: list[pa.ChunkedArray] = []
    fields: list[pa.Field] = []
    for f, column in zip(table.schema, table.columns, strict=True):
        target = _physical_type(f)
        if column.type.equals(target):
            columns.append(column)
        else:
            changed = True
            columns.append(_convert(column, f, target))
        fields.append(pa.field(f.name, target, f.nullable, f.metadata))
    if not changed:
        return table
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, table.schema.metadata))


def _delta_type(f: pa.Field) -> DataType:
    try:
        return from_arrow_type(f.type)
    except SchemaError as err:
        raise SchemaError(f"Cannot take column {f.name!r} of type {f.type}: {err}") from None


def _physical_type(f: pa.Field) -> pa.DataType:
    return to_arrow_type(_delta_type(f))


def _convert(column: pa.ChunkedArray, f: pa.Field, target: pa.DataType) -> pa.ChunkedArray:
    dt = _delta_type(f)
    try:
        chunks = [conform_array(chunk, dt, mode="none") for chunk in column.chunks]
    except SchemaMismatchError as err:
        raise SchemaMismatchError(f"Cannot take column {f.name!r} of type {f.type}: {err}") from None
    return pa.chunked_array(chunks, type=target)

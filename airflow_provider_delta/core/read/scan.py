"""Read a snapshot's rows into Arrow: skip files, read parquet, adapt to the logical schema.

Per file: decode its partition values (PROTOCOL.md "Partition Value Serialization"), skip it when the
filter cannot match its partition values or statistics, read only the needed columns, map physical
columns to logical ones (column mapping by name or field id; columns missing from older files
null-filled), drop rows marked in its deletion vector, and append the partition columns. Then the
filter is applied exactly to the remaining rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_delta.core.log.context import reading
from airflow_provider_delta.core.parallel import in_pool_thread, run_parallel
from airflow_provider_delta.core.partitions import decode_partition_value, partition_column
from airflow_provider_delta.core.read.deletion_vectors import (
    DeletionVectorDescriptor,
    deletion_mask,
    deletion_vector_opener,
    read_deleted_rows,
)
from airflow_provider_delta.core.schema.arrow import to_arrow_schema, to_arrow_type
from airflow_provider_delta.core.schema.conform import as_schema, conform_table
from airflow_provider_delta.core.schema.mapping import column_mapping_mode, physical_name
from airflow_provider_delta.core.schema.types import StructType
from airflow_provider_delta.exceptions import DataFileError, SchemaError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from airflow_provider_delta.core.actions import AddFile
    from airflow_provider_delta.core.schema.mapping import ColumnMappingMode
    from airflow_provider_delta.core.schema.types import StructField
    from airflow_provider_delta.core.snapshot import Snapshot
    from airflow_provider_delta.core.write.target import TableLayout

@dataclass(frozen=True)
class ScanPlan:
    """What a scan reads: the files that may match, and the columns to produce."""

    files: tuple[AddFile, ...]
    data_schema: StructType  # non-partition fields to read from the files
    partition_fields: tuple[StructField, ...]
    output_schema: pa.Schema  # logical schema of the result, before projection to ``columns``
    columns: tuple[str, ...]
    predicate: Any
    skipped_files: int

    @property
    def read_schema(self) -> pa.Schema:
        """The columns read from each file (data and partition), in schema order, logical types."""
        wanted = {f.name for f in self.data_schema} | {f.name for f in self.partition_fields}
        return pa.schema([f for f in self.output_schema if f.name in wanted])

    def filter_rows(self, table: pa.Table) -> pa.Table:
        """The rows of ``table`` (in :attr:`read_schema`) the predicate keeps (null drops a row)."""
        if self.predicate is None:
            return table
        from airflow_provider_delta.core.expressions import evaluate  # lazy: see plan_scan

        return table.filter(evaluate(self.predicate, table), null_selection_behavior="drop")


def _select_columns(schema: StructType, columns: Sequence[str] | None) -> tuple[str, ...]:
    if columns is None:
        return schema.names
    out = []
    for name in columns:
        f = schema.get(name, case_sensitive=False)
        if f is None:
            raise SchemaError(
                f"Cannot select column {name!r}: no such column (available: {', '.join(schema.names)})"
            )
        out.append(f.name)
    return tuple(out)


def _logical_stats(stats: Mapping[str, Any], schema: StructType) -> dict[str, Any]:
    """Rename a stats dict keyed by physical names (column mapping) to logical names."""

    def rename(values: Any, struct: StructType) -> Any:
        if not isinstance(values, dict):
            return values
        out: dict[str, Any] = {}
        for f in struct:
            phys = physical_name(f)
            if phys in values:
                v = values[phys]
                out[f.name] = rename(v, f.type) if isinstance(f.type, StructType) else v
        return out

    renamed: dict[str, Any] = {"numRecords": stats.get("numRecords")}
    for key in ("minValues", "maxValues", "nullCount"):
        if key in stats:
            renamed[key] = rename(stats[key], schema)
    return renamed


def plan_scan(snapshot: Snapshot, *, columns: Sequence[str] | None = None, filter: Any = None) -> ScanPlan:  # noqa: A002
    """Decide which files to read and which columns to produce."""
    snapshot.check_readable()
    schema = snapshot.schema
    mode = column_mapping_mode(snapshot.configuration)
    selected = _select_columns(schema, columns)
    logical_arrow = snapshot.arrow_schema
    predicate = None
    needed = set(selected)
    if filter is not None:
        # lazy: the expression engine loads sqlglot (~0.2 s); `import core` (sensors, DAG parsing) must not
        from airflow_provider_delta.core.expressions import bind_filter, file_may_match, referenced_columns

        predicate = bind_filter(filter, logical_arrow)
        needed |= {path[0] for path in referenced_columns(predicate)}
    part_names = {c.lower() for c in snapshot.partition_columns}
    partition_fields = tuple(f for f in schema if f.name.lower() in part_names)
    data_fields = tuple(f for f in schema if f.name.lower() not in part_names and f.name in needed)
    files = snapshot.files()
    kept: list[AddFile] = files
    if predicate is not None:
        kept = []
        for add in files:
            pv = _partition_values(add, partition_fields, mode)
            stats = orjson.loads(add.stats) if add.stats else None
            if stats is not None and mode != "none":
                stats = _logical_stats(stats, schema)
            if file_may_match(predicate, partition_values=pv, stats=stats):
                kept.append(add)
    return ScanPlan(
        files=tuple(kept),
        data_schema=StructType(data_fields),
        partition_fields=tuple(f for f in partition_fields if f.name in needed),
        output_schema=logical_arrow,
        columns=selected,
        predicate=predicate,
        skipped_files=len(files) - len(kept),
    )


def raw_partition_value(
    values: Mapping[str, str | None], field: StructField, mode: ColumnMappingMode
) -> str | None:
    """A file's serialized value for partition column ``field`` (keyed by physical name under mapping)."""
    key = physical_name(field) if mode != "none" else field.name
    raw = values.get(key)
    if raw is None and key not in values:
        # Some writers differ in case between the schema and partitionValues.
        raw = {k.lower(): v for k, v in values.items()}.get(key.lower())
    return raw


def decoded_partition_values(
    values: Mapping[str, str | None], partition_fields: Sequence[StructField], mode: ColumnMappingMode
) -> dict[str, Any]:
    """A file's partition values decoded to Python values, keyed by logical column name."""
    return {
        f.name: decode_partition_value(raw_partition_value(values, f, mode), to_arrow_type(f.type), column=f.name)
        for f in partition_fields
    }


def _partition_values(
    add: AddFile, partition_fields: Sequence[StructField], mode: ColumnMappingMode
) -> dict[str, Any]:
    return decoded_partition_values(add.partition_values, partition_fields, mode)


def _file_columns(pf: pq.ParquetFile, data_schema: StructType, mode: ColumnMappingMode) -> list[str]:
    """Top-level columns of the file that feed ``data_schema`` (by field id, physical or logical name)."""
    file_schema = pf.schema_arrow
    by_name = {n: n for n in file_schema.names}
    by_lower = {n.lower(): n for n in file_schema.names}
    by_id: dict[int, str] = {}
    if mode == "id":
        for fld in file_schema:
            fid = (fld.metadata or {}).get(b"PARQUET:field_id")
            if fid is not None:
                by_id[int(fid)] = fld.name
    wanted: list[str] = []
    for f in data_schema:
        candidates: list[str | None] = []
        if mode == "id":
            fid = f.metadata.get("delta.columnMapping.id")
            candidates.append(by_id.get(int(fid)) if fid is not None else None)
        name = physical_name(f) if mode != "none" else f.name
        candidates += [by_name.get(name), by_lower.get(name.lower())]
        found = next((c for c in candidates if c is not None), None)
        if found is not None and found not in wanted:
            wanted.append(found)
    return wanted


def read_file(snapshot: TableLayout, add: AddFile, plan: ScanPlan, mode: ColumnMappingMode) -> pa.Table:
    """The live rows of one file as ``plan`` reads them: its data columns, then its partition columns.

    Raises:
        DataFileError: the file (or its deletion vector or partition values) is missing, outside the
            table, or unreadable; the message names the table, the version and the file.
    """
    with reading(snapshot.location, snapshot.version, add.path, what="data file", error=_data_file_error):
        return _read_file(snapshot, add, plan, mode)


def _data_file_error(message: str, version: int | None, path: str | None) -> DataFileError:
    return DataFileError(message, path=path)


def _read_file(snapshot: TableLayout, add: AddFile, plan: ScanPlan, mode: ColumnMappingMode) -> pa.Table:
    storage = snapshot.storage
    try:
        # add.size spares a request on object stores (small files are then one GET).
        with storage.open_input_file(add.path, size=add.size or None) as source:
            # INT96 timestamps as microseconds: the nanosecond default overflows outside 1677-2262.
            pf = pq.ParquetFile(source, coerce_int96_timestamp_unit="us")
            # On a pool thread the files are already read in parallel: decoding one file's columns on
            # pyarrow's threads as well only adds hand-offs (about 3x slower on small files).
            columns = _file_columns(pf, plan.data_schema, mode)
            table = pf.read(columns=columns, use_threads=not in_pool_thread()) if len(plan.data_schema) else None
            num_rows = pf.metadata.num_rows
    except FileNotFoundError:
        raise DataFileError(
            f"Cannot read data file {add.path!r} of version {snapshot.version}: it does not exist "
            "(vacuumed or never written)",
            path=add.path,
        ) from None
    except (OSError, pa.ArrowException) as err:
        raise DataFileError(
            f"Cannot read data file {add.path!r} of version {snapshot.version}: {err}", path=add.path
        ) from err
    if table is not None:
        table = conform_table(table, plan.data_schema, mode=mode)
    else:
        table = pa.table({"__rows": pa.nulls(num_rows)})
    if add.deletion_vector:
        descriptor = DeletionVectorDescriptor.from_dict(add.deletion_vector)
        deleted = read_deleted_rows(descriptor, storage.root, open_file=deletion_vector_opener(storage))
        table = table.filter(deletion_mask(deleted, table.num_rows))
    return _with_partitions(table, add, plan, mode)


def _with_partitions(table: pa.Table, add: AddFile, plan: ScanPlan, mode: ColumnMappingMode) -> pa.Table:
    if not plan.partition_fields and "__rows" not in table.column_names:
        return table
    n = table.num_rows
    columns: dict[str, pa.Array] = {}
    for f in plan.partition_fields:
        value = raw_partition_value(add.partition_values, f, mode)
        columns[f.name] = partition_column(value, to_arrow_type(f.type), n)
    for name in table.column_names:
        if name != "__rows":
            columns[name] = table.column(name)
    return pa.table(columns) if columns else pa.table({"__rows": pa.nulls(n)})


def scan_to_arrow(snapshot: Snapshot, *, columns: Sequence[str] | None = None, filter: Any = None) -> pa.Table:  # noqa: A002
    """Read the snapshot's rows (see the module docstring)."""
    plan = plan_scan(snapshot, columns=columns, filter=filter)
    mode = column_mapping_mode(snapshot.configuration)
    read_schema = plan.read_schema
    parts = run_parallel(lambda a: read_file(snapshot, a, plan, mode), plan.files)
    if not read_schema.names:
        return _empty_rows(sum(part.num_rows for part in parts))
    tables = [as_schema(part.select(read_schema.names), read_schema) for part in parts]
    table = pa.concat_tables(tables) if tables else read_schema.empty_table()
    return plan.filter_rows(table).select(list(plan.columns))


def read_add_file(snapshot: TableLayout, add: AddFile) -> pa.Table:
    """Every live row of one data file: all logical columns (partitions included), DV applied."""
    return add_file_reader(snapshot)(add)


def add_file_reader(snapshot: TableLayout, columns: Sequence[str] | None = None) -> Callable[[AddFile], pa.Table]:
    """:func:`read_add_file` for many files of one table: the plan and schemas are built once.

    ``columns``: only these columns (logical names, any case; in schema order; names the table does
    not have are left out); None: all of them.
    """
    schema = snapshot.schema
    if columns is not None:
        wanted = {c.lower() for c in columns}
        schema = StructType(tuple(f for f in schema if f.name.lower() in wanted))
    part_names = {c.lower() for c in snapshot.partition_columns}
    plan = ScanPlan(
        files=(),
        data_schema=StructType(tuple(f for f in schema if f.name.lower() not in part_names)),
        partition_fields=tuple(f for f in schema if f.name.lower() in part_names),
        output_schema=to_arrow_schema(schema),
        columns=schema.names,
        predicate=None,
        skipped_files=0,
    )
    mode = column_mapping_mode(snapshot.configuration)
    names = list(plan.output_schema.names)

    def read(add: AddFile) -> pa.Table:
        return as_schema(read_file(snapshot, add, plan, mode).select(names), plan.output_schema)

    return read


def _empty_rows(n: int) -> pa.Table:
    """A table of ``n`` rows and no columns (``SELECT`` of nothing keeps the row count)."""
    return pa.Table.from_batches([pa.RecordBatch.from_pydict({"_": pa.nulls(n)}).drop_columns(["_"])])


__all__ = ["ScanPlan", "add_file_reader", "plan_scan", "read_add_file", "read_file", "scan_to_arrow"]

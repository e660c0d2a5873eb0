"""Units of export work: read some change files, shape the rows, write one output file.

A unit is the smallest piece an engine hands to a worker: with the flat envelope one change or data
file of a commit (so output file ``part-<seq>`` of a version comes from the commit's ``seq``-th file,
in the order ``DeltaTable.changes()`` returns them); with the Debezium envelope every file of a commit
(pre- and post-images are paired across files). Units and :class:`UnitJob` are picklable and
JSON-able, so the local engine runs them on the thread pool and the Spark job on executors: both
write the same bytes to the same names.

Example:
    >>> write_unit(job, unit)  # doctest: +SKIP
    {'version': 3, 'seq': 0, 'path': '_commit_version=3/part-00000.parquet', 'rows': 12, 'bytes': 901, ...}
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_provider_delta.core.change_data import CHANGE_TYPE
from airflow_provider_delta.core.executor.export.envelope import debezium_schema, to_debezium
from airflow_provider_delta.core.read.changes import ChangeFileRead, changes_schema, read_change_file
from airflow_provider_delta.core.schema.arrow import to_arrow_schema

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_delta.core.actions import AddFile
    from airflow_provider_delta.core.storage import Storage
    from airflow_provider_delta.core.write.target import WriteTarget

__all__ = [
    "DeltaOutput",
    "Envelope",
    "ExportFormat",
    "ExportUnit",
    "UnitJob",
    "data_file_path",
    "output_schema",
    "unit_rows",
    "write_unit",
]

ExportFormat = Literal["parquet", "delta", "jsonl"]
Envelope = Literal["flat", "debezium"]

EXTENSIONS = {"parquet": "parquet", "jsonl": "jsonl"}


def data_file_path(version: int, seq: int, fmt: str) -> str:
    """Where output file ``seq`` of source version ``version`` goes, relative to the sink's root.

    Example:
        >>> data_file_path(12, 3, "parquet")
        '_commit_version=12/part-00003.parquet'
    """
    return f"_commit_version={version}/part-{seq:05d}.{EXTENSIONS[fmt]}"


def output_schema(layout: WriteTarget, envelope: Envelope) -> pa.Schema:
    """The Arrow schema of the rows an export of ``layout``'s schema writes (no field metadata)."""
    if envelope == "debezium":
        return debezium_schema(to_arrow_schema(layout.schema)).remove_metadata()
    return _without_metadata(changes_schema(layout.schema))


def _without_metadata(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type, f.nullable) for f in schema])


class DeltaOutput:
    """What an exporter's ``write_delta`` wrote: the ``add`` actions and the rows per change type."""

    def __init__(self) -> None:
        self.adds: list[AddFile] = []
        self.rows = 0
        self.counts: dict[str, int] = {}

    def count(self, counts: dict[str, Any]) -> None:
        """Add one unit's rows per change type."""
        for k, n in counts.items():
            self.counts[k] = self.counts.get(k, 0) + int(n)
            self.rows += int(n)


@dataclass(frozen=True)
class ExportUnit:
    """Files of one source version that become one output file.

    Attributes:
        version: the source version.
        seq: the output file's number within the version.
        reads: the change files to read.
        snapshot: the rows are the initial snapshot (Debezium ``op = 'r'``).
    """

    version: int
    seq: int
    reads: tuple[ChangeFileRead, ...]
    snapshot: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"version": self.version, "seq": self.seq, "snapshot": self.snapshot,
                "reads": [r.to_dict() for r in self.reads]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ExportUnit:
        """Build from :meth:`to_dict`'s output."""
        reads = tuple(ChangeFileRead.from_dict(r) for r in d["reads"])
        return cls(int(d["version"]), int(d["seq"]), reads, bool(d.get("snapshot")))


@dataclass(frozen=True)
class UnitJob:
    """What every unit of one segment shares (picklable: it travels to Spark executors).

    Attributes:
        layout: the source table as the segment's versions are read (schema in force over them).
        envelope: ``flat`` or ``debezium``.
        key_columns: Debezium's pairing keys.
        source: ``name``, ``table`` and ``table_id`` for Debezium's ``source``.
        format: the output format of file sinks (``parquet`` or ``jsonl``).
        sink: the file sink's storage (None for a Delta sink).
    """

    layout: WriteTarget
    envelope: Envelope
    key_columns: tuple[str, ...]
    source: Mapping[str, str]
    format: ExportFormat = "parquet"
    sink: Storage | None = None

    @property
    def schema(self) -> pa.Schema:
        """The output rows' schema."""
        return output_schema(self.layout, self.envelope)


def unit_rows(job: UnitJob, unit: ExportUnit) -> pa.Table:
    """The output rows of a unit, in ``job.schema``."""
    parts = [read_change_file(job.layout, r) for r in unit.reads]
    rows = pa.concat_tables(parts) if parts else changes_schema(job.layout.schema).empty_table()
    if unit.snapshot:
        rows = rows.set_column(rows.schema.get_field_index(CHANGE_TYPE), CHANGE_TYPE,
                               pa.array(["insert"] * rows.num_rows, pa.string()))
    if job.envelope == "debezium":
        return to_debezium(rows, job.key_columns, job.source, snapshot=unit.snapshot, schema=job.schema)
    return rows.cast(job.schema)


def row_counts(rows: pa.Table) -> dict[str, int]:
    """Rows per change type (``_change_type``, or Debezium's ``op``)."""
    column = "op" if "op" in rows.column_names and "after" in rows.column_names else CHANGE_TYPE
    if not rows.num_rows:
        return {}
    counts = pc.value_counts(rows.column(column).combine_chunks())
    return {str(v["values"]): int(v["counts"]) for v in counts.to_pylist()}


def write_unit(job: UnitJob, unit: ExportUnit) -> dict[str, Any]:
    """Write a unit's output file to the file sink; describe it (``path`` None when it had no row)."""
    assert job.sink is not None
    rows = unit_rows(job, unit)
    record: dict[str, Any] = {"version": unit.version, "seq": unit.seq, "path": None, "rows": rows.num_rows,
                              "bytes": 0, "counts": row_counts(rows)}
    if not rows.num_rows:
        return record
    # Parquet: the partition column lives in the path only, as Hive, Spark and pyarrow datasets expect.
    data = encode_parquet(rows.drop_columns(["_commit_version"])) if job.format == "parquet" else encode_jsonl(rows)
    path = data_file_path(unit.version, unit.seq, job.format)
    job.sink.write(path, data)
    record.update(path=path, bytes=len(data))
    return record


def encode_parquet(rows: pa.Table) -> bytes:
    """The rows as Parquet bytes; the same rows give the same bytes (no time or random id inside)."""
    sink = pa.BufferOutputStream()
    pq.write_table(rows, sink, compression="snappy", row_group_size=1 << 20)
    return bytes(sink.getvalue())


def _json_default(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    raise TypeError(f"Cannot write {type(value).__name__} as JSON")


def _jsonable(value: Any, type_: pa.DataType) -> Any:
    """Maps become objects (as Spark's ``to_json`` writes them); the rest is orjson's."""
    if value is None:
        return None
    if pa.types.is_map(type_):
        return {str(k): _jsonable(v, type_.item_type) for k, v in value}
    if pa.types.is_struct(type_):
        return {f.name: _jsonable(value.get(f.name), f.type) for f in type_}
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return [_jsonable(v, type_.value_type) for v in value]
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc)
    return value


def _needs_conversion(type_: pa.DataType) -> bool:
    return pa.types.is_map(type_) or pa.types.is_nested(type_)


def encode_jsonl(rows: pa.Table) -> bytes:
    """The rows as JSON Lines: ISO-8601 UTC timestamps (``Z``), decimals as strings, binary as base64."""
    converted = [n for n in rows.column_names if _needs_conversion(rows.schema.field(n).type)]
    options = orjson.OPT_UTC_Z | orjson.OPT_APPEND_NEWLINE
    lines: list[bytes] = []
    for batch in rows.to_batches(max_chunksize=65536):
        for record in batch.to_pylist():
            for name in converted:
                record[name] = _jsonable(record[name], rows.schema.field(name).type)
            lines.append(orjson.dumps(record, default=_json_default, option=options))
    return b"".join(lines)


def units_of(version: int, reads: Sequence[ChangeFileRead], *, envelope: Envelope, snapshot: bool) -> list[ExportUnit]:
    """The units of one version: one per file (flat, snapshot), or one for the whole commit (Debezium)."""
    if not reads:
        return []
    if envelope == "debezium" and not snapshot:
        return [ExportUnit(version, 0, tuple(reads), snapshot)]
    return [ExportUnit(version, seq, (r,), snapshot) for seq, r in enumerate(reads)]

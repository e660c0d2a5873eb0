"""Write classic single-file checkpoints and ``_last_checkpoint``.

PROTOCOL.md "Checkpoints": a checkpoint holds the reconciled state of one version -- protocol,
metaData, every txn, the live domainMetadata, every active file (``add``), and the ``remove``
tombstones that have not yet expired -- one action per row, each action type in its own struct
column ("Checkpoint Schema"). The column types are the ones Delta Lake on Spark writes, so Spark,
delta-rs / delta-kernel and this engine all read the file.

Arrow arrays are built column by column from Python lists (one ``pa.array`` per field, never one
per row), which keeps a 100,000-file checkpoint well under a second.

Example:
    >>> from airflow_provider_delta.core.snapshot import load_snapshot   # doctest: +SKIP
    >>> info = write_checkpoint(load_snapshot(storage, "/data/events"))  # doctest: +SKIP
    >>> info.path, info.num_add_files                                     # doctest: +SKIP
    ('_delta_log/00000000000000000042.checkpoint.parquet', 1234)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_delta.core.log.paths import LAST_CHECKPOINT, checkpoint_path
from airflow_provider_delta.core.log.segment import read_last_checkpoint
from airflow_provider_delta.core.properties import InvalidPropertyError, parse_interval
from airflow_provider_delta.exceptions import DeltaError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_delta.core.actions import AddFile, RemoveFile, SetTransaction
    from airflow_provider_delta.core.snapshot import Snapshot
    from airflow_provider_delta.core.storage import Storage

__all__ = [
    "DEFAULT_CHECKPOINT_INTERVAL",
    "DEFAULT_TOMBSTONE_RETENTION",
    "CheckpointInfo",
    "build_checkpoint_table",
    "retention_property",
    "should_checkpoint",
    "write_checkpoint",
]

DEFAULT_CHECKPOINT_INTERVAL = 10
DEFAULT_TOMBSTONE_RETENTION = timedelta(weeks=1)

# The types Delta Lake on Spark writes (its checkpointSchema in _last_checkpoint). Every field is
# nullable, map keys are not; int32 where Spark uses Int (protocol versions, DV offset and size).
_STR = pa.string()
_I32 = pa.int32()
_I64 = pa.int64()
_BOOL = pa.bool_()
_MAP = pa.map_(_STR, _STR)
_LIST = pa.list_(_STR)

_DV = pa.struct(
    [
        ("storageType", _STR),
        ("pathOrInlineDv", _STR),
        ("offset", _I32),
        ("sizeInBytes", _I32),
        ("cardinality", _I64),
        ("maxRowIndex", _I64),
    ]
)
_ADD_FIELDS: list[tuple[str, pa.DataType]] = [
    ("path", _STR),
    ("partitionValues", _MAP),
    ("size", _I64),
    ("modificationTime", _I64),
    ("dataChange", _BOOL),
    ("tags", _MAP),
    ("deletionVector", _DV),
    ("baseRowId", _I64),
    ("defaultRowCommitVersion", _I64),
    ("stats", _STR),
]
# PROTOCOL.md "Checkpoint Schema": tombstones are only for VACUUM and carry no stats or tags.
_REMOVE = pa.struct(
    [
        ("path", _STR),
        ("deletionTimestamp", _I64),
        ("dataChange", _BOOL),
        ("extendedFileMetadata", _BOOL),
        ("partitionValues", _MAP),
        ("size", _I64),
        ("deletionVector", _DV),
        ("baseRowId", _I64),
        ("defaultRowCommitVersion", _I64),
    ]
)
_TXN = pa.struct([("appId", _STR), ("version", _I64), ("lastUpdated", _I64)])
_METADATA = pa.struct(
    [
        ("id", _STR),
        ("name", _STR),
        ("description", _STR),
        ("format", pa.struct([("provider", _STR), ("options", _MAP)])),
        ("schemaString", _STR),
        ("partitionColumns", _LIST),
        ("configuration", _MAP),
        ("createdTime", _I64),
    ]
)
_PROTOCOL = pa.struct(
    [
        ("minReaderVersion", _I32),
        ("minWriterVersion", _I32),
        ("readerFeatures", _LIST),
        ("writerFeatures", _LIST),
    ]
)
_DOMAIN = pa.struct([("domain", _STR), ("configuration", _STR), ("removed", _BOOL)])
_CHECKPOINT_METADATA = pa.struct([("version", _I64), ("tags", _MAP)])


@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """What :func:`write_checkpoint` wrote.

    Attributes:
        version: the table version the checkpoint holds.
        size: how many action rows it has (``size`` in ``_last_checkpoint``).
        size_in_bytes: the parquet file's size.
        num_add_files: how many ``add`` rows (active files) it has.
        path: the checkpoint's path relative to the table root.
    """

    version: int
    size: int
    size_in_bytes: int
    num_add_files: int
    path: str


def retention_property(configuration: Mapping[str, str], key: str, default: timedelta) -> timedelta:
    """A ``delta.*Duration`` table property as a timedelta (``default`` when unset).

    Raises:
        InvalidPropertyError: the value is not an interval such as ``interval 7 days``.
    """
    text = configuration.get(key)
    if text is None or not text.strip():
        return default
    try:
        return parse_interval(text)
    except ValueError as err:
        raise InvalidPropertyError(
            f"Cannot read table property {key!r}: {text!r} is not an interval "
            f"(expected e.g. 'interval 7 days', 'interval 1 week', '168 hours') ({err})",
            key=key,
        ) from None


def should_checkpoint(version: int, configuration: Mapping[str, str]) -> bool:
    """Whether a commit at ``version`` should be followed by a checkpoint.

    True every ``delta.checkpointInterval`` versions (default 10), never for version 0.

    Example:
        >>> should_checkpoint(20, {}), should_checkpoint(5, {"delta.checkpointInterval": "5"})
        (True, True)
    """
    raw = configuration.get("delta.checkpointInterval")
    try:
        interval = int(raw) if raw is not None else DEFAULT_CHECKPOINT_INTERVAL
    except ValueError:
        interval = DEFAULT_CHECKPOINT_INTERVAL
    if interval < 1:
        interval = DEFAULT_CHECKPOINT_INTERVAL
    return version > 0 and version % interval == 0


def _now_ms(now_ms: int | None) -> int:
    return int(time.time() * 1000) if now_ms is None else now_ms


def _column(values: Sequence[Any] | pa.Array, typ: pa.DataType) -> pa.Array:
    """One field of an action column, converted in one call (maps from dicts, structs from dicts)."""
    if isinstance(values, pa.Array):
        return values
    try:
        return pa.array(values, type=typ)
    except pa.ArrowTypeError:
        if not (pa.types.is_map(typ) or pa.types.is_struct(typ)):
            raise
        # pyarrow converts only real dicts to maps and structs; other Mappings go through dict().
        return pa.array([dict(v) if v is not None else None for v in values], type=typ)


def _adds_array(adds: Sequence[AddFile]) -> pa.StructArray:
    # Checkpointed adds are not data changes (Spark and delta-rs write dataChange=false).
    columns: dict[str, Sequence[Any] | pa.Array] = {
        "path": [a.path for a in adds],
        "partitionValues": [a.partition_values for a in adds],
        "size": [a.size for a in adds],
        "modificationTime": [a.modification_time for a in adds],
        "dataChange": pa.repeat(False, len(adds)),
        "tags": [a.tags for a in adds],
        "deletionVector": [a.deletion_vector for a in adds],
        "baseRowId": [a.base_row_id for a in adds],
        "defaultRowCommitVersion": [a.default_row_commit_version for a in adds],
        "stats": [a.stats for a in adds],
    }
    fields = list(_ADD_FIELDS)
    clustering = [a.clustering_provider for a in adds]
    if any(c is not None for c in clustering):
        fields.append(("clusteringProvider", _STR))
        columns["clusteringProvider"] = clustering
    arrays = [_column(columns[name], typ) for name, typ in fields]
    return pa.StructArray.from_arrays(arrays, fields=[pa.field(n, t) for n, t in fields])


def _removes_array(removes: Sequence[RemoveFile]) -> pa.StructArray:
    columns: dict[str, Sequence[Any] | pa.Array] = {
        "path": [r.path for r in removes],
        "deletionTimestamp": [r.deletion_timestamp for r in removes],
        "dataChange": pa.repeat(False, len(removes)),
        "extendedFileMetadata": [r.extended_file_metadata for r in removes],
        "partitionValues": [r.partition_values for r in removes],
        "size": [r.size for r in removes],
        "deletionVector": [r.deletion_vector for r in removes],
        "baseRowId": [r.base_row_id for r in removes],
        "defaultRowCommitVersion": [r.default_row_commit_version for r in removes],
    }
    arrays = [_column(columns[f.name], f.type) for f in _REMOVE]
    return pa.StructArray.from_arrays(arrays, fields=list(_REMOVE))


def _live_tombstones(snapshot: Snapshot, now_ms: int) -> list[RemoveFile]:
    # PROTOCOL.md "Add File and Remove File": tombstones expire after deletedFileRetentionDuration;
    # a remove without a deletionTimestamp counts as expired (Spark reads it as 0).
    retention = retention_property(
        snapshot.configuration, "delta.deletedFileRetentionDuration", DEFAULT_TOMBSTONE_RETENTION
    )
    floor = now_ms - int(retention.total_seconds() * 1000)
    return [r for r in snapshot.tombstones() if (r.deletion_timestamp or 0) > floor]


def _live_transactions(snapshot: Snapshot, now_ms: int) -> list[SetTransaction]:
    # PROTOCOL.md "Transaction Identifiers": with delta.setTransactionRetentionDuration set, txns
    # whose lastUpdated is older than the retention may be dropped; without it they are all kept.
    txns = list(snapshot.transactions.values())
    if not snapshot.configuration.get("delta.setTransactionRetentionDuration", "").strip():
        return txns
    key = "delta.setTransactionRetentionDuration"
    retention = retention_property(snapshot.configuration, key, timedelta())
    floor = now_ms - int(retention.total_seconds() * 1000)
    return [t for t in txns if t.last_updated is None or t.last_updated > floor]


def _small_columns(snapshot: Snapshot, now_ms: int) -> list[tuple[str, pa.Array]]:
    """The single-row and few-row actions: protocol, metaData, txn, domainMetadata (live ones)."""
    protocol = snapshot.protocol
    proto_row = {
        "minReaderVersion": protocol.min_reader_version,
        "minWriterVersion": protocol.min_writer_version,
        "readerFeatures": sorted(protocol.reader_features) if protocol.reader_features is not None else None,
        "writerFeatures": sorted(protocol.writer_features) if protocol.writer_features is not None else None,
    }
    out: list[tuple[str, pa.Array]] = [
        ("protocol", pa.array([proto_row], type=_PROTOCOL)),
        ("metaData", pa.array([snapshot.metadata.to_dict()], type=_METADATA)),
    ]
    txns = [t.to_dict() for t in _live_transactions(snapshot, now_ms)]
    if txns:
        out.append(("txn", pa.array(txns, type=_TXN)))
    domains = [d.to_dict() for d in snapshot.domain_metadata.values() if not d.removed]
    if domains:
        out.append(("domainMetadata", pa.array(domains, type=_DOMAIN)))
    if protocol.writer_features is not None and "v2Checkpoint" in protocol.writer_features:
        # PROTOCOL.md "V2 Checkpoint Table Feature": a classic checkpoint of such a table follows the
        # V2 spec and must carry a checkpointMetadata action.
        row = {"version": snapshot.version}
        out.append(("checkpointMetadata", pa.array([row], type=_CHECKPOINT_METADATA)))
    return out


def build_checkpoint_table(snapshot: Snapshot, *, now_ms: int | None = None) -> pa.Table:
    """The checkpoint of ``snapshot`` as an Arrow table: one row per action, one struct column per type.

    Args:
        snapshot: the state to checkpoint.
        now_ms: the clock (ms since the epoch) that decides which tombstones have expired.

    Returns:
        A table with columns ``txn``, ``add``, ``remove``, ``metaData``, ``protocol``,
        ``domainMetadata`` (and ``checkpointMetadata`` for V2-checkpoint tables).
    """
    now = _now_ms(now_ms)
    adds = _adds_array(snapshot.files())
    removes = _removes_array(_live_tombstones(snapshot, now))
    parts = [*_small_columns(snapshot, now), ("add", adds), ("remove", removes)]
    # Spark's column order; readers match columns by name.
    types = {
        "txn": _TXN,
        "add": adds.type,
        "remove": _REMOVE,
        "metaData": _METADATA,
        "protocol": _PROTOCOL,
        "domainMetadata": _DOMAIN,
    }
    if any(name == "checkpointMetadata" for name, _ in parts):
        types["checkpointMetadata"] = _CHECKPOINT_METADATA
    schema = pa.schema([pa.field(name, typ) for name, typ in types.items()])
    # Each action type is one record batch whose other columns are all null.
    batches = [
        pa.RecordBatch.from_arrays(
            [array if name == column else pa.nulls(len(array), typ) for column, typ in types.items()],
            schema=schema,
        )
        for name, array in parts
        if len(array)
    ]
    return pa.Table.from_batches(batches, schema=schema)


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    # Dictionary encoding only pays for the few repetitive string columns; stats and paths are unique.
    dictionary = ["add.partitionValues.key_value.key", "add.partitionValues.key_value.value"]
    pq.write_table(table, sink, compression="snappy", use_dictionary=dictionary, write_statistics=False)
    return bytes(sink.getvalue())


def _write_last_checkpoint(storage: Storage, info: CheckpointInfo) -> None:
    hint = read_last_checkpoint(storage)
    if hint is not None and int(hint["version"]) > info.version:
        return  # never point readers back to an older checkpoint
    body = {
        "version": info.version,
        "size": info.size,
        "sizeInBytes": info.size_in_bytes,
        "numOfAddFiles": info.num_add_files,
    }
    storage.write(LAST_CHECKPOINT, orjson.dumps(body))


def write_checkpoint(snapshot: Snapshot, *, now_ms: int | None = None) -> CheckpointInfo:
    """Write ``_delta_log/<version>.checkpoint.parquet`` for ``snapshot`` and update ``_last_checkpoint``.

    The parquet file is serialised in memory and handed to ``Storage.write``, which replaces the
    target atomically (temporary file then rename on a local file system; a single PUT on object
    stores), so a crash never leaves a truncated checkpoint under the final name.
    ``_last_checkpoint`` is only moved forward, never back to an older version.

    Args:
        snapshot: the table state to checkpoint (its version names the file).
        now_ms: the clock (ms since the epoch) for tombstone and txn expiry; defaults to now.

    Returns:
        What was written.

    Raises:
        InvalidPropertyError: a retention property of the table is not an interval.
        DeltaError: the checkpoint could not be serialised.
        OSError: the storage refused the write.

    Example:
        >>> info = write_checkpoint(load_snapshot(storage, "/data/t"))  # doctest: +SKIP
        >>> info.version, info.size                                     # doctest: +SKIP
        (40, 1207)
    """
    table = build_checkpoint_table(snapshot, now_ms=now_ms)
    try:
        data = _parquet_bytes(table)
    except (pa.ArrowException, ValueError) as err:
        raise DeltaError(
            f"Cannot write checkpoint of table {snapshot.location!r} at version {snapshot.version}: {err}"
        ) from err
    path = checkpoint_path(snapshot.version)
    snapshot.storage.write(path, data)
    num_adds = snapshot.num_files
    info = CheckpointInfo(snapshot.version, table.num_rows, len(data), num_adds, path)
    _write_last_checkpoint(snapshot.storage, info)
    return info

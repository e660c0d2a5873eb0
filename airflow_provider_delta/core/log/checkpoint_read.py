"""Read checkpoints: classic single-file, multi-part, and V2 (JSON or parquet, with sidecars).

Parquet checkpoints are converted column by column (one ``to_pylist`` per field, not per row), which
is what keeps a 100,000-file checkpoint cheap to load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_provider_delta.core.actions import (
    AddFile,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    Sidecar,
)
from airflow_provider_delta.core.log.paths import SIDECAR_DIR
from airflow_provider_delta.exceptions import LogCorruptedError

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from airflow_provider_delta.core.log.replay import ReplayState
    from airflow_provider_delta.core.log.segment import CheckpointRef
    from airflow_provider_delta.core.storage import Storage

_ACTION_COLUMNS = ("add", "remove", "metaData", "protocol", "txn", "domainMetadata", "sidecar")
_ADD_FIELDS = {
    "path": "path",
    "partitionValues": "partition_values",
    "size": "size",
    "modificationTime": "modification_time",
    "dataChange": "data_change",
    "stats": "stats",
    "tags": "tags",
    "deletionVector": "deletion_vector",
    "baseRowId": "base_row_id",
    "defaultRowCommitVersion": "default_row_commit_version",
    "clusteringProvider": "clustering_provider",
}
_REMOVE_FIELDS = {
    "path": "path",
    "deletionTimestamp": "deletion_timestamp",
    "dataChange": "data_change",
    "extendedFileMetadata": "extended_file_metadata",
    "partitionValues": "partition_values",
    "size": "size",
    "stats": "stats",
    "tags": "tags",
    "deletionVector": "deletion_vector",
    "baseRowId": "base_row_id",
    "defaultRowCommitVersion": "default_row_commit_version",
}


def _map_values(arr: pa.MapArray) -> list[Any]:
    """A map column as dicts, built from its flattened keys and items; equal maps share one dict."""
    keys = arr.keys.to_pylist()
    items = arr.items.to_pylist()
    offsets = arr.offsets.to_pylist()
    valid = arr.is_valid().to_pylist() if arr.null_count else None
    interned: dict[tuple[Any, ...], dict[Any, Any]] = {}
    out: list[Any] = []
    for i in range(len(arr)):
        if valid is not None and not valid[i]:
            out.append(None)
            continue
        lo, hi = offsets[i], offsets[i + 1]
        pairs = tuple(zip(keys[lo:hi], items[lo:hi], strict=True))
        d = interned.get(pairs)
        if d is None:
            d = interned[pairs] = dict(pairs)
        out.append(d)
    return out


def _column_values(arr: pa.Array | None, length: int) -> list[Any]:
    if arr is None or arr.null_count == length:
        return [None] * length
    if pa.types.is_map(arr.type):
        return _map_values(arr)
    return arr.to_pylist()


def _struct_columns(column: pa.ChunkedArray, fields: tuple[str, ...]) -> list[list[Any]]:
    """The non-null rows of a struct column, one Python list per wanted field (in ``fields`` order)."""
    arr = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if arr.null_count:
        arr = arr.filter(pc.is_valid(arr))
    n = len(arr)
    if n == 0:
        return [[] for _ in fields]
    present = {f.name for f in arr.type}
    flat = {name: arr.field(name) for name in fields if name in present}
    return [_column_values(flat.get(name), n) for name in fields]


_ADD_ORDER = tuple(_ADD_FIELDS)
_WANTED_SUBFIELDS = {"add": tuple(_ADD_FIELDS), "remove": tuple(_REMOVE_FIELDS)}
_REMOVE_ORDER = tuple(_REMOVE_FIELDS)


def _adds_from_column(column: pa.ChunkedArray) -> list[AddFile]:
    cols = _struct_columns(column, _ADD_ORDER)
    # Positional order of AddFile's fields equals _ADD_FIELDS' order.
    pv, size, mtime, dc = cols[1], cols[2], cols[3], cols[4]
    empty: dict[str, str | None] = {}
    cols[1] = [v if v is not None else empty for v in pv]
    cols[2] = [v or 0 for v in size]
    cols[3] = [v or 0 for v in mtime]
    cols[4] = [bool(v) for v in dc]
    return list(map(AddFile, *cols))


def _removes_from_column(column: pa.ChunkedArray) -> list[RemoveFile]:
    cols = _struct_columns(column, _REMOVE_ORDER)
    cols[2] = [bool(v) for v in cols[2]]
    return list(map(RemoveFile, *cols))


def _to_json_like(value: Any) -> Any:
    """Parquet rows use lists of (key, value) pairs for maps; the actions expect dicts."""
    if isinstance(value, dict):
        return {k: _to_json_like(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return {k: _to_json_like(v) for k, v in value}
    return value


def _read_parquet(storage: Storage, relative_path: str, columns: Iterable[str]) -> Iterator[pa.Table]:
    """The wanted columns of a checkpoint file, one row group at a time (keeps peak memory low)."""
    path = storage.resolve(relative_path)
    try:
        pf = pq.ParquetFile(path, filesystem=storage.arrow_filesystem())
    except FileNotFoundError:
        raise LogCorruptedError(f"Cannot read checkpoint file {relative_path!r}: it does not exist",
                                path=relative_path) from None
    except (OSError, pa.ArrowInvalid) as err:
        raise LogCorruptedError(f"Cannot read checkpoint file {relative_path!r}: {err}",
                                path=relative_path) from err
    schema = pf.schema_arrow
    wanted: list[str] = []
    for name in columns:
        if name not in schema.names:
            continue
        subfields = _WANTED_SUBFIELDS.get(name)
        typ = schema.field(name).type
        if subfields is None or not pa.types.is_struct(typ):
            wanted.append(name)
            continue
        # Skip what replay never uses (stats_parsed, partitionValues_parsed): often most of the bytes.
        present = {f.name for f in typ}
        wanted += [f"{name}.{sub}" for sub in subfields if sub in present]
    pool = pa.default_memory_pool()
    for batch in pf.iter_batches(batch_size=16384, columns=wanted):
        yield pa.Table.from_batches([batch])
        del batch
        # Hand decoded pages back now: the allocator would otherwise keep them as the peak grows.
        pool.release_unused()


def _apply_parquet(state: ReplayState, table: pa.Table, version: int) -> list[Sidecar]:
    names = set(table.column_names)
    for single in ("protocol", "metaData", "txn", "domainMetadata"):
        if single not in names:
            continue
        col = table.column(single)
        for row in col.filter(pc.is_valid(col)).to_pylist():
            action = _to_json_like(row)
            if single == "protocol":
                state.protocol = Protocol.from_dict(action)
            elif single == "metaData":
                state.metadata = Metadata.from_dict(action)
            elif single == "txn":
                txn = SetTransaction.from_dict(action)
                state.txns[txn.app_id] = txn
            else:
                dm = DomainMetadata.from_dict(action)
                state.set_domain(dm)
    if "add" in names:
        state.add_files(_adds_from_column(table.column("add")))
    if "remove" in names:
        state.add_tombstones(_removes_from_column(table.column("remove")))
    sidecars: list[Sidecar] = []
    if "sidecar" in names:
        col = table.column("sidecar")
        sidecars = [Sidecar.from_dict(r) for r in col.filter(pc.is_valid(col)).to_pylist()]
    del version
    return sidecars


def _apply_json_checkpoint(state: ReplayState, data: bytes, path: str) -> list[Sidecar]:
    sidecars: list[Sidecar] = []
    try:
        lines = [orjson.loads(line) for line in data.splitlines() if line.strip()]
    except orjson.JSONDecodeError as err:
        raise LogCorruptedError(f"Cannot read checkpoint file {path!r}: invalid JSON ({err})", path=path) from err
    rest = []
    for line in lines:
        if isinstance(line, dict) and line.get("sidecar") is not None:
            sidecars.append(Sidecar.from_dict(line["sidecar"]))
        else:
            rest.append(line)
    state.apply_actions(rest, version=None)
    return sidecars


def apply_checkpoint(state: ReplayState, storage: Storage, ref: CheckpointRef) -> None:
    """Load every action of checkpoint ``ref`` (and its sidecars) into ``state``."""
    sidecars: list[Sidecar] = []
    for lf in ref.files:
        if lf.name.endswith(".json"):
            try:
                data = storage.read_bytes(lf.path)
            except FileNotFoundError:
                raise LogCorruptedError(f"Cannot read checkpoint file {lf.path!r}: it does not exist",
                                        version=ref.version, path=lf.path) from None
            sidecars += _apply_json_checkpoint(state, data, lf.path)
        else:
            for part in _read_parquet(storage, lf.path, _ACTION_COLUMNS):
                sidecars += _apply_parquet(state, part, ref.version)
    for sidecar in sidecars:
        # PROTOCOL.md "Sidecar File Information": relative paths are under _delta_log/_sidecars.
        rel = sidecar.path if "/" in sidecar.path and "://" in sidecar.path else f"{SIDECAR_DIR}/{sidecar.path}"
        for part in _read_parquet(storage, rel, ("add", "remove")):
            _apply_parquet(state, part, ref.version)

"""Read checkpoints: classic single-file, multi-part, and V2 (JSON or parquet, with sidecars).

Parquet checkpoints are converted column by column (one ``to_pylist`` per field, not per row), which
is what keeps a 100,000-file checkpoint cheap to load. Local files are streamed in small record batches
through a small read buffer, so the decoded Arrow data alive at any time is a few MB whatever the
checkpoint's size; the peak memory of a load is close to the Python actions it returns.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import numpy as np
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
    dv_unique_id,
)
from airflow_provider_delta.core.log.paths import SIDECAR_DIR
from airflow_provider_delta.exceptions import LogCorruptedError

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from airflow_provider_delta.core.log.replay import FileKey, ReplayState
    from airflow_provider_delta.core.log.segment import CheckpointRef
    from airflow_provider_delta.core.storage import Storage

# Rows per decoded record batch, and the read buffer of a local checkpoint file: small enough that the
# Arrow memory of a batch stays a few MB, large enough that per-batch overhead does not show.
_BATCH_ROWS = 4096
_LOCAL_READ_BUFFER = 1 << 16
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


def _numpy_ints(arr: pa.Array) -> np.ndarray[Any, Any]:
    """An integer (or boolean, as 0/1) array viewed as numpy; null slots hold arbitrary values.

    ``pa.Array.to_numpy`` (like ``pa.scalar`` and ``fill_null`` with a Python value) imports pandas
    when it is installed, ~0.3 s on first use; viewing the data buffer needs neither pandas nor a copy.
    """
    if pa.types.is_boolean(arr.type):
        arr = arr.cast(pa.int8())
    width = arr.type.bit_width // 8
    return np.frombuffer(arr.buffers()[1], dtype=f"<i{width}", count=len(arr), offset=arr.offset * width)


def _map_values(arr: pa.MapArray) -> list[Any]:
    """A map column as dicts (None for null rows); equal maps share one dict."""
    fast = _uniform_map_values(arr)
    return fast if fast is not None else _map_values_by_row(arr)


def _uniform_map_values(arr: pa.MapArray) -> list[Any] | None:
    """Vectorised ``_map_values`` for maps whose rows all have the same number of entries, else None.

    Partition values are such maps (one entry per partition column), and a checkpoint holds only a few
    distinct ones: each entry becomes an integer code (key id, value id), each row a combination of
    codes, and only one dict per distinct row is built in Python.
    """
    offsets = _numpy_ints(arr.offsets)
    lengths = np.diff(offsets)
    valid = _numpy_ints(arr.is_valid()).astype(bool) if arr.null_count else None
    starts = offsets[:-1] if valid is None else offsets[:-1][valid]
    row_lengths = lengths if valid is None else lengths[valid]
    if len(row_lengths) == 0:
        return [None] * len(arr)
    k = int(row_lengths[0])
    if (row_lengths != k).any():
        return None
    lo, hi = int(offsets[0]), int(offsets[-1])
    keys = arr.keys.slice(lo, hi - lo).dictionary_encode()
    items = arr.items.slice(lo, hi - lo).dictionary_encode()
    key_names, item_values = keys.dictionary.to_pylist(), items.dictionary.to_pylist()
    radix = len(item_values) + 1  # value id + 1, so that a null value is 0
    codes = _numpy_ints(keys.indices).astype(np.int64) * radix
    item_ids = _numpy_ints(items.indices).astype(np.int64) + 1
    if items.indices.null_count:
        item_ids[_numpy_ints(items.indices.is_valid()) == 0] = 0
    codes += item_ids
    rows = codes[(starts - lo)[:, None] + np.arange(k)]  # one row of k entry codes per valid map
    base = len(key_names) * radix
    if k == 1 or base**k < 2**62:
        flat = rows @ (base ** np.arange(k, dtype=np.int64)) if k else np.zeros(len(rows), np.int64)
        _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    dicts: list[Any] = []
    for row in rows[first]:
        dicts.append(
            {key_names[c // radix]: item_values[c % radix - 1] if c % radix else None for c in row.tolist()}
        )
    if valid is None:
        return list(map(dicts.__getitem__, inverse.ravel().tolist()))
    ids = np.full(len(arr), len(dicts), dtype=np.int64)
    ids[valid] = inverse.ravel()
    dicts.append(None)
    return list(map(dicts.__getitem__, ids.tolist()))


def _map_values_by_row(arr: pa.MapArray) -> list[Any]:
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


def _column_values(arr: pa.Array | None, length: int, default: Any = None) -> list[Any]:
    """One field as Python values, nulls replaced by ``default``."""
    if arr is None or arr.null_count == length:
        return [default] * length
    if pa.types.is_map(arr.type):
        values = _map_values(arr)
        if default is not None and arr.null_count:
            values = [default if v is None else v for v in values]
        return values
    if default is not None and arr.null_count:
        return [default if v is None else v for v in arr.to_pylist()]
    return arr.to_pylist()


def _valid_rows(column: pa.ChunkedArray) -> pa.StructArray:
    """The non-null rows of a struct column as one array."""
    arr = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if arr.null_count:
        arr = arr.filter(pc.is_valid(arr))
    return arr


def _struct_columns(
    arr: pa.StructArray, fields: tuple[str, ...], defaults: tuple[Any, ...]
) -> list[list[Any]]:
    """One Python list per wanted field of ``arr`` (in ``fields`` order), nulls replaced by ``defaults``."""
    n = len(arr)
    present = {f.name for f in arr.type}
    return [
        _column_values(arr.field(name) if name in present else None, n, default)
        for name, default in zip(fields, defaults, strict=True)
    ]


_EMPTY_MAP: dict[str, str | None] = {}
_ADD_ORDER = tuple(_ADD_FIELDS)
# What AddFile.from_dict puts in place of a missing value (None: keep the null).
_ADD_DEFAULTS = (None, _EMPTY_MAP, 0, 0, False, None, None, None, None, None, None)
_WANTED_SUBFIELDS = {"add": tuple(_ADD_FIELDS), "remove": tuple(_REMOVE_FIELDS)}
_REMOVE_ORDER = tuple(_REMOVE_FIELDS)
_REMOVE_DEFAULTS = (None, None, False, None, None, None, None, None, None, None, None)
# tuple.__new__ bound to the class: builds a named tuple from a row without a Python-level call.
_new_add = partial(tuple.__new__, AddFile)
_new_remove = partial(tuple.__new__, RemoveFile)


def _file_keys(paths: list[str], dvs: list[Any], any_dv: bool) -> list[FileKey]:
    """The reconciliation keys (decoded path, DV id) of the rows, as ``actions.file_key`` computes them."""
    if any("%" in p for p in paths):
        paths = [unquote(p) if "%" in p else p for p in paths]
    if not any_dv:
        return list(zip(paths, dvs, strict=True))
    return [(p, dv_unique_id(dv) if dv else None) for p, dv in zip(paths, dvs, strict=True)]


def _adds_from_column(column: pa.ChunkedArray) -> tuple[list[FileKey], list[AddFile]]:
    """The adds of a checkpoint batch and their reconciliation keys."""
    arr = _valid_rows(column)
    if len(arr) == 0:
        return [], []
    # Positional order of AddFile's fields equals _ADD_FIELDS' order.
    cols = _struct_columns(arr, _ADD_ORDER, _ADD_DEFAULTS)
    dv_column = arr.field("deletionVector") if "deletionVector" in {f.name for f in arr.type} else None
    keys = _file_keys(cols[0], cols[7], dv_column is not None and dv_column.null_count < len(arr))
    return keys, list(map(_new_add, zip(*cols, strict=True)))


def _removes_from_column(column: pa.ChunkedArray) -> list[RemoveFile]:
    arr = _valid_rows(column)
    if len(arr) == 0:
        return []
    cols = _struct_columns(arr, _REMOVE_ORDER, _REMOVE_DEFAULTS)
    return list(map(_new_remove, zip(*cols, strict=True)))


def _to_json_like(value: Any) -> Any:
    """Parquet rows use lists of (key, value) pairs for maps; the actions expect dicts."""
    if isinstance(value, dict):
        return {k: _to_json_like(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return {k: _to_json_like(v) for k, v in value}
    return value


def _read_parquet(
    storage: Storage, relative_path: str, columns: Iterable[str], size: int | None = None
) -> Iterator[pa.Table]:
    """The wanted columns of a checkpoint file, a few thousand rows at a time (keeps peak memory low).

    A local file is read through a small buffer, page by page, instead of pre-buffering whole column
    chunks (tens of MB for the stats of a large checkpoint). On an object store a request per buffer
    would be slow, so there each row group is fetched in one coalesced read.
    """
    local = not storage.lists_cheaply
    try:
        source = storage.open_input_file(relative_path, size=size)
        pf = pq.ParquetFile(source, buffer_size=_LOCAL_READ_BUFFER if local else 0, pre_buffer=not local)
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
    # Single-threaded decoding: per-thread allocator caches would otherwise each keep a batch's pages.
    with source:
        for batch in pf.iter_batches(batch_size=_BATCH_ROWS, columns=wanted, use_threads=False):
            yield pa.Table.from_batches([batch])
            # Drop the batch before the next one is decoded (a part may also hold no batch at all).
            del batch
        # Hand decoded pages back now: the allocator would otherwise keep them as the peak grows.
        pool.release_unused()


def _apply_parquet(state: ReplayState, table: pa.Table, version: int) -> list[Sidecar]:
    # An action column that is null in every row of the batch (most of them, in most batches) is skipped.
    names = {name for name in table.column_names if table.column(name).null_count < table.num_rows}
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
        keys, adds = _adds_from_column(table.column("add"))
        state.add_keyed_files(keys, adds)
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
            for part in _read_parquet(storage, lf.path, _ACTION_COLUMNS, lf.size or None):
                sidecars += _apply_parquet(state, part, ref.version)
    for sidecar in sidecars:
        # PROTOCOL.md "Sidecar File Information": relative paths are under _delta_log/_sidecars.
        rel = sidecar.path if "/" in sidecar.path and "://" in sidecar.path else f"{SIDECAR_DIR}/{sidecar.path}"
        for part in _read_parquet(storage, rel, ("add", "remove")):
            _apply_parquet(state, part, ref.version)

"""The table's identity: ``metaData.id``, which a dropped and recreated table does not share.

A table deleted and created again at the same location starts a new log, with a new ``metaData.id``
(PROTOCOL.md "Change Metadata": ``id`` is a unique identifier for the table). Comparing ids tells a
recreated table from new commits of the same table, which version numbers alone cannot once the new
table has passed the old one's version.

:func:`read_table_id` reads the id from version 0's commit (only its first 64 KiB in the usual case,
where ``metaData`` precedes the ``add`` actions), or, when version 0 has been cleaned up, from the
``metaData`` column of the newest checkpoint. It never replays the table.

Example:
    >>> read_table_id(storage_for("/data/events"))  # doctest: +SKIP
    'c5b0d2e4-3f6a-4b7e-9a51-0c2d1e8f7a93'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pyarrow.parquet as pq

from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.log.segment import build_segment
from airflow_provider_delta.exceptions import TableNotFoundError

if TYPE_CHECKING:
    from airflow_provider_delta.core.storage import Storage

#: Bytes of version 0 read first; the rest only when ``metaData`` is not among them.
HEAD_BYTES = 64 * 1024


def _id_in_lines(data: bytes, *, complete: bool) -> str | None:
    lines = data.split(b"\n")
    if not complete:
        lines = lines[:-1]  # the last line may be cut short
    for line in lines:
        if b'"metaData"' not in line:
            continue
        action: Any = orjson.loads(line)
        metadata = action.get("metaData") if isinstance(action, dict) else None
        if isinstance(metadata, dict) and isinstance(metadata.get("id"), str):
            return str(metadata["id"])
    return None


def _head(storage: Storage, path: str) -> tuple[bytes, bool] | None:
    """The first ``HEAD_BYTES`` of a log file and whether that is all of it; None if it does not exist."""
    try:
        with storage.arrow_filesystem().open_input_stream(storage.resolve(path)) as stream:
            data = stream.read(HEAD_BYTES + 1)
    except FileNotFoundError:
        return None
    return data[:HEAD_BYTES], len(data) <= HEAD_BYTES


def _id_from_checkpoint(storage: Storage) -> str | None:
    try:
        segment = build_segment(storage, location=storage.root)
    except TableNotFoundError:
        return None
    if segment.checkpoint is None:
        return None
    for file in segment.checkpoint.files:
        if file.path.endswith(".json"):
            found = _id_in_lines(storage.read_bytes(file.path), complete=True)
        else:
            parquet = pq.ParquetFile(storage.resolve(file.path), filesystem=storage.arrow_filesystem())
            if "metaData" not in parquet.schema_arrow.names:
                continue
            rows = parquet.read(columns=["metaData"]).column("metaData").drop_null().to_pylist()
            found = next((str(r["id"]) for r in rows if isinstance(r, dict) and r.get("id")), None)
        if found is not None:
            return found
    return None


def read_table_id(storage: Storage) -> str | None:
    """The table's ``metaData.id``; None when there is no table (or the id cannot be found)."""
    head = _head(storage, commit_path(0))
    if head is not None:
        data, complete = head
        found = _id_in_lines(data, complete=complete)
        if found is None and not complete:
            found = _id_in_lines(storage.read_bytes(commit_path(0)), complete=True)
        if found is not None:
            return found
    return _id_from_checkpoint(storage)

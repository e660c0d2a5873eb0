"""Interop: tables this engine writes are read by independent engines (delta-rs), and the reverse.

Helpers shared by the interop tests: canonical rows (so Arrow type choices such as ``string_view``
or timestamp time zones do not matter, values do) and a full comparison of what delta-rs and this
engine see in one table version: version, protocol, metadata, schema, files, rows and history.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core import DeltaTable

if TYPE_CHECKING:
    import deltalake


def _canon(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return ("ts", value.isoformat(timespec="microseconds"))
    if isinstance(value, dt.date):
        return ("date", value.isoformat())
    if isinstance(value, Decimal):
        return ("dec", str(value))
    if isinstance(value, (bytes, bytearray)):
        return ("bin", bytes(value).hex())
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else repr(value))
    if isinstance(value, dict):
        return ("struct", tuple((k, _canon(v)) for k, v in value.items()))
    if isinstance(value, list):
        if value and all(isinstance(x, tuple) and len(x) == 2 for x in value):  # a map's (key, value) pairs
            return ("map", tuple(sorted(((_canon(k), _canon(v)) for k, v in value), key=repr)))
        return ("list", tuple(_canon(x) for x in value))
    return value


def canonical_rows(table: pa.Table, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    """The table's rows as canonical tuples in ``columns`` order, sorted: a multiset of values."""
    names = columns if columns is not None else table.column_names
    data = table.select(names).to_pylist()
    return sorted((tuple(_canon(r[n]) for n in names) for r in data), key=repr)


def rs_table(location: str, version: int | None = None) -> deltalake.DeltaTable:
    import deltalake

    return deltalake.DeltaTable(location, version=version)


def rs_rows(dt_: deltalake.DeltaTable) -> pa.Table:
    """delta-rs's rows through its DataFusion path, the one that honours column mapping."""
    import deltalake

    reader = deltalake.QueryBuilder().register("t", dt_).execute("select * from t")
    return pa.table(reader.read_all())


def assert_same_rows(ours: pa.Table, theirs: pa.Table) -> None:
    assert sorted(ours.column_names) == sorted(theirs.column_names)
    names = ours.column_names
    left, right = canonical_rows(ours, names), canonical_rows(theirs, names)
    assert len(left) == len(right), f"{len(left)} rows here, {len(right)} in delta-rs"
    assert left == right


def _protocol_tuple(
    reader: int, writer: int, rf: Any, wf: Any
) -> tuple[int, int, frozenset[str], frozenset[str]]:
    return reader, writer, frozenset(rf or ()), frozenset(wf or ())


def assert_delta_rs_reads_identically(location: str, version: int | None = None) -> DeltaTable:
    """delta-rs and this engine agree on everything about ``location`` at ``version`` (default latest)."""
    ours = DeltaTable(location, version=version)
    theirs = rs_table(location, version)
    assert theirs.version() == ours.version

    p = theirs.protocol()
    assert _protocol_tuple(
        p.min_reader_version, p.min_writer_version, p.reader_features, p.writer_features
    ) == _protocol_tuple(
        ours.protocol.min_reader_version,
        ours.protocol.min_writer_version,
        ours.protocol.reader_features,
        ours.protocol.writer_features,
    )
    md = theirs.metadata()
    assert md.id == ours.metadata.id
    assert list(md.partition_columns) == list(ours.partition_columns)
    assert dict(md.configuration) == dict(ours.configuration)
    assert json.loads(theirs.schema().to_json()) == json.loads(ours.schema.to_json())

    adds = pa.table(theirs.get_add_actions(flatten=True))
    assert sorted(adds["path"].to_pylist()) == sorted(f.path for f in ours.files())
    by_path = dict(zip(adds["path"].to_pylist(), adds["num_records"].to_pylist(), strict=True))
    assert all(by_path[f.path] == f.num_records for f in ours.files())

    assert_same_rows(ours.to_arrow(), rs_rows(theirs))

    if ours.version != DeltaTable.latest_version(location):
        # delta-rs 1.6.6 numbers history() of a time-travelled table from the loaded version down
        # while listing every commit, so only the latest version's history is comparable.
        return ours
    ours_history = {h["version"]: h for h in ours.history()}
    for h in theirs.history():
        mine = ours_history[h["version"]]
        for key in ("operation", "readVersion", "isBlindAppend", "isolationLevel", "txnId", "timestamp"):
            assert h.get(key) == mine.get(key), (h["version"], key)
    assert len(theirs.history()) == len(ours_history)
    return ours


COLUMN_MAPPED_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("my col", pa.string()),
        ("p", pa.string()),
        ("st", pa.struct([("a b", pa.int32()), ("c", pa.list_(pa.string()))])),
        ("m", pa.map_(pa.string(), pa.int64())),
    ]
)


def column_mapped_table(location: str, mode: str) -> DeltaTable:
    """A partitioned table in column mapping ``mode`` (``name`` or ``id``) with names that need it
    (spaces, nested), after an append, an UPDATE and a DELETE (schema: ``COLUMN_MAPPED_SCHEMA``)."""
    schema = COLUMN_MAPPED_SCHEMA
    t = DeltaTable.create(location, schema, partition_by=["p"], properties={"delta.columnMapping.mode": mode})
    t.append(
        pa.Table.from_pylist(
            [
                {"id": 1, "my col": "x", "p": "a=b", "st": {"a b": 1, "c": ["u"]}, "m": [("k", 1)]},
                {"id": 2, "my col": None, "p": None, "st": None, "m": None},
                {"id": 3, "my col": "z", "p": "a=b", "st": {"a b": None, "c": []}, "m": []},
            ],
            schema=schema,
        )
    )
    t.update("id = 1", {"my col": "'y'"})
    t.delete("id = 3")
    return t

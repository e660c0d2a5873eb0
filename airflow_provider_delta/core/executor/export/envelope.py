"""The Debezium envelope: change rows as ``before``/``after`` images with an ``op`` code.

Debezium's change event value (``op`` c/u/d/r, ``before``, ``after``, ``source``, ``ts_ms``): an
``insert`` is ``c`` (after only), a ``delete`` is ``d`` (before only), a snapshot row is ``r``, and an
``update_preimage``/``update_postimage`` pair with the same key in the same commit is one ``u`` with
both images. An update that changed the key has no partner: its pre-image becomes ``d`` and its
post-image ``c``, as Debezium reports primary-key changes. ``ts_ms`` and ``source.ts_ms`` are the
commit timestamp (not the export's wall time), so a rerun writes the same bytes.

Example:
    >>> to_debezium(changes, ["id"], source_fields, snapshot=False).column("op").to_pylist()  # doctest: +SKIP
    ['c', 'u', 'd']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.change_data import CDF_METADATA_COLUMNS, CHANGE_TYPE
from airflow_provider_delta.exceptions import ExportOptionError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["debezium_schema", "to_debezium"]

_TIMESTAMP = pa.timestamp("us", tz="UTC")
SOURCE_TYPE = pa.struct([
    ("connector", pa.string()),
    ("name", pa.string()),
    ("table", pa.string()),
    ("table_id", pa.string()),
    ("commit_version", pa.int64()),
    ("ts_ms", pa.int64()),
    ("snapshot", pa.string()),
])


def debezium_schema(table_schema: pa.Schema) -> pa.Schema:
    """The Arrow schema of Debezium events for a table of ``table_schema`` (its columns only).

    Example:
        >>> debezium_schema(pa.schema([("id", pa.int64())])).names
        ['before', 'after', 'op', 'source', 'ts_ms', '_commit_version', '_commit_timestamp']
    """
    row = pa.struct(list(table_schema))
    return pa.schema([
        ("before", row),
        ("after", row),
        ("op", pa.string()),
        ("source", SOURCE_TYPE),
        ("ts_ms", pa.int64()),
        ("_commit_version", pa.int64()),
        ("_commit_timestamp", _TIMESTAMP),
    ])


def _positions(table: pa.Table, mask: pa.Array) -> np.ndarray[Any, Any]:
    return np.flatnonzero(np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False)))


def _pairs(rows: pa.Table, keys: Sequence[str], pre: np.ndarray[Any, Any], post: np.ndarray[Any, Any]) -> pa.Table:
    """Pre- and post-image positions joined on (commit version, keys); unmatched sides are null."""
    on = [*keys, "_commit_version"]
    left = rows.select(on).take(pa.array(pre)).append_column("__pre", pa.array(pre, pa.int64()))
    right = rows.select(on).take(pa.array(post)).append_column("__post", pa.array(post, pa.int64()))
    for side, label in ((left, "update_preimage"), (right, "update_postimage")):
        counts = side.group_by(on).aggregate([(on[-1], "count")])
        dup = pc.greater(counts.column(f"{on[-1]}_count"), 1)
        if pc.any(dup).as_py():
            first = counts.filter(dup).slice(0, 1).to_pylist()[0]
            raise ExportOptionError(
                f"Cannot build Debezium events: version {first['_commit_version']} has several {label} rows "
                f"with key {({k: first[k] for k in keys})!r}, so key_columns {list(keys)!r} do not identify a row. "
                "Help: pass key_columns that are unique in the table.",
                version=int(first["_commit_version"]),
            )
    try:
        return left.join(right, keys=on, join_type="full outer")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise ExportOptionError(
            f"Cannot build Debezium events: key_columns {list(keys)!r} cannot be compared ({err}). "
            "Help: use columns of primitive types as keys."
        ) from err


def to_debezium(
    rows: pa.Table, keys: Sequence[str], source: Mapping[str, str], *, snapshot: bool, schema: pa.Schema
) -> pa.Table:
    """Change rows (table columns + the change feed columns) as Debezium events of ``schema``.

    Args:
        rows: change rows, as ``DeltaTable.changes()`` returns them.
        keys: the columns that identify a row (pairs update images).
        source: ``name``, ``table`` and ``table_id`` of the ``source`` struct.
        snapshot: the rows are a snapshot (``op = 'r'``).
        schema: the output schema (:func:`debezium_schema` of the table's columns).

    Raises:
        ExportOptionError: the keys do not identify rows (two pre-images of one key in one commit).
    """
    data_names = [n for n in rows.column_names if n not in CDF_METADATA_COLUMNS]
    row_type = schema.field("before").type
    struct_all = pa.StructArray.from_arrays(
        [rows.column(n).combine_chunks() for n in data_names], fields=list(row_type)
    ) if rows.num_rows else pa.array([], row_type)
    n = rows.num_rows
    change = rows.column(CHANGE_TYPE)
    before = np.full(n, -1, dtype=np.int64)
    after = np.full(n, -1, dtype=np.int64)
    ops = np.full(n, "", dtype=object)
    emit = np.zeros(n, dtype=bool)
    if snapshot:
        after[:] = np.arange(n)
        ops[:] = "r"
        emit[:] = True
    else:
        for kind, code, image in (("insert", "c", after), ("delete", "d", before)):
            at = _positions(rows, pc.equal(change, kind))
            image[at], ops[at], emit[at] = at, code, True
        pre = _positions(rows, pc.equal(change, "update_preimage"))
        post = _positions(rows, pc.equal(change, "update_postimage"))
        if len(pre) or len(post):
            joined = _pairs(rows, keys, pre, post)
            p = pc.fill_null(joined.column("__pre"), -1).to_numpy().astype(np.int64)
            q = pc.fill_null(joined.column("__post"), -1).to_numpy().astype(np.int64)
            at = np.where(q >= 0, q, p)  # an update is emitted where its post-image was
            before[at] = p
            after[at] = q
            ops[at] = np.where((p >= 0) & (q >= 0), "u", np.where(q >= 0, "c", "d"))
            emit[at] = True
    order = np.flatnonzero(emit)
    return _events(rows, struct_all, before[order], after[order], ops[order], order, source, snapshot, schema)


def _image(struct_all: pa.Array, index: np.ndarray[Any, Any]) -> pa.Array:
    return struct_all.take(pa.array(index, pa.int64(), mask=index < 0))


def _events(
    rows: pa.Table,
    struct_all: pa.Array,
    before: np.ndarray[Any, Any],
    after: np.ndarray[Any, Any],
    ops: np.ndarray[Any, Any],
    at: np.ndarray[Any, Any],
    source: Mapping[str, str],
    snapshot: bool,
    schema: pa.Schema,
) -> pa.Table:
    m = len(at)
    versions = rows.column("_commit_version").take(pa.array(at, pa.int64())).combine_chunks()
    stamps = rows.column("_commit_timestamp").take(pa.array(at, pa.int64())).combine_chunks()
    ts_ms = pc.divide(stamps.cast(pa.int64()), 1000)

    def constant(value: str) -> pa.Array:
        return pa.array([value] * m, pa.string())

    source_struct = pa.StructArray.from_arrays(
        [
            constant("delta"),
            constant(source["name"]),
            constant(source["table"]),
            constant(source["table_id"]),
            versions,
            ts_ms,
            constant("true" if snapshot else "false"),
        ],
        fields=list(SOURCE_TYPE),
    )
    return pa.Table.from_arrays(
        [
            _image(struct_all, before),
            _image(struct_all, after),
            pa.array(list(ops), pa.string()),
            source_struct,
            ts_ms,
            versions,
            stamps,
        ],
        schema=schema,
    )

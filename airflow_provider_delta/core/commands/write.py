"""Table operations on the local pyarrow engine: create, append, overwrite, delete, update.

Each plans in terms of files (which to read, which to remove, what to add), writes new data files,
and commits one transaction. A failure before the commit leaves the table as it was: files written
by a failed operation are unreferenced and vacuumable.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.actions import AddFile, CommitInfo, Metadata, action_to_dict
from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.properties import minimal_protocol, required_features, validate_properties
from airflow_provider_delta.core.protocol import check_writable
from airflow_provider_delta.core.transaction.commit import ENGINE_INFO, Transaction, refuse_if_append_only
from airflow_provider_delta.exceptions import (
    DeltaError,
    PredicateError,
    SchemaError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_delta.core.schema.types import StructType
    from airflow_provider_delta.core.snapshot import Snapshot
    from airflow_provider_delta.core.storage import Storage

CDF_RESERVED = ("_change_type", "_commit_version", "_commit_timestamp")


def _as_struct(schema: StructType | pa.Schema) -> StructType:
    from airflow_provider_delta.core.schema.arrow import from_arrow_schema
    from airflow_provider_delta.core.schema.types import StructType

    if isinstance(schema, StructType):
        return schema
    if isinstance(schema, pa.Schema):
        return from_arrow_schema(schema)
    raise SchemaError(f"Cannot create table: schema must be a StructType or pyarrow.Schema, found {type(schema)!r}")


def check_cdf_columns(schema: StructType, configuration: Mapping[str, str]) -> None:
    """Refuse change data feed on a schema that uses its reserved column names."""
    if configuration.get("delta.enableChangeDataFeed", "false").lower() != "true":
        return
    clash = [n for n in schema.names if n.lower() in CDF_RESERVED]
    if clash:
        raise SchemaError(
            f"Cannot enable change data feed: column {clash[0]!r} uses a name reserved for the change feed "
            f"({', '.join(CDF_RESERVED)}). Help: rename the column first."
        )


def create_table(
    storage: Storage,
    location: str,
    schema: StructType | pa.Schema,
    *,
    partition_by: Sequence[str] = (),
    properties: Mapping[str, Any] | None = None,
    name: str | None = None,
    description: str | None = None,
) -> int:
    """Write version 0 of a new table with the smallest protocol its features need.

    Raises:
        TableAlreadyExistsError: ``location`` already holds a Delta table.
        SchemaError: partition columns are not in the schema, or names clash.
        InvalidPropertyError: an unknown ``delta.*`` property or an invalid value.
    """
    from airflow_provider_delta.core.schema.mapping import assign_column_mapping, column_mapping_mode
    from airflow_provider_delta.core.session import write_defaults

    struct = _as_struct(schema)
    # Session defaults (Delta's spark.databricks.delta.properties.defaults.*) apply to new tables only,
    # and the creation's own properties win.
    configuration = validate_properties({**write_defaults().table_properties, **(properties or {})})
    lowered = [n.lower() for n in struct.names]
    if len(set(lowered)) != len(lowered):
        raise SchemaError(f"Cannot create table {location!r}: duplicate column names in {list(struct.names)}")
    partitions = []
    for col in partition_by:
        f = struct.get(col, case_sensitive=False)
        if f is None:
            raise SchemaError(
                f"Cannot partition table {location!r} by {col!r}: no such column (columns: {', '.join(struct.names)})"
            )
        partitions.append(f.name)
    check_cdf_columns(struct, configuration)
    if column_mapping_mode(configuration) != "none":
        struct, max_id = assign_column_mapping(struct, 1)
        configuration["delta.columnMapping.maxColumnId"] = str(max_id)
    protocol = minimal_protocol(required_features(struct, configuration))
    check_writable(protocol, location=location)
    metadata = Metadata(
        id=str(uuid.uuid4()),
        schema_string=struct.to_json(),
        partition_columns=tuple(partitions),
        configuration=configuration,
        name=name,
        description=description,
        created_time=int(time.time() * 1000),
    )
    now = int(time.time() * 1000)
    info: dict[str, Any] = {
        "timestamp": now,
        "operation": "CREATE TABLE",
        "operationParameters": {
            "partitionBy": orjson.dumps(partitions).decode(),
            "description": description,
            "isManaged": "false",
            "properties": orjson.dumps(configuration).decode(),
        },
        "isolationLevel": "Serializable",
        "isBlindAppend": True,
        "operationMetrics": {},
        "engineInfo": ENGINE_INFO,
        "txnId": str(uuid.uuid4()),
    }
    if configuration.get("delta.enableInCommitTimestamps", "false").lower() == "true":
        info["inCommitTimestamp"] = now
    body = b"\n".join(orjson.dumps(action_to_dict(a)) for a in (CommitInfo(info), protocol, metadata)) + b"\n"
    if storage.exists(commit_path(0)) or not storage.write_if_absent(commit_path(0), body):
        raise TableAlreadyExistsError(
            f"Cannot create table {location!r}: a Delta table already exists there", location=location
        )
    return 0


def _check_schema_writable(snapshot: Snapshot) -> None:
    for path, f in snapshot.schema.walk():
        for key in ("delta.generationExpression", "delta.identity.start", "delta.invariants"):
            if key in f.metadata:
                kind = {"delta.generationExpression": "generated column", "delta.identity.start": "identity column",
                        "delta.invariants": "column invariant"}[key]
                raise UnsupportedFeatureError(
                    f"Cannot write to table {snapshot.location!r}: column {'.'.join(path)!r} is a {kind}, which "
                    "this engine does not compute yet. Help: write through Delta Lake on Spark.",
                    features=(key,),
                )


def check_constraints(snapshot: Snapshot, data: pa.Table, configuration: Mapping[str, str] | None = None) -> None:
    """Enforce ``delta.constraints.*`` CHECK constraints on rows about to be written.

    Raises:
        SchemaMismatchError: a row violates a constraint (named in the message).
    """
    conf = configuration if configuration is not None else snapshot.configuration
    constraints = {k[len("delta.constraints."):]: v for k, v in conf.items() if k.startswith("delta.constraints.")}
    if not constraints or data.num_rows == 0:
        return
    from airflow_provider_delta.core.expressions import bind, evaluate, parse_predicate
    from airflow_provider_delta.core.schema.arrow import to_arrow_schema

    arrow_schema = to_arrow_schema(snapshot.schema)
    for name, text in constraints.items():
        result = evaluate(bind(parse_predicate(text), arrow_schema), data)
        violations = pc.sum(pc.cast(pc.equal(result, False), pa.int64())).as_py() or 0
        if violations:
            raise SchemaMismatchError(
                f"Cannot write to table {snapshot.location!r}: {violations} row(s) violate CHECK constraint "
                f"{name!r} ({text})"
            )


def write_files(snapshot: Snapshot, data: pa.Table, *, data_change: bool = True) -> list[AddFile]:
    """Write ``data`` (logical columns) as data files of the snapshot's table."""
    from airflow_provider_delta.core.write.files import conform_to_table, write_data_files

    # Refuse before writing: a refused commit must not leave data files behind.
    check_writable(snapshot.protocol, location=snapshot.location, version=snapshot.version)
    _check_schema_writable(snapshot)
    data = conform_to_table(data, snapshot.schema)
    check_constraints(snapshot, data)
    return write_data_files(
        data,
        storage=snapshot.storage,
        schema=snapshot.schema,
        partition_columns=snapshot.partition_columns,
        configuration=snapshot.configuration,
        data_change=data_change,
    )


def metrics_for_adds(adds: Sequence[AddFile]) -> dict[str, int]:
    return {
        "numFiles": len(adds),
        "numOutputRows": sum(a.num_records or 0 for a in adds),
        "numOutputBytes": sum(a.size for a in adds),
    }


def _bound(snapshot: Snapshot, predicate: Any) -> Any:
    from airflow_provider_delta.core.expressions import bind, parse_filter
    from airflow_provider_delta.core.schema.arrow import to_arrow_schema

    bound = bind(parse_filter(predicate), to_arrow_schema(snapshot.schema))
    require_boolean(bound, predicate)
    return bound


def require_boolean(bound: Any, text: Any) -> None:
    """Raise unless a bound predicate yields booleans (``delete("id")`` is a mistake, not a filter)."""
    from airflow_provider_delta.core.expressions import _type_of

    result_type = _type_of(bound)
    if result_type is not None and not pa.types.is_boolean(result_type) and not pa.types.is_null(result_type):
        raise PredicateError(
            f"Cannot use {_predicate_text(text)!r} as a predicate: it yields {result_type}, expected boolean"
        )


def _predicate_text(predicate: Any) -> str:
    return predicate if isinstance(predicate, str) else str(predicate)


def append(
    snapshot: Snapshot,
    data: pa.Table,
    *,
    app_id: str | None = None,
    app_version: int | None = None,
    isolation_level: Any = None,
    schema_mode: str | None = None,
) -> int | None:
    """Append rows; returns the committed version, or None when (app_id, app_version) already landed.

    ``schema_mode="merge"`` (or the session's ``auto_merge_schema``) adds the data's new columns and
    struct fields to the schema in the same commit (see :mod:`airflow_provider_delta.core.commands.schema.write`).
    """
    if (app_id is None) != (app_version is None):
        raise DeltaError("Cannot append: pass app_id and app_version together (idempotent writes need both)")
    txn = Transaction(
        snapshot,
        operation="WRITE",
        operation_parameters={"mode": "Append", "partitionBy": list(snapshot.partition_columns)},
        isolation_level=isolation_level,
    )
    if app_id is not None and app_version is not None:
        done = txn.app_transaction_version(app_id)
        if done is not None and done >= app_version:
            return None
        txn.set_app_transaction(app_id, app_version)
    from airflow_provider_delta.core.commands.schema.write import stage_schema_evolution

    snapshot = stage_schema_evolution(txn, snapshot, data, schema_mode=schema_mode, operation="append")
    adds = write_files(snapshot, data)
    txn.add(*adds)
    txn.operation_metrics = metrics_for_adds(adds)
    return txn.commit()


def read_file_rows(snapshot: Snapshot, add: AddFile) -> pa.Table:
    """Every live row of one data file (deletion vector applied), logical columns incl. partitions."""
    from airflow_provider_delta.core.read.scan import read_add_file

    return read_add_file(snapshot, add)


def _rows_matching(predicate: Any, rows: pa.Table) -> pa.BooleanArray:
    from airflow_provider_delta.core.expressions import evaluate

    result = evaluate(predicate, rows)
    return pc.fill_null(result, False)


def _partition_matches(snapshot: Snapshot, predicate: Any, add: AddFile) -> bool:
    """Evaluate a partition-only predicate exactly on one file's partition values (errors propagate)."""
    from airflow_provider_delta.core.partitions import partition_column
    from airflow_provider_delta.core.read.scan import raw_partition_value
    from airflow_provider_delta.core.schema.arrow import to_arrow_type
    from airflow_provider_delta.core.schema.mapping import column_mapping_mode

    mode = column_mapping_mode(snapshot.configuration)
    lowered = {c.lower() for c in snapshot.partition_columns}
    columns = {}
    for f in snapshot.schema:
        if f.name.lower() in lowered:
            raw = raw_partition_value(add.partition_values, f, mode)
            columns[f.name] = partition_column(raw, to_arrow_type(f.type), 1, column=f.name)
    return bool(_rows_matching(predicate, pa.table(columns))[0].as_py())


def _rewrite_without(
    txn: Transaction,
    snapshot: Snapshot,
    predicate: Any,
    files: Sequence[AddFile],
    *,
    changes: list[pa.Table] | None = None,
) -> dict[str, int]:
    """Remove the rows matching ``predicate`` from ``files``: drop whole files, rewrite partial ones.

    With ``changes`` (a list), the deleted rows of every file read are appended to it, tagged
    ``delete`` for the change data feed. Whole files dropped by a partition-only predicate are not
    read: the change feed serves them from their ``remove`` actions.
    """
    from airflow_provider_delta.core.expressions import is_partition_only

    deleted = copied = removed = added = 0
    partition_only = predicate is None or is_partition_only(predicate, snapshot.partition_columns)
    for add in files:
        if partition_only:
            if predicate is not None and not _partition_matches(snapshot, predicate, add):
                continue
            txn.remove(add)
            removed += 1
            deleted += add.num_records or 0
            continue
        rows = read_file_rows(snapshot, add)
        mask = _rows_matching(predicate, rows)
        hits = pc.sum(pc.cast(mask, pa.int64())).as_py() or 0
        if hits == 0:
            continue
        keep = rows.filter(pc.invert(mask))
        if changes is not None:
            from airflow_provider_delta.core.write.changes import tag_changes

            changes.append(tag_changes(rows.filter(mask), "delete"))
        txn.remove(add)
        removed += 1
        deleted += hits
        if keep.num_rows:
            new = write_files(snapshot, keep)
            txn.add(*new)
            added += len(new)
            copied += keep.num_rows
    return {"numRemovedFiles": removed, "numAddedFiles": added, "numDeletedRows": deleted, "numCopiedRows": copied}


def _change_rows(snapshot: Snapshot) -> list[pa.Table] | None:
    """A list to collect change rows in when the table records its changes, else None."""
    from airflow_provider_delta.core.write.changes import cdf_enabled

    return [] if cdf_enabled(snapshot) else None


def record_changes(txn: Transaction, snapshot: Snapshot, changes: Sequence[pa.Table] | None) -> int:
    """Write the collected change rows as ``_change_data`` files into ``txn``; returns the file count.

    PROTOCOL.md "Change Data Files": once a commit has ``cdc`` actions, readers take every change
    of that commit from them, so a caller that records some changes must record all of them.
    """
    from airflow_provider_delta.core.write.changes import write_change_files

    tables = [t for t in changes or () if t.num_rows]
    if not tables:
        return 0
    cdc = write_change_files(snapshot, pa.concat_tables(tables, promote_options="permissive"))
    txn.add_cdc(*cdc)
    return len(cdc)


def delete(snapshot: Snapshot, predicate: Any = None, *, isolation_level: Any = None) -> int | None:
    """Delete the rows matching ``predicate`` (all rows when None); None when nothing matched."""
    bound = _bound(snapshot, predicate) if predicate is not None else None
    params = {"predicate": orjson.dumps([_predicate_text(predicate)] if predicate is not None else []).decode()}
    txn = Transaction(snapshot, operation="DELETE", operation_parameters=params, isolation_level=isolation_level)
    refuse_if_append_only(snapshot.metadata, snapshot.location, "DELETE", snapshot.version)
    files = txn.read_files(bound)
    changes = _change_rows(snapshot)
    metrics = _rewrite_without(txn, snapshot, bound, files, changes=changes)
    if metrics["numRemovedFiles"] == 0:
        return None
    record_changes(txn, snapshot, changes)
    txn.operation_metrics = metrics
    return txn.commit()


def stage_overwrite(txn: Transaction, snapshot: Snapshot, data: pa.Table, predicate: Any = None) -> dict[str, int]:
    """Stage what an overwrite removes on ``txn``: every file, or Delta's replaceWhere; returns metrics.

    With a predicate every row of ``data`` must satisfy it; matching rows are removed (whole files
    dropped, partly matching files rewritten), and on a change-data-feed table the removed rows and
    the new rows are recorded as change data. The caller writes and adds ``data`` itself.

    Raises:
        SchemaMismatchError: with a predicate, a row of ``data`` does not satisfy it.
    """
    from airflow_provider_delta.core.write.files import conform_to_table

    if predicate is None:
        files = txn.read_files(None)
        if files:
            refuse_if_append_only(snapshot.metadata, snapshot.location, "WRITE", snapshot.version)
        txn.remove(*files)
        return {"numRemovedFiles": len(files)}
    refuse_if_append_only(snapshot.metadata, snapshot.location, "WRITE", snapshot.version)
    bound = _bound(snapshot, predicate)
    txn.operation_parameters["predicate"] = orjson.dumps([_predicate_text(predicate)]).decode()
    if data.num_rows:
        aligned = conform_to_table(data, snapshot.schema)
        outside = pc.sum(pc.cast(pc.invert(_rows_matching(bound, aligned)), pa.int64())).as_py() or 0
        if outside:
            raise SchemaMismatchError(
                f"Cannot overwrite table {snapshot.location!r} where {_predicate_text(predicate)!r}: "
                f"{outside} row(s) of the new data do not match the predicate"
            )
    changes = _change_rows(snapshot)
    metrics = _rewrite_without(txn, snapshot, bound, txn.read_files(bound), changes=changes)
    if changes:
        # Delta's replaceWhere on data columns: when the removal wrote change rows, the new rows are
        # recorded too (tagged insert), because a commit with cdc files is read from them only.
        from airflow_provider_delta.core.write.changes import tag_changes

        changes.append(tag_changes(conform_to_table(data, snapshot.schema), "insert"))
        record_changes(txn, snapshot, changes)
    return metrics


def overwrite(
    snapshot: Snapshot,
    data: pa.Table,
    predicate: Any = None,
    *,
    isolation_level: Any = None,
    schema_mode: str | None = None,
    partition_by: Sequence[str] | None = None,
) -> int:
    """Replace the table's rows (or those matching ``predicate``, Delta's replaceWhere) with ``data``.

    ``schema_mode`` ``"merge"`` evolves the schema, ``"overwrite"`` replaces schema and partitioning
    (``partition_by``) in the same commit (see :mod:`airflow_provider_delta.core.commands.schema.write`).

    Raises:
        SchemaMismatchError: with a predicate, a row of ``data`` does not satisfy it.
        SchemaEvolutionError: the schema cannot evolve as asked.
    """
    from airflow_provider_delta.core.commands.schema.write import stage_schema_evolution

    params: dict[str, Any] = {"mode": "Overwrite", "partitionBy": list(snapshot.partition_columns)}
    txn = Transaction(snapshot, operation="WRITE", operation_parameters=params, isolation_level=isolation_level)
    snapshot = stage_schema_evolution(txn, snapshot, data, schema_mode=schema_mode, operation="overwrite",
                                      partition_by=partition_by, predicate=predicate)
    metrics = stage_overwrite(txn, snapshot, data, predicate)
    adds = write_files(snapshot, data)
    txn.add(*adds)
    txn.operation_metrics = {**metrics, **metrics_for_adds(adds)}
    return txn.commit()


def update(
    snapshot: Snapshot,
    predicate: Any,
    set: Mapping[str, str],  # noqa: A002 - Delta's name for the assignments
    *,
    isolation_level: Any = None,
) -> int | None:
    """Set columns to SQL expressions on the rows matching ``predicate`` (all rows when None)."""
    from airflow_provider_delta.core.expressions import bind, evaluate, parse_expression
    from airflow_provider_delta.core.schema.arrow import to_arrow_schema

    if not set:
        raise DeltaError("Cannot update: no assignments given (set={'column': 'sql expression'})")
    arrow_schema = to_arrow_schema(snapshot.schema)
    assignments = {}
    for name, text in set.items():
        f = snapshot.schema.get(name, case_sensitive=False)
        if f is None:
            raise PredicateError(
                f"Cannot update column {name!r}: no such column (columns: {', '.join(snapshot.schema.names)})"
            )
        # Partition columns may be assigned too: the rewritten rows move to their new partition folder.
        assignments[f.name] = bind(parse_expression(str(text)), arrow_schema)
    bound = _bound(snapshot, predicate) if predicate is not None else None
    params = {"predicate": orjson.dumps([_predicate_text(predicate)] if predicate is not None else []).decode()}
    txn = Transaction(snapshot, operation="UPDATE", operation_parameters=params, isolation_level=isolation_level)
    refuse_if_append_only(snapshot.metadata, snapshot.location, "UPDATE", snapshot.version)
    updated = copied = removed = added = 0
    changes = _change_rows(snapshot)
    for add in txn.read_files(bound):
        rows = read_file_rows(snapshot, add)
        mask = _rows_matching(bound, rows) if bound is not None else pa.array([True] * rows.num_rows)
        hits = pc.sum(pc.cast(mask, pa.int64())).as_py() or 0
        if hits == 0:
            continue
        # Every right-hand side sees the row as it was before the update (SET a = b, b = a swaps).
        new_values = {}
        for name, expr in assignments.items():
            target_type = rows.schema.field(name).type
            try:
                new_values[name] = pc.cast(evaluate(expr, rows), target_type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
                raise SchemaMismatchError(
                    f"Cannot update column {name!r}: the value {str(expr)!r} does not fit type {target_type} ({err})"
                ) from err
        before = rows
        for name, new in new_values.items():
            idx = rows.schema.get_field_index(name)
            rows = rows.set_column(idx, rows.schema.field(idx), pc.if_else(mask, new, rows.column(idx)))
        if changes is not None:
            from airflow_provider_delta.core.write.changes import tag_changes

            changes.append(tag_changes(before.filter(mask), "update_preimage"))
            changes.append(tag_changes(rows.filter(mask), "update_postimage"))
        new_files = write_files(snapshot, rows)
        txn.remove(add)
        txn.add(*new_files)
        updated += hits
        copied += rows.num_rows - hits
        removed += 1
        added += len(new_files)
    if removed == 0:
        return None
    record_changes(txn, snapshot, changes)
    txn.operation_metrics = {
        "numUpdatedRows": updated, "numCopiedRows": copied, "numRemovedFiles": removed, "numAddedFiles": added,
    }
    return txn.commit()


__all__ = [
    "append",
    "check_constraints",
    "create_table",
    "delete",
    "metrics_for_adds",
    "overwrite",
    "stage_overwrite",
    "update",
]

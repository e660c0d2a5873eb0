"""CREATE TABLE: version 0 of a new table, with the smallest protocol its features need.

Example:
    >>> create_table(storage_for("/data/t"), "/data/t", pa.schema([("id", pa.int64())]))  # doctest: +SKIP
    0
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa

from airflow_provider_delta.core.actions import CommitInfo, Metadata, Protocol, action_to_dict
from airflow_provider_delta.core.change_data import check_cdf_columns
from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.properties import (
    minimal_protocol,
    protocol_for_new_table,
    required_features,
    validate_properties,
)
from airflow_provider_delta.core.protocol import check_writable
from airflow_provider_delta.core.schema.arrow import from_arrow_schema
from airflow_provider_delta.core.schema.mapping import (
    assign_column_mapping,
    column_mapping_mode,
    without_column_mapping,
)
from airflow_provider_delta.core.schema.types import StructType
from airflow_provider_delta.core.session import write_defaults
from airflow_provider_delta.core.snapshot import Snapshot
from airflow_provider_delta.core.transaction.commit import ENGINE_INFO
from airflow_provider_delta.exceptions import SchemaError, TableAlreadyExistsError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_delta.core.storage import Storage

__all__ = ["create_table", "plan_table", "table_before_creation"]

_MIN_READER, _MIN_WRITER = "delta.minReaderVersion", "delta.minWriterVersion"


def _as_struct(schema: StructType | pa.Schema) -> StructType:
    if isinstance(schema, StructType):
        return schema
    if isinstance(schema, pa.Schema):
        # Field metadata is kept as Delta keeps it: comments, generation and identity keys, user keys.
        return from_arrow_schema(schema, with_metadata=True)
    raise SchemaError(f"Cannot create table: schema must be a StructType or pyarrow.Schema, found {type(schema)!r}")


def plan_table(
    location: str,
    schema: StructType | pa.Schema,
    *,
    partition_by: Sequence[str] = (),
    properties: Mapping[str, Any] | None = None,
    name: str | None = None,
    description: str | None = None,
) -> tuple[Protocol, Metadata]:
    """The protocol and metadata of a new table (nothing is written).

    Raises:
        SchemaError: partition columns are not in the schema, or names clash.
        InvalidPropertyError: an unknown ``delta.*`` property or an invalid value.
        UnsupportedFeatureError: the table would need a writer feature this engine lacks.
    """

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
        struct, max_id = assign_column_mapping(struct, 1)  # ids and physical names given are kept
        configuration["delta.columnMapping.maxColumnId"] = str(max_id)
    else:
        # Delta (DeltaColumnMapping.verifyAndUpdateMetadataChange) strips them from a new table's schema.
        struct = without_column_mapping(struct)
    # Delta turns the version properties into the protocol; they are not kept as properties.
    versions = {k: int(configuration.pop(k)) for k in (_MIN_READER, _MIN_WRITER) if k in configuration}
    features = required_features(struct, configuration)
    protocol = (protocol_for_new_table(features, versions.get(_MIN_READER, 1), versions.get(_MIN_WRITER, 2))
                if versions else minimal_protocol(features))
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
    return protocol, metadata


def table_before_creation(
    storage: Storage,
    location: str,
    schema: StructType | pa.Schema,
    *,
    partition_by: Sequence[str] = (),
    properties: Mapping[str, Any] | None = None,
) -> Snapshot:
    """A new table's state before version 0, for a command that creates it with its first commit.

    A transaction on it commits version 0 with the protocol and metadata (see
    :meth:`Snapshot.before_creation`); ``commands.write.write`` stages them itself.
    """
    protocol, metadata = plan_table(location, schema, partition_by=partition_by, properties=properties)
    return Snapshot.before_creation(storage, location, protocol, metadata)


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
    protocol, metadata = plan_table(location, schema, partition_by=partition_by, properties=properties,
                                    name=name, description=description)
    partitions, configuration = list(metadata.partition_columns), dict(metadata.configuration)
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

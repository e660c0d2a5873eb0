"""The Delta sink: change rows appended to a Delta table, exactly once through Delta's ``txn`` action.

Each run is one commit holding its rows and ``txn(appId = delta-cdf-export/<source table id>/<name>,
version = end)``: a retry after a landed commit finds ``txn.version >= end`` and writes nothing, and
of two concurrent runs the second fails with ``ConcurrentTransactionException`` (Delta's conflict
rule for application transactions). The first run creates the table in the same commit as its rows
(version 0), so a failed first run leaves no table. The sink records the export's identity in its
table properties (``airflow_provider_delta.cdfExport.*``) and refuses runs of another export. A schema
change of the source evolves the sink only by added nullable columns (Delta's mergeSchema, in the
same commit); anything else is an :class:`~airflow_provider_delta.exceptions.ExportSchemaChangeError`.
The commit's ``userMetadata`` holds ``{"cdfExport": {"sourceTableId", "startVersion", "endVersion"}}``.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

import orjson

from airflow_provider_delta.core.actions import Action, CommitInfo, Metadata, SetTransaction, action_to_dict
from airflow_provider_delta.core.commands.cdf_export.model import ExportIdentity
from airflow_provider_delta.core.commands.cdf_export.sink_files import IDENTITY_FILE
from airflow_provider_delta.core.commands.schema.write import stage_schema_evolution
from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.properties import minimal_protocol, required_features
from airflow_provider_delta.core.schema.arrow import from_arrow_schema, to_arrow_schema
from airflow_provider_delta.core.schema.evolution import merge_schemas
from airflow_provider_delta.core.schema.types import ArrayType, DataType, MapType, StructType
from airflow_provider_delta.core.snapshot import load_snapshot
from airflow_provider_delta.core.storage import storage_for
from airflow_provider_delta.core.transaction.commit import ENGINE_INFO, Transaction
from airflow_provider_delta.core.write.rows import check_table_writable, metrics_for_adds
from airflow_provider_delta.core.write.target import WriteTarget
from airflow_provider_delta.exceptions import (
    ConcurrentTransactionException,
    ExportSchemaChangeError,
    ExportSinkError,
    TableNotFoundError,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import pyarrow as pa

    from airflow_provider_delta.core.actions import AddFile
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["PROPERTY_PREFIX", "DeltaSink", "not_additive"]

PROPERTY_PREFIX = "airflow_provider_delta.cdfExport."

def not_additive(old: DataType, new: DataType, path: str = "") -> str | None:
    """Why ``new`` is not ``old`` plus added nullable columns (or fields), or None when it is."""
    if isinstance(old, StructType) and isinstance(new, StructType):
        for f in old.fields:
            name = f"{path}.{f.name}" if path else f.name
            g = new.get(f.name)
            if g is None:
                return f"column {name!r} was dropped or renamed"
            problem = not_additive(f.type, g.type, name)
            if problem:
                return problem
        for g in new.fields:
            if old.get(g.name) is None and not g.nullable:
                return f"new column {(f'{path}.' if path else '') + g.name!r} is NOT NULL"
        return None
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        return not_additive(old.element_type, new.element_type, f"{path}.element")
    if isinstance(old, MapType) and isinstance(new, MapType):
        return not_additive(old.key_type, new.key_type, f"{path}.key") or not_additive(
            old.value_type, new.value_type, f"{path}.value"
        )
    if old.simple_string() != new.simple_string():
        return f"column {path!r} changed type from {old.simple_string()} to {new.simple_string()}"
    return None


def _identity_properties(identity: ExportIdentity) -> dict[str, str]:
    return {
        f"{PROPERTY_PREFIX}appId": identity.app_id,
        f"{PROPERTY_PREFIX}sourceTableId": identity.source_table_id,
        f"{PROPERTY_PREFIX}source": identity.source,
        f"{PROPERTY_PREFIX}name": identity.name,
        f"{PROPERTY_PREFIX}envelope": identity.envelope,
        f"{PROPERTY_PREFIX}keyColumns": orjson.dumps(list(identity.key_columns)).decode(),
    }


class DeltaSink:
    """A Delta table holding one export (see the module docstring)."""

    def __init__(self, location: str, storage_options: Mapping[str, str] | None, identity: ExportIdentity) -> None:
        self.location = location
        self.identity = identity
        self.storage = storage_for(location, storage_options)
        try:
            self.snapshot: Snapshot | None = load_snapshot(self.storage, location)
        except TableNotFoundError:
            self.snapshot = None
        self._check()

    def _fail(self, reason: str) -> ExportSinkError:
        return ExportSinkError(
            f"Cannot export changes of table {self.identity.source!r} to Delta table {self.location!r}: {reason}. "
            "Help: export to another path (a sink holds one export).",
            sink=self.location,
        )

    def _check(self) -> None:
        if self.storage.exists(IDENTITY_FILE):
            raise self._fail("it holds a parquet/jsonl export, not a Delta table (use that export's format)")
        if self.snapshot is None:
            return
        conf = self.snapshot.configuration
        if f"{PROPERTY_PREFIX}appId" not in conf:
            raise self._fail("it is a Delta table that no change data export created")
        stored = ExportIdentity(
            source_table_id=conf.get(f"{PROPERTY_PREFIX}sourceTableId", ""),
            source=conf.get(f"{PROPERTY_PREFIX}source", ""),
            name=conf.get(f"{PROPERTY_PREFIX}name", ""),
            format="delta",
            envelope=conf.get(f"{PROPERTY_PREFIX}envelope", "flat"),  # type: ignore[arg-type]  # checked below
            key_columns=tuple(orjson.loads(conf.get(f"{PROPERTY_PREFIX}keyColumns", "[]"))),
        )
        problem = self.identity.mismatch(stored)
        if problem:
            raise self._fail(problem)

    def watermark(self) -> int | None:
        """The last source version the sink holds (its ``txn`` version), None for a new sink.

        Raises:
            ExportSinkError: the sink has rows but its ``txn`` expired (``delta.setTransactionRetentionDuration``).
        """
        if self.snapshot is None:
            return None
        w = self.snapshot.app_transaction_version(self.identity.app_id)
        if w is None:
            raise self._fail(
                f"its watermark (txn {self.identity.app_id!r}) has expired through "
                "delta.setTransactionRetentionDuration, so where to continue is unknown; unset that property "
                "on export sinks"
            )
        return w

    def check_schemas(self, schemas: Sequence[tuple[int, pa.Schema]]) -> StructType:
        """The sink schema after the run: each segment's may only add nullable columns to the one before.

        Raises:
            ExportSchemaChangeError: naming the first version whose schema change is not additive.
        """
        current = self.snapshot.schema if self.snapshot is not None else None
        for version, arrow in schemas:
            incoming = from_arrow_schema(arrow)
            if current is None:
                current = incoming
                continue
            problem = not_additive(current, incoming)
            if problem:
                raise ExportSchemaChangeError(
                    f"Cannot export changes of table {self.identity.source!r} to Delta table {self.location!r}: "
                    f"the schema change at version {version} is not additive ({problem}); a Delta sink only "
                    f"gains nullable columns. Nothing was exported. Help: export up to version {version - 1} "
                    "with ending_version, then continue into a new sink.",
                    version=version,
                )
            current = merge_schemas(current, incoming)
        assert current is not None
        return current

    def commit(
        self, schema: StructType, write: Callable[[WriteTarget], list[AddFile]], *, start: int, end: int
    ) -> tuple[int, list[AddFile]]:
        """Write the rows (``write`` with the sink's target) and commit them with ``txn(appId, end)``.

        Returns:
            The committed sink version and the files added.

        Raises:
            ConcurrentTransactionException: another run of this export landed first.
        """
        user_metadata = orjson.dumps({"cdfExport": {
            "sourceTableId": self.identity.source_table_id, "startVersion": start, "endVersion": end,
        }}).decode()
        if self.snapshot is None:
            return self._create(schema, write, end, user_metadata)
        txn = Transaction(self.snapshot, operation="WRITE", operation_parameters={"mode": "Append", "partitionBy": []})
        done = txn.app_transaction_version(self.identity.app_id)
        if done is not None and done >= end:
            raise ConcurrentTransactionException(
                f"Cannot commit the export of versions {start} to {end}: the sink already holds up to {done}",
                version=self.snapshot.version,
            )
        target_snapshot = stage_schema_evolution(
            txn, self.snapshot, _arrow(schema), schema_mode="merge", operation="append"
        )
        check_table_writable(target_snapshot)
        adds = write(WriteTarget.of(target_snapshot))
        txn.add(*adds)
        txn.set_app_transaction(self.identity.app_id, end)
        txn.user_metadata = user_metadata
        txn.operation_metrics = metrics_for_adds(adds)
        return txn.commit(), adds

    def _create(
        self, schema: StructType, write: Callable[[WriteTarget], list[AddFile]], end: int, user_metadata: str
    ) -> tuple[int, list[AddFile]]:
        """Version 0: protocol, metadata, the rows and the ``txn`` in one commit."""
        configuration = _identity_properties(self.identity)
        protocol = minimal_protocol(required_features(schema, configuration))
        now = int(time.time() * 1000)
        metadata = Metadata(id=str(uuid.uuid4()), schema_string=schema.to_json(), configuration=configuration,
                            created_time=now)
        target = WriteTarget(self.location, self.storage, schema, (), configuration, -1)
        adds = write(target)
        info: dict[str, Any] = {
            "timestamp": now, "operation": "WRITE",
            "operationParameters": {"mode": "Append", "partitionBy": "[]"},
            "isolationLevel": "Serializable", "isBlindAppend": True,
            "operationMetrics": {k: str(v) for k, v in metrics_for_adds(adds).items()},
            "engineInfo": ENGINE_INFO, "txnId": str(uuid.uuid4()), "userMetadata": user_metadata,
        }
        actions: list[Action] = [CommitInfo(info), protocol, metadata, SetTransaction(self.identity.app_id, end, now)]
        actions += adds
        body = b"\n".join(orjson.dumps(action_to_dict(a)) for a in actions) + b"\n"
        if not self.storage.write_if_absent(commit_path(0), body):
            for add in adds:
                self.storage.delete(add.path)
            raise ConcurrentTransactionException(
                f"Cannot create export sink {self.location!r}: a concurrent run of the export created it first",
                version=0, winning_version=0,
            )
        return 0, adds


def _arrow(schema: StructType) -> pa.Schema:
    return to_arrow_schema(schema)

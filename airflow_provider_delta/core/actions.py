"""Delta log actions (PROTOCOL.md "Actions") as frozen dataclasses.

Attributes are snake_case; ``from_dict``/``to_dict`` speak the protocol's camelCase JSON. Unknown
fields are tolerated on read. ``CommitInfo`` keeps its whole JSON object because the protocol
leaves its content free-form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import unquote

import orjson

from airflow_provider_delta.exceptions import LogCorruptedError

if TYPE_CHECKING:
    from collections.abc import Mapping

_EMPTY: Mapping[str, Any] = {}


def _require(d: Mapping[str, Any], key: str, action: str) -> Any:
    try:
        return d[key]
    except KeyError:
        raise LogCorruptedError(f"Cannot read {action} action: required field {key!r} is missing") from None


def _partition_columns(value: Any) -> tuple[str, ...]:
    # PROTOCOL.md "Change Metadata": partitionColumns is a required array of column names. Defaulting a
    # missing one to none would read a partitioned table's partition columns as nulls.
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or not all(isinstance(c, str) for c in value):
        raise LogCorruptedError(
            f"Cannot read metaData action: partitionColumns must be an array of names, found {value!r}"
        )
    return tuple(value)


def dv_unique_id(dv: Mapping[str, Any] | None) -> str | None:
    """The protocol's unique id of a deletion vector descriptor (storageType + pathOrInlineDv [+ @offset])."""
    if not dv:
        return None
    uid = f"{dv.get('storageType', '')}{dv.get('pathOrInlineDv', '')}"
    offset = dv.get("offset")
    return uid if offset is None else f"{uid}@{offset}"


def file_key(path: str, dv: Mapping[str, Any] | None) -> tuple[str, str | None]:
    """Reconciliation key of a file action: its (decoded) path plus its deletion vector's id.

    PROTOCOL.md "Reconciliation": the primary key of a logical file is (path, deletionVector.uniqueId).
    Paths are URIs; we compare them decoded so ``a%20b`` and ``a b`` name the same file.
    """
    return (unquote(path) if "%" in path else path, dv_unique_id(dv))


@dataclass(frozen=True, slots=True)
class Protocol:
    """The ``protocol`` action: reader/writer versions and table features."""

    min_reader_version: int
    min_writer_version: int
    reader_features: frozenset[str] | None = None
    writer_features: frozenset[str] | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Protocol:
        """Build from the action's JSON object."""
        rf, wf = d.get("readerFeatures"), d.get("writerFeatures")
        try:
            return cls(
                min_reader_version=int(_require(d, "minReaderVersion", "protocol")),
                min_writer_version=int(_require(d, "minWriterVersion", "protocol")),
                reader_features=frozenset(rf) if rf is not None else None,
                writer_features=frozenset(wf) if wf is not None else None,
            )
        except (TypeError, ValueError) as err:
            raise LogCorruptedError(f"Cannot read protocol action {dict(d)!r}: {err}") from None

    def to_dict(self) -> dict[str, Any]:
        """The action's JSON object."""
        out: dict[str, Any] = {
            "minReaderVersion": self.min_reader_version,
            "minWriterVersion": self.min_writer_version,
        }
        if self.reader_features is not None:
            out["readerFeatures"] = sorted(self.reader_features)
        if self.writer_features is not None:
            out["writerFeatures"] = sorted(self.writer_features)
        return out


@dataclass(frozen=True, slots=True)
class Format:
    """The data file format of a table (always parquet in practice)."""

    provider: str = "parquet"
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Metadata:
    """The ``metaData`` action: schema, partitioning and table properties."""

    id: str
    schema_string: str
    partition_columns: tuple[str, ...] = ()
    configuration: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None
    description: str | None = None
    format: Format = field(default_factory=Format)
    created_time: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Metadata:
        """Build from the action's JSON object."""
        fmt = d.get("format") or {}
        conf = d.get("configuration") or {}
        return cls(
            id=str(_require(d, "id", "metaData")),
            schema_string=d.get("schemaString") or "",
            partition_columns=_partition_columns(_require(d, "partitionColumns", "metaData")),
            configuration={str(k): str(v) if v is not None else "" for k, v in dict(conf).items()},
            name=d.get("name"),
            description=d.get("description"),
            format=Format(provider=fmt.get("provider", "parquet"), options=dict(fmt.get("options") or {})),
            created_time=d.get("createdTime"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The action's JSON object."""
        out: dict[str, Any] = {
            "id": self.id,
            "format": {"provider": self.format.provider, "options": dict(self.format.options)},
            "schemaString": self.schema_string,
            "partitionColumns": list(self.partition_columns),
            "configuration": dict(self.configuration),
        }
        if self.name is not None:
            out["name"] = self.name
        if self.description is not None:
            out["description"] = self.description
        if self.created_time is not None:
            out["createdTime"] = self.created_time
        return out


class AddFile(NamedTuple):
    """The ``add`` action: a data file (optionally with a deletion vector) that belongs to the table.

    A named tuple rather than a dataclass: snapshots hold 100,000s of these, and tuples are
    several times cheaper to build and smaller in memory.
    """

    path: str
    partition_values: Mapping[str, str | None]
    size: int
    modification_time: int
    data_change: bool = True
    stats: str | None = None
    tags: Mapping[str, str] | None = None
    deletion_vector: Mapping[str, Any] | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    clustering_provider: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AddFile:
        """Build from the action's JSON object."""
        return cls(
            path=_require(d, "path", "add"),
            partition_values=d.get("partitionValues") or _EMPTY,
            size=d.get("size") or 0,
            modification_time=d.get("modificationTime") or 0,
            data_change=bool(d.get("dataChange", True)),
            stats=d.get("stats"),
            tags=d.get("tags"),
            deletion_vector=d.get("deletionVector"),
            base_row_id=d.get("baseRowId"),
            default_row_commit_version=d.get("defaultRowCommitVersion"),
            clustering_provider=d.get("clusteringProvider"),
        )

    @property
    def key(self) -> tuple[str, str | None]:
        """The reconciliation key (path, deletion vector id)."""
        return file_key(self.path, self.deletion_vector)

    @property
    def num_records(self) -> int | None:
        """``numRecords`` from the stats, when recorded."""
        if not self.stats:
            return None

        value = orjson.loads(self.stats).get("numRecords")
        return int(value) if value is not None else None

    def to_dict(self) -> dict[str, Any]:
        """The action's JSON object."""
        out: dict[str, Any] = {
            "path": self.path,
            "partitionValues": dict(self.partition_values),
            "size": self.size,
            "modificationTime": self.modification_time,
            "dataChange": self.data_change,
        }
        if self.stats is not None:
            out["stats"] = self.stats
        if self.tags is not None:
            out["tags"] = dict(self.tags)
        if self.deletion_vector is not None:
            out["deletionVector"] = dict(self.deletion_vector)
        if self.base_row_id is not None:
            out["baseRowId"] = self.base_row_id
        if self.default_row_commit_version is not None:
            out["defaultRowCommitVersion"] = self.default_row_commit_version
        if self.clustering_provider is not None:
            out["clusteringProvider"] = self.clustering_provider
        return out


class RemoveFile(NamedTuple):
    """The ``remove`` action: a logical file no longer in the table (a tombstone until vacuum)."""

    path: str
    deletion_timestamp: int | None = None
    data_change: bool = True
    extended_file_metadata: bool | None = None
    partition_values: Mapping[str, str | None] | None = None
    size: int | None = None
    stats: str | None = None
    tags: Mapping[str, str] | None = None
    deletion_vector: Mapping[str, Any] | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RemoveFile:
        """Build from the action's JSON object."""
        return cls(
            path=_require(d, "path", "remove"),
            deletion_timestamp=d.get("deletionTimestamp"),
            data_change=bool(d.get("dataChange", True)),
            extended_file_metadata=d.get("extendedFileMetadata"),
            partition_values=d.get("partitionValues"),
            size=d.get("size"),
            stats=d.get("stats"),
            tags=d.get("tags"),
            deletion_vector=d.get("deletionVector"),
            base_row_id=d.get("baseRowId"),
            default_row_commit_version=d.get("defaultRowCommitVersion"),
        )

    @property
    def key(self) -> tuple[str, str | None]:
        """The reconciliation key (path, deletion vector id)."""
        return file_key(self.path, self.deletion_vector)

    def to_dict(self) -> dict[str, Any]:
        """The action's JSON object."""
        out: dict[str, Any] = {"path": self.path, "dataChange": self.data_change}
        optional = {
            "deletionTimestamp": self.deletion_timestamp,
            "extendedFileMetadata": self.extended_file_metadata,
            "partitionValues": dict(self.partition_values) if self.partition_values is not None else None,
            "size": self.size,
            "stats": self.stats,
            "tags": dict(self.tags) if self.tags is not None else None,
            "deletionVector": dict(self.deletion_vector) if self.deletion_vector is not None else None,
            "baseRowId": self.base_row_id,
            "defaultRowCommitVersion": self.default_row_commit_version,
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        return out


@dataclass(frozen=True, slots=True)
class AddCDCFile:
    """The ``cdc`` action: a file of change rows under ``_change_data/``."""

    path: str
    partition_values: Mapping[str, str | None]
    size: int
    data_change: bool = False
    tags: Mapping[str, str] | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AddCDCFile:
        """Build from the action's JSON object."""
        return cls(
            path=_require(d, "path", "cdc"),
            partition_values=d.get("partitionValues") or _EMPTY,
            size=d.get("size") or 0,
            data_change=bool(d.get("dataChange", False)),
            tags=d.get("tags"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The action's JSON object."""
        out: dict[str, Any] = {
            "path": self.path,
            "partitionValues": dict(self.partition_values),
            "size": self.size,
            "dataChange": self.data_change,
        }
        if self.tags is not None:
            out["tags"] = dict(self.tags)
        return out


@dataclass(frozen=True, slots=True)
class SetTransaction:
    """The ``txn`` action: the latest version an application (appId) has committed."""

    app_id: str
    version: int
    last_updated: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SetTransaction:
        """Build from the action's JSON object."""
        return cls(
            app_id=str(_require(d, "appId", "txn")),
            version=int(_require(d, "version", "txn")),
            last_updated=d.get("lastUpdated"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The action's JSON object."""
        out: dict[str, Any] = {"appId": self.app_id, "version": self.version}
        if self.last_updated is not None:
            out["lastUpdated"] = self.last_updated
        return out


@dataclass(frozen=True, slots=True)
class DomainMetadata:
    """The ``domainMetadata`` action: named configuration owned by a system or user domain."""

    domain: str
    configuration: str
    removed: bool = False

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DomainMetadata:
        """Build from the action's JSON object."""
        return cls(
            domain=str(_require(d, "domain", "domainMetadata")),
            configuration=d.get("configuration") or "",
            removed=bool(d.get("removed", False)),
        )

    def to_dict(self) -> dict[str, Any]:
        """The action's JSON object."""
        return {"domain": self.domain, "configuration": self.configuration, "removed": self.removed}


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """The ``commitInfo`` action. Free-form per the protocol; ``info`` keeps the whole object."""

    info: Mapping[str, Any]

    @property
    def operation(self) -> str | None:
        """The operation name, e.g. ``WRITE`` or ``MERGE``."""
        op = self.info.get("operation")
        return str(op) if op is not None else None

    @property
    def timestamp(self) -> int | None:
        """The in-commit timestamp when present, else the writer's ``timestamp`` (ms since epoch)."""
        ts = self.info.get("inCommitTimestamp", self.info.get("timestamp"))
        return int(ts) if ts is not None else None

    @property
    def in_commit_timestamp(self) -> int | None:
        """``inCommitTimestamp`` (PROTOCOL.md "In-Commit Timestamps"), when the writer recorded one."""
        ts = self.info.get("inCommitTimestamp")
        return int(ts) if ts is not None else None

    def to_dict(self) -> dict[str, Any]:
        """The action's JSON object."""
        return dict(self.info)


@dataclass(frozen=True, slots=True)
class Sidecar:
    """The ``sidecar`` action of a V2 checkpoint: a parquet file of add/remove actions."""

    path: str
    size_in_bytes: int | None = None
    modification_time: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Sidecar:
        """Build from the action's JSON object."""
        return cls(
            path=_require(d, "path", "sidecar"),
            size_in_bytes=d.get("sizeInBytes"),
            modification_time=d.get("modificationTime"),
        )


@dataclass(frozen=True, slots=True)
class CheckpointMetadata:
    """The ``checkpointMetadata`` action of a V2 checkpoint."""

    version: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CheckpointMetadata:
        """Build from the action's JSON object."""
        return cls(version=int(_require(d, "version", "checkpointMetadata")))


Action = (
    Protocol
    | Metadata
    | AddFile
    | RemoveFile
    | AddCDCFile
    | SetTransaction
    | DomainMetadata
    | CommitInfo
    | Sidecar
    | CheckpointMetadata
)


def action_from_dict(d: Mapping[str, Any]) -> Action | None:
    """Decode one line of a commit file (``{"add": {...}}``); unknown actions give ``None``."""
    for key, value in d.items():
        if value is None:
            continue
        if key == "add":
            return AddFile.from_dict(value)
        if key == "remove":
            return RemoveFile.from_dict(value)
        if key == "metaData":
            return Metadata.from_dict(value)
        if key == "protocol":
            return Protocol.from_dict(value)
        if key == "commitInfo":
            return CommitInfo(dict(value))
        if key == "txn":
            return SetTransaction.from_dict(value)
        if key == "cdc":
            return AddCDCFile.from_dict(value)
        if key == "domainMetadata":
            return DomainMetadata.from_dict(value)
        if key == "sidecar":
            return Sidecar.from_dict(value)
        if key == "checkpointMetadata":
            return CheckpointMetadata.from_dict(value)
    return None


_WIRE_NAMES: dict[type, str] = {
    AddFile: "add",
    RemoveFile: "remove",
    Metadata: "metaData",
    Protocol: "protocol",
    CommitInfo: "commitInfo",
    SetTransaction: "txn",
    AddCDCFile: "cdc",
    DomainMetadata: "domainMetadata",
}


def action_to_dict(action: Action) -> dict[str, Any]:
    """Encode one action as a commit-file line object (``{"add": {...}}``)."""
    name = _WIRE_NAMES.get(type(action))
    if name is None or not hasattr(action, "to_dict"):
        raise TypeError(f"Cannot write action {type(action).__name__}: not a commit action")
    return {name: action.to_dict()}

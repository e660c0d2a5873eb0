"""The Delta transaction-log engine: pure Python on pyarrow (no pyspark, no airflow).

Example:
    >>> from airflow_provider_delta.core import DeltaTable
    >>> t = DeltaTable("/data/events")  # doctest: +SKIP
    >>> t.version, len(t.files())       # doctest: +SKIP
"""

from __future__ import annotations

from airflow_provider_delta.core.actions import (
    AddCDCFile,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
)
from airflow_provider_delta.core.commands.schema.update import SchemaUpdate
from airflow_provider_delta.core.read.changes import ChangeBatch
from airflow_provider_delta.core.snapshot import Snapshot, load_snapshot
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.core.transaction.commit import Transaction
from airflow_provider_delta.exceptions import (
    ChangeDataFeedError,
    ChangeDataNotRecordedError,
    ChangeDataSchemaError,
    CommitError,
    CommitRetriesExhaustedError,
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    DataFileError,
    DDLParseError,
    DeltaConcurrentModificationException,
    DeltaError,
    LogCorruptedError,
    MetadataChangedException,
    PredicateError,
    ProtocolChangedException,
    ProtocolError,
    SchemaError,
    SchemaEvolutionError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)

__all__ = [
    "AddCDCFile",
    "AddFile",
    "ChangeBatch",
    "ChangeDataFeedError",
    "ChangeDataNotRecordedError",
    "ChangeDataSchemaError",
    "CommitError",
    "CommitInfo",
    "CommitRetriesExhaustedError",
    "ConcurrentAppendException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentDeleteReadException",
    "ConcurrentTransactionException",
    "DDLParseError",
    "DataFileError",
    "DeltaConcurrentModificationException",
    "DeltaError",
    "DeltaTable",
    "DomainMetadata",
    "LogCorruptedError",
    "Metadata",
    "MetadataChangedException",
    "PredicateError",
    "Protocol",
    "ProtocolChangedException",
    "ProtocolError",
    "RemoveFile",
    "SchemaError",
    "SchemaEvolutionError",
    "SchemaMismatchError",
    "SchemaUpdate",
    "SetTransaction",
    "Snapshot",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "Transaction",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
    "load_snapshot",
]

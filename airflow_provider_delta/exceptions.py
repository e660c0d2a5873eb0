"""The error tree of airflow-provider-delta. Standard library only: every layer may import it.

Callers branch on the type and read the fields; message text is for people.
"""

from __future__ import annotations


class DeltaError(Exception):
    """Base of every error the engine raises on purpose."""


class TableNotFoundError(DeltaError, FileNotFoundError):
    """The location holds no Delta table (no ``_delta_log`` with commits or checkpoints)."""

    def __init__(self, message: str, *, location: str | None = None) -> None:
        super().__init__(message)
        self.location = location


class NotADeltaTableError(DeltaError):
    """The location holds files but no Delta log: it is some other kind of data, not a Delta table."""

    def __init__(self, message: str, *, location: str | None = None) -> None:
        super().__init__(message)
        self.location = location


class TableAlreadyExistsError(DeltaError):
    """A table was to be created where one already exists."""

    def __init__(self, message: str, *, location: str | None = None) -> None:
        super().__init__(message)
        self.location = location


class VersionNotFoundError(DeltaError):
    """A requested version or timestamp lies outside the versions the log can reconstruct."""

    def __init__(
        self,
        message: str,
        *,
        version: int | None = None,
        earliest: int | None = None,
        latest: int | None = None,
    ) -> None:
        super().__init__(message)
        self.version = version
        self.earliest = earliest
        self.latest = latest


class ProtocolError(DeltaError):
    """The table's protocol forbids what was asked (reader/writer version, table features)."""


class UnsupportedFeatureError(ProtocolError):
    """The table needs a reader or writer feature this engine does not honour."""

    def __init__(
        self,
        message: str,
        *,
        features: tuple[str, ...] = (),
        supported: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.features = features
        self.supported = supported


class SchemaError(ValueError, DeltaError):
    """A schema is malformed or does not fit the operation."""


class SchemaEvolutionError(SchemaError):
    """A schema change is not allowed."""


class DDLParseError(SchemaEvolutionError):
    """A DDL statement (``ALTER TABLE ...``) does not parse; names the statement and position."""

    def __init__(self, message: str, *, statement: str, position: int) -> None:
        super().__init__(message)
        self.statement = statement
        self.position = position


class SchemaMismatchError(SchemaError):
    """Data does not match the table's schema."""


class PredicateError(ValueError, DeltaError):
    """A filter or predicate cannot be parsed or names an unknown column."""


class MergeError(ValueError, DeltaError):
    """A MERGE statement or builder is invalid: bad SQL, unknown or ambiguous column, type conflict.

    ``clause`` names the part of the statement at fault (``"WHEN MATCHED clause 1 (UPDATE)"``,
    ``"ON condition"``), ``column`` the column when there is one.
    """

    def __init__(self, message: str, *, clause: str | None = None, column: str | None = None) -> None:
        super().__init__(message)
        self.clause = clause
        self.column = column


class MergeMultipleMatchError(MergeError):
    """More than one source row matched the same target row for an update or delete (ambiguous)."""


class LogCorruptedError(DeltaError):
    """The transaction log is inconsistent: gaps, missing protocol/metadata, unreadable actions."""

    def __init__(self, message: str, *, version: int | None = None, path: str | None = None) -> None:
        super().__init__(message)
        self.version = version
        self.path = path


class DataFileError(DeltaError):
    """A data file or deletion vector referenced by the log is missing or unreadable."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class CommitError(DeltaError):
    """A commit could not be made; the table is unchanged."""

    def __init__(self, message: str, *, version: int | None = None) -> None:
        super().__init__(message)
        self.version = version


class DeltaConcurrentModificationException(CommitError):  # noqa: N818 - Delta Lake's own name
    """Another transaction committed first and its changes conflict with this one."""

    def __init__(
        self,
        message: str,
        *,
        version: int | None = None,
        read_version: int | None = None,
        winning_version: int | None = None,
        winning_operation: str | None = None,
    ) -> None:
        super().__init__(message, version=version)
        self.read_version = read_version
        self.winning_version = winning_version
        self.winning_operation = winning_operation


class ConcurrentAppendException(DeltaConcurrentModificationException):
    """Files were added that match what this transaction read."""


class ConcurrentDeleteReadException(DeltaConcurrentModificationException):
    """A file this transaction read was removed by the winner."""


class ConcurrentDeleteDeleteException(DeltaConcurrentModificationException):
    """The winner removed a file this transaction also removes."""


class MetadataChangedException(DeltaConcurrentModificationException):
    """The winner changed the table's metadata (schema, partitioning, properties)."""


class ConcurrentTransactionException(DeltaConcurrentModificationException):
    """The winner used the same application transaction id (or metadata domain)."""


class ProtocolChangedException(DeltaConcurrentModificationException):
    """The winner changed the table's protocol."""


class CommitRetriesExhaustedError(CommitError):
    """Every attempt to rebase and commit lost the race."""


class ChangeDataFeedError(DeltaError):
    """The change data feed cannot serve the requested range (``version`` names the commit at fault)."""

    def __init__(self, message: str, *, version: int | None = None) -> None:
        super().__init__(message)
        self.version = version


class ChangeDataNotRecordedError(ChangeDataFeedError):
    """A version in the requested range was committed without ``delta.enableChangeDataFeed``."""


class ChangeDataSchemaError(ChangeDataFeedError, SchemaError):
    """The requested range crosses a schema change the read schema cannot represent (rename, drop, type)."""


class ChangeDataExportError(ChangeDataFeedError):
    """A change data export cannot run as asked; nothing was written to the sink."""


class ExportRangeError(ChangeDataExportError):
    """The requested range would leave a gap or an overlap with what the sink holds, or is inverted.

    ``watermark`` is the last source version the sink holds (None for an empty sink).
    """

    def __init__(self, message: str, *, version: int | None = None, watermark: int | None = None) -> None:
        super().__init__(message, version=version)
        self.watermark = watermark


class ExportSinkError(ChangeDataExportError):
    """The sink holds another export: another format, another source table or another export name."""

    def __init__(self, message: str, *, sink: str | None = None) -> None:
        super().__init__(message)
        self.sink = sink


class ExportOptionError(ChangeDataExportError, ValueError):
    """An export option is invalid (a key column the table lacks, an envelope without keys, ...)."""


class ChangeDataMissingError(ChangeDataExportError):
    """A commit file or a change/data file of the range is gone (log cleanup, VACUUM); ``path`` names it."""

    def __init__(self, message: str, *, version: int | None = None, path: str | None = None) -> None:
        super().__init__(message, version=version)
        self.path = path


class ExportSchemaChangeError(ChangeDataExportError, SchemaError):
    """A schema change inside the range cannot be applied to the Delta sink (only added nullable columns can)."""


class ExportWatermarkError(ChangeDataExportError):
    """A registered change data exporter still needs files an operation would delete (``exporter``, ``version``)."""

    def __init__(
        self, message: str, *, exporter: str | None = None, version: int | None = None, path: str | None = None
    ) -> None:
        super().__init__(message, version=version)
        self.exporter = exporter
        self.path = path
class VacuumError(DeltaError):
    """VACUUM cannot run as asked: the retention is unsafe, LITE cannot see every file, or deletes failed."""


class RetentionPeriodError(ValueError, VacuumError):
    """The VACUUM retention is negative, or shorter than the table's with the safety check on."""

    def __init__(self, message: str, *, retention_hours: float | None = None, table_hours: int | None = None) -> None:
        super().__init__(message)
        self.retention_hours = retention_hours
        self.table_hours = table_hours


class VacuumLiteError(VacuumError):
    """VACUUM LITE cannot find every eligible file in the log (Delta's ``DELTA_CANNOT_VACUUM_LITE``)."""


class JobSpecError(ValueError, DeltaError):
    """A Spark job's JSON spec or result is malformed (unknown job, missing table, bad option)."""


class ExecutorEnvironmentError(DeltaError):
    """Spark's executors cannot run the data plane: their Python lacks pyarrow or this package."""

    def __init__(self, message: str, *, module: str | None = None) -> None:
        super().__init__(message)
        self.module = module


class ExecutorCapabilityError(DeltaError, NotImplementedError):
    """An executor lacks a capability a command asked of it (e.g. the Spark executor reading rows into the driver).

    ``executor`` is the executor's name (``local``, ``spark``), ``capability`` the capability asked
    for (``reader``, ``merger``, ``exporter``, ...).
    """

    def __init__(self, message: str, *, executor: str | None = None, capability: str | None = None) -> None:
        super().__init__(message)
        self.executor = executor
        self.capability = capability


class StorageError(DeltaError):
    """The table's storage (object store or file system) failed a request, after its retries.

    ``location`` is the table, ``path`` the file at fault (when there is one), ``transient`` says
    whether waiting and retrying may help (throttling, an endpoint that does not answer).
    """

    def __init__(
        self, message: str, *, location: str | None = None, path: str | None = None, transient: bool = False
    ) -> None:
        super().__init__(message)
        self.location = location
        self.path = path
        self.transient = transient


class StorageAccessDeniedError(StorageError):
    """The store refused the credentials (wrong or expired keys, missing permission)."""


class BucketNotFoundError(StorageError):
    """The bucket (or container) of the table's location does not exist."""


class StorageUnavailableError(StorageError):
    """The store did not answer or kept failing (throttling, 5xx, timeouts) through every retry."""


class InvalidStorageOptionsError(ValueError, StorageError):
    """``storage_options`` hold an unknown key or a bad value, or the location's scheme is unsupported."""


class CommitOutcomeUnknownError(CommitError, StorageError):
    """A commit's write failed in a way that hides whether it landed; ``version`` says which to check."""

    def __init__(self, message: str, *, version: int | None = None, location: str | None = None) -> None:
        CommitError.__init__(self, message, version=version)
        self.location = location
        self.path = None
        self.transient = True


__all__ = [
    "BucketNotFoundError",
    "ChangeDataExportError",
    "ChangeDataFeedError",
    "ChangeDataMissingError",
    "ChangeDataNotRecordedError",
    "ChangeDataSchemaError",
    "CommitError",
    "CommitOutcomeUnknownError",
    "CommitRetriesExhaustedError",
    "ConcurrentAppendException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentDeleteReadException",
    "ConcurrentTransactionException",
    "DDLParseError",
    "DataFileError",
    "DeltaConcurrentModificationException",
    "DeltaError",
    "ExecutorCapabilityError",
    "ExecutorEnvironmentError",
    "ExportOptionError",
    "ExportRangeError",
    "ExportSchemaChangeError",
    "ExportSinkError",
    "ExportWatermarkError",
    "InvalidStorageOptionsError",
    "JobSpecError",
    "LogCorruptedError",
    "MergeError",
    "MergeMultipleMatchError",
    "MetadataChangedException",
    "NotADeltaTableError",
    "PredicateError",
    "ProtocolChangedException",
    "ProtocolError",
    "RetentionPeriodError",
    "SchemaError",
    "SchemaEvolutionError",
    "SchemaMismatchError",
    "StorageAccessDeniedError",
    "StorageError",
    "StorageUnavailableError",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "VacuumError",
    "VacuumLiteError",
    "VersionNotFoundError",
]

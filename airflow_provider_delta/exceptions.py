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


__all__ = [
    "ChangeDataFeedError",
    "ChangeDataNotRecordedError",
    "ChangeDataSchemaError",
    "CommitError",
    "CommitRetriesExhaustedError",
    "ConcurrentAppendException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentDeleteReadException",
    "ConcurrentTransactionException",
    "DDLParseError",
    "DataFileError",
    "DeltaConcurrentModificationException",
    "DeltaError",
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
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "VacuumError",
    "VacuumLiteError",
    "VersionNotFoundError",
]

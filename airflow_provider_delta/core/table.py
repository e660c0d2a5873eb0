"""``DeltaTable``: the user's handle on one table at one version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core import history as _history
from airflow_provider_delta.core.log.segment import latest_version as _latest_version
from airflow_provider_delta.core.snapshot import Snapshot, load_snapshot
from airflow_provider_delta.core.storage import storage_for
from airflow_provider_delta.exceptions import DeltaError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pyarrow as pa

    from airflow_provider_delta.core.actions import AddFile, Metadata, Protocol, RemoveFile
    from airflow_provider_delta.core.history import TimestampLike
    from airflow_provider_delta.core.schema.types import StructType
    from airflow_provider_delta.core.storage import Storage


class DeltaTable:
    """A Delta table at one version: its metadata, files, data and history.

    Args:
        location: a path (``/data/t``) or URI (``file:///data/t``, ``s3://bucket/t``).
        version: load this version instead of the latest.
        timestamp: load the newest version committed at or before this time (a datetime, naive
            meaning UTC; a ``yyyy-MM-dd[ HH:mm:ss[.SSS]]`` string; or epoch milliseconds).
        storage_options: options for object stores (reserved).

    Raises:
        TableNotFoundError: no Delta table at ``location``.
        VersionNotFoundError: the version or timestamp is outside what the log can reconstruct.
        LogCorruptedError: the log is inconsistent (gaps, no protocol or metadata).
        UnsupportedFeatureError: the table needs a reader feature this engine lacks.

    Example:
        >>> t = DeltaTable("/data/events")                      # doctest: +SKIP
        >>> t.version, t.partition_columns                       # doctest: +SKIP
        (42, ('date',))
        >>> t.to_arrow(columns=["id"], filter="date = '2024-01-01'")  # doctest: +SKIP
    """

    def __init__(
        self,
        location: str,
        version: int | None = None,
        timestamp: TimestampLike | None = None,
        *,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        if version is not None and timestamp is not None:
            raise DeltaError("Cannot load table: pass either version or timestamp, not both")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise DeltaError(f"Cannot load table {location!r}: version must be an int, found {version!r}")
        self.location = str(location)
        self.storage: Storage = storage_for(self.location, storage_options)
        if timestamp is not None:
            latest = load_snapshot(self.storage, self.location)
            version = _history.version_at_timestamp(
                self.storage, self.location, timestamp, latest.configuration
            )
            self._snapshot = latest if version == latest.version else load_snapshot(
                self.storage, self.location, version
            )
        else:
            self._snapshot = load_snapshot(self.storage, self.location, version)

    @classmethod
    def latest_version(cls, location: str, *, storage_options: Mapping[str, str] | None = None) -> int:
        """The newest version of the table at ``location``, without replaying the log.

        Cheap: reads ``_last_checkpoint`` and probes for the commits after it.
        """
        storage = storage_for(str(location), storage_options)
        return _latest_version(storage, location=str(location))

    @property
    def snapshot(self) -> Snapshot:
        """The underlying snapshot."""
        return self._snapshot

    @property
    def version(self) -> int:
        """The loaded version."""
        return self._snapshot.version

    @property
    def protocol(self) -> Protocol:
        """The protocol action in force at this version."""
        return self._snapshot.protocol

    @property
    def metadata(self) -> Metadata:
        """The metaData action in force at this version."""
        return self._snapshot.metadata

    @property
    def schema(self) -> StructType:
        """The logical schema."""
        return self._snapshot.schema

    @property
    def partition_columns(self) -> tuple[str, ...]:
        """The partition columns."""
        return self._snapshot.partition_columns

    @property
    def configuration(self) -> Mapping[str, str]:
        """The table properties."""
        return self._snapshot.configuration

    def files(self) -> list[AddFile]:
        """The active data files (add actions) of this version."""
        return self._snapshot.files()

    def tombstones(self) -> list[RemoveFile]:
        """Remove actions still recorded in the log (files vacuum may delete)."""
        return self._snapshot.tombstones()

    def to_arrow(
        self,
        columns: Sequence[str] | None = None,
        filter: Any = None,  # noqa: A002 - the name users know from pyarrow and delta-rs
    ) -> pa.Table:
        """Read the table's rows into Arrow, with logical column names and partition columns.

        Args:
            columns: columns to return (default all, in schema order).
            filter: a SQL predicate (``"date > '2024-01-01' AND country = 'FR'"``), or DNF tuples
                (``[("country", "=", "FR")]``). Files that cannot match are skipped by partition
                values and statistics; the remaining rows are filtered exactly.

        Raises:
            PredicateError: the filter cannot be parsed or names an unknown column.
            DataFileError: a data file or deletion vector is missing or unreadable.
        """
        from airflow_provider_delta.core.scan import scan_to_arrow

        return scan_to_arrow(self._snapshot, columns=columns, filter=filter)

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """commitInfo per version, newest first; each dict has ``version`` and ``timestamp`` (ms)."""
        return _history.history(self.storage, self.version, limit)

    def load_version(self, version: int) -> DeltaTable:
        """The same table at another version."""
        return DeltaTable(self.location, version=version)

    def refresh(self) -> DeltaTable:
        """The same table at its newest version."""
        return DeltaTable(self.location)

    def __repr__(self) -> str:
        return f"DeltaTable({self.location!r}, version={self.version})"

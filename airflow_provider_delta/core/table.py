"""``DeltaTable``: the user's handle on one table at one version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from airflow_provider_delta.core.commands.checkpoint import checkpoint, cleanup_log
from airflow_provider_delta.core.commands.schema.update import SchemaUpdate
from airflow_provider_delta.core.log import history as _history
from airflow_provider_delta.core.log.segment import latest_version as _latest_version
from airflow_provider_delta.core.read.changes import read_changes
from airflow_provider_delta.core.read.scan import scan_to_arrow
from airflow_provider_delta.core.snapshot import Snapshot, load_snapshot
from airflow_provider_delta.core.storage import storage_for
from airflow_provider_delta.core.transaction.commit import Transaction
from airflow_provider_delta.exceptions import DeltaError

# The facade holds no logic: each method is one call into a command (core/commands/) or a reader.
# Lazy imports ("see top"): the data-changing commands load the expression engine (sqlglot, ~0.2 s);
# `import core` must stay cheap for the sensor, the trigger and DAG parsing, which only read the log.

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pyarrow as pa

    from airflow_provider_delta.core.actions import AddFile, Metadata, Protocol, RemoveFile
    from airflow_provider_delta.core.commands.merge.builder import MergeBuilder
    from airflow_provider_delta.core.commands.vacuum import VacuumResult
    from airflow_provider_delta.core.log.history import TimestampLike
    from airflow_provider_delta.core.read.changes import ChangeBatch
    from airflow_provider_delta.core.schema.types import StructType
    from airflow_provider_delta.core.storage import Storage


class DeltaTable:
    """A Delta table at one version: its metadata, files, data and history.

    Args:
        location: a path (``/data/t``) or URI (``file:///data/t``, ``s3://bucket/t``).
        version: load this version instead of the latest.
        timestamp: load the newest version committed at or before this time (a datetime, naive
            meaning UTC; a ``yyyy-MM-dd[ HH:mm:ss[.SSS]]`` string; or epoch milliseconds).
        storage_options: options for object stores, with delta-rs's keys (case-insensitive), e.g.
            ``{"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "eu-west-1",
            "AWS_ALLOW_HTTP": "true"}``; credentials not given are read from the environment
            (``AWS_ACCESS_KEY_ID`` ...). See README "Tables on S3".

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
        self._storage_options = dict(storage_options) if storage_options else None
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
        return scan_to_arrow(self._snapshot, columns=columns, filter=filter)

    def changes(
        self,
        starting_version: int | None = None,
        ending_version: int | None = None,
        starting_timestamp: TimestampLike | None = None,
        ending_timestamp: TimestampLike | None = None,
        *,
        allow_out_of_range: bool = False,
        max_files: int | None = None,
        max_bytes: int | None = None,
    ) -> pa.Table:
        """The change data feed: rows changed between two versions, inclusive (see ``core.read.changes``).

        The table's columns plus ``_change_type``, ``_commit_version`` and ``_commit_timestamp``.
        With ``max_files``/``max_bytes``, use :meth:`changes_batch` to learn where to continue.

        Example:
            >>> t.changes(3, 5).column("_change_type").to_pylist()  # doctest: +SKIP
            ['update_preimage', 'update_postimage', 'delete']
        """
        return self.changes_batch(
            starting_version, ending_version, starting_timestamp, ending_timestamp,
            allow_out_of_range=allow_out_of_range, max_files=max_files, max_bytes=max_bytes,
        ).changes

    def changes_batch(
        self,
        starting_version: int | None = None,
        ending_version: int | None = None,
        starting_timestamp: TimestampLike | None = None,
        ending_timestamp: TimestampLike | None = None,
        *,
        allow_out_of_range: bool = False,
        max_files: int | None = None,
        max_bytes: int | None = None,
    ) -> ChangeBatch:
        """Like :meth:`changes`, with the versions read and ``next_starting_version`` for the next call.

        Example:
            >>> batch = t.changes_batch(0, max_files=100)                  # doctest: +SKIP
            >>> batch.end_version, batch.next_starting_version, batch.is_complete  # doctest: +SKIP
            (4, 5, False)
        """
        self._snapshot = self._snapshot.advance()
        return read_changes(
            self._snapshot, starting_version=starting_version, ending_version=ending_version,
            starting_timestamp=starting_timestamp, ending_timestamp=ending_timestamp,
            allow_out_of_range=allow_out_of_range, max_files=max_files, max_bytes=max_bytes,
        )

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """commitInfo per version, newest first; each dict has ``version`` and ``timestamp`` (ms)."""
        return _history.history(self.storage, self.version, limit)

    # -- writes ---------------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        location: str,
        schema: StructType | pa.Schema,
        partition_by: Sequence[str] = (),
        properties: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        storage_options: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        """Create an empty table (version 0) with the smallest protocol its features need.

        Example:
            >>> DeltaTable.create("/data/t", pa.schema([("id", pa.int64()), ("d", pa.date32())]),
            ...                   partition_by=["d"], properties={"delta.enableChangeDataFeed": "true"})
            ... # doctest: +SKIP
        """
        from airflow_provider_delta.core.commands.create import create_table  # lazy: see top

        storage = storage_for(str(location), storage_options)
        create_table(storage, str(location), schema, partition_by=partition_by, properties=properties,
                     name=name, description=description)
        return cls(location, storage_options=storage_options)

    def _after(self, version: int | None) -> int | None:
        if version is not None:
            self._snapshot = self._snapshot.advance(version)
        return version

    def _latest(self) -> Snapshot:
        # Writes start from the newest version; advancing replays only the commits since ours.
        self._snapshot = self._snapshot.advance()
        return self._snapshot

    def append(
        self,
        data: pa.Table,
        app_id: str | None = None,
        app_version: int | None = None,
        *,
        isolation_level: Any = None,
        schema_mode: Literal["merge"] | None = None,
    ) -> int | None:
        """Append rows as new files; returns the new version.

        With ``app_id``/``app_version`` the write is idempotent: when the table already records
        that application at that version or later, nothing is written and None is returned.
        ``schema_mode="merge"`` (Delta's mergeSchema; default: the session's ``auto_merge_schema``)
        adds the data's new columns and struct fields to the schema in the same commit.
        """
        from airflow_provider_delta.core.commands.write import append  # lazy: see top

        return self._after(append(self._latest(), data, app_id=app_id, app_version=app_version,
                                  isolation_level=isolation_level, schema_mode=schema_mode))

    def overwrite(
        self,
        data: pa.Table,
        predicate: Any = None,
        *,
        isolation_level: Any = None,
        schema_mode: Literal["merge", "overwrite"] | None = None,
        partition_by: Sequence[str] | None = None,
    ) -> int:
        """Replace all rows, or only those matching ``predicate`` (Delta's replaceWhere), with ``data``.

        ``schema_mode="merge"`` evolves the schema; ``"overwrite"`` (Delta's overwriteSchema, not with a
        predicate) replaces the schema and the partitioning with ``partition_by`` (unpartitioned when
        not given, as in Delta).
        """
        from airflow_provider_delta.core.commands.write import overwrite  # lazy: see top

        version = overwrite(self._latest(), data, predicate, isolation_level=isolation_level,
                            schema_mode=schema_mode, partition_by=partition_by)
        self._after(version)
        return version

    def delete(self, predicate: Any = None, *, isolation_level: Any = None) -> int | None:
        """Delete rows matching ``predicate`` (all when None); None when no row matched."""
        from airflow_provider_delta.core.commands.delete import delete  # lazy: see top

        return self._after(delete(self._latest(), predicate, isolation_level=isolation_level))

    def update(
        self,
        predicate: Any = None,
        set: Mapping[str, str] | None = None,  # noqa: A002 - Delta's name
        *,
        isolation_level: Any = None,
    ) -> int | None:
        """Set columns to SQL expressions where ``predicate`` holds: ``update("id = 1", set={"v": "v + 1"})``."""
        from airflow_provider_delta.core.commands.update import update  # lazy: see top

        return self._after(update(self._latest(), predicate, set or {}, isolation_level=isolation_level))

    def merge(
        self,
        source: Any,
        condition: str,
        *,
        source_alias: str = "source",
        target_alias: str = "target",
        schema_evolution: bool | None = None,
        isolation_level: Any = None,
    ) -> MergeBuilder:
        """Start a MERGE of ``source`` (a pyarrow Table, batch reader or dataset) into this table.

        Add clauses with ``when_matched_update[_all]``, ``when_matched_delete``,
        ``when_not_matched_insert[_all]``, ``when_not_matched_by_source_update|delete``, then
        ``execute()`` for Delta's merge metrics and the new ``version``. ``schema_evolution=None``
        takes the session default (``auto_merge_schema``).

        Example:
            >>> t.merge(src, "t.id = s.id", source_alias="s", target_alias="t") \\
            ...     .when_matched_update_all().when_not_matched_insert_all().execute()  # doctest: +SKIP
        """
        from airflow_provider_delta.core.commands.merge.builder import MergeBuilder  # lazy: see top

        return MergeBuilder(self._latest, source, condition, source_alias=source_alias, target_alias=target_alias,
                            schema_evolution=schema_evolution, isolation_level=isolation_level,
                            on_commit=self._after)

    def merge_sql(self, statement: str, source: Any, *, isolation_level: Any = None) -> dict[str, Any]:
        """Run a ``MERGE [WITH SCHEMA EVOLUTION] INTO ... USING ...`` statement on this table.

        ``source`` is the source rows, or a mapping from the name after ``USING`` to the rows. The
        name after ``INTO`` is informational (this table is the target). Returns what ``execute()`` does.

        Example:
            >>> t.merge_sql("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * "
            ...             "WHEN NOT MATCHED THEN INSERT *", source=src)  # doctest: +SKIP
        """
        from airflow_provider_delta.core.commands.merge.builder import run_merge_sql  # lazy: see top

        return run_merge_sql(self._latest, statement, source, isolation_level=isolation_level, on_commit=self._after)

    def update_schema(self, *, isolation_level: Any = None) -> SchemaUpdate:
        """Stage schema and property changes, committed as one metadata change (see ``SchemaUpdate``).

        Example:
            >>> with t.update_schema() as u:                          # doctest: +SKIP
            ...     u.add_column("colB.nested", "STRING", after="field1").rename_column("colA", "a")
        """
        return SchemaUpdate(self._latest(), isolation_level=isolation_level, on_commit=self._after)

    def alter(self, statement: str) -> int | None:
        """Run one ``ALTER TABLE`` statement from Delta's docs; returns the new version.

        ``ADD COLUMNS``, ``ALTER|CHANGE COLUMN``, ``REPLACE COLUMNS``, ``RENAME COLUMN``,
        ``DROP COLUMN[S]``, ``SET``/``UNSET TBLPROPERTIES``; the ``ALTER TABLE <name>`` prefix is optional.

        Raises:
            DDLParseError: the statement does not parse (names statement and position).
            SchemaEvolutionError: the change is not allowed (names the column and the reason).

        Example:
            >>> t.alter("ALTER TABLE t ADD COLUMNS (colB.nested STRING AFTER field1)")  # doctest: +SKIP
        """
        return self.update_schema().apply(statement).commit()

    def transaction(
        self,
        *,
        operation: str = "WRITE",
        operation_parameters: Mapping[str, Any] | None = None,
        isolation_level: Any = None,
    ) -> Transaction:
        """A low-level transaction on the loaded version (a context manager that commits on exit)."""
        return Transaction(self._snapshot, operation=operation, operation_parameters=operation_parameters,
                           isolation_level=isolation_level)

    def checkpoint(self) -> int:
        """Write a checkpoint of the loaded version; returns its version."""
        return checkpoint(self._snapshot)

    def cleanup_log(self) -> list[str]:
        """Delete log files older than ``delta.logRetentionDuration`` that no version in it needs."""
        return cleanup_log(self._snapshot)

    # -- maintenance ----------------------------------------------------------------------------
    def vacuum(
        self,
        retention_hours: float | None = None,
        *,
        dry_run: bool = False,
        lite: bool = False,
        enforce_retention_duration: bool = True,
        respect_exports: bool = True,
    ) -> VacuumResult:
        """Delete files that no version within the retention needs (Delta's VACUUM).

        Args:
            retention_hours: keep files removed within this many hours (default: the table's
                ``delta.deletedFileRetentionDuration``, 7 days). Honoured as given; Delta 4.1 ignores
                values other than 0.
            dry_run: only list what would be deleted: nothing is deleted or committed.
            lite: take the candidates from the log since the last VACUUM (no listing; never deletes
                untracked files).
            enforce_retention_duration: refuse a retention shorter than the table's.

        Returns:
            ``files`` (relative paths, folders included) and Delta's ``metrics``; a real run also
            writes ``VACUUM START`` and ``VACUUM END`` commits.

        Raises:
            RetentionPeriodError: negative retention, or too short with the check on.
            VacuumLiteError: LITE cannot see every eligible file (run a FULL VACUUM).
            UnsupportedFeatureError: the table needs a writer feature this engine lacks.
            ExportWatermarkError: a registered change data exporter still needs a file that would be
                deleted (``respect_exports=False`` deletes it anyway).

        Example:
            >>> t.vacuum(retention_hours=168, dry_run=True).files  # doctest: +SKIP
            ['date=2024-01-01/part-00000-...-c000.snappy.parquet']
        """
        from airflow_provider_delta.core.commands.vacuum import vacuum  # lazy: loads the executor, see top

        result = vacuum(self._latest(), retention_hours, dry_run=dry_run, lite=lite,
                        enforce_retention_duration=enforce_retention_duration, respect_exports=respect_exports)
        self._after(result.end_version)
        return result

    def optimize(
        self,
        where: Any = None,
        *,
        target_file_size: int | None = None,
        zorder_by: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Compact small files per partition, or cluster them with ZORDER BY (Delta's OPTIMIZE).

        Args:
            where: a SQL predicate on partition columns only (``"date >= '2024-01-01'"``).
            target_file_size: the size files are compacted to, in bytes (default: the table's
                ``delta.targetFileSize``, else 1 GiB); smaller files are candidates.
            zorder_by: data columns to cluster by (every file of each selected partition is rewritten).

        Returns:
            ``version`` (None when there was nothing to do) and Delta's metrics (``numAddedFiles``,
            ``numRemovedFiles``, ``numAddedBytes``, ``numRemovedBytes``, ``minFileSize``,
            ``p25FileSize``, ..., ``numDeletionVectorsRemoved``).

        Raises:
            PredicateError: ``where`` references a data column.
            SchemaError: a ZORDER BY column is a partition column or does not exist.
            ConcurrentDeleteReadException: a concurrent commit removed a file being compacted.

        Example:
            >>> t.optimize(zorder_by=["id"])["numAddedFiles"]  # doctest: +SKIP
            2
        """
        from airflow_provider_delta.core.commands.optimize import optimize  # lazy: see top

        result = optimize(self._latest(), where, target_file_size=target_file_size, zorder_by=zorder_by)
        self._after(result["version"])
        return result

    def reorg(self, where: Any = None) -> dict[str, Any]:
        """``REORG TABLE ... APPLY (PURGE)``: rewrite files with soft-deleted rows or dropped columns.

        Files whose deletion vectors delete rows, and files still holding columns dropped under
        column mapping, are rewritten (small ones combined); ``where`` may use partition columns
        only. A second run finds nothing to do and commits nothing.

        Returns:
            ``version`` (None when nothing needed a purge) and OPTIMIZE's metrics.

        Example:
            >>> t.reorg()["numDeletionVectorsRemoved"]  # doctest: +SKIP
            3
        """
        from airflow_provider_delta.core.commands.reorg import reorg  # lazy: see top

        result = reorg(self._latest(), where)
        self._after(result["version"])
        return result

    def load_version(self, version: int) -> DeltaTable:
        """The same table at another version."""
        return DeltaTable(self.location, version=version, storage_options=self._storage_options)

    def refresh(self) -> DeltaTable:
        """The same table at its newest version."""
        return DeltaTable(self.location, storage_options=self._storage_options)

    def __repr__(self) -> str:
        return f"DeltaTable({self.location!r}, version={self.version})"

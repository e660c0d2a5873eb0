"""A snapshot: the state of a table at one version, reconstructed from its log."""

from __future__ import annotations

import gc
from functools import cached_property
from typing import TYPE_CHECKING

from airflow_provider_delta.core.log.context import reading
from airflow_provider_delta.core.log.file_index import FileIndex
from airflow_provider_delta.core.log.paths import LogFile, commit_path
from airflow_provider_delta.core.log.replay import ReplayState, read_commits, replay
from airflow_provider_delta.core.log.segment import LogSegment, build_segment, gallop_latest, newest_from
from airflow_provider_delta.core.protocol import check_readable
from airflow_provider_delta.core.schema.arrow import to_arrow_schema
from airflow_provider_delta.core.schema.types import schema_from_json
from airflow_provider_delta.exceptions import LogCorruptedError, VersionNotFoundError

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pyarrow as pa

    from airflow_provider_delta.core.actions import (
        AddFile,
        CommitInfo,
        DomainMetadata,
        Metadata,
        Protocol,
        RemoveFile,
        SetTransaction,
    )
    from airflow_provider_delta.core.schema.types import StructType
    from airflow_provider_delta.core.storage import Storage


class Snapshot:
    """The reconciled state of a table at ``version``. Immutable once built.

    Build one with :func:`load_snapshot`; ``DeltaTable`` wraps it for users.
    """

    def __init__(self, storage: Storage, location: str, segment: LogSegment, state: ReplayState) -> None:
        if state.protocol is None:
            raise _missing_action("protocol", location, segment)
        if state.metadata is None:
            raise _missing_action("metaData", location, segment)
        self.storage = storage
        self.location = location
        self.segment = segment
        self.version = segment.version
        self.protocol: Protocol = state.protocol
        self.metadata: Metadata = state.metadata
        self._files: FileIndex[AddFile] = FileIndex(state.files)
        self._tombstones: FileIndex[RemoveFile] = FileIndex(state.tombstones)
        self._txns = state.txns
        self._domains = state.domains
        self._last_commit_info = state.last_commit_info
        self.protocol_source = state.protocol_source
        self.metadata_source = state.metadata_source

    @classmethod
    def before_creation(cls, storage: Storage, location: str, protocol: Protocol, metadata: Metadata) -> Snapshot:
        """The state "before version 0" of a table about to be created with ``protocol`` and ``metadata``.

        Version -1, no files: a transaction on it commits version 0, and must stage the protocol and
        metadata itself (:func:`~airflow_provider_delta.core.commands.create.stage_creation`), so that
        a table is created together with its first data in one commit, as Delta does for a write to a
        new path. A concurrent creation of the same table is a conflict (``MetadataChangedException``).
        """
        state = ReplayState(protocol=protocol, metadata=metadata)
        return cls(storage, location, LogSegment(-1, None, ()), state)

    @property
    def is_new_table(self) -> bool:
        """Whether this is :meth:`before_creation`'s state (nothing committed yet)."""
        return self.version < 0

    def advance(self, version: int | None = None) -> Snapshot:
        """This table at a newer ``version`` (the latest when None), applying only the new commits.

        Cost grows with the new commits, not with the table: the file index is shared.

        Raises:
            VersionNotFoundError: ``version`` is older than this snapshot or newer than the latest.
        """
        latest = newest_from(self.storage, self.version)
        if latest is None:  # this snapshot's own commit is gone (cleaned up): probe from the next one
            nxt = commit_path(self.version + 1)
            latest = gallop_latest(self.storage, self.version + 1) if self.storage.exists(nxt) else self.version
        target = latest if version is None else version
        if target < self.version or target > latest:
            raise VersionNotFoundError(
                f"Cannot advance table {self.location!r} from version {self.version} to {target}: "
                f"available versions are {self.version} to {latest}",
                version=target,
                latest=latest,
            )
        if target == self.version:
            return self
        delta = ReplayState(protocol=self.protocol, metadata=self.metadata, txns=dict(self._txns),
                            domains=dict(self._domains), protocol_source=self.protocol_source,
                            metadata_source=self.metadata_source, _noted=(self.protocol, self.metadata))
        commits = [LogFile(f"{v:020d}.json", "commit", v) for v in range(self.version + 1, target + 1)]
        for lf, actions in read_commits(self.storage, commits):
            with reading(self.location, lf.version, lf.path, what="commit"):
                delta.apply_actions(actions, version=lf.version)
            delta.note_sources(lf.path)
        segment = LogSegment(target, self.segment.checkpoint, self.segment.commits + tuple(commits))
        new = Snapshot.__new__(Snapshot)
        new.storage, new.location, new.segment, new.version = self.storage, self.location, segment, target
        new.protocol, new.metadata = delta.protocol or self.protocol, delta.metadata or self.metadata
        # Replay keeps files and tombstones disjoint: a key's last action decides which side holds it.
        new._files = self._files.updated(delta.files.items(), delta.tombstones.keys())
        new._tombstones = self._tombstones.updated(delta.tombstones.items(), delta.files.keys())
        new._txns, new._domains, new._last_commit_info = delta.txns, delta.domains, delta.last_commit_info
        new.protocol_source, new.metadata_source = delta.protocol_source, delta.metadata_source
        if new.protocol is not self.protocol:
            new.check_readable()
        return new

    @cached_property
    def schema(self) -> StructType:
        """The table's logical schema."""
        source = self.metadata_source
        if not self.metadata.schema_string:
            raise LogCorruptedError(
                f"Cannot read the schema of table {self.location!r} at version {self.version}: "
                f"metaData has no schemaString (in {source!r})",
                version=self.version,
                path=source,
            )
        with reading(self.location, self.version, source, what="metaData of"):
            return schema_from_json(self.metadata.schema_string)

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        """The table's logical schema as Arrow.

        Raises:
            UnsupportedFeatureError: a column's type has no Arrow equivalent (the error names the
                table, version and the file the metaData came from).
        """
        with reading(self.location, self.version, self.metadata_source, what="metaData of"):
            return to_arrow_schema(self.schema)

    @property
    def partition_columns(self) -> tuple[str, ...]:
        """The partition columns, in the order the metadata lists them."""
        return self.metadata.partition_columns

    @property
    def configuration(self) -> Mapping[str, str]:
        """The table properties (``delta.*`` and user properties)."""
        return self.metadata.configuration

    def files(self) -> list[AddFile]:
        """The active data files (add actions)."""
        return list(self._files.values())

    @property
    def num_files(self) -> int:
        """How many data files are active."""
        return len(self._files)

    def tombstones(self) -> list[RemoveFile]:
        """The remove actions still remembered by the log (vacuum candidates)."""
        return list(self._tombstones.values())

    @property
    def transactions(self) -> Mapping[str, SetTransaction]:
        """The newest ``txn`` per application id."""
        return self._txns

    def app_transaction_version(self, app_id: str) -> int | None:
        """The newest version the application ``app_id`` committed, or None."""
        txn = self._txns.get(app_id)
        return txn.version if txn is not None else None

    @property
    def domain_metadata(self) -> Mapping[str, DomainMetadata]:
        """Active domain metadata by domain name."""
        return self._domains

    @property
    def commit_info(self) -> CommitInfo | None:
        """The commitInfo of this version's commit, when it was replayed from a commit file."""
        if self.segment.commits and self.segment.commits[-1].version == self.version:
            return self._last_commit_info
        return None

    def check_readable(self) -> None:
        """Raise ``UnsupportedFeatureError`` unless the engine can read this table's data."""
        with reading(self.location, self.version, self.protocol_source, what="protocol of"):
            check_readable(self.protocol, location=self.location, version=self.version)


def _missing_action(action: str, location: str, segment: LogSegment) -> LogCorruptedError:
    parts = []
    if segment.checkpoint is not None:
        parts.append(segment.checkpoint.files[0].path)
    if segment.commits:
        first, last = segment.commits[0], segment.commits[-1]
        parts.append(first.path if first is last else f"{first.path} to {last.path}")
    return LogCorruptedError(
        f"Cannot load version {segment.version} of table {location!r}: the log has no {action} action "
        f"(replayed {' and '.join(parts) or 'nothing'})",
        version=segment.version,
        path=segment.commits[-1].path if segment.commits else None,
    )


def _promote_young_objects() -> None:
    """Move every object the collector tracks into its oldest generation, without scanning them.

    The state's objects are long-lived, but they are all young: the first collection after replay
    would traverse each of them (~30 ms per 100,000 files), then again on promotion to the middle
    generation. ``freeze`` + ``unfreeze`` moves them straight to the oldest generation in constant
    time. It is skipped when the application froze objects itself (``unfreeze`` would release them).
    """
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def load_snapshot(storage: Storage, location: str, version: int | None = None) -> Snapshot:
    """Replay the log of ``location`` up to ``version`` (the latest when None).

    Raises:
        TableNotFoundError: there is no Delta table at ``location``.
        VersionNotFoundError: ``version`` cannot be reconstructed.
        LogCorruptedError: the log is inconsistent.
        UnsupportedFeatureError: the table needs a reader feature this engine lacks.
    """
    segment = build_segment(storage, version, location=location)
    # Replay allocates 100,000s of small objects and frees none: the cyclic collector would only
    # rescan them again and again, so it waits until the state is built.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        state = replay(storage, segment, location=location)
    finally:
        if gc_was_enabled:
            _promote_young_objects()
            gc.enable()
    snapshot = Snapshot(storage, location, segment, state)
    snapshot.check_readable()
    return snapshot

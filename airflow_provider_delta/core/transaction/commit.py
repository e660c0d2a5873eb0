"""Optimistic transactions: read a snapshot, stage actions, validate and commit.

Phase 1 (read) records what the transaction looked at: predicates, files, the whole table, its
application ids. Phase 2 (write) stages actions. Phase 3 writes ``N+1.json`` with an atomic
put-if-absent; when another writer took that version first, every winning commit is checked by
:mod:`airflow_provider_delta.core.transaction.conflicts` and, when none conflicts, the transaction is rebased
onto the newest version and retried with backoff and jitter.

Example:
    >>> with table.transaction(operation="DELETE") as txn:     # doctest: +SKIP
    ...     for add in txn.read_files("country = 'FR'"):
    ...         txn.remove(add)
"""

from __future__ import annotations

import random
import time
import uuid
from typing import TYPE_CHECKING, Any, Literal

import orjson

from airflow_provider_delta import __version__
from airflow_provider_delta.core.actions import (
    AddCDCFile,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    action_to_dict,
    file_key,
)
from airflow_provider_delta.core.change_data import check_cdf_columns
from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.log.replay import commit_info_of, parse_commit, read_commit
from airflow_provider_delta.core.properties import protocol_for_metadata
from airflow_provider_delta.core.protocol import check_writable
from airflow_provider_delta.core.read.scan import decoded_partition_values, plan_scan
from airflow_provider_delta.core.schema.mapping import column_mapping_mode
from airflow_provider_delta.core.schema.types import schema_from_json
from airflow_provider_delta.core.transaction.conflicts import (
    IsolationLevel,
    ReadSummary,
    WinningCommit,
    check_conflicts,
)
from airflow_provider_delta.core.transaction.post_commit import auto_checkpoint
from airflow_provider_delta.exceptions import CommitError, CommitRetriesExhaustedError, DeltaError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import TracebackType

    from airflow_provider_delta.core.snapshot import Snapshot

ENGINE_INFO = f"airflow-provider-delta/{__version__}"
DEFAULT_MAX_ATTEMPTS = 50


def _now_ms() -> int:
    return int(time.time() * 1000)


def _stringify(params: Mapping[str, Any] | None) -> dict[str, str]:
    # Delta writes operationParameters and operationMetrics values as strings.
    out: dict[str, str] = {}
    for k, v in (params or {}).items():
        if v is None:
            continue
        out[k] = v if isinstance(v, str) else orjson.dumps(v).decode()
    return out


def refuse_if_append_only(metadata: Metadata, location: str, operation: str, version: int) -> None:
    """Raise when the table is append-only (``delta.appendOnly``): ``operation`` would remove data.

    Operations call it before writing any file, as Delta's DELETE/UPDATE/MERGE do up front; commits
    that remove data check it again.

    Raises:
        CommitError: the table is append-only.
    """
    if metadata.configuration.get("delta.appendOnly", "false").lower() == "true":
        raise CommitError(
            f"Cannot commit {operation} to table {location!r}: the table is append-only "
            "(delta.appendOnly=true) and this transaction removes data. Help: unset delta.appendOnly first.",
            version=version,
        )


class Transaction:
    """One optimistic transaction on a table, opened at ``snapshot.version``.

    Use as a context manager (commits on a clean exit, discards on an exception) or call
    :meth:`commit` yourself. Writes ``isBlindAppend``, ``readVersion`` and ``isolationLevel`` into
    ``commitInfo`` from what the transaction read and staged.
    """

    def __init__(
        self,
        snapshot: Snapshot,
        *,
        operation: str = "WRITE",
        operation_parameters: Mapping[str, Any] | None = None,
        isolation_level: Literal["Serializable", "WriteSerializable"] | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        self.snapshot = snapshot
        self.storage = snapshot.storage
        self.read_version = snapshot.version
        self.operation = operation
        self.operation_parameters: dict[str, Any] = dict(operation_parameters or {})
        self.operation_metrics: dict[str, Any] = {}
        configured = snapshot.configuration.get("delta.isolationLevel", "WriteSerializable")
        self.isolation_level: IsolationLevel = isolation_level or (
            "Serializable" if configured.lower() == "serializable" else "WriteSerializable"
        )
        self.max_attempts = max_attempts
        self._adds: list[AddFile] = []
        self._removes: list[RemoveFile] = []
        self._cdc: list[AddCDCFile] = []
        self._metadata: Metadata | None = None
        self._protocol: Protocol | None = None
        self._txns: list[SetTransaction] = []
        self._domains: list[DomainMetadata] = []
        self._read_predicates: list[Any] = []
        self._read_paths: set[str] = set()
        self._read_whole_table = False
        self._read_app_ids: set[str] = set()
        self.committed_version: int | None = None
        #: Delta's free-form ``commitInfo.userMetadata`` (a string), written when set.
        self.user_metadata: str | None = None

    # -- phase 1: reads --------------------------------------------------------------------
    def read_files(self, predicate: Any = None) -> list[AddFile]:
        """The active files that may hold rows matching ``predicate`` (all files when None).

        Records the predicate and the files as read, for conflict detection.
        """
        if predicate is None:
            self.read_whole_table()
            files = self.snapshot.files()
        else:
            plan = plan_scan(self.snapshot, filter=predicate)
            self._read_predicates.append(plan.predicate)
            files = list(plan.files)
        self._read_paths.update(file_key(f.path, None)[0] for f in files)
        return files

    def mark_files_read(self, *files: AddFile) -> None:
        """Record exactly these files as read (no predicate): a winner that removes one of them conflicts.

        Compaction reads only the files it rewrites, so a concurrent delete of any other file is no
        conflict, and under SnapshotIsolation neither is an append.
        """
        self._read_paths.update(file_key(f.path, None)[0] for f in files)

    def read_whole_table(self) -> None:
        """Record that the transaction depends on every file of the table."""
        self._read_whole_table = True

    def app_transaction_version(self, app_id: str) -> int | None:
        """The newest version ``app_id`` committed; recorded as read (concurrent use conflicts)."""
        self._read_app_ids.add(app_id)
        return self.snapshot.app_transaction_version(app_id)

    # -- phase 2: staging --------------------------------------------------------------------
    def add(self, *files: AddFile) -> Transaction:
        """Stage data files to add."""
        self._adds.extend(files)
        return self

    def remove(self, *files: AddFile | RemoveFile, data_change: bool = True) -> Transaction:
        """Stage files to remove (an ``AddFile`` becomes its tombstone)."""
        now = _now_ms()
        for f in files:
            if isinstance(f, AddFile):
                f = RemoveFile(
                    path=f.path,
                    deletion_timestamp=now,
                    data_change=data_change,
                    extended_file_metadata=True,
                    partition_values=f.partition_values,
                    size=f.size,
                    stats=f.stats,
                    tags=f.tags,
                    deletion_vector=f.deletion_vector,
                    base_row_id=f.base_row_id,
                    default_row_commit_version=f.default_row_commit_version,
                )
            self._removes.append(f)
        return self

    def add_cdc(self, *files: AddCDCFile) -> Transaction:
        """Stage change-data files (``_change_data/``)."""
        self._cdc.extend(files)
        return self

    def update_metadata(self, metadata: Metadata) -> Transaction:
        """Stage a new metaData action (schema, partitioning, properties)."""
        self._metadata = metadata
        return self

    def update_protocol(self, protocol: Protocol) -> Transaction:
        """Stage a new protocol action."""
        self._protocol = protocol
        return self

    def set_app_transaction(self, app_id: str, version: int) -> Transaction:
        """Record that application ``app_id`` committed ``version`` (idempotent writes)."""
        self._read_app_ids.add(app_id)
        self._txns.append(SetTransaction(app_id, version, _now_ms()))
        return self

    def set_domain_metadata(self, domain: str, configuration: str, *, removed: bool = False) -> Transaction:
        """Stage a domainMetadata action."""
        self._domains.append(DomainMetadata(domain, configuration, removed))
        return self

    @property
    def is_blind_append(self) -> bool:
        """Whether the transaction only adds data files without having read anything."""
        return (
            not self._removes
            and self._metadata is None
            and self._protocol is None
            and not self._read_whole_table
            and not self._read_predicates
            and not self._read_paths
            and all(a.data_change for a in self._adds)
        )

    @property
    def has_data_change(self) -> bool:
        """Whether any staged file action changes data (``dataChange=true``)."""
        return any(a.data_change for a in self._adds) or any(r.data_change for r in self._removes)

    # -- phase 3: validate and commit ----------------------------------------------------------
    def _effective_isolation(self) -> IsolationLevel:
        # Delta: a transaction that changes no data (OPTIMIZE-like rewrites) runs at SnapshotIsolation.
        if not self.has_data_change and self._metadata is None and self._protocol is None:
            return "SnapshotIsolation"
        return self.isolation_level

    def _check_metadata(self) -> None:
        """Validate a staged metadata change and upgrade the protocol its properties need."""
        if self._metadata is None:
            return

        schema = schema_from_json(self._metadata.schema_string)
        check_cdf_columns(schema, self._metadata.configuration)
        upgraded = protocol_for_metadata(
            self._protocol or self.snapshot.protocol, schema, self._metadata.configuration,
            self.snapshot.configuration,
        )
        if upgraded is not None:
            self._protocol = upgraded

    def _check_writable(self) -> None:
        self._check_metadata()
        protocol = self._protocol or self.snapshot.protocol
        check_writable(protocol, location=self.snapshot.location, version=self.read_version)
        if any(r.data_change for r in self._removes):
            refuse_if_append_only(self._metadata or self.snapshot.metadata, self.snapshot.location,
                                  self.operation, self.read_version)

    def _commit_info(self, version: int) -> CommitInfo:
        info: dict[str, Any] = {
            "timestamp": _now_ms(),
            "operation": self.operation,
            "operationParameters": _stringify(self.operation_parameters),
            "isolationLevel": self._effective_isolation(),
            "isBlindAppend": self.is_blind_append,
            "operationMetrics": _stringify(self.operation_metrics),
            "engineInfo": ENGINE_INFO,
            "txnId": str(uuid.uuid4()),
        }
        if version > 0:
            info["readVersion"] = self.read_version
        if self.user_metadata is not None:
            info["userMetadata"] = self.user_metadata
        metadata = self._metadata or self.snapshot.metadata if version > 0 else self._metadata
        if metadata is not None and metadata.configuration.get(
            "delta.enableInCommitTimestamps", "false"
        ).lower() == "true":
            info["inCommitTimestamp"] = self._next_ict(version, info["timestamp"])
        return CommitInfo(info)

    def _next_ict(self, version: int, now: int) -> int:
        # PROTOCOL.md "In-Commit Timestamps": strictly greater than the previous commit's.
        if version == 0:
            return now
        try:
            previous = commit_info_of(read_commit(self.storage, commit_path(version - 1), version - 1))
        except DeltaError:
            return now
        prev_ts = previous.timestamp if previous is not None else None
        return max(now, prev_ts + 1) if prev_ts is not None else now

    def _encode(self, version: int) -> bytes:
        actions: list[Any] = [self._commit_info(version)]
        if self._protocol is not None:
            actions.append(self._protocol)
        if self._metadata is not None:
            actions.append(self._metadata)
        actions += self._txns + self._domains + self._removes + self._adds + self._cdc
        return b"\n".join(orjson.dumps(action_to_dict(a)) for a in actions) + b"\n"

    def _summary(self) -> ReadSummary:
        snapshot = self.snapshot
        mode = column_mapping_mode(snapshot.configuration)
        part_fields = []
        if self._read_predicates:
            lowered = {c.lower() for c in snapshot.partition_columns}
            part_fields = [f for f in snapshot.schema if f.name.lower() in lowered]

        def partition_values_of(add: dict[str, Any]) -> dict[str, Any]:
            return decoded_partition_values(add.get("partitionValues") or {}, part_fields, mode)

        return ReadSummary(
            read_version=self.read_version,
            isolation_level=self._effective_isolation(),
            read_whole_table=self._read_whole_table,
            read_predicates=self._read_predicates,
            read_file_keys=self._read_paths,
            removed_paths={file_key(r.path, None)[0] for r in self._removes},
            app_ids=self._read_app_ids,
            domains={d.domain for d in self._domains},
            changes_protocol=self._protocol is not None,
            changes_metadata=self._metadata is not None,
            partition_values_of=partition_values_of,
            location=snapshot.location,
            operation=self.operation,
        )

    def commit(self) -> int:
        """Validate and write the commit; return the committed version.

        Raises:
            DeltaConcurrentModificationException: a winning commit conflicts (a subclass says how).
            CommitRetriesExhaustedError: every attempt lost the race to non-conflicting commits.
            UnsupportedFeatureError: the table's protocol has a writer feature this engine lacks.
        """
        if self.committed_version is not None:
            raise CommitError(f"Cannot commit: this transaction already committed version {self.committed_version}")
        self._check_writable()
        version = self.read_version + 1
        summary: ReadSummary | None = None
        for attempt in range(self.max_attempts):
            if self.storage.write_if_absent(commit_path(version), self._encode(version)):
                self.committed_version = version
                self._post_commit(version)
                return version
            summary = summary or self._summary()
            # Back off first, then find the next free version: a version found before the sleep has
            # often been taken during it (under steady contention every retry would lose again).
            time.sleep(random.uniform(0, min(0.5, 0.005 * 2 ** min(attempt, 7))))
            version = self._check_winners(summary, version)
        raise CommitRetriesExhaustedError(
            f"Cannot commit {self.operation} to table {self.snapshot.location!r}: lost the race "
            f"{self.max_attempts} times (last attempted version {version}). Help: reduce concurrent "
            "writers or raise max_attempts.",
            version=version,
        )

    def _check_winners(self, summary: ReadSummary, first: int) -> int:
        """Check every commit from ``first`` on; return the next version to try."""
        version = first
        while True:
            path = commit_path(version)
            try:
                data = self.storage.read_bytes(path)
            except FileNotFoundError:
                # Nobody has committed this version yet (commit files appear whole, never change).
                return version
            actions = parse_commit(data, path=path, version=version)
            check_conflicts(summary, WinningCommit.from_actions(version, actions), can_write=check_writable)
            version += 1

    def _post_commit(self, version: int) -> None:
        metadata = self._metadata or self.snapshot.metadata

        auto_checkpoint(self.storage, self.snapshot.location, version, metadata.configuration,
                        snapshot=self.snapshot)

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None and self.committed_version is None:
            self.commit()


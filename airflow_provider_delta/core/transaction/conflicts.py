"""Check a losing transaction against the commits that won the race (Delta's conflict checker).

Delta Lake's rules (its ``ConflictChecker``), applied to each winning commit in version order:

1. protocol: the winner changed the protocol and this transaction changes it too, or the new
   protocol is one this engine cannot write -> ``ProtocolChangedException``;
2. metadata: the winner changed metaData -> ``MetadataChangedException``;
3. domains: both touched the same metadata domain -> ``ConcurrentTransactionException``;
4. appends: the winner added data files this transaction should have read -> ``ConcurrentAppendException``.
   Under WriteSerializable a winner's blind append does not count; under Serializable it does;
   a transaction that changes no data runs at SnapshotIsolation and never checks appends;
   read predicates are compared with partition values only (data columns may always match);
5. deletes vs reads: the winner removed a file this transaction read -> ``ConcurrentDeleteReadException``;
6. deletes vs deletes: both removed the same file -> ``ConcurrentDeleteDeleteException``;
7. app ids: the winner committed a txn for an appId this transaction depends on ->
   ``ConcurrentTransactionException``.

A transaction that passes every check is rebased onto the winner and retried.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from airflow_provider_delta.core.actions import CommitInfo, Protocol, file_key
from airflow_provider_delta.exceptions import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    DeltaConcurrentModificationException,
    MetadataChangedException,
    ProtocolChangedException,
    UnsupportedFeatureError,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


IsolationLevel = Literal["Serializable", "WriteSerializable", "SnapshotIsolation"]
FileKey = tuple[str, "str | None"]


@dataclass
class WinningCommit:
    """What a winning commit did, summarised from its actions."""

    version: int
    operation: str | None = None
    is_blind_append: bool = False
    protocol: dict[str, Any] | None = None
    metadata_changed: bool = False
    # Every add action, dataChange=false ones (OPTIMIZE, REORG) included: Delta's WinningCommitSummary
    # counts all of a commit's added files unless the commit is a blind append (changedDataAddedFiles).
    added: list[dict[str, Any]] = field(default_factory=list)
    removed: list[dict[str, Any]] = field(default_factory=list)
    app_ids: set[str] = field(default_factory=set)
    domains: set[str] = field(default_factory=set)

    @classmethod
    def from_actions(cls, version: int, actions: Iterable[dict[str, Any]]) -> WinningCommit:
        """Summarise a commit file's actions."""
        w = cls(version)
        info: CommitInfo | None = None
        for action in actions:
            if (add := action.get("add")) is not None:
                w.added.append(add)
            elif (remove := action.get("remove")) is not None:
                w.removed.append(remove)
            elif action.get("metaData") is not None:
                w.metadata_changed = True
            elif (protocol := action.get("protocol")) is not None:
                w.protocol = protocol
            elif (txn := action.get("txn")) is not None:
                w.app_ids.add(str(txn.get("appId")))
            elif (dm := action.get("domainMetadata")) is not None:
                w.domains.add(str(dm.get("domain")))
            elif (ci := action.get("commitInfo")) is not None:
                info = CommitInfo(ci)
        if info is not None:
            w.operation = info.operation
            w.is_blind_append = bool(info.info.get("isBlindAppend", False))
        return w


@dataclass
class ReadSummary:
    """What the losing transaction read and wrote, for the checks above."""

    read_version: int
    isolation_level: IsolationLevel
    read_whole_table: bool
    read_predicates: list[Any]  # bound expressions, evaluated on partition values
    read_file_keys: set[str]  # decoded paths of files read
    removed_paths: set[str]
    app_ids: set[str]
    domains: set[str]
    changes_protocol: bool
    changes_metadata: bool
    partition_values_of: Callable[[dict[str, Any]], dict[str, Any]]
    location: str = ""  # the table, for messages
    operation: str = ""  # this transaction's operation, for messages


def _path(action: dict[str, Any]) -> str:
    return file_key(str(action.get("path", "")), None)[0]


def _help(kind: str) -> str:
    return {
        "append": "Help: re-run the operation so it reads the new files, narrow its condition to other "
        "partitions, or use isolation_level='WriteSerializable' if the winner was a blind append.",
        "delete-read": "Help: re-run the operation on the new version; files it read were rewritten or "
        "deleted by the other transaction.",
        "delete-delete": "Help: re-run the operation on the new version; both transactions deleted the "
        "same file.",
        "metadata": "Help: re-run the operation against the new schema and table properties.",
        "protocol": "Help: re-run the operation after upgrading to an engine that supports the new protocol.",
        "txn": "Help: another run with the same application id committed concurrently; check the "
        "idempotency key (appId/version) before retrying.",
    }[kind]


def _raise(
    exc: type[DeltaConcurrentModificationException], what: str, kind: str, summary: ReadSummary, w: WinningCommit
) -> None:
    # Name the table: a task log or a runbook shows many tables' conflicts side by side.
    head = f"Cannot commit {summary.operation or 'the transaction'} to table {summary.location!r}"
    message = (
        f"{head if summary.location else 'Commit failed'}: transaction {w.version} "
        f"({w.operation or 'UNKNOWN'}) {what} after this transaction read version {summary.read_version}. "
        f"{_help(kind)}"
    )
    raise exc(
        message,
        version=w.version,
        read_version=summary.read_version,
        winning_version=w.version,
        winning_operation=w.operation,
    )


def check_conflicts(
    summary: ReadSummary, w: WinningCommit, *, can_write: Callable[[Protocol], None]
) -> None:
    """Raise the concurrent-modification exception that ``w`` causes, if any (see module docs)."""
    if w.protocol is not None:
        try:
            can_write(Protocol.from_dict(w.protocol))
        except UnsupportedFeatureError:
            _raise(ProtocolChangedException, "upgraded the protocol to one this engine cannot write",
                   "protocol", summary, w)
        if summary.changes_protocol:
            _raise(ProtocolChangedException, "changed the protocol", "protocol", summary, w)
    if w.metadata_changed:
        _raise(MetadataChangedException, "changed the table metadata", "metadata", summary, w)
    if w.domains & summary.domains:
        _raise(ConcurrentTransactionException,
               f"changed metadata domain {sorted(w.domains & summary.domains)[0]!r}", "txn", summary, w)
    _check_appends(summary, w)
    if w.removed:
        removed = {_path(r) for r in w.removed}
        read_hit = removed & summary.read_file_keys
        if read_hit:
            _raise(ConcurrentDeleteReadException, f"deleted file {sorted(read_hit)[0]!r} that this transaction "
                   "read", "delete-read", summary, w)
        if summary.read_whole_table and any(r.get("dataChange", True) for r in w.removed):
            _raise(ConcurrentDeleteReadException, "deleted files while this transaction read the whole table",
                   "delete-read", summary, w)
        both = removed & summary.removed_paths
        if both:
            _raise(ConcurrentDeleteDeleteException, f"also deleted file {sorted(both)[0]!r}", "delete-delete",
                   summary, w)
    if w.app_ids & summary.app_ids:
        _raise(ConcurrentTransactionException,
               f"committed application transaction {sorted(w.app_ids & summary.app_ids)[0]!r}",
               "txn", summary, w)


def _check_appends(summary: ReadSummary, w: WinningCommit) -> None:
    level = summary.isolation_level
    if level == "SnapshotIsolation" or not w.added:
        return
    if w.is_blind_append and level == "WriteSerializable" and not summary.changes_metadata:
        return
    if summary.read_whole_table:
        _raise(ConcurrentAppendException, "added files while this transaction read the whole table",
               "append", summary, w)
    if not summary.read_predicates:
        return
    from airflow_provider_delta.core.expressions import file_may_match  # lazy: loads sqlglot, see read.scan

    for add in w.added:
        pv = summary.partition_values_of(add)
        for predicate in summary.read_predicates:
            if predicate is None or file_may_match(predicate, partition_values=pv, stats=None):
                _raise(ConcurrentAppendException,
                       f"added file {_path(add)!r} matching this transaction's read predicate",
                       "append", summary, w)

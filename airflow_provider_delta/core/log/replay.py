"""Fold a checkpoint and the commits after it into the state of one version.

PROTOCOL.md "Action Reconciliation": the newest protocol and metaData win; a logical file is keyed by
(path, deletion vector id) and the newest add or remove for a key wins; txn keeps the newest version
per appId; domainMetadata the newest per domain (a ``removed`` one deletes it). Removes are kept as
tombstones with their deletion timestamps, because vacuum needs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from airflow_provider_delta.core.actions import (
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
)
from airflow_provider_delta.core.log.checkpoint_read import apply_checkpoint
from airflow_provider_delta.core.log.context import reading
from airflow_provider_delta.exceptions import LogCorruptedError

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from airflow_provider_delta.core.log.paths import LogFile
    from airflow_provider_delta.core.log.segment import LogSegment
    from airflow_provider_delta.core.storage import Storage

FileKey = tuple[str, "str | None"]


def parse_commit(data: bytes, *, path: str = "", version: int | None = None) -> list[dict[str, Any]]:
    """The action objects of one commit file (newline-delimited JSON objects).

    Raises:
        LogCorruptedError: the file is not valid JSON, or a line is not a JSON object.
    """
    try:
        body = data.strip()
        if not body:
            return []
        # One parse per line: joining the lines into one JSON array would let a line break inside a
        # string (a corrupt commit) join two broken lines into one valid value.
        parsed: list[Any] = [orjson.loads(line) for line in body.splitlines() if line.strip()]
    except orjson.JSONDecodeError as err:
        raise LogCorruptedError(
            f"Cannot read commit {path or version!r}: invalid JSON ({err})", version=version, path=path
        ) from err
    for i, action in enumerate(parsed):
        if not isinstance(action, dict):
            raise LogCorruptedError(
                f"Cannot read commit {path or version!r}: action {i + 1} is a JSON "
                f"{type(action).__name__}, not an object",
                version=version,
                path=path,
            )
    return parsed


def read_commit(storage: Storage, path: str, version: int) -> list[dict[str, Any]]:
    """Read and parse one commit file; a missing file is a gap in the log."""
    try:
        data = storage.read_bytes(path)
    except FileNotFoundError:
        raise LogCorruptedError(
            f"Cannot read commit {version} of table {storage.root!r}: {path!r} is missing (the log has a gap)",
            version=version,
            path=path,
        ) from None
    except (IsADirectoryError, NotADirectoryError) as err:
        raise LogCorruptedError(
            f"Cannot read commit {version} of table {storage.root!r}: {path!r} is not a file ({err})",
            version=version,
            path=path,
        ) from err
    with reading(storage.root, version, path, what="commit"):
        return parse_commit(data, path=path, version=version)


def commit_info_of(actions: Iterable[dict[str, Any]]) -> CommitInfo | None:
    """The commitInfo action among a commit's actions, if any."""
    for action in actions:
        info = action.get("commitInfo")
        if info is not None:
            return CommitInfo(info)
    return None


@dataclass
class ReplayState:
    """The mutable accumulator of a replay; ``Snapshot`` freezes what it holds."""

    protocol: Protocol | None = None
    metadata: Metadata | None = None
    files: dict[FileKey, AddFile] = field(default_factory=dict)
    tombstones: dict[FileKey, RemoveFile] = field(default_factory=dict)
    txns: dict[str, SetTransaction] = field(default_factory=dict)
    domains: dict[str, DomainMetadata] = field(default_factory=dict)
    last_commit_info: CommitInfo | None = None
    # The log files the protocol and metaData in force came from (named in errors about them).
    protocol_source: str | None = None
    metadata_source: str | None = None
    _noted: tuple[object, object] = field(default=(None, None), repr=False)

    def note_sources(self, path: str) -> None:
        """Record ``path`` as the source of the protocol and metaData if the file just replayed set them."""
        if self.protocol is not self._noted[0]:
            self.protocol_source = path
        if self.metadata is not self._noted[1]:
            self.metadata_source = path
        self._noted = (self.protocol, self.metadata)

    def add_files(self, adds: Iterable[AddFile]) -> None:
        """Record adds (from a checkpoint, where no key repeats)."""
        adds = list(adds)
        self.add_keyed_files([a.key for a in adds], adds)

    def add_keyed_files(self, keys: list[FileKey], adds: list[AddFile]) -> None:
        """Record adds whose keys the caller computed (``keys[i]`` is ``adds[i].key``)."""
        self.files.update(zip(keys, adds, strict=True))
        tombstones = self.tombstones
        if tombstones:
            for key in keys:
                tombstones.pop(key, None)

    def add_tombstones(self, removes: Iterable[RemoveFile]) -> None:
        """Record removes: they shadow earlier adds of the same key."""
        for remove in removes:
            key = remove.key
            self.files.pop(key, None)
            self.tombstones[key] = remove

    def set_domain(self, dm: DomainMetadata) -> None:
        """Record a domainMetadata action; ``removed`` deletes the domain."""
        if dm.removed:
            self.domains.pop(dm.domain, None)
        else:
            self.domains[dm.domain] = dm

    def apply_actions(self, actions: Iterable[dict[str, Any]], *, version: int | None) -> None:
        """Apply one commit's actions, in file order."""
        files = self.files
        tombstones = self.tombstones
        for action in actions:
            if not isinstance(action, dict):
                raise LogCorruptedError(f"Cannot read commit {version}: an action is not a JSON object",
                                        version=version)
            add = action.get("add")
            if add is not None:
                a = AddFile.from_dict(add)
                key = a.key
                files[key] = a
                tombstones.pop(key, None)
                continue
            remove = action.get("remove")
            if remove is not None:
                r = RemoveFile.from_dict(remove)
                key = r.key
                files.pop(key, None)
                tombstones[key] = r
                continue
            self._apply_other(action, version)

    def _apply_other(self, action: dict[str, Any], version: int | None) -> None:
        if (value := action.get("metaData")) is not None:
            self.metadata = Metadata.from_dict(value)
        elif (value := action.get("protocol")) is not None:
            self.protocol = Protocol.from_dict(value)
        elif (value := action.get("txn")) is not None:
            txn = SetTransaction.from_dict(value)
            self.txns[txn.app_id] = txn
        elif (value := action.get("domainMetadata")) is not None:
            self.set_domain(DomainMetadata.from_dict(value))
        elif (value := action.get("commitInfo")) is not None:
            self.last_commit_info = CommitInfo(value)
        # cdc, checkpointMetadata, sidecar and unknown actions do not change the table state.
        del version


#: Commits fetched at once from an object store (concurrently), then applied in order.
_REMOTE_BATCH = 128


def read_commits(storage: Storage, files: Sequence[LogFile]) -> Iterator[tuple[LogFile, list[dict[str, Any]]]]:
    """Each commit file of ``files`` with its parsed actions, in order.

    On an object store the files are fetched concurrently in batches (each GET waits on latency);
    on a local disk one after the other.
    """
    if not storage.lists_cheaply:
        for lf in files:
            yield lf, read_commit(storage, lf.path, lf.version)
        return
    for start in range(0, len(files), _REMOTE_BATCH):
        batch = files[start : start + _REMOTE_BATCH]
        try:
            datas = storage.read_many([lf.path for lf in batch])
        except FileNotFoundError:
            for lf in batch:  # find the missing one and say which
                read_commit(storage, lf.path, lf.version)
            raise  # the file came back meanwhile: still report the failed read
        for lf, data in zip(batch, datas, strict=True):
            with reading(storage.root, lf.version, lf.path, what="commit"):
                actions = parse_commit(data, path=lf.path, version=lf.version)
            yield lf, actions


def replay(storage: Storage, segment: LogSegment, *, location: str = "") -> ReplayState:
    """Replay ``segment`` (checkpoint, then its commits in order) into a fresh state.

    Errors name the table (``location``, default the storage root), the version and the file.
    """
    table = location or storage.root
    state = ReplayState()
    if segment.checkpoint is not None:
        checkpoint = segment.checkpoint
        with reading(table, checkpoint.version, checkpoint.files[0].path, what="checkpoint file"):
            apply_checkpoint(state, storage, checkpoint)
        state.note_sources(checkpoint.files[0].path)
    for lf, actions in read_commits(storage, segment.commits):
        with reading(table, lf.version, lf.path, what="commit"):
            state.apply_actions(actions, version=lf.version)
        state.note_sources(lf.path)
    return state

"""Triggers that watch a Delta table's log in the triggerer.

- ``DeltaVersionTrigger``: behind a deferred ``DeltaVersionSensor``; fires once, when the table has a
  version newer than a baseline (optionally only for some operations), or times out.
- ``DeltaCommitEventTrigger``: behind an ``AssetWatcher``; emits one event per batch of new versions
  for as long as it runs, so each commit can start a DAG run.

Both poll with ``core.log.sensing.new_commits`` (a few file probes from the last known version) in a
worker thread, so the triggerer's event loop never blocks on storage.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowException
from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent

from airflow_provider_delta.core.log.sensing import NewCommits, current_table_id, current_version, new_commits
from airflow_provider_delta.core.transaction.policy import classify
from airflow_provider_delta.exceptions import DeltaError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

WATERMARK_KEY = "delta_version"
#: The table's ``metaData.id`` next to the watermark: another id later means the table was recreated.
TABLE_ID_KEY = "delta_table_id"
# Raised by AssetStateStoreAccessors when one trigger is shared by several watched assets.
_MULTI_ASSET_ERROR = "concrete inlets and outlets"
#: Events carry at most this many commit summaries (the version range is always complete).
MAX_COMMITS_IN_EVENT = 100


def _resolve(
    table: str, delta_conn_id: str | None, storage_options: dict[str, str] | None
) -> tuple[str, dict[str, str]]:
    """The table's location and storage options, through the connection when one is named."""
    if delta_conn_id is None:
        return table, dict(storage_options or {})
    from airflow_provider_delta.hooks.delta import DeltaHook

    hook = DeltaHook(delta_conn_id)
    return hook.resolve_table(table), {**hook.storage_options, **(storage_options or {})}


def _error_event(err: BaseException, table: str) -> TriggerEvent:
    permanent = classify(err) == "permanent"
    return TriggerEvent(
        {
            "status": "error",
            "table": table,
            "error_type": type(err).__name__,
            "permanent": permanent,
            "message": f"Cannot watch table {table!r}: {err}",
        }
    )


def event_payload(result: NewCommits) -> dict[str, Any]:
    """What the sensor pushes to XCom and the triggers put in events: ``result.to_dict()`` with
    ``commit_count`` and at most :data:`MAX_COMMITS_IN_EVENT` commit summaries (the newest)."""
    payload = result.to_dict()
    commits = payload["commits"]
    payload["commit_count"] = len(commits)
    if len(commits) > MAX_COMMITS_IN_EVENT:
        payload["commits"] = commits[-MAX_COMMITS_IN_EVENT:]
        payload["commits_truncated"] = True
    return payload


class DeltaVersionTrigger(BaseTrigger):
    """Fire once when ``table`` has a version after ``after_version`` (or time out at ``end_time``).

    Args:
        table: the table's path or URI (or a bare name with ``delta_conn_id``).
        after_version: the baseline; ``-1`` means no table was known (its creation fires).
        operations: only commits with one of these operations count.
        delta_conn_id: resolve ``table`` and storage options through this connection; None to use
            ``table`` and ``storage_options`` as given.
        storage_options: object-store options.
        poll_interval: seconds between polls.
        end_time: absolute deadline (epoch seconds); a ``timeout`` event is sent after it.
        table_id: the table's ``metaData.id`` at the baseline: a table with another id was recreated
            (``recreated: true``, range from version 0).

    Events: ``{"status": "success", "version": ..., "previous_version": ..., "commits": [...], ...}``,
    ``{"status": "timeout", ...}`` or ``{"status": "error", "error_type": ..., "message": ...}``.

    Example:
        >>> DeltaVersionTrigger(table="/data/events", after_version=41).serialize()[0]
        'airflow_provider_delta.triggers.delta.DeltaVersionTrigger'
    """

    def __init__(
        self,
        *,
        table: str,
        after_version: int,
        operations: list[str] | None = None,
        delta_conn_id: str | None = None,
        storage_options: dict[str, str] | None = None,
        poll_interval: float = 60.0,
        end_time: float | None = None,
        table_id: str | None = None,
    ) -> None:
        super().__init__()
        self.table = table
        self.after_version = int(after_version)
        self.operations = list(operations) if operations else None
        self.delta_conn_id = delta_conn_id
        self.storage_options = dict(storage_options) if storage_options else None
        self.poll_interval = float(poll_interval)
        self.end_time = end_time
        self.table_id = table_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Classpath and every constructor argument."""
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "table": self.table,
                "after_version": self.after_version,
                "operations": self.operations,
                "delta_conn_id": self.delta_conn_id,
                "storage_options": self.storage_options,
                "poll_interval": self.poll_interval,
                "end_time": self.end_time,
                "table_id": self.table_id,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Poll until there is news, the deadline passes, or a permanent error."""
        try:
            location, options = await asyncio.to_thread(
                _resolve, self.table, self.delta_conn_id, self.storage_options
            )
        except (AirflowException, DeltaError, OSError, ValueError) as err:
            yield _error_event(err, self.table)
            return
        while True:
            try:
                result = await asyncio.to_thread(
                    new_commits, location, self.after_version, self.operations, storage_options=options,
                    table_id=self.table_id,
                )
            except (DeltaError, OSError) as err:
                yield _error_event(err, location)
                return
            if result.has_new_version:
                yield TriggerEvent({"status": "success", **event_payload(result)})
                return
            if self.end_time is not None and time.time() >= self.end_time:
                yield TriggerEvent(
                    {
                        "status": "timeout",
                        "table": location,
                        "version": result.latest_version,
                        "message": f"Table {location!r} had no new version after {self.after_version} "
                        "before the sensor's timeout",
                    }
                )
                return
            self.log.debug("No new version of %s after %s", location, self.after_version)
            await asyncio.sleep(self.poll_interval)


class DeltaCommitEventTrigger(BaseEventTrigger):
    """Emit one event per batch of new versions of a table: the trigger behind an ``AssetWatcher``.

    The watermark (the last version reported) lives in Airflow's asset state store when the
    triggerer provides one (Airflow 3.3+, a trigger watched by a single asset), so a restarted
    triggerer resumes where it stopped and never re-emits a version. Without a state store the
    watermark starts at ``start_version`` when given, else at the table's version when the trigger
    starts (commits made while no triggerer ran are then not reported). The watermark is stored
    before the event is yielded: a crash between the two loses that event rather than repeating it.

    A missing table is waited for; its creation is reported as a batch starting at version 0.
    Errors are logged and polling continues (a watcher must outlive transient trouble).

    Args:
        table: the table's path or URI (or a bare name with ``delta_conn_id``).
        delta_conn_id: the ``delta`` connection for bare names and storage options.
        operations: only report batches containing commits with one of these operations.
        poll_interval: seconds between polls.
        start_version: the watermark to start from when the state store has none.

    Example:
        >>> from airflow.sdk import Asset, AssetWatcher
        >>> events = Asset("delta:///data/events", watchers=[AssetWatcher(
        ...     name="events_commits", trigger=DeltaCommitEventTrigger(table="/data/events"))])
    """

    def __init__(
        self,
        *,
        table: str,
        delta_conn_id: str | None = None,
        operations: list[str] | None = None,
        poll_interval: float = 60.0,
        start_version: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.table = table
        self.delta_conn_id = delta_conn_id
        self.operations = list(operations) if operations else None
        self.poll_interval = float(poll_interval)
        self.start_version = start_version

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Classpath and every constructor argument."""
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "table": self.table,
                "delta_conn_id": self.delta_conn_id,
                "operations": self.operations,
                "poll_interval": self.poll_interval,
                "start_version": self.start_version,
            },
        )

    async def _open_store(self) -> tuple[Any, int | None, str | None]:
        """The asset state accessor (or None), the watermark and the table id it holds."""
        store = getattr(self, "asset_state_store", None)
        if store is None:
            return None, None, None
        try:
            stored = await store.aget(WATERMARK_KEY)
            stored_id = await store.aget(TABLE_ID_KEY)
        except ValueError as err:
            if _MULTI_ASSET_ERROR not in str(err):
                raise
            self.log.warning(
                "%s is watched by several assets: no watermark is kept, a triggerer restart starts from "
                "the table's current version.",
                self.table,
            )
            return None, None, None
        return store, int(stored) if stored is not None else None, str(stored_id) if stored_id else None

    async def _start(self, location: str, options: dict[str, str]) -> tuple[Any, int, str | None]:
        """The state store, the watermark and the table id to start from (waits for a readable log)."""
        store, watermark, table_id = await self._open_store()
        if watermark is None:
            watermark = self.start_version
        while watermark is None or (table_id is None and watermark >= 0):
            try:
                if watermark is None:
                    watermark = await asyncio.to_thread(current_version, location, storage_options=options)
                if watermark >= 0:
                    table_id = await asyncio.to_thread(current_table_id, location, storage_options=options)
                break
            except (DeltaError, OSError) as err:
                self.log.error("Cannot read table %s: %s; retrying in %ss", location, err, self.poll_interval)
                await asyncio.sleep(self.poll_interval)
        return store, watermark, table_id

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Poll forever; yield one event per batch of new versions."""
        location, options = await asyncio.to_thread(_resolve, self.table, self.delta_conn_id, None)
        store, watermark, table_id = await self._start(location, options)
        self.log.info("Watching %s for versions after %s", location, watermark)
        while True:
            try:
                result = await asyncio.to_thread(
                    new_commits, location, watermark, self.operations, storage_options=options, table_id=table_id
                )
            except (DeltaError, OSError) as err:
                self.log.error("Cannot read table %s: %s; retrying in %ss", location, err, self.poll_interval)
                result = None
            if result is not None and result.latest_version is not None and result.latest_version != watermark:
                # Advance past non-matching commits too, so they are never scanned again.
                watermark = result.latest_version
                table_id = result.table_id or table_id
                if store is not None:
                    await store.aset(WATERMARK_KEY, watermark)
                    if table_id is not None:
                        await store.aset(TABLE_ID_KEY, table_id)
                if result.has_new_version:
                    yield TriggerEvent({"status": "success", **event_payload(result)})
            await asyncio.sleep(self.poll_interval)

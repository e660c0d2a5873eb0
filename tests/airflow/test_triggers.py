"""DeltaVersionTrigger and DeltaCommitEventTrigger: serialization and real polling of real tables."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import TYPE_CHECKING, Any

import pytest

from tests.airflow.helpers import append, make_table

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration


class MemoryAssetState:
    """Stands in for the triggerer's asset state store accessor (aget/aset), kept across restarts."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    async def aget(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    async def aset(self, key: str, value: Any) -> None:
        self.values[key] = value


def _version_trigger(**kwargs):
    from airflow_provider_delta.triggers.delta import DeltaVersionTrigger

    return DeltaVersionTrigger(**kwargs)


def _event_trigger(**kwargs):
    from airflow_provider_delta.triggers.delta import DeltaCommitEventTrigger

    return DeltaCommitEventTrigger(**kwargs)


@pytest.mark.parametrize(
    ("factory", "kwargs"),
    [
        (
            _version_trigger,
            {
                "table": "/t",
                "after_version": 3,
                "operations": ["WRITE"],
                "delta_conn_id": None,
                "storage_options": {"k": "v"},
                "poll_interval": 2.0,
                "end_time": 1_900_000_000.0,
                "table_id": "7a1c",
            },
        ),
        (
            _event_trigger,
            {
                "table": "events",
                "delta_conn_id": "lake",
                "operations": None,
                "poll_interval": 5.0,
                "start_version": 7,
            },
        ),
    ],
)
def test_serialize_round_trips_every_argument(factory, kwargs):
    from airflow.sdk.module_loading import import_string

    classpath, serialized = factory(**kwargs).serialize()
    assert serialized == kwargs
    again = import_string(classpath)(**serialized)
    assert again.serialize() == (classpath, serialized)


@pytest.mark.asyncio
async def test_version_trigger_fires_once_on_a_commit_made_while_it_polls(tmp_path: Path):
    path = str(tmp_path / "t")
    make_table(path, appends=1)
    trigger = _version_trigger(table=path, after_version=1, poll_interval=0.05, end_time=time.time() + 30)
    events = []

    async def collect() -> None:
        async for event in trigger.run():
            events.append(event.payload)

    task = asyncio.create_task(collect())
    await asyncio.sleep(0.3)
    assert events == []
    await asyncio.to_thread(append, path, 1)
    await asyncio.wait_for(task, timeout=10)  # run() ends after its single event
    assert len(events) == 1
    assert events[0]["status"] == "success"
    assert (events[0]["previous_version"], events[0]["version"]) == (1, 2)


@pytest.mark.asyncio
async def test_version_trigger_times_out_at_its_absolute_end_time(tmp_path: Path):
    path = str(tmp_path / "t")
    make_table(path)
    trigger = _version_trigger(table=path, after_version=0, poll_interval=0.05, end_time=time.time() + 0.2)
    events = [e.payload async for e in trigger.run()]
    assert [e["status"] for e in events] == ["timeout"]


@pytest.mark.asyncio
async def test_version_trigger_reports_a_path_that_is_not_a_delta_table(tmp_path: Path):
    (tmp_path / "x.parquet").write_bytes(b"PAR1")
    events = [e.payload async for e in _version_trigger(table=str(tmp_path), after_version=-1).run()]
    assert len(events) == 1 and events[0]["status"] == "error" and events[0]["permanent"] is True
    assert "not a Delta table" in events[0]["message"]


async def _next(agen, timeout: float = 5.0):
    return (await asyncio.wait_for(agen.__anext__(), timeout=timeout)).payload


@pytest.mark.asyncio
async def test_event_trigger_emits_once_per_batch_and_never_repeats_across_restarts(tmp_path: Path):
    path = str(tmp_path / "t")
    make_table(path, appends=1)  # version 1 when the watcher was defined
    append(path, 2)  # versions 2 and 3 land before its first poll: one batch
    state = MemoryAssetState()
    trigger = _event_trigger(table=path, poll_interval=0.05, start_version=1)
    trigger.asset_state_store = state
    run = trigger.run()
    event = await _next(run)
    assert (event["start_version"], event["end_version"], event["commit_count"]) == (2, 3, 2)
    assert state.values["delta_version"] == 3
    pending = asyncio.ensure_future(run.__anext__())
    await asyncio.sleep(0.3)
    assert not pending.done()  # nothing new: no second event
    pending.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await pending
    await run.aclose()

    # A restarted triggerer rebuilds the trigger from its arguments: the stored watermark wins.
    restarted = _event_trigger(**trigger.serialize()[1])
    restarted.asset_state_store = state
    run = restarted.run()
    pending = asyncio.ensure_future(run.__anext__())
    await asyncio.sleep(0.3)
    assert not pending.done()  # versions 2..3 are not emitted again
    await asyncio.to_thread(append, path, 1)
    event = (await asyncio.wait_for(pending, 5)).payload
    assert (event["start_version"], event["end_version"]) == (4, 4)
    await run.aclose()


@pytest.mark.asyncio
async def test_event_trigger_tolerates_a_missing_table_and_reports_its_creation(tmp_path: Path):
    path = str(tmp_path / "later")
    trigger = _event_trigger(table=path, poll_interval=0.05)
    run = trigger.run()
    pending = asyncio.ensure_future(run.__anext__())
    await asyncio.sleep(0.3)
    assert not pending.done()
    staging = str(tmp_path / "staging")
    await asyncio.to_thread(make_table, staging, 1)
    os.rename(staging, path)  # versions 0 and 1 appear at once
    event = (await asyncio.wait_for(pending, 5)).payload
    assert (event["previous_version"], event["start_version"], event["end_version"]) == (None, 0, 1)
    await run.aclose()


@pytest.mark.asyncio
async def test_event_trigger_with_operations_filter_skips_batches_without_a_match(tmp_path: Path):
    from airflow_provider_delta.core import DeltaTable

    path = str(tmp_path / "t")
    make_table(path, appends=1)
    trigger = _event_trigger(table=path, poll_interval=0.05, operations=["DELETE"])
    run = trigger.run()
    pending = asyncio.ensure_future(run.__anext__())
    await asyncio.sleep(0.2)
    await asyncio.to_thread(append, path, 1)  # a WRITE: no event
    await asyncio.sleep(0.3)
    assert not pending.done()
    await asyncio.to_thread(lambda: DeltaTable(path).delete("id = 0"))
    event = (await asyncio.wait_for(pending, 5)).payload
    assert [c["operation"] for c in event["commits"]] == ["DELETE"]
    assert event["end_version"] == 3
    await run.aclose()

"""The example DAGs of dags/examples run for real (dag.test(), SQLite metadata DB)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from typing import TYPE_CHECKING

import pytest

from tests.airflow.helpers import append, make_table, xcom_value
from tests.airflow_support import DAGS_FOLDER

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.integration, pytest.mark.system]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, DAGS_FOLDER / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.pop(name, None)
    spec.loader.exec_module(module)
    return module


@pytest.mark.usefixtures("airflow_db")
def test_example_version_sensor_hands_the_new_range_downstream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    table = str(tmp_path / "events")
    monkeypatch.setenv("DELTA_EXAMPLE_EVENTS_TABLE", table)
    dag = _load("example_delta_version_sensor").dag
    run = dag.test()
    assert str(run.state) == "success"
    summary = xcom_value(dag.dag_id, run.run_id, "consume_range")
    assert summary == {"start_version": 1, "end_version": 1, "new_rows": 3, "operations": ["WRITE"]}
    second = dag.test()  # the table exists now: the next run reports only its own commit
    assert xcom_value(dag.dag_id, second.run_id, "consume_range")["start_version"] == 2


@pytest.mark.usefixtures("airflow_db")
def test_example_commit_events_dag_parses_and_serializes_with_its_watcher(tmp_path, monkeypatch):
    from airflow.dag_processing.dagbag import DagBag
    from airflow.serialization.serialized_objects import DagSerialization

    table = str(tmp_path / "events")
    monkeypatch.setenv("DELTA_EXAMPLE_EVENTS_TABLE", table)
    bag = DagBag(dag_folder=str(DAGS_FOLDER / "examples" / "example_delta_commit_events.py"))
    assert bag.import_errors == {}
    dag = bag.dags["example_delta_commit_events"]
    serialized = json.dumps(DagSerialization.to_dict(dag))
    assert "airflow_provider_delta.triggers.delta.DeltaCommitEventTrigger" in serialized
    assert table in serialized


@pytest.mark.asyncio
async def test_example_commit_events_watcher_emits_for_a_new_commit(tmp_path, monkeypatch):
    table = str(tmp_path / "events")
    monkeypatch.setenv("DELTA_EXAMPLE_EVENTS_TABLE", table)
    module = _load("example_delta_commit_events")
    trigger = module.events_table.watchers[0].trigger
    assert trigger.table == table
    make_table(table)
    trigger.poll_interval = 0.05
    run = trigger.run()
    pending = asyncio.ensure_future(run.__anext__())
    await asyncio.sleep(0.3)
    assert not pending.done()
    await asyncio.to_thread(append, table, 1)
    payload = (await asyncio.wait_for(pending, 5)).payload
    assert (payload["start_version"], payload["end_version"], payload["table"]) == (1, 1, table)
    await run.aclose()

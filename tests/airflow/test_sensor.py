"""DeltaVersionSensor with real Airflow: deferral, poke, reschedule and deferred runs in dag.test()."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

import pytest

from airflow_provider_delta.core import DeltaTable
from tests.airflow.helpers import CommitWhen, append, make_table, recreate, ti_state, xcom_value

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration


def _sensor(**kwargs):
    from airflow_provider_delta.sensors.delta import DeltaVersionSensor

    kwargs.setdefault("task_id", "wait")
    return DeltaVersionSensor(**kwargs)


def test_deferrable_sensor_defers_to_the_version_trigger(tmp_path: Path):
    from airflow.sdk.exceptions import TaskDeferred

    from airflow_provider_delta.triggers.delta import DeltaVersionTrigger

    path = str(tmp_path / "t")
    make_table(path, appends=2)
    sensor = _sensor(table=path, operations=["WRITE"], deferrable=True, poke_interval=7, timeout=30)
    with pytest.raises(TaskDeferred) as info:
        sensor.execute({})
    trigger = info.value.trigger
    assert isinstance(trigger, DeltaVersionTrigger)
    assert info.value.method_name == "execute_complete"
    assert (trigger.table, trigger.after_version, trigger.operations, trigger.poll_interval) == (
        path,
        2,
        ["WRITE"],
        7.0,
    )
    assert trigger.end_time is not None


def test_deferrable_sensor_returns_at_once_when_a_version_is_already_new(tmp_path: Path):
    path = str(tmp_path / "t")
    make_table(path, appends=2)
    result = _sensor(table=path, after_version=0, deferrable=True).execute({})
    assert (result["previous_version"], result["version"]) == (0, 2)
    assert [c["version"] for c in result["commits"]] == [1, 2]


def test_execute_complete_raises_unless_success():
    from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSensorTimeout

    sensor = _sensor(table="/nowhere")
    ok = sensor.execute_complete({}, {"status": "success", "version": 3, "previous_version": 1})
    assert ok == {"version": 3, "previous_version": 1}
    with pytest.raises(AirflowSensorTimeout):
        sensor.execute_complete({}, {"status": "timeout", "message": "no new version"})
    with pytest.raises(AirflowFailException, match="not a Delta table"):
        sensor.execute_complete({}, {"status": "error", "permanent": True, "message": "not a Delta table"})
    with pytest.raises(AirflowException, match="flaky"):
        sensor.execute_complete({}, {"status": "error", "permanent": False, "message": "flaky"})


def test_poke_waits_for_a_missing_table_then_fires_on_its_creation(tmp_path: Path):
    path = str(tmp_path / "later")
    sensor = _sensor(table=path)
    assert not sensor.poke({})
    make_table(path)
    fired = sensor.poke({})
    assert fired.is_done
    assert fired.xcom_value["previous_version"] is None and fired.xcom_value["version"] == 0


def test_poke_with_operations_filter_ignores_other_commits(tmp_path: Path):
    path = str(tmp_path / "t")
    make_table(path, appends=1)
    sensor = _sensor(table=path, after_version="1", operations=["DELETE"])
    append(path)
    assert not sensor.poke({})
    DeltaTable(path).delete("id = 0")
    fired = sensor.poke({})
    assert fired.is_done and [c["operation"] for c in fired.xcom_value["commits"]] == ["DELETE"]


def test_not_a_delta_table_fails_without_retries(tmp_path: Path):
    from airflow.sdk.exceptions import AirflowFailException

    (tmp_path / "data.csv").write_text("a,b\n")
    with pytest.raises(AirflowFailException, match="not a Delta table"):
        _sensor(table=str(tmp_path)).poke({})


def test_bad_after_version_fails_clearly(tmp_path: Path):
    from airflow.sdk.exceptions import AirflowFailException

    make_table(str(tmp_path / "t"))
    with pytest.raises(AirflowFailException, match="after_version must be an integer"):
        _sensor(table=str(tmp_path / "t"), after_version="latest").poke({})


def _forget_runs(dag_id: str) -> None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    with create_session() as session:
        session.execute(delete(DagRun).where(DagRun.dag_id == dag_id))


def _run_mode_dag(
    dag_attr: str, path: str, monkeypatch: pytest.MonkeyPatch, waiting_state: str | None, action=None
):
    monkeypatch.setenv("DELTA_TEST_SENSOR_TABLE", path)
    sys.modules.pop("delta_sensor_modes", None)
    monkeypatch.syspath_prepend(str(__import__("tests.airflow_support").airflow_support.TEST_DAGS_FOLDER))
    module = importlib.import_module("delta_sensor_modes")
    dag = getattr(module, dag_attr)
    import airflow.models.dagrun
    import airflow.serialization.serialized_objects  # noqa: F401 - imports would deadlock with dag.test()'s

    _forget_runs(dag.dag_id)  # another test may have run the same DAG in this session's database
    assert ti_state(dag.dag_id, "wait") is None  # also imports what the writer thread needs
    writer = CommitWhen(path, lambda: ti_state(dag.dag_id, "wait") == waiting_state, action=action)
    if waiting_state is not None:
        writer.start()
    run = dag.test()
    if waiting_state is not None:
        writer.join(timeout=5)
        assert writer.error is None
    return dag, run, writer


@pytest.mark.system
@pytest.mark.usefixtures("airflow_db")
def test_reschedule_mode_resumes_from_the_first_baseline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = str(tmp_path / "t")
    make_table(path, appends=1)  # version 1 when the sensor first looks
    dag, run, writer = _run_mode_dag("dag_r", path, monkeypatch, "up_for_reschedule")
    assert str(run.state) == "success"
    # The commit landed after the first poke rescheduled; a later poke (a fresh task run) still
    # compared against version 1, the baseline kept in the task state store.
    out = xcom_value(dag.dag_id, run.run_id, "wait")
    assert writer.version == 2
    assert (out["previous_version"], out["version"]) == (1, 2)


@pytest.mark.system
@pytest.mark.usefixtures("airflow_db")
def test_commit_during_a_deferred_wait_fires_the_sensor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = str(tmp_path / "t")
    make_table(path)
    dag, run, writer = _run_mode_dag("dag_d", path, monkeypatch, "deferred")
    assert str(run.state) == "success"
    out = xcom_value(dag.dag_id, run.run_id, "wait")
    assert (out["previous_version"], out["version"], writer.version) == (0, 1, 1)
    assert out["commits"][0]["operation"] == "WRITE"


@pytest.mark.system
@pytest.mark.usefixtures("airflow_db")
@pytest.mark.parametrize(
    ("dag_attr", "waiting_state"), [("dag_recreated_r", "up_for_reschedule"), ("dag_recreated_d", "deferred")]
)
def test_a_table_recreated_past_the_baseline_is_reported_as_recreated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dag_attr: str, waiting_state: str
):
    """Dropped and created again with more versions than the baseline: not "new commits 2..3" of the
    old table (a CDF export of that range would read another table) but a recreated table from 0."""
    path = str(tmp_path / "t")
    old_id = make_table(path, appends=1).snapshot.metadata.id  # the sensor's baseline: version 1
    dag, run, writer = _run_mode_dag(dag_attr, path, monkeypatch, waiting_state, action=recreate)
    assert str(run.state) == "success"
    out = xcom_value(dag.dag_id, run.run_id, "wait")
    assert writer.version == 3
    assert DeltaTable(path).snapshot.metadata.id != old_id
    assert out["recreated"] is True
    assert (out["previous_version"], out["start_version"], out["end_version"]) == (None, 0, 3)
    assert out["table_id"] == DeltaTable(path).snapshot.metadata.id


@pytest.mark.system
@pytest.mark.usefixtures("airflow_db")
def test_poke_mode_pushes_at_most_100_commit_summaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = str(tmp_path / "t")
    make_table(path, appends=136)
    dag, run, _ = _run_mode_dag("dag_p", path, monkeypatch, None)
    assert str(run.state) == "success"
    out = xcom_value(dag.dag_id, run.run_id, "wait")
    assert (out["start_version"], out["end_version"], out["commit_count"]) == (1, 136, 136)
    assert out["commits_truncated"] is True
    assert [c["version"] for c in out["commits"]] == list(range(37, 137))  # the newest 100

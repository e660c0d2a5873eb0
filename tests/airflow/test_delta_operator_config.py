"""DeltaSparkJobOperator's wiring, without running a DAG: the spark-submit command, the master
fallback, the idempotency key and the mapping of failed results. Connections come from
``AIRFLOW_CONN_*`` environment variables (Airflow's env secrets backend, no database)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from airflow_provider_delta.core.transaction.policy import ConflictPolicy
from airflow_provider_delta.hooks.delta import DeltaHook
from airflow_provider_delta.jobs.registry import runner_script
from airflow_provider_delta.jobs.spec import JobResult
from airflow_provider_delta.operators.delta import (
    DEFAULT_SPARK_CONF,
    DeltaCheckpointOperator,
    DeltaSparkJobOperator,
    app_transaction_id,
    raise_for_result,
)
from airflow_provider_delta.policies.conflicts import DeltaConflictError, DeltaJobError


def command_of(op: DeltaSparkJobOperator, tmp_path: Path) -> tuple[list[str], object]:
    hook = op.submit_hook(DeltaHook(op.delta_conn_id), tmp_path / "spec.json", tmp_path / "result.json")
    return hook._build_spark_submit_command(runner_script()), hook


def confs(command: list[str]) -> dict[str, str]:
    pairs = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf"]
    return dict(p.split("=", 1) for p in pairs)


def test_without_a_spark_connection_the_job_runs_on_local_not_yarn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)
    command, hook = command_of(DeltaCheckpointOperator(task_id="c", table="/data/t"), tmp_path)
    assert command[command.index("--master") + 1] == "local[*]"
    assert hook._env_vars["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert hook._env_vars["PYSPARK_DRIVER_PYTHON"] == sys.executable
    assert hook._env_vars["PATH"].startswith(str(Path(sys.executable).parent))
    assert command[-5:] == [
        runner_script(),
        "--spec",
        str(tmp_path / "spec.json"),
        "--result",
        str(tmp_path / "result.json"),
    ]


def test_spark_conf_layers_defaults_then_delta_connection_then_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_CLUSTER", json.dumps({"conn_type": "spark", "host": "spark://10.0.0.5", "port": 7077})
    )
    monkeypatch.setenv(
        "AIRFLOW_CONN_LAKE",
        json.dumps(
            {
                "conn_type": "delta",
                "host": "/lake",
                "extra": {
                    "spark_conn_id": "cluster",
                    "spark_conf": {"spark.executor.memory": "2g", "spark.ui.enabled": "true"},
                },
            }
        ),
    )
    op = DeltaCheckpointOperator(
        task_id="c", table="events", delta_conn_id="lake", spark_conf={"spark.executor.memory": "4g"}
    )
    command, hook = command_of(op, tmp_path)
    conf = confs(command)
    assert command[command.index("--master") + 1] == "spark://10.0.0.5:7077"
    assert conf["spark.executor.memory"] == "4g"  # task over connection
    assert conf["spark.ui.enabled"] == "true"  # connection over default
    assert conf["spark.driver.extraJavaOptions"] == DEFAULT_SPARK_CONF["spark.driver.extraJavaOptions"]
    assert "SPARK_LOCAL_IP" not in hook._env_vars  # a cluster must reach the driver
    assert DeltaHook("lake").resolve_table(op.table) == "/lake/events"


def test_an_explicit_spark_conn_id_wins_over_the_delta_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_TINY", json.dumps({"conn_type": "spark", "host": "local[1]"}))
    command, _ = command_of(DeltaCheckpointOperator(task_id="c", table="/t", spark_conn_id="tiny"), tmp_path)
    assert command[command.index("--master") + 1] == "local[1]"


def test_unknown_job_is_refused_when_the_dag_is_parsed() -> None:
    with pytest.raises(ValueError, match="unknown job 'compact'"):
        DeltaSparkJobOperator(task_id="x", job="compact", table="/t")


@pytest.mark.parametrize(("map_index", "suffix"), [(-1, ""), (3, ":3")])
def test_idempotency_key_names_dag_task_run_and_map_index(map_index: int, suffix: str) -> None:
    ti = SimpleNamespace(dag_id="daily", task_id="load", run_id="scheduled__2026-01-01", map_index=map_index)
    assert app_transaction_id({"ti": ti}) == f"airflow:daily:load:scheduled__2026-01-01{suffix}"  # type: ignore[typeddict-item]


def test_only_write_jobs_carry_an_app_transaction() -> None:
    ti = SimpleNamespace(dag_id="d", task_id="t", run_id="r", map_index=-1)
    write = DeltaSparkJobOperator(task_id="t", job="write", table="/t", job_options={"rows": []})
    checkpoint = DeltaCheckpointOperator(task_id="t", table="/t")
    off = DeltaSparkJobOperator(
        task_id="t", job="write", table="/t", job_options={"rows": []}, idempotent=False
    )
    assert (
        write.build_spec({"ti": ti}, "/t", {}).app_id,
        write.build_spec({"ti": ti}, "/t", {}).app_version,
    ) == (
        "airflow:d:t:r",
        0,
    )
    assert checkpoint.build_spec({"ti": ti}, "/t", {}).app_id is None
    assert off.build_spec({"ti": ti}, "/t", {}).app_id is None


def error_result(type_name: str, action: str = "retry") -> JobResult:
    error = {"type": type_name, "message": "boom", "attempts": 2, "action": action}
    return JobResult(status="error", job="write", table="/t", error=error, attempts=2)


@pytest.mark.parametrize(
    ("type_name", "policy", "expected"),
    [
        ("ConcurrentAppendException", {}, DeltaConflictError),  # in-job retries ran out
        ("ConcurrentTransactionException", {}, AirflowFailException),
        (
            "ConcurrentAppendException",
            {"overrides": {"ConcurrentAppendException": "skip"}},
            AirflowSkipException,
        ),
        ("FileNotFoundError", {}, AirflowFailException),  # permanent
        ("JobSpecError", {}, AirflowFailException),
        ("PredicateError", {}, AirflowFailException),
        ("TimeoutError", {}, DeltaJobError),  # transient: in-job retries ran out, Airflow retries
        ("RuntimeError", {}, DeltaJobError),  # unknown: Airflow retries
    ],
)
def test_failed_results_map_to_airflow_exceptions(type_name: str, policy: dict, expected: type) -> None:
    with pytest.raises(expected, match=type_name) as info:
        raise_for_result(error_result(type_name), ConflictPolicy.from_dict(policy), location="/t")
    assert str(info.value).count("boom") == 1
    assert ("conflict" in str(info.value)) == (expected is DeltaConflictError or "Concurrent" in type_name)
    if expected in (AirflowException, DeltaConflictError, DeltaJobError):  # Airflow's retries apply
        assert not isinstance(info.value, (AirflowFailException, AirflowSkipException))
    raise_for_result(
        JobResult(status="success", job="write", table="/t", version=1), ConflictPolicy(), location="/t"
    )

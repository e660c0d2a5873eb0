"""Registration (real `airflow providers` CLI), DeltaHook and the conflict -> Airflow outcome mapping."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import deltalake
import pytest

from airflow_provider_delta.get_provider_info import get_provider_info
from tests.airflow.helpers import make_table

pytestmark = pytest.mark.integration

AIRFLOW = str(Path(sys.executable).parent / "airflow")


def test_package_name_is_the_distribution_name():
    info = get_provider_info()
    assert info["package-name"] == distribution("airflow-provider-delta").metadata["Name"]
    modules = {
        m
        for group in ("hooks", "operators", "sensors", "triggers")
        for e in info[group]
        for m in e["python-modules"]
    }
    assert "airflow_provider_delta.operators.delta" in modules
    for module in modules - {"airflow_provider_delta.operators.delta"}:
        __import__(module)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["providers", "list"], "airflow-provider-delta"),
        (["providers", "hooks"], "airflow_provider_delta.hooks.delta.DeltaHook"),
    ],
)
def test_airflow_cli_shows_the_provider_and_its_hook(command, expected):
    out = subprocess.run(
        [AIRFLOW, *command], capture_output=True, text=True, timeout=120, env=os.environ.copy(), check=True
    ).stdout
    line = next(line for line in out.splitlines() if expected in line)
    if command[1] == "hooks":
        assert line.split("|")[0].strip() == "delta" and "Delta Lake" in line


def _hook(monkeypatch: pytest.MonkeyPatch, conn: dict | None, conn_id: str = "delta_default"):
    from airflow_provider_delta.hooks.delta import DeltaHook

    if conn is not None:
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
    return DeltaHook(conn_id)


def test_hook_reads_base_path_options_and_spark_settings_from_the_connection(monkeypatch, tmp_path):
    hook = _hook(
        monkeypatch,
        {
            "conn_type": "delta",
            "host": str(tmp_path),
            "extra": {
                "storage_options": {"AWS_REGION": "eu-west-1"},
                "spark_conn_id": "spark_local",
                "spark_conf": {"spark.sql.shuffle.partitions": 4},
            },
        },
    )
    assert hook.resolve_table("events") == str(tmp_path / "events")
    assert hook.resolve_table("s3://other/t") == "s3://other/t"
    assert hook.storage_options == {"AWS_REGION": "eu-west-1"}
    assert (hook.spark_conn_id, hook.spark_conf) == ("spark_local", {"spark.sql.shuffle.partitions": "4"})
    make_table(str(tmp_path / "events"), appends=2)
    assert hook.latest_version("events") == deltalake.DeltaTable(str(tmp_path / "events")).version() == 2
    assert [h["version"] for h in hook.history("events", limit=2)] == [2, 1]


def test_extra_base_path_overrides_host_and_uris_join_cleanly(monkeypatch):
    hook = _hook(
        monkeypatch, {"conn_type": "delta", "host": "ignored", "extra": {"base_path": "s3://b/lake/"}}
    )
    assert hook.resolve_table("sales/orders") == "s3://b/lake/sales/orders"


def test_full_path_needs_no_connection_but_a_bare_name_does(monkeypatch, tmp_path):
    from airflow.sdk.exceptions import AirflowException

    monkeypatch.delenv("AIRFLOW_CONN_DELTA_DEFAULT", raising=False)
    hook = _hook(monkeypatch, None)
    make_table(str(tmp_path / "t"))
    assert hook.latest_version(str(tmp_path / "t")) == 0
    assert (hook.storage_options, hook.spark_conn_id, hook.spark_conf) == ({}, "spark_default", {})
    with pytest.raises(AirflowException, match="Cannot resolve table 'events'.*does not exist"):
        hook.resolve_table("events")


def test_bad_storage_options_fail_clearly(monkeypatch):
    from airflow.sdk.exceptions import AirflowException

    hook = _hook(monkeypatch, {"conn_type": "delta", "host": "/x", "extra": {"storage_options": "[1]"}})
    with pytest.raises(AirflowException, match="extra 'storage_options' must be a JSON object"):
        _ = hook.storage_options


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ConcurrentAppendException", "DeltaConflictError"),  # in-job retries exhausted: Airflow retries
        ("ConcurrentTransactionException", "AirflowFailException"),
        ("CommitRetriesExhaustedError", "DeltaConflictError"),
    ],
)
def test_job_failures_map_to_airflow_outcomes(name, expected):
    from airflow_provider_delta.policies.conflicts import conflict_exception

    exc = conflict_exception(name, "lost the race", None, attempts=5)
    assert type(exc).__name__ == expected
    assert name in str(exc) and "5 attempt" in str(exc)


def test_skip_override_maps_to_skip():
    from airflow.sdk.exceptions import AirflowSkipException

    from airflow_provider_delta.policies.conflicts import conflict_exception

    exc = conflict_exception(
        "MetadataChangedException", "schema changed", {"overrides": {"MetadataChangedException": "skip"}}
    )
    assert isinstance(exc, AirflowSkipException)


def test_retry_policy_decides_from_the_delta_exception_behind_a_task_failure():
    from airflow.sdk import RetryAction

    from airflow_provider_delta.exceptions import ConcurrentAppendException, ConcurrentTransactionException
    from airflow_provider_delta.policies.conflicts import DeltaConflictRetryPolicy, conflict_exception

    policy = DeltaConflictRetryPolicy({"base_backoff": 2.0, "max_backoff": 8.0, "jitter": 0.0})
    retry = policy.evaluate(ConcurrentAppendException("x"), try_number=2, max_tries=3)
    assert retry.action == RetryAction.RETRY and retry.retry_delay.total_seconds() == 4.0
    assert policy.evaluate(ConcurrentTransactionException("x"), 1, 3).action == RetryAction.FAIL
    wrapped = conflict_exception("ConcurrentDeleteReadException", "x", None)
    assert policy.evaluate(wrapped, 1, 3).action == RetryAction.RETRY
    assert policy.evaluate(ValueError("not delta"), 1, 3).action == RetryAction.DEFAULT
    again = DeltaConflictRetryPolicy.deserialize(json.loads(json.dumps(policy.serialize())))
    assert again.policy == policy.policy


def test_test_connection_fails_when_the_base_path_does_not_exist(monkeypatch, tmp_path):
    missing = _hook(monkeypatch, {"conn_type": "delta", "host": str(tmp_path / "no" / "lake")})
    ok, message = missing.test_connection()
    assert not ok
    assert f"the folder {str(tmp_path / 'no' / 'lake')!r} does not exist" in message
    (tmp_path / "lake").mkdir()
    (tmp_path / "file").write_text("x")
    assert _hook(monkeypatch, {"conn_type": "delta", "host": str(tmp_path / "lake")}).test_connection()[0]
    ok, message = _hook(monkeypatch, {"conn_type": "delta", "host": str(tmp_path / "file")}).test_connection()
    assert not ok and "is a file" in message

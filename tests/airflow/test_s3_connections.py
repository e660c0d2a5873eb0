"""Airflow connections for tables on S3: the ``delta`` connection's extras carry storage options,
``aws_conn_id`` takes credentials from an Airflow AWS connection, and no secret reaches a log, an
XCom, a trigger's stored kwargs, or a job spec file others can read. Against the real S3 server.
"""

from __future__ import annotations

import asyncio
import json
import stat
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from tests.s3_server import ACCESS_KEY, SECRET_KEY

if TYPE_CHECKING:
    from pathlib import Path

    from tests.s3_fixtures import S3Env

SCHEMA = pa.schema([("id", pa.int64())])


def _delta_conn(monkeypatch: pytest.MonkeyPatch, conn_id: str, extra: dict[str, object]) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "delta", "extra": extra}))


def _aws_conn(monkeypatch: pytest.MonkeyPatch, conn_id: str, s3: S3Env) -> None:
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}",
        json.dumps(
            {
                "conn_type": "aws",
                "login": ACCESS_KEY,
                "password": SECRET_KEY,
                "extra": {"region_name": "us-east-1", "endpoint_url": s3.proxy.endpoint},
            }
        ),
    )


def test_delta_connection_extras_carry_the_storage_options(
    s3: S3Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_delta.hooks.delta import DeltaHook

    t = DeltaTable.create(s3.uri, SCHEMA, storage_options=s3.options)
    t.append(pa.table({"id": [1]}))
    base, name = s3.uri.rsplit("/", 1)
    _delta_conn(monkeypatch, "lake", {"base_path": base, "storage_options": s3.options})
    hook = DeltaHook("lake")
    assert hook.resolve_table(name) == s3.uri
    assert hook.latest_version(name) == 1
    assert hook.history(name, limit=1)[0]["operation"] == "WRITE"


def test_aws_conn_id_takes_credentials_from_an_aws_connection(
    s3: S3Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_delta.hooks.delta import DeltaHook

    DeltaTable.create(s3.uri, SCHEMA, storage_options=s3.options)
    _aws_conn(monkeypatch, "aws_lake", s3)
    _delta_conn(
        monkeypatch, "lake_aws", {"storage_options": {"aws_conn_id": "aws_lake", "AWS_ALLOW_HTTP": "true"}}
    )
    hook = DeltaHook("lake_aws")
    options = hook.storage_options
    assert options["AWS_ACCESS_KEY_ID"] == ACCESS_KEY and options["AWS_ENDPOINT_URL"] == s3.proxy.endpoint
    assert "aws_conn_id" not in options
    assert hook.latest_version(s3.uri) == 0
    # The extra may also name the AWS connection directly; explicit options win over it.
    _delta_conn(
        monkeypatch,
        "lake_aws2",
        {"aws_conn_id": "aws_lake", "storage_options": {"AWS_ALLOW_HTTP": "true", "AWS_REGION": "eu-west-3"}},
    )
    options = DeltaHook("lake_aws2").storage_options
    assert options["AWS_SECRET_ACCESS_KEY"] == SECRET_KEY and options["AWS_REGION"] == "eu-west-3"


def test_an_aws_connection_without_credentials_is_refused_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk.exceptions import AirflowException

    from airflow_provider_delta.hooks.delta import DeltaHook

    monkeypatch.setenv("AIRFLOW_CONN_AWS_EMPTY", json.dumps({"conn_type": "aws"}))
    _delta_conn(monkeypatch, "lake_empty", {"storage_options": {"aws_conn_id": "aws_empty"}})
    with pytest.raises(AirflowException, match="no login/password"):
        _ = DeltaHook("lake_empty").storage_options


def test_deferred_sensor_stores_no_credentials_in_the_trigger_and_fires_on_s3(
    s3: S3Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk.exceptions import TaskDeferred

    from airflow_provider_delta.sensors.delta import DeltaVersionSensor
    from airflow_provider_delta.triggers.delta import DeltaVersionTrigger

    t = DeltaTable.create(s3.uri, SCHEMA, storage_options=s3.options)
    _aws_conn(monkeypatch, "aws_lake", s3)
    _delta_conn(
        monkeypatch, "lake_s3", {"storage_options": {"aws_conn_id": "aws_lake", "AWS_ALLOW_HTTP": "true"}}
    )
    sensor = DeltaVersionSensor(
        task_id="wait", table=s3.uri, delta_conn_id="lake_s3", deferrable=True, poke_interval=0.2, timeout=30
    )
    with pytest.raises(TaskDeferred) as info:
        sensor.execute({})
    trigger = info.value.trigger
    assert isinstance(trigger, DeltaVersionTrigger)
    _classpath, kwargs = trigger.serialize()
    assert SECRET_KEY not in json.dumps(kwargs, default=str) and ACCESS_KEY not in json.dumps(
        kwargs, default=str
    )
    assert kwargs["delta_conn_id"] == "lake_s3"

    t.append(pa.table({"id": [1]}))
    rebuilt = DeltaVersionTrigger(**kwargs)  # as the triggerer does, from the stored kwargs

    async def first_event() -> dict[str, object]:
        async for event in rebuilt.run():
            return dict(event.payload)
        raise AssertionError("no event")

    event = asyncio.run(asyncio.wait_for(first_event(), timeout=30))
    assert event["status"] == "success" and event["version"] == 1
    assert SECRET_KEY not in json.dumps(event, default=str)


def test_job_spec_file_is_private_and_its_log_line_redacted(tmp_path: Path) -> None:
    from airflow_provider_delta.jobs.spec import JobSpec
    from airflow_provider_delta.operators.job_secrets import redacted_spec_json, write_private_file

    spec = JobSpec(
        job="checkpoint",
        table="s3://b/t",
        storage_options={
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_SESSION_TOKEN": "tok-123",
            "AWS_REGION": "eu-west-1",
        },
    )
    path = tmp_path / "spec.json"
    path.write_text("old")
    path.chmod(0o644)
    write_private_file(path, spec.to_json())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert (
        JobSpec.from_dict(json.loads(path.read_text())).storage_options["AWS_SECRET_ACCESS_KEY"] == SECRET_KEY
    )
    logged = redacted_spec_json(spec)
    assert SECRET_KEY not in logged and "tok-123" not in logged and "eu-west-1" in logged

"""The job protocol: JSON spec in, JSON result out, validated on both sides (no Spark, no Airflow)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from airflow_provider_delta.exceptions import JobSpecError
from airflow_provider_delta.jobs.registry import JOBS, runner_script
from airflow_provider_delta.jobs.runner import main
from airflow_provider_delta.jobs.spec import JobResult, JobSpec


def test_spec_round_trips_through_json_file_and_text(tmp_path: Path) -> None:
    spec = JobSpec(
        job="write",
        table="/data/t",
        storage_options={"AWS_REGION": "eu-west-1"},
        options={"mode": "append", "rows": [{"id": 1}]},
        conflict_policy={"overrides": {"ConcurrentAppendException": "fail"}},
        app_id="airflow:d:t:r",
        app_version=0,
    )
    path = tmp_path / "spec.json"
    path.write_text(spec.to_json())
    assert JobSpec.load(str(path)) == spec
    assert JobSpec.load(spec.to_json()) == spec
    assert json.loads(spec.to_json())["protocol"] == 1


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"table": "/t"}, "'job' must be a non-empty string"),
        ({"job": "checkpoint"}, "'table' must be a non-empty string"),
        ({"job": "write", "table": "/t", "app_id": "a"}, "'app_id' and 'app_version' together"),
        (
            {"job": "write", "table": "/t", "app_id": "a", "app_version": "1"},
            "'app_version' must be an integer",
        ),
        ({"job": "write", "table": "/t", "options": [1]}, "'options' must be a JSON object"),
        ({"job": "write", "table": "/t", "protocol": 99}, "protocol 99 is not supported"),
    ],
)
def test_malformed_spec_is_refused_naming_the_field(raw: dict, fragment: str) -> None:
    with pytest.raises(JobSpecError, match=fragment):
        JobSpec.from_dict(raw)


def test_result_round_trips_and_an_error_result_needs_a_type() -> None:
    ok = JobResult(status="success", job="checkpoint", table="/t", version=4, metrics={"numAddFiles": 2})
    assert JobResult.from_json(ok.to_json()) == ok
    with pytest.raises(JobSpecError, match=r"error\.type"):
        JobResult.from_json(json.dumps({"status": "error", "job": "x", "table": "/t", "error": {}}))
    with pytest.raises(JobSpecError, match="expected status"):
        JobResult.from_json(json.dumps({"job": "x"}))


def test_unknown_job_writes_a_failed_result_with_action_fail(tmp_path: Path) -> None:
    result_path = tmp_path / "result.json"
    code = main(
        ["--spec", '{"job": "nope", "table": "/t"}', "--result", str(result_path), "--engine", "local"]
    )
    result = JobResult.read(result_path)
    assert code == 2
    assert result.status == "error"
    assert result.error is not None
    assert result.error["type"] == "JobSpecError"
    assert result.error["action"] == "fail"
    assert f"known: {', '.join(sorted(JOBS))}" in result.error["message"]


def test_unreadable_spec_exits_1_with_a_result(tmp_path: Path) -> None:
    result_path = tmp_path / "result.json"
    assert (
        main(["--spec", str(tmp_path / "missing.json"), "--result", str(result_path), "--engine", "local"])
        == 1
    )
    assert JobResult.read(result_path).error["type"] == "FileNotFoundError"  # type: ignore[index]


def test_the_runner_script_resolves_without_importing_pyspark_or_airflow() -> None:
    code = textwrap.dedent(
        """
        import sys
        from airflow_provider_delta.jobs.registry import runner_script
        from airflow_provider_delta.jobs.registry import JOBS
        from airflow_provider_delta.jobs.spec import JobSpec
        print(runner_script())
        print(sorted({m.split(".")[0] for m in sys.modules} & {"pyspark", "airflow"}))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    path, loaded = out.strip().splitlines()
    assert loaded == "[]"
    assert path == runner_script()
    assert Path(path).parts[-2:] == ("jobs", "__main__.py")
    assert Path(path).is_file()


def test_every_registered_job_module_has_a_run_function() -> None:
    import importlib

    for name, module in JOBS.items():
        assert callable(importlib.import_module(module).run), name

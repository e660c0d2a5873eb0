"""The ``cdf_export`` job with ``--engine local``: options, result, and errors reported by type."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_delta.jobs.runner import main, run_spec
from airflow_provider_delta.jobs.spec import JobResult, JobSpec
from tests.unit.core.cdf_export.helpers import busy_table

if TYPE_CHECKING:
    from pathlib import Path


def test_the_job_exports_and_reports_the_export_result(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    spec = JobSpec(
        job="cdf_export",
        table=str(tmp_path / "src"),
        options={"sink": str(tmp_path / "sink"), "format": "delta", "ending_version": 3},
    )
    result = run_spec(spec)
    assert result.status == "success", result.error
    assert (result.version, result.committed) == (0, True)
    assert {k: result.metrics[k] for k in ("start", "end", "versions", "skipped", "sink_version")} == {
        "start": 0,
        "end": 3,
        "versions": 4,
        "skipped": False,
        "sink_version": 0,
    }
    again = run_spec(spec)
    assert (again.committed, again.metrics["skipped"]) == (False, True)


def test_bad_options_and_export_errors_come_back_typed(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    missing = run_spec(JobSpec(job="cdf_export", table=str(tmp_path / "src"), options={}))
    assert (missing.status, missing.error["type"], missing.error["action"]) == (
        "error",
        "JobSpecError",
        "fail",
    )
    run_spec(
        JobSpec(
            job="cdf_export",
            table=str(tmp_path / "src"),
            options={"sink": str(tmp_path / "o"), "ending_version": 2},
        )
    )
    gap = run_spec(
        JobSpec(
            job="cdf_export",
            table=str(tmp_path / "src"),
            options={"sink": str(tmp_path / "o"), "starting_version": 5},
        )
    )
    assert gap.error["type"] == "ExportRangeError"
    assert "gap" in gap.error["message"]


def test_the_runner_runs_the_job_from_the_command_line(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    spec = JobSpec(job="cdf_export", table=str(tmp_path / "src"), options={"sink": str(tmp_path / "o")})
    code = main(["--spec", spec.to_json(), "--result", str(tmp_path / "r.json"), "--engine", "local"])
    assert code == 0
    assert JobResult.read(tmp_path / "r.json").metrics["end"] == 5

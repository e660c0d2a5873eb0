"""Every job declares its options once (``JOB`` in its module); the runner refuses anything else."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import pytest

from airflow_provider_delta.exceptions import JobSpecError
from airflow_provider_delta.spark.jobs import JOBS
from airflow_provider_delta.spark.jobs.options import JobDefinition, Option, job_definition
from airflow_provider_delta.spark.jobs.run_job import main
from airflow_provider_delta.spark.protocol import JobResult, JobSpec
from tests.spark_jobs.helpers import make_table

if TYPE_CHECKING:
    from pathlib import Path


def test_every_registered_job_declares_its_options_with_docs() -> None:
    for name, module in JOBS.items():
        definition = importlib.import_module(module).JOB
        assert isinstance(definition, JobDefinition), name
        assert definition.name == name
        assert definition.summary
        for option in definition.options:
            assert option.doc, f"{name}.{option.name} has no doc"
            assert option.check(option.default, "default") == option.default


@pytest.mark.parametrize(
    ("job", "options", "fragment"),
    [
        ("checkpoint", {"cleanup": False}, "unknown option 'cleanup' (did you mean 'cleanup_log'?)"),
        (
            "write",
            {"rows": [], "merge_schema": True, "sourc": {}},
            "'merge_schema' (did you mean 'schema_mode'?), 'sourc' (did you mean 'source'?)",
        ),
        ("checkpoint", {"cleanup_log": "no"}, "option 'cleanup_log' must be bool, found 'no'"),
        ("write", {"rows": [], "mode": "upsert"}, "must be one of 'append', 'overwrite', found 'upsert'"),
        ("write", {"rows": [], "partition_by": ["a", 1]}, "list of str, found 1 at index 1"),
        ("write", {}, "exactly one of options 'rows' and 'source'"),
        ("write", {"source": {"pth": "/x"}}, "'source' has unknown key 'pth'"),
        ("write", {"rows": [], "predicate": "a = 1"}, "'predicate' needs mode 'overwrite'"),
    ],
)
def test_unknown_mistyped_or_inconsistent_options_are_refused(job: str, options: dict, fragment: str) -> None:
    with pytest.raises(JobSpecError, match="^Cannot run job") as info:
        job_definition(job).validate(options)
    assert fragment in str(info.value)


def test_defaults_come_from_the_declaration_and_int_refuses_bool() -> None:
    assert job_definition("checkpoint").validate({}) == {"cleanup_log": True, "skip_missing": False}
    count = JobDefinition(name="x", summary="x", options=(Option("n", int, 3, "n"), Option("f", float, 1.5, "f")))
    assert count.validate({"f": 2}) == {"n": 3, "f": 2}
    with pytest.raises(JobSpecError, match="option 'n' must be int, found True"):
        count.validate({"n": True})


def test_templates_and_xcom_args_are_checked_only_after_rendering() -> None:
    write = job_definition("write")
    partial = write.validate({"rows": "{{ ti.xcom_pull('rows') }}", "mode": "{{ params.mode }}"}, partial=True)
    assert partial["mode"] == "{{ params.mode }}"
    with pytest.raises(JobSpecError, match="unknown option 'mdoe'"):
        write.validate({"rows": "{{ x }}", "mdoe": "append"}, partial=True)
    with pytest.raises(JobSpecError, match="render_template_as_native_obj"):
        job_definition("checkpoint").validate({"cleanup_log": "False"})


def test_source_needs_engine_spark() -> None:
    with pytest.raises(JobSpecError, match="option 'source' needs engine 'spark'"):
        job_definition("write").validate({"source": {"path": "/x"}}, engine="local")


def test_the_job_refuses_a_typo_before_touching_the_table(tmp_path: Path) -> None:
    """The checkpoint job with ``cleanup`` (meant: ``cleanup_log``) used to run and delete the log."""
    table = make_table(tmp_path / "t", commits=3)
    before = sorted(p.name for p in (table / "_delta_log").iterdir())
    spec = JobSpec(job="checkpoint", table=str(table), options={"cleanup": False})
    code = main(["--spec", spec.to_json(), "--result", str(tmp_path / "r.json"), "--engine", "local"])
    result = JobResult.read(tmp_path / "r.json")
    assert code == 2
    assert result.error is not None
    assert result.error["type"] == "JobSpecError"
    assert result.error["action"] == "fail"
    assert "did you mean 'cleanup_log'" in result.error["message"]
    assert sorted(p.name for p in (table / "_delta_log").iterdir()) == before


def test_a_job_reading_an_undeclared_option_is_a_bug_not_a_silent_none(tmp_path: Path) -> None:
    from airflow_provider_delta.spark.jobs.context import JobContext

    ctx = JobContext(JobSpec(job="checkpoint", table=str(tmp_path)))
    assert ctx.option("cleanup_log") is True
    with pytest.raises(JobSpecError, match="reads option 'retention'.*does not declare"):
        ctx.option("retention")

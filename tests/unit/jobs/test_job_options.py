"""Every job declares its options once (``JOB`` in its module); the runner refuses anything else."""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING

import pytest

from airflow_provider_delta.exceptions import JobSpecError
from airflow_provider_delta.jobs.definition import JobDefinition, Option
from airflow_provider_delta.jobs.registry import JOBS, job_definition
from airflow_provider_delta.jobs.runner import main
from airflow_provider_delta.jobs.spec import JobResult, JobSpec
from tests.spark_jobs.helpers import make_table

if TYPE_CHECKING:
    from pathlib import Path


def test_every_registered_job_declares_its_options_with_docs() -> None:
    for name, module in JOBS.items():
        definition = importlib.import_module(module).JOB
        assert isinstance(definition, JobDefinition), name
        assert definition.name == name
        assert definition.summary
        assert definition.default_engine in definition.engines
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
        ("checkpoint", {"cleanup_log": "no"}, "option 'cleanup_log' must be bool, found 'no' (a string that"),
        ("checkpoint", {"cleanup_log": 1}, "option 'cleanup_log' must be bool, found 1 (int)"),
        ("cdf_export", {"format": "delta"}, "option 'sink' is required"),
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
    count = JobDefinition(name="x", summary="x", options=(Option("n", int, 3, "n"), Option("f", float, 1.5, "f")),
                          engines=("local",), default_engine="local")
    assert count.validate({"f": 2}) == {"n": 3, "f": 2}
    with pytest.raises(JobSpecError, match="option 'n' must be int, found True"):
        count.validate({"n": True})


def test_templates_and_xcom_args_are_checked_only_after_rendering() -> None:
    write = job_definition("write")
    partial = write.validate({"rows": "{{ ti.xcom_pull('rows') }}", "mode": "{{ params.mode }}"}, partial=True)
    assert partial["mode"] == "{{ params.mode }}"
    with pytest.raises(JobSpecError, match="unknown option 'mdoe'"):
        write.validate({"rows": "{{ x }}", "mdoe": "append"}, partial=True)
    assert job_definition("checkpoint").validate({"cleanup_log": "False"})["cleanup_log"] is False


def _option(kind: type | tuple[type, ...], **kwargs: object) -> Option:
    return Option("o", kind, None, "doc", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "text", "expected"),
    [
        (bool, "True", True), (bool, "false", False), (bool, " TRUE ", True),
        (int, "24", 24), (int, "-3", -3), ((int, float), "24", 24), ((int, float), "1.5", 1.5), (float, "2", 2.0),
        (list, "['a', 'b']", ["a", "b"]), (list, '["a", 1]', ["a", 1]), (list, "('a',)", ["a"]),
        (dict, "{'k': 1}", {"k": 1}), (dict, '{"k": null}', {"k": None}),
        (int, "None", None), (dict, "", None), (bool, "null", None),
        (str, "24", "24"), ((list, str), "a,b", "a,b"),
    ],
)
def test_a_rendered_string_becomes_the_declared_type(kind: type, text: str, expected: object) -> None:
    value = _option(kind).convert(text, "here")
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        (bool, "yes"), (bool, "1"), (int, "1.5"), (int, "ten"), (list, "{'k': 1}"), (dict, "[1]"),
        (list, "__import__('os')"),
    ],
)
def test_a_string_that_is_not_of_the_declared_type_is_refused_naming_the_option(kind: type, text: str) -> None:
    with pytest.raises(JobSpecError, match=f"^here: option 'o' must be .*, found {re.escape(repr(text))}"):
        _option(kind).convert(text, "here")


def test_values_that_are_not_strings_are_never_converted() -> None:
    option = _option(int)
    assert option.convert(5, "here") == 5
    with pytest.raises(JobSpecError, match="must be int, found 5.0"):
        JobDefinition(name="x", summary="x", options=(option,), engines=("local",),
                      default_engine="local").validate({"o": 5.0})


def test_the_default_engine_is_one_of_the_jobs_engines() -> None:
    with pytest.raises(ValueError, match="default_engine 'spark' is not in"):
        JobDefinition(name="x", summary="x", engines=("local",), default_engine="spark")


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
    from airflow_provider_delta.jobs.context import JobContext

    ctx = JobContext(JobSpec(job="checkpoint", table=str(tmp_path)))
    assert ctx.option("cleanup_log") is True
    with pytest.raises(JobSpecError, match="reads option 'retention'.*does not declare"):
        ctx.option("retention")

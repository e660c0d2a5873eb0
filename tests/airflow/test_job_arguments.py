"""An operator's arguments are its job's declared options (``operators/job_arguments.py``).

A declaration made in the test (``DEMO`` in ``dags/delta_job_arguments_dags.py``) gives an operator
its signature, template fields and renderers; adding an option to it adds the argument; a rendered
string becomes the declared type in one place (``Option.convert``, through ``JobDefinition.validate``);
a bad argument fails when the DAG is parsed with a ``JobSpecError`` naming the option.
"""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_delta.exceptions import JobSpecError
from airflow_provider_delta.jobs.definition import Option
from tests.airflow.helpers import xcom_value
from tests.spark_jobs.helpers import make_table

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration


def _keyword_parameters(cls: type) -> dict[str, inspect.Parameter]:
    return {p.name: p for p in inspect.signature(cls).parameters.values() if p.kind is p.KEYWORD_ONLY}


def test_an_operators_signature_template_fields_and_docs_come_from_its_declaration() -> None:
    from tests.airflow.dags.delta_job_arguments_dags import DEMO, DemoOperator

    params = _keyword_parameters(DemoOperator)
    assert list(params) == ["table", *(o.name for o in DEMO.options)]  # single-table job: no `tables`
    assert (params["threshold"].default, params["threshold"].annotation) == (3, "int")
    assert (params["labels"].default, params["labels"].annotation) == (None, "list[str] | None")
    assert inspect.signature(DemoOperator).parameters["kwargs"].kind is inspect.Parameter.VAR_KEYWORD
    assert DemoOperator.template_fields[-len(DEMO.options):] == tuple(o.name for o in DEMO.options)
    assert "job_options" not in DemoOperator.template_fields
    renderers = DemoOperator.template_fields_renderers
    assert renderers["when"] == "sql" and renderers["labels"] == renderers["settings"] == "json"
    assert "``ratio`` (float): How much." in (DemoOperator.__doc__ or "")


def test_adding_an_option_to_the_declaration_adds_a_templated_converted_argument() -> None:
    from airflow_provider_delta.operators.delta import DeltaSparkJobOperator
    from tests.airflow.dags.delta_job_arguments_dags import DEMO

    grown = replace(DEMO, options=(*DEMO.options, Option("batch_size", int, None, "Rows per batch.", minimum=1)))

    class GrownOperator(DeltaSparkJobOperator, job=grown):
        pass

    assert "batch_size" not in _keyword_parameters(type(DEMO)) and "batch_size" in _keyword_parameters(GrownOperator)
    assert "batch_size" in GrownOperator.template_fields
    op = GrownOperator(task_id="g", table="/t", batch_size="{{ params.n }}")
    assert op.batch_size == "{{ params.n }}"  # kept as given until rendered
    op.batch_size = "500"  # what the template renders to
    assert op.rendered_job_options()["batch_size"] == 500
    with pytest.raises(JobSpecError, match="option 'batch_size' must be >= 1, found 0"):
        GrownOperator(task_id="g", table="/t", batch_size=0)


def test_rendered_strings_become_the_declared_types_after_rendering(airflow_db: Path, tmp_path: Path) -> None:
    from tests.airflow.dags.delta_job_arguments_dags import rendered_arguments

    make_table(tmp_path / "t", commits=2)
    run = rendered_arguments.test(run_conf={"root": str(tmp_path)})
    assert str(run.state) == "success"
    sent = xcom_value(rendered_arguments.dag_id, run.run_id, "demo")
    assert sent == {
        "threshold": 7, "ratio": 0.5, "labels": ["a", "b"], "settings": {"k": 7}, "strict": True,
        "when": "day = '7'",
    }
    vacuum = xcom_value(rendered_arguments.dag_id, run.run_id, "vacuum")
    assert vacuum["metrics"]["dryRun"] is True  # "True" rendered, a bool sent
    assert vacuum["metrics"]["parameters"]["specifiedRetentionMillis"] == 168 * 3600 * 1000  # "{{ 7 * 24 }}"


def test_a_bad_argument_fails_when_the_dag_is_parsed_naming_the_option(tmp_path: Path) -> None:
    from airflow.dag_processing.dagbag import DagBag

    from tests.airflow.dags.delta_job_arguments_dags import DemoOperator

    with pytest.raises(JobSpecError, match=r"Cannot create task 'd' \(job 'demo'\): option 'threshold' must be int"):
        DemoOperator(task_id="d", table="/t", threshold="many")
    with pytest.raises(JobSpecError, match="option 'labels' must be a list of str, found 1 at index 0"):
        DemoOperator(task_id="d", table="/t", labels=[1])
    (tmp_path / "bad_vacuum.py").write_text(textwrap.dedent(
        """
        from datetime import datetime
        from airflow.sdk import DAG
        from airflow_provider_delta.operators.maintenance import DeltaVacuumOperator

        with DAG(dag_id="bad_vacuum", schedule=None, start_date=datetime(2026, 1, 1)):
            DeltaVacuumOperator(task_id="v", table="/data/t", retention_hours="a week")
        """
    ))
    errors: dict[str, Any] = DagBag(dag_folder=str(tmp_path), safe_mode=False).import_errors
    (error,) = errors.values()
    assert "JobSpecError" in error and "option 'retention_hours' must be int or float" in error


def test_options_work_as_airflow_arguments_default_args_and_expand() -> None:
    from datetime import datetime

    from airflow.sdk import DAG

    from airflow_provider_delta.operators.maintenance import DeltaVacuumOperator

    with DAG("args", schedule=None, start_date=datetime(2026, 1, 1), default_args={"retention_hours": 48}):
        vacuum = DeltaVacuumOperator(task_id="v", table="/t")
        mapped = DeltaVacuumOperator.partial(task_id="m", table="/t").expand(retention_hours=[1, 2])
    assert vacuum.retention_hours == 48 and vacuum.job_options["retention_hours"] == 48
    assert mapped.expand_input.value == {"retention_hours": [1, 2]}  # type: ignore[union-attr]
    with pytest.raises(TypeError, match="retention_hour"):
        DeltaVacuumOperator.partial(task_id="x", table="/t", retention_hour=1)  # a typo: not an argument

"""Test-only DAGs: an operator built from a declaration made here, and a maintenance operator whose
arguments come from templates (``dag.test()`` renders them; the declaration converts them).

``DEMO`` is a job declaration that no registry knows: :class:`DemoOperator` names it in its class
statement, so its arguments, template fields and conversions come from ``DEMO`` alone. Its
``execute`` returns the options it would send the job (rendered, converted), instead of running one.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from airflow.sdk import DAG

from airflow_provider_delta.jobs.definition import JobDefinition, Option
from airflow_provider_delta.operators.delta import DeltaSparkJobOperator
from airflow_provider_delta.operators.maintenance import DeltaVacuumOperator

if TYPE_CHECKING:
    from airflow.sdk import Context

DEMO_OPTIONS = (
    Option("threshold", int, 3, "How many.", minimum=1),
    Option("ratio", float, None, "How much."),
    Option("labels", list, None, "Which.", items=str),
    Option("settings", dict, None, "How."),
    Option("strict", bool, False, "Whether."),
    Option("when", str, None, "A SQL predicate.", renderer="sql"),
)
DEMO = JobDefinition(name="demo", summary="A job declared by a test.", options=DEMO_OPTIONS,
                     engines=("local",), default_engine="local")


class DemoOperator(DeltaSparkJobOperator, job=DEMO):
    """An operator for the test's own job."""

    def execute(self, context: Context) -> dict[str, Any]:
        """The options this task instance would give the job (no job runs)."""
        return self.rendered_job_options()


with DAG(
    dag_id="delta_job_arguments_rendered",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"threshold": 7, "ratio": 0.5, "labels": ["a", "b"], "strict": True, "root": "/nonexistent"},
) as rendered_arguments:
    DemoOperator(
        task_id="demo",
        table="/data/t",
        threshold="{{ params.threshold }}",
        ratio="{{ params.ratio }}",
        labels="{{ params.labels }}",
        settings='{"k": {{ params.threshold }}}',
        strict="{{ params.strict }}",
        when="day = '{{ params.threshold }}'",
    )
    DeltaVacuumOperator(
        task_id="vacuum",
        table="{{ params.root }}/t",
        retention_hours="{{ params.threshold * 24 }}",
        dry_run="{{ params.strict }}",
        max_files_in_result="{{ params.threshold }}",
        engine="local",
    )

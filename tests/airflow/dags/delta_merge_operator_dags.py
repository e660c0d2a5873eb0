"""Test-only DAG for DeltaSchemaEvolveOperator and DeltaMergeWithEvolutionOperator, jobs run in process.

``delta_merge_operators``: the real operators with templated fields, their jobs run in the task's
process (engine ``local``: the job code without a JVM; the Spark runs are in test_merge_operators.py).
The first try of ``evolve`` and of ``upsert`` fails *after* its job committed
(a worker lost after the commit landed): Airflow's retry must find the commit and do nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import DAG, task
from airflow.sdk.exceptions import AirflowException

from airflow_provider_delta.operators.merge import DeltaMergeWithEvolutionOperator, DeltaSchemaEvolveOperator

if TYPE_CHECKING:
    from airflow.sdk import Context


class _InProcess:
    """Runs the job in the task process and fails the first try after the job returned."""

    def execute(self, context: Context) -> dict[str, Any]:
        result: dict[str, Any] = super().execute(context)  # type: ignore[misc]
        if context["ti"].try_number == 1:
            raise AirflowException(
                f"simulated: the worker was lost after the commit of version {result['version']}"
            )
        return result


class InProcessSchemaEvolve(_InProcess, DeltaSchemaEvolveOperator):
    """DeltaSchemaEvolveOperator, job in process, first try lost after its commit."""


class InProcessMerge(_InProcess, DeltaMergeWithEvolutionOperator):
    """DeltaMergeWithEvolutionOperator, job in process, first try lost after its commit."""


with DAG(
    dag_id="delta_merge_operators",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"root": "/nonexistent", "min_id": 0},
    default_args={"retries": 1, "retry_delay": timedelta(seconds=0)},
) as merge_operators:
    evolve = InProcessSchemaEvolve(
        task_id="evolve",
        engine="local",
        table="{{ params.root }}/t",
        statements=["ALTER TABLE t ADD COLUMNS (tier STRING AFTER name)"],
    )
    upsert = InProcessMerge(
        task_id="upsert",
        engine="local",
        table="{{ params.root }}/t",
        source={"path": "{{ params.root }}/batch.parquet", "format": "parquet"},
        on="target.id = source.id AND source.id >= {{ params.min_id }}",
        when_matched=[{"action": "update_all", "except": ["op"], "condition": "source.op = 'U'"}],
        when_not_matched=[{"action": "insert_all", "except": ["op"]}],
    )

    @task
    def report(result: dict[str, Any]) -> dict[str, Any]:
        return {"version": result["version"], "committed": result["committed"], **result["metrics"]}

    evolve >> upsert
    report(upsert.output)

"""Test-only DAG: a job option that a template fills in is checked after rendering.

``delta_job_options_rendered``: ``cleanup_log`` comes from ``{{ params.keep_log }}``, which renders
to the string ``'sometimes'``: not a bool (``'False'`` would become ``False``), so the operator refuses
it before running anything (the task fails without retries; the table's log is untouched).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_provider_delta.operators.delta import DeltaSparkJobOperator

with DAG(
    dag_id="delta_job_options_rendered",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"table": "/nonexistent", "keep_log": "sometimes"},
    default_args={"retries": 2, "retry_delay": timedelta(seconds=0)},
) as rendered_options:
    DeltaSparkJobOperator(
        task_id="checkpoint",
        job="checkpoint",
        table="{{ params.table }}",
        job_options={"cleanup_log": "{{ params.keep_log }}"},
    )

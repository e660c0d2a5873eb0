"""Test-only DAGs for the maintenance operators, their jobs run in the task's process (no JVM).

``delta_maintenance_operators``: on ``{{ params.root }}/t``: OPTIMIZE (ZORDER BY x, partition from a
template) >> REORG PURGE >> VACUUM dry run (XCom capped at 3 paths) >> VACUUM (retention 0, check
off). ``delta_maintenance_bad_input``: a VACUUM with too short a retention and an OPTIMIZE with a
data-column ``where``: both tasks must fail with Delta's message.

The operators are the real ones; only ``submit_job`` runs ``run_job.main(... --engine local)``
instead of spark-submit (example_delta_maintenance runs them through spark-submit).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from airflow.sdk import DAG

from airflow_provider_delta.operators.maintenance import (
    DeltaOptimizeOperator,
    DeltaReorgOperator,
    DeltaVacuumOperator,
)
from airflow_provider_delta.spark.jobs.run_job import main as run_job_main

if TYPE_CHECKING:
    from pathlib import Path

    from airflow_provider_delta.hooks.delta import DeltaHook


class _InProcess:
    def submit_job(self, delta: DeltaHook, spec_path: Path, result_path: Path) -> None:
        run_job_main(["--spec", str(spec_path), "--result", str(result_path), "--engine", "local"])


class InProcessOptimize(_InProcess, DeltaOptimizeOperator):
    """DeltaOptimizeOperator, job in the task's process."""


class InProcessReorg(_InProcess, DeltaReorgOperator):
    """DeltaReorgOperator, job in the task's process."""


class InProcessVacuum(_InProcess, DeltaVacuumOperator):
    """DeltaVacuumOperator, job in the task's process."""


with DAG(
    dag_id="delta_maintenance_operators",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"root": "/nonexistent", "part": "a"},
) as operators_dag:
    table = "{{ params.root }}/t"
    (
        InProcessOptimize(task_id="optimize", table=table, where="p = '{{ params.part }}'", zorder_by=["x"])
        >> InProcessReorg(task_id="reorg", table=table)
        >> InProcessVacuum(task_id="vacuum_dry_run", table=table, retention_hours=0,
                           enforce_retention_duration=False, dry_run=True, max_files_in_xcom=3)
        >> InProcessVacuum(task_id="vacuum", table=table, retention_hours="{{ 0 }}",
                           enforce_retention_duration=False)
    )

with DAG(
    dag_id="delta_maintenance_bad_input",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"root": "/nonexistent"},
) as bad_input_dag:
    InProcessVacuum(task_id="vacuum_too_short", table="{{ params.root }}/t", retention_hours=1)
    InProcessOptimize(task_id="optimize_data_column", table="{{ params.root }}/t", where="id > 3")

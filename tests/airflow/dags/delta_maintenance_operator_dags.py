"""Test-only DAGs for the maintenance operators, their jobs run in the task's process (no JVM).

``delta_maintenance_operators``: on ``{{ params.root }}/t``: OPTIMIZE (ZORDER BY x, partition from a
template) >> REORG PURGE >> VACUUM dry run (XCom capped at 3 paths) >> VACUUM (retention 0, check
off). ``delta_maintenance_bad_input``: a VACUUM with too short a retention and an OPTIMIZE with a
data-column ``where``: both tasks must fail with Delta's message.

The operators run their jobs on engine ``local`` (example_delta_maintenance runs them through
spark-submit). ``delta_maintenance_tables``: VACUUM of a list of tables (``{{ params.root }}/a/t``,
``/missing``, ``/b/t``) in one job.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_delta.operators.maintenance import (
    DeltaOptimizeOperator,
    DeltaReorgOperator,
    DeltaVacuumOperator,
)

with DAG(
    dag_id="delta_maintenance_operators",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"root": "/nonexistent", "part": "a"},
) as operators_dag:
    table = "{{ params.root }}/t"
    (
        DeltaOptimizeOperator(
            task_id="optimize", table=table, where="p = '{{ params.part }}'", zorder_by=["x"], engine="local"
        )
        >> DeltaReorgOperator(task_id="reorg", table=table, engine="local")
        >> DeltaVacuumOperator(
            task_id="vacuum_dry_run", table=table, retention_hours=0, enforce_retention_duration=False,
            dry_run=True, max_files_in_result=3, engine="local",
        )
        >> DeltaVacuumOperator(
            task_id="vacuum", table=table, retention_hours="{{ 0 }}", enforce_retention_duration=False,
            engine="local",
        )
    )

with DAG(
    dag_id="delta_maintenance_bad_input",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"root": "/nonexistent"},
) as bad_input_dag:
    DeltaVacuumOperator(task_id="vacuum_too_short", table="{{ params.root }}/t", retention_hours=1, engine="local")
    DeltaOptimizeOperator(
        task_id="optimize_data_column", table="{{ params.root }}/t", where="id > 3", engine="local"
    )

with DAG(
    dag_id="delta_maintenance_tables",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"root": "/nonexistent"},
) as tables_dag:
    DeltaVacuumOperator(
        task_id="vacuum_tables", engine="local", retention_hours=0, enforce_retention_duration=False,
        tables=["{{ params.root }}/a/t", "{{ params.root }}/missing", "{{ params.root }}/b/t"],
    )

"""Example (2): periodic maintenance, a checkpoint of each table every hour, on Spark.

Tables come from the Airflow Variable ``delta_maintenance_tables`` or the environment variable
``DELTA_MAINTENANCE_TABLES`` (a comma-separated list of paths/URIs, or bare names under the
``delta_default`` connection's base path), so a demo or a test can point the DAG at a temporary folder.

The Spark master comes from the ``spark_default`` connection, e.g.
``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[2]"}'`` (without it: ``local[*]``).
Run it once with ``airflow dags test example_delta_maintenance``.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import DAG, Variable

from airflow_provider_delta.operators.delta import DeltaCheckpointOperator


def maintenance_tables() -> list[str]:
    """The tables to maintain: Variable ``delta_maintenance_tables``, else ``$DELTA_MAINTENANCE_TABLES``."""
    raw = Variable.get("delta_maintenance_tables", default=None) or os.environ.get(
        "DELTA_MAINTENANCE_TABLES", ""
    )
    return [t.strip() for t in raw.split(",") if t.strip()]


def _task_id(table: str) -> str:
    name = table.rstrip("/").rsplit("/", 1)[-1]
    return "checkpoint_" + "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


# [START howto_operator_delta_checkpoint]
with DAG(
    dag_id="example_delta_maintenance",
    schedule=timedelta(hours=1),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=1)},
    tags=["example", "delta"],
) as dag:
    for table in maintenance_tables():
        DeltaCheckpointOperator(task_id=_task_id(table), table=table, cleanup_log=True)
# [END howto_operator_delta_checkpoint]

"""Example (2): periodic maintenance, a checkpoint of every table each hour, in one task.

Tables come from the Airflow Variable ``delta_maintenance_tables`` or the environment variable
``DELTA_MAINTENANCE_TABLES`` (a comma-separated list of paths/URIs, or bare names under the
``delta_default`` connection's base path), so a demo or a test can point the DAG at a temporary folder.
A table that does not exist yet is reported as skipped, not failed (``skip_missing``).

A checkpoint moves no data, so by default the job runs in the task's process (engine ``local``, no
JVM). ``DELTA_MAINTENANCE_ENGINE=spark`` runs it through spark-submit instead, on the master of the
``spark_default`` connection, e.g. ``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[2]"}'``
(without it: ``local[*]``). Run it once with ``airflow dags test example_delta_maintenance``.
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
    tables = maintenance_tables()
    if tables:
        # One job for every table: one result per table, and a failing table does not stop the others.
        DeltaCheckpointOperator(
            task_id="checkpoint_tables",
            tables=tables,
            cleanup_log=True,
            skip_missing=True,
            engine="spark" if os.environ.get("DELTA_MAINTENANCE_ENGINE") == "spark" else "local",
        )
# [END howto_operator_delta_checkpoint]

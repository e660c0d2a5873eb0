"""DAGs the sensor tests run with dag.test(): reschedule and deferrable modes waiting for a commit.

The table comes from ``$DELTA_TEST_SENSOR_TABLE`` (set by the test before it runs the DAG).
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_delta.sensors.delta import DeltaVersionSensor

TABLE = os.environ.get("DELTA_TEST_SENSOR_TABLE", "/tmp/delta-test-sensor-table")

with DAG(
    "test_delta_sensor_reschedule", schedule=None, start_date=datetime(2026, 1, 1), catchup=False
) as dag_r:
    DeltaVersionSensor(task_id="wait", table=TABLE, mode="reschedule", poke_interval=1, timeout=60)

with DAG(
    "test_delta_sensor_deferred", schedule=None, start_date=datetime(2026, 1, 1), catchup=False
) as dag_d:
    DeltaVersionSensor(task_id="wait", table=TABLE, deferrable=True, poke_interval=1, timeout=60)

with DAG("test_delta_sensor_poke", schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag_p:
    DeltaVersionSensor(task_id="wait", table=TABLE, mode="poke", after_version=0, poke_interval=1, timeout=60)

# The same two modes for the recreated-table tests (a DAG's task state is per test).
with DAG(
    "test_delta_sensor_recreated_reschedule", schedule=None, start_date=datetime(2026, 1, 1), catchup=False
) as dag_recreated_r:
    DeltaVersionSensor(task_id="wait", table=TABLE, mode="reschedule", poke_interval=1, timeout=60)

with DAG(
    "test_delta_sensor_recreated_deferred", schedule=None, start_date=datetime(2026, 1, 1), catchup=False
) as dag_recreated_d:
    DeltaVersionSensor(task_id="wait", table=TABLE, deferrable=True, poke_interval=1, timeout=60)

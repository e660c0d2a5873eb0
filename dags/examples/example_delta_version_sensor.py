"""Example (1): a writer commits to a Delta table, a deferrable sensor hands the new range downstream.

``prepare`` creates the table if needed and records its version; ``write_batch`` appends rows with the
engine (no Spark); ``wait_for_commit`` (a deferrable ``DeltaVersionSensor``) fires on the new version
(it defers to the triggerer while there is nothing new) and pushes the version range and the new
commits to XCom; ``consume_range`` reads exactly the rows of that range.

The table is the Airflow Variable ``delta_example_events_table``, else ``$DELTA_EXAMPLE_EVENTS_TABLE``,
else ``/tmp/airflow-provider-delta/examples/events``. Run it with
``airflow dags test example_delta_version_sensor``.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Any

from airflow.sdk import DAG, Variable, task

from airflow_provider_delta.sensors.delta import DeltaVersionSensor

DEFAULT_TABLE = "/tmp/airflow-provider-delta/examples/events"


def events_table() -> str:
    """Variable ``delta_example_events_table``, else ``$DELTA_EXAMPLE_EVENTS_TABLE``, else /tmp."""
    return (
        Variable.get("delta_example_events_table", default=None)
        or os.environ.get("DELTA_EXAMPLE_EVENTS_TABLE")
        or DEFAULT_TABLE
    )


with DAG(
    dag_id="example_delta_version_sensor",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["example", "delta"],
) as dag:

    @task
    def prepare() -> dict[str, Any]:
        """Create the table if needed; return its location and current version."""
        import pyarrow as pa

        from airflow_provider_delta.core import DeltaTable, TableNotFoundError

        table = events_table()
        try:
            version = DeltaTable.latest_version(table)
        except TableNotFoundError:
            schema = pa.schema([("id", pa.int64()), ("event", pa.string()), ("at", pa.timestamp("us", "UTC"))])
            version = DeltaTable.create(table, schema).version
        return {"table": table, "version": version}

    @task
    def write_batch(info: dict[str, Any]) -> int | None:
        """Append a few rows with the engine; returns the committed version."""
        import pyarrow as pa

        from airflow_provider_delta.core import DeltaTable

        now = datetime.now(timezone.utc)
        rows = pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int64()),
                "event": ["signup", "login", "purchase"],
                "at": pa.array([now] * 3, pa.timestamp("us", "UTC")),
            }
        )
        return DeltaTable(info["table"]).append(rows)

    # [START howto_sensor_delta_version]
    wait_for_commit = DeltaVersionSensor(
        task_id="wait_for_commit",
        table="{{ ti.xcom_pull(task_ids='prepare')['table'] }}",
        after_version="{{ ti.xcom_pull(task_ids='prepare')['version'] }}",
        operations=["WRITE", "MERGE"],
        deferrable=True,
        poke_interval=5,
        timeout=600,
    )
    # [END howto_sensor_delta_version]

    @task
    def consume_range(change: dict[str, Any]) -> dict[str, Any]:
        """Read the rows the new versions added (the range the sensor reported)."""
        from airflow_provider_delta.core import DeltaTable

        start, end = change["start_version"], change["end_version"]
        after = DeltaTable(change["table"], version=end).to_arrow().num_rows
        before = DeltaTable(change["table"], version=start - 1).to_arrow().num_rows if start > 0 else 0
        summary = {
            "start_version": start,
            "end_version": end,
            "new_rows": after - before,
            "operations": [c["operation"] for c in change["commits"]],
        }
        print(f"New versions {start}..{end}: {summary}")  # noqa: T201 - shown in the task log
        return summary

    info = prepare()
    write_batch(info) >> wait_for_commit
    consume_range(wait_for_commit.output)

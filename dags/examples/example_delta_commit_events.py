"""Example (3): event-driven scheduling, one DAG run per batch of new commits to a Delta table.

An ``AssetWatcher`` runs ``DeltaCommitEventTrigger`` in the triggerer; each batch of new versions
becomes an asset event whose extra holds the version range (``payload``), and the DAG scheduled on
the asset reads it from ``triggering_asset_events``. The watermark is kept in the asset's state
store, so a triggerer restart neither repeats nor skips versions.

The table is ``$DELTA_EXAMPLE_EVENTS_TABLE`` (read when the file is parsed: an asset's watcher is
part of the DAG's definition), else ``/tmp/airflow-provider-delta/examples/events``, the table that
example (1) writes.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from airflow.sdk import DAG, Asset, AssetWatcher, task

from airflow_provider_delta.triggers.delta import DeltaCommitEventTrigger

TABLE = os.environ.get("DELTA_EXAMPLE_EVENTS_TABLE") or "/tmp/airflow-provider-delta/examples/events"

# [START howto_trigger_delta_commit_events]
events_table = Asset(
    name="delta_example_events",
    uri=f"delta://{TABLE}",
    watchers=[
        AssetWatcher(
            name="delta_example_events_commits",
            trigger=DeltaCommitEventTrigger(table=TABLE, operations=["WRITE", "MERGE"], poll_interval=10),
        )
    ],
)

with DAG(
    dag_id="example_delta_commit_events",
    schedule=[events_table],
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["example", "delta"],
) as dag:

    @task
    def process_new_versions(triggering_asset_events: Any = None) -> list[dict[str, Any]]:
        """Print the version range of each asset event that started this run."""
        ranges = []
        for event in triggering_asset_events[events_table]:
            payload = (event.extra or {}).get("payload", {})
            ranges.append({k: payload.get(k) for k in ("table", "start_version", "end_version", "commit_count")})
        print(f"New Delta versions: {ranges}")  # noqa: T201 - shown in the task log
        return ranges

    process_new_versions()
# [END howto_trigger_delta_commit_events]

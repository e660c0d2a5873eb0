"""Test-only DAGs for the assets Delta operators declare. The tables live under ``$DELTA_TEST_ASSET_ROOT``
(set by the test before it imports this file: a literal path is what makes an outlet static).

- ``delta_assets_producer``: ``write_static`` writes ``<root>/events`` (a literal path: the outlet is
  ``Asset("delta:///<root>/events")``); ``write_templated`` writes ``{{ params.root }}/orders`` (known
  at run time: the outlet is an alias the run attaches the table's asset to); ``merge_like`` reads
  ``<root>/events`` (an inlet) and writes ``<root>/joined``; ``checkpoint`` changes no data: no outlet.
- ``delta_assets_consumer``: scheduled on the assets of ``<root>/events`` and ``<root>/orders``,
  built with ``create_asset`` (the same name and URI as the operators' outlets).
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, task

from airflow_provider_delta.assets import create_asset
from airflow_provider_delta.operators.delta import DeltaCheckpointOperator, DeltaSparkJobOperator

ROOT = os.environ.get("DELTA_TEST_ASSET_ROOT", "/tmp/delta-test-assets")
ROW = [{"id": 1, "part": "a"}]

with DAG(
    dag_id="delta_assets_producer", schedule=None, start_date=datetime(2026, 1, 1), params={"root": ROOT}
) as producer:
    write_static = DeltaSparkJobOperator(
        task_id="write_static", job="write", engine="local", table=f"{ROOT}/events", job_options={"rows": ROW}
    )
    write_templated = DeltaSparkJobOperator(
        task_id="write_templated",
        job="write",
        engine="local",
        table="{{ params.root }}/orders",
        job_options={"rows": ROW},
    )
    merge_like = DeltaSparkJobOperator(
        task_id="merge_like",
        job="write",
        engine="local",
        table=f"{ROOT}/joined",
        job_options={"rows": ROW},
        inlet_tables=[f"{ROOT}/events"],
    )
    checkpoint = DeltaCheckpointOperator(task_id="checkpoint", table=f"{ROOT}/events")
    write_static >> [write_templated, merge_like, checkpoint]

with DAG(
    dag_id="delta_assets_consumer",
    schedule=[create_asset(path=f"{ROOT}/events/"), create_asset(path=f"{ROOT}/orders")],
    start_date=datetime(2026, 1, 1),
    is_paused_upon_creation=False,
) as consumer:

    @task
    def consume() -> None:
        return None

    consume()

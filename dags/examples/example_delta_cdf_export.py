"""Example (4): change data exports triggered by commit events, exactly once.

An ``AssetWatcher`` runs ``DeltaCommitEventTrigger`` on the source table in the triggerer; each batch
of new commits starts a run of this DAG, whose ``DeltaCDFExportOperator`` exports the new versions'
changes into a Parquet sink. The operator takes no range from the event: it continues where the sink
ends, so a missed, late or duplicated event (a triggerer restart, two events in one run) still
exports every (version, row) exactly once. Each run emits an asset event for the sink with the
exported range in its extra, for DAGs downstream.

Set when the file is parsed (an asset's watcher is part of the DAG's definition):
``$DELTA_EXAMPLE_CDF_TABLE`` (default ``/tmp/airflow-provider-delta/examples/orders``),
``$DELTA_EXAMPLE_CDF_SINK`` (default ``<table>_changes``), ``$DELTA_EXAMPLE_CDF_ENGINE`` (``spark``, the
default: a spark-submit per run; ``local``: pyarrow in the worker) and ``$DELTA_EXAMPLE_POLL_INTERVAL``.
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, Asset, AssetWatcher

from airflow_provider_delta.operators.cdf_export import DeltaCDFExportOperator
from airflow_provider_delta.triggers.delta import DeltaCommitEventTrigger

TABLE = os.environ.get("DELTA_EXAMPLE_CDF_TABLE") or "/tmp/airflow-provider-delta/examples/orders"
SINK = os.environ.get("DELTA_EXAMPLE_CDF_SINK") or f"{TABLE}_changes"
ENGINE = os.environ.get("DELTA_EXAMPLE_CDF_ENGINE") or "spark"
POLL_INTERVAL = float(os.environ.get("DELTA_EXAMPLE_POLL_INTERVAL") or 10)

# [START howto_operator_delta_cdf_export]
orders_commits = Asset(
    name="delta_example_orders",
    uri=f"delta://{TABLE}",
    watchers=[
        AssetWatcher(
            name="delta_example_orders_commits",
            # Only data changes start a run (the export's own watermark registration is a commit too).
            trigger=DeltaCommitEventTrigger(
                table=TABLE, operations=["WRITE", "MERGE", "UPDATE", "DELETE"], poll_interval=POLL_INTERVAL
            ),
        )
    ],
)

with DAG(
    dag_id="example_delta_cdf_export",
    schedule=[orders_commits],
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,  # runs of one export queue up; a concurrent one would only retry
    tags=["example", "delta", "cdf"],
) as dag:
    DeltaCDFExportOperator(
        task_id="export_changes",
        table=TABLE,
        sink=SINK,
        format="parquet",
        engine=ENGINE,
        retries=2,
    )
# [END howto_operator_delta_cdf_export]

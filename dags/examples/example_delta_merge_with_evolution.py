"""Example (4): evolve a table's schema, then upsert a batch with MERGE WITH SCHEMA EVOLUTION, on Spark.

Every day:

1. ``evolve_schema`` (``DeltaSchemaEvolveOperator``) adds a documented ``tier`` column after ``name``
   and turns on the change data feed, in one metadata commit. The commit records the task's
   idempotency key, so a retry (or a rerun of the day) after it landed does nothing instead of failing
   on "column already exists".
2. ``upsert_batch`` (``DeltaMergeWithEvolutionOperator``) merges the day's batch, a Parquet file read
   by Spark: rows flagged ``op = 'D'`` delete their customer, the others update it or insert it; the
   batch's new columns (here ``signup_channel``) are added to the table; the ``op`` flag is not. The
   MERGE runs on the Spark executors; an Airflow retry after its commit landed writes nothing.
3. ``report`` reads the version and the merge metrics from XCom.

The table is the Variable ``delta_example_customers_table``, else ``$DELTA_EXAMPLE_CUSTOMERS_TABLE``,
else ``/tmp/airflow-provider-delta/examples/customers`` (created if missing); the batch is
``$DELTA_EXAMPLE_UPDATES`` (default ``<table>_updates/{{ ds }}.parquet``). The Spark master comes from
the ``spark_default`` connection, e.g. ``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark",
"host": "local[2]"}'``. Run it once with ``airflow dags test example_delta_merge_with_evolution``.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Variable, task

from airflow_provider_delta.operators.merge import DeltaMergeWithEvolutionOperator, DeltaSchemaEvolveOperator

DEFAULT_TABLE = "/tmp/airflow-provider-delta/examples/customers"


def customers_table() -> str:
    """The target table: Variable, environment, or the default path."""
    return (
        Variable.get("delta_example_customers_table", default=None)
        or os.environ.get("DELTA_EXAMPLE_CUSTOMERS_TABLE")
        or DEFAULT_TABLE
    )


TABLE = customers_table()
UPDATES = os.environ.get("DELTA_EXAMPLE_UPDATES") or f"{TABLE}_updates/{{{{ ds }}}}.parquet"


with DAG(
    dag_id="example_delta_merge_with_evolution",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(seconds=30)},
    tags=["example", "delta"],
) as dag:

    @task
    def ensure_table() -> int:
        """Create the customers table on first use (engine only, no Spark)."""
        import pyarrow as pa

        from airflow_provider_delta.core import DeltaTable
        from airflow_provider_delta.exceptions import TableNotFoundError

        try:
            return DeltaTable(TABLE).version
        except TableNotFoundError:
            schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("country", pa.string())])
            return DeltaTable.create(TABLE, schema, partition_by=["country"]).version

    # [START howto_operator_delta_schema_evolve]
    evolve_schema = DeltaSchemaEvolveOperator(
        task_id="evolve_schema",
        table=TABLE,
        statements=[
            "ALTER TABLE customers ADD COLUMNS (tier STRING COMMENT 'loyalty tier' AFTER name)",
            "ALTER TABLE customers SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')",
        ],
    )
    # [END howto_operator_delta_schema_evolve]

    # [START howto_operator_delta_merge_with_evolution]
    upsert_batch = DeltaMergeWithEvolutionOperator(
        task_id="upsert_batch",
        table=TABLE,
        source={"path": UPDATES, "format": "parquet"},
        on="target.id = source.id",
        when_matched=[
            {"action": "delete", "condition": "source.op = 'D'"},
            {"action": "update_all", "except": ["op"]},
        ],
        when_not_matched=[{"action": "insert_all", "except": ["op"], "condition": "source.op <> 'D'"}],
        schema_evolution=True,
    )
    # [END howto_operator_delta_merge_with_evolution]

    @task
    def report(result: dict[str, Any]) -> dict[str, Any]:
        """What the MERGE did (from its XCom)."""
        metrics = result["metrics"]
        return {
            "version": result["version"],
            "committed": result["committed"],
            "inserted": metrics.get("numTargetRowsInserted"),
            "updated": metrics.get("numTargetRowsUpdated"),
            "deleted": metrics.get("numTargetRowsDeleted"),
        }

    ensure_table() >> evolve_schema >> upsert_batch
    report(upsert_batch.output)

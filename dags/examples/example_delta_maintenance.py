"""Example (2): the periodic maintenance of Delta tables.

Three DAGs, one per rhythm, over the same list of tables:

- ``example_delta_maintenance`` (hourly): a checkpoint of every table and cleanup of expired log
  files (``DeltaCheckpointOperator``), all tables in one task. A checkpoint moves no data, so it runs
  in the task's process (engine ``local``, no JVM); a table that does not exist yet is reported as
  skipped, not failed (``skip_missing``). ``DELTA_MAINTENANCE_ENGINE=spark`` runs it through
  spark-submit instead.
- ``example_delta_maintenance_nightly`` (02:00): OPTIMIZE: compaction of small files, or ZORDER BY
  the table's configured columns (``DeltaOptimizeOperator``), on Spark.
- ``example_delta_maintenance_weekly`` (Sunday 03:00): REORG TABLE ... APPLY (PURGE), which rewrites
  files with soft-deleted rows, then VACUUM, which deletes the files no version within the
  retention needs (``DeltaReorgOperator`` >> ``DeltaVacuumOperator``), on Spark.

Tables come from the Airflow Variable ``delta_maintenance_tables`` or the environment variable
``DELTA_MAINTENANCE_TABLES``: a comma-separated list of paths/URIs (or bare names under the
``delta_default`` connection's base path), or a JSON list whose items are such a string or an object
with per-table settings passed to the operators::

    [{"table": "/data/events", "optimize": {"zorder_by": ["user_id"]}, "vacuum": {"retention_hours": 336}},
     "/data/orders"]

Tables without settings of their own share one task per operation (one job, one JVM, one result per
table; a failing table does not stop the others); a table with settings gets a task of its own.
The Spark master comes from the ``spark_default`` connection, e.g.
``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[2]"}'`` (without it: ``local[*]``).
Run one with ``airflow dags test example_delta_maintenance_weekly``.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Variable

from airflow_provider_delta.operators.delta import DeltaCheckpointOperator
from airflow_provider_delta.operators.maintenance import (
    DeltaOptimizeOperator,
    DeltaReorgOperator,
    DeltaVacuumOperator,
)

_SETTINGS = ("optimize", "vacuum", "reorg")


def maintenance_tables() -> list[dict[str, Any]]:
    """The tables to maintain, each ``{"table": ..., "optimize": {...}, "vacuum": {...}, "reorg": {...}}``.

    From the Variable ``delta_maintenance_tables``, else ``$DELTA_MAINTENANCE_TABLES``.
    """
    raw = (
        Variable.get("delta_maintenance_tables", default=None)
        or os.environ.get("DELTA_MAINTENANCE_TABLES", "")
    ).strip()
    items: list[Any] = (
        json.loads(raw) if raw.startswith("[") else [t.strip() for t in raw.split(",") if t.strip()]
    )
    tables = []
    for item in items:
        entry = {"table": item} if isinstance(item, str) else dict(item)
        unknown = set(entry) - {"table", *_SETTINGS}
        if not isinstance(entry.get("table"), str) or unknown:
            raise ValueError(
                f"Cannot read delta_maintenance_tables: bad entry {item!r} (unknown keys: {sorted(unknown)})"
            )
        tables.append(entry)
    return tables


def _task_id(kind: str, table: str) -> str:
    name = table.rstrip("/").rsplit("/", 1)[-1]
    return f"{kind}_" + "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def tasks_for(kind: str) -> list[tuple[str, dict[str, Any]]]:
    """``(task_id, operator arguments)`` for one operation: the tables without settings of their own
    for ``kind`` in one task (``tables=[...]``), each table with settings in its own task."""
    shared = [e["table"] for e in TABLES if not e.get(kind)]
    own = [(_task_id(kind, e["table"]), {"table": e["table"], **e[kind]}) for e in TABLES if e.get(kind)]
    return ([(f"{kind}_tables", {"tables": shared})] if shared else []) + own


_COMMON: dict[str, Any] = {
    "start_date": datetime(2026, 1, 1),
    "catchup": False,
    "max_active_runs": 1,
    "default_args": {"retries": 2, "retry_delay": timedelta(minutes=1)},
    "tags": ["example", "delta", "maintenance"],
}
TABLES = maintenance_tables()

# [START howto_operator_delta_checkpoint]
with DAG(dag_id="example_delta_maintenance", schedule=timedelta(hours=1), **_COMMON) as dag:
    if TABLES:
        # One job for every table: one result per table, and a failing table does not stop the others.
        DeltaCheckpointOperator(
            task_id="checkpoint_tables",
            tables=[e["table"] for e in TABLES],
            cleanup_log=True,
            skip_missing=True,
            engine="spark" if os.environ.get("DELTA_MAINTENANCE_ENGINE") == "spark" else "local",
        )
# [END howto_operator_delta_checkpoint]

# [START howto_operator_delta_optimize]
with DAG(dag_id="example_delta_maintenance_nightly", schedule="0 2 * * *", **_COMMON) as nightly:
    for task_id, arguments in tasks_for("optimize"):
        # Compaction, or ZORDER BY when the table's settings name columns ({"optimize": {"zorder_by": [...]}}).
        DeltaOptimizeOperator(task_id=task_id, **arguments)
# [END howto_operator_delta_optimize]

# [START howto_operator_delta_reorg_vacuum]
with DAG(dag_id="example_delta_maintenance_weekly", schedule="0 3 * * 0", **_COMMON) as weekly:
    purges = [DeltaReorgOperator(task_id=task_id, **arguments) for task_id, arguments in tasks_for("reorg")]
    # Default retention: each table's delta.deletedFileRetentionDuration (7 days); the files REORG just
    # replaced go in a later week's run, once their retention has passed.
    vacuums = [DeltaVacuumOperator(task_id=task_id, **arguments) for task_id, arguments in tasks_for("vacuum")]
    if purges and vacuums:
        for purge in purges:
            purge >> vacuums
# [END howto_operator_delta_reorg_vacuum]

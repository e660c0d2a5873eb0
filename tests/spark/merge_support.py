"""What MERGE tests on Spark compare: the local executor's result against the Spark executor's.

Both run on copies of one table; they must agree on the rows, the schema (column mapping metadata
aside: physical names of new columns are random), the metrics (times, bytes and how many files the
rows were written to aside: that is layout) and the change data.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.schema.mapping import without_column_mapping
from airflow_provider_delta.core.table import DeltaTable

if TYPE_CHECKING:
    from pathlib import Path

    import pyarrow as pa

LAYOUT_METRICS = frozenset(
    {
        "executionTimeMs",
        "scanTimeMs",
        "rewriteTimeMs",
        "numTargetBytesAdded",
        "numTargetBytesRemoved",
        "numTargetFilesAdded",
        "numTargetChangeFilesAdded",
    }
)


def canonical(table: pa.Table) -> list[str]:
    """The rows as a sorted list of JSON texts (a multiset that compares exactly)."""
    return sorted(json.dumps(row, sort_keys=True, default=repr) for row in table.to_pylist())


def comparable_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metrics.items() if k not in LAYOUT_METRICS}


def table_state(path: Path | str, since: int) -> dict[str, Any]:
    """Rows, schema, version and the change data after ``since`` of the table at ``path``."""
    table = DeltaTable(str(path))
    state: dict[str, Any] = {
        "version": table.version,
        "schema": without_column_mapping(table.schema).to_json(),
        "rows": canonical(table.to_arrow()),
    }
    if table.version > since and table.configuration.get("delta.enableChangeDataFeed") == "true":
        state["changes"] = canonical(table.changes(since + 1).drop_columns(["_commit_timestamp"]))
    return state


def assert_same_merge(local: Path, spark: Path, since: int, local_metrics: Any, spark_metrics: Any) -> None:
    """Both copies ended identical, and both merges reported the same metrics (layout aside)."""
    assert comparable_metrics(spark_metrics) == comparable_metrics(local_metrics)
    assert table_state(spark, since) == table_state(local, since)

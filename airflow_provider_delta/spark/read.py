"""Read a Delta table as a Spark DataFrame: planned by the engine in the driver, read by executors.

:func:`read_delta` loads the snapshot (version or timestamp time travel) and plans the scan in the
driver with core's :func:`~airflow_provider_delta.core.read.scan.plan_scan` (partition pruning and
statistics skipping). The surviving files become a DataFrame of one row per file, split into tasks by
size as Spark splits its own Parquet scans, and a ``mapInArrow`` reads them on the executors with the
engine's own :func:`~airflow_provider_delta.core.read.scan.read_file`: deletion vectors, column
mapping, partition values and null-filling of columns that older files lack are one implementation
for the local and the Spark reader. The filter is applied exactly inside the tasks with core's
``evaluate`` (the same three-valued SQL semantics as ``DeltaTable.to_arrow``). No row passes through
the driver.

Example:
    >>> df = read_delta(spark, "/data/events", columns=["id", "day"], filter="day >= '2024-01-01'")
    ... # doctest: +SKIP
    >>> df.groupBy("day").count().show()  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core.actions import AddFile
from airflow_provider_delta.core.read.scan import plan_scan, read_file
from airflow_provider_delta.core.schema.mapping import column_mapping_mode, without_column_mapping
from airflow_provider_delta.core.schema.types import StructType
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.core.write.target import WriteTarget
from airflow_provider_delta.spark.environment import require_executor_environment
from airflow_provider_delta.spark.tasks import (
    delta_errors,
    file_frame,
    map_in_arrow,
    spark_arrow_schema,
    task_payloads,
)
from airflow_provider_delta.spark.types import to_spark_schema

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from pyspark.sql import DataFrame, SparkSession

    from airflow_provider_delta.core.log.history import TimestampLike
    from airflow_provider_delta.core.read.scan import ScanPlan
    from airflow_provider_delta.core.schema.mapping import ColumnMappingMode

__all__ = ["read_delta"]

# Rows per Arrow batch a read task yields (Spark's spark.sql.execution.arrow.maxRecordsPerBatch).
_BATCH_ROWS = 10_000
# PROTOCOL.md "Column Mapping": delta.columnMapping.id, .physicalName and .nested.ids are the
# engine's business, not the reader's (Delta on Spark drops them from a DataFrame's schema too).


def read_delta(
    spark: SparkSession,
    location: str,
    *,
    version: int | None = None,
    timestamp: TimestampLike | None = None,
    columns: Sequence[str] | None = None,
    filter: Any = None,  # noqa: A002 - the name users know from DeltaTable.to_arrow and delta-rs
    storage_options: Mapping[str, str] | None = None,
) -> DataFrame:
    """The rows of a Delta table as a DataFrame read by Spark executors (see the module docstring).

    Args:
        spark: the SparkSession to read with.
        location: the table's path or URI.
        version: read this version (time travel) instead of the latest.
        timestamp: read the newest version committed at or before this time (a datetime, naive
            meaning UTC; a ``yyyy-MM-dd[ HH:mm:ss[.SSS]]`` string; or epoch milliseconds).
        columns: the columns to return, in this order (default: all, in schema order).
        filter: a SQL predicate (``"day = '2024-01-01' AND id > 7"``) or DNF tuples; files that cannot
            match are skipped in the driver, and the remaining rows are filtered exactly in the tasks.
        storage_options: options for object stores (as for ``DeltaTable``).

    Returns:
        A DataFrame whose schema is the table's (Spark types of the Delta schema, column comments
        kept, column mapping metadata dropped), restricted to ``columns``. With no file to read it
        has no rows and the same schema.

    Raises:
        TableNotFoundError: no Delta table at ``location``.
        VersionNotFoundError: the version or timestamp is outside the table's history.
        UnsupportedFeatureError: the table needs a reader feature (or a type) this engine lacks.
        PredicateError: the filter cannot be parsed or names an unknown column.
        SchemaError: a column in ``columns`` does not exist.

    Example:
        >>> read_delta(spark, "/data/events", version=3).count()  # doctest: +SKIP
        1200
    """
    snapshot = DeltaTable(location, version=version, timestamp=timestamp, storage_options=storage_options).snapshot
    plan = plan_scan(snapshot, columns=columns, filter=filter)
    by_name = {f.name: f for f in snapshot.schema.fields}
    result = without_column_mapping(StructType(tuple(by_name[name] for name in plan.columns)))
    spark_schema = to_spark_schema(result)
    if not plan.files:
        return spark.createDataFrame([], spark_schema)
    require_executor_environment(spark)
    task = _ReadTask(
        layout=WriteTarget.of(snapshot),
        plan=dataclasses.replace(plan, files=()),  # the files travel as rows, not with every task
        mode=column_mapping_mode(snapshot.configuration),
        arrow_schema=spark_arrow_schema(spark, result),
    )
    return map_in_arrow(file_frame(spark, plan.files, with_stats=False), task, spark_schema)


@dataclass(frozen=True)
class _ReadTask:
    """``mapInArrow`` function over a file frame: each file's rows as ``scan_to_arrow`` gives them."""

    layout: WriteTarget
    plan: ScanPlan
    mode: ColumnMappingMode
    arrow_schema: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for payload in task_payloads(batches):
            with delta_errors():
                rows = self._rows(AddFile.from_dict(payload["add"]))
            if isinstance(rows, int):  # no column: batches of no columns carry the row count
                if rows:
                    yield pa.RecordBatch.from_pydict({"_": pa.nulls(rows)}).drop_columns(["_"])
            elif rows.num_rows:
                yield from rows.to_batches(max_chunksize=_BATCH_ROWS)

    def _rows(self, add: AddFile) -> pa.Table | int:
        # The per-file part of core's scan_to_arrow: the needed columns in schema order, cast to the
        # logical Arrow types, the filter applied exactly (null drops the row), then the projection.
        plan = self.plan
        table = read_file(self.layout, add, plan, self.mode)
        read_schema = plan.read_schema
        if not read_schema.names:  # no column needed (and no filter): only the row count matters
            return int(table.num_rows)
        table = plan.filter_rows(table.select(read_schema.names).cast(read_schema))
        return table.select(list(plan.columns)).cast(self.arrow_schema)



"""Change data exports on Spark: the units of an export read and written by Spark executors.

:class:`SparkChangeExporter` is the Spark executor's exporter (core's
:class:`~airflow_provider_delta.core.executor.ChangeExporter`, ``SparkExecutor(spark).exporter()``;
``SparkExportEngine`` is its earlier name). The driver plans the run, runs the preflight and commits
to the sink (``export_changes`` does all three); the executors do the data work with the engine's own code:

- Parquet/JSON Lines sinks: each task takes some units (one change file each, or one commit for the
  Debezium envelope), reads them with core's change reader and writes each unit's output file with
  core's ``write_unit``: the same deterministic names and bytes as the local engine. Only small
  records (path, rows, bytes) come back; the driver then writes the manifests in version order.
- Delta sink: the tasks turn units into rows (``mapInArrow``), which the Spark executor's writer
  writes as data files in the same tasks; the ``add`` actions come back and the driver commits them with the
  ``txn`` once. No change row passes through the driver.

Example:
    >>> export_changes("/data/orders", "/exports/orders", executor=SparkExecutor(spark))  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from airflow_provider_delta.core.executor.export.units import (
    DeltaOutput,
    ExportUnit,
    UnitJob,
    unit_rows,
    write_unit,
)
from airflow_provider_delta.core.write.files import conform_to_table
from airflow_provider_delta.spark.tasks import (
    RECORD_SCHEMA,
    collect_records,
    delta_errors,
    map_in_arrow,
    records_batch,
    spark_arrow_schema,
    task_payloads,
)
from airflow_provider_delta.spark.types import to_spark_schema

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from airflow_provider_delta.core.executor import FileWriter
    from airflow_provider_delta.core.write.target import WriteTarget

__all__ = ["SparkChangeExporter", "SparkExportEngine"]


def _unit_frame(spark: SparkSession, units: Sequence[ExportUnit]) -> DataFrame:
    """One row per unit (its JSON), spread over a few tasks per core."""
    from pyspark.sql.types import StringType, StructField, StructType

    payloads = [(orjson.dumps({"index": i, "unit": u.to_dict()}).decode(),) for i, u in enumerate(units)]
    slices = max(1, min(len(payloads), spark.sparkContext.defaultParallelism * 4))
    rdd = spark.sparkContext.parallelize(payloads, slices)
    return spark.createDataFrame(rdd, StructType([StructField("unit", StringType(), nullable=False)]))


@dataclass(frozen=True)
class _FileUnitTask:
    """``mapInArrow``: write each unit's output file to the file sink; yield its record."""

    job: UnitJob

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            records = []
            for text in batch.column(0).to_pylist():
                payload = orjson.loads(text)
                with delta_errors():
                    record = write_unit(self.job, ExportUnit.from_dict(payload["unit"]))
                records.append({"index": payload["index"], **record})
            if records:
                yield records_batch(records)


@dataclass(frozen=True)
class _RowsTask:
    """``mapInArrow``: each unit's rows, conformed to the Delta sink's schema (``arrow_schema``)."""

    job: UnitJob
    target: WriteTarget
    arrow_schema: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for payload in task_payloads(batches):
            with delta_errors():
                rows = conform_to_table(unit_rows(self.job, ExportUnit.from_dict(payload["unit"])), self.target.schema)
            if rows.num_rows:
                yield from rows.cast(self.arrow_schema).to_batches(max_chunksize=10_000)


class SparkChangeExporter:
    """Export work in Spark tasks (see the module docstring).

    Args:
        spark: the SparkSession whose executors read the change files and write the output.
        writer: the Spark executor whose writer writes a Delta sink's data files (default: a new one).
    """

    name = "spark"

    def __init__(self, spark: SparkSession, *, writer: FileWriter | None = None) -> None:
        self.spark = spark
        self.writer = writer

    def write_files(self, job: UnitJob, units: Sequence[ExportUnit]) -> list[dict[str, Any]]:
        """Units in Spark tasks; their records in the order of ``units``."""
        if not units:
            return []
        frame = _unit_frame(self.spark, units)
        records = collect_records(map_in_arrow(frame, _FileUnitTask(job), RECORD_SCHEMA))
        ordered = sorted(records, key=lambda r: int(r["index"]))
        return [{k: v for k, v in r.items() if k != "index"} for r in ordered]

    def write_delta(self, target: WriteTarget, work: Sequence[tuple[UnitJob, Sequence[ExportUnit]]]) -> DeltaOutput:
        """Rows made and written as data files in the same tasks; only ``add`` actions come back.

        ``rows`` is the number of rows written; ``counts`` stays empty (counting per change type would
        read the change files a second time).
        """
        out = DeltaOutput()
        writer = self.writer if self.writer is not None else _spark_writer(self.spark)
        spark_schema = to_spark_schema(target.schema)
        arrow_schema = spark_arrow_schema(self.spark, target.schema)
        for job, units in work:
            if not units:
                continue
            frame = map_in_arrow(_unit_frame(self.spark, units), _RowsTask(job, target, arrow_schema), spark_schema)
            adds = writer.write_files(target, frame)
            out.adds += adds
            out.rows += sum(a.num_records or 0 for a in adds)
        return out


SparkExportEngine = SparkChangeExporter
"""The Spark executor's exporter under the name exports gave it before the executor seam."""


def _spark_writer(spark: SparkSession) -> FileWriter:
    from airflow_provider_delta.spark.executor import SparkExecutor  # lazy: executor.py imports this module

    return SparkExecutor(spark).writer()

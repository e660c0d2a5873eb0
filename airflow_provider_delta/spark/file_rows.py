"""A table's files as a DataFrame of rows with their positions: what MERGE on Spark joins.

:func:`file_rows_frame` gives the live rows of some files, some columns, each row tagged with its
file (:data:`FILE_INDEX`) and its position among the file's live rows (:data:`ROW_INDEX`, the position
core's ``read_add_file`` gives it, which the writing tasks rely on when they read the file again).
Two readers give the same rows:

- **Spark's Parquet reader** (vectorized, in the JVM) when that is exact: local files without
  deletion vectors, no column mapping (or by name, top-level primitive columns only), no type
  widening, plain file paths (no character Hadoop would read as a glob or an escape). The row
  position is ``_metadata.row_index``; partition values (decoded in the driver by core) and the
  file's index join in from a broadcast list of the files keyed by ``_metadata.file_name`` (unique
  among the files, checked);
- **the engine's reader** in ``mapInArrow`` tasks otherwise (deletion vectors, column mapping by id,
  object stores, ...), as ``read_delta`` reads.

Example:
    >>> frame = file_rows_frame(spark, WriteTarget.of(snapshot), snapshot.files(), ["id"])  # doctest: +SKIP
    >>> frame.columns                                                                           # doctest: +SKIP
    ['id', '__delta_file_index', '__delta_row_index']
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql import types as st

from airflow_provider_delta.core.actions import AddFile
from airflow_provider_delta.core.read.scan import ScanPlan, decoded_partition_values, read_file
from airflow_provider_delta.core.schema.arrow import to_arrow_schema
from airflow_provider_delta.core.schema.mapping import (
    column_mapping_mode,
    physical_name,
    without_column_mapping,
)
from airflow_provider_delta.core.schema.types import ArrayType, MapType, StructType
from airflow_provider_delta.spark.tasks import (
    delta_errors,
    file_frame,
    map_in_arrow,
    spark_arrow_schema,
    task_payloads,
)
from airflow_provider_delta.spark.types import to_spark_schema

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from pyspark.sql import DataFrame, SparkSession

    from airflow_provider_delta.core.schema.mapping import ColumnMappingMode
    from airflow_provider_delta.core.write.target import WriteTarget

__all__ = ["FILE_INDEX", "ROW_INDEX", "file_rows_frame"]

FILE_INDEX = "__delta_file_index"
"""The position of a row's file in the list of files (int)."""
ROW_INDEX = "__delta_row_index"
"""The row's position among its file's live rows (long)."""

_BATCH_ROWS = 10_000
_FILE_NAME = "__delta_file_name"
_PLAIN_PATH = re.compile(r"[A-Za-z0-9._/=+-]+")


def file_rows_frame(
    spark: SparkSession,
    layout: WriteTarget,
    files: Sequence[AddFile],
    columns: Sequence[str],
    *,
    spark_reader: bool = True,
) -> DataFrame:
    """The live rows of ``files`` (only ``columns``, logical names) with :data:`FILE_INDEX` and :data:`ROW_INDEX`.

    Deletion vectors applied, partition values and column mapping resolved, columns missing from
    older files null; only ``columns`` are read from the Parquet files (see the module docstring).
    ``spark_reader=False`` always uses the engine's reader.
    """
    schema = layout.schema
    wanted = {c.lower() for c in columns}
    selected = StructType(tuple(f for f in schema.fields if f.name.lower() in wanted))  # physical names kept
    result = without_column_mapping(selected)
    spark_schema = to_spark_schema(result)
    spark_schema = spark_schema.add(st.StructField(FILE_INDEX, st.IntegerType(), False)).add(
        st.StructField(ROW_INDEX, st.LongType(), False)
    )
    if not files:
        return spark.createDataFrame([], spark_schema)
    parts = {c.lower() for c in layout.partition_columns}
    plan = ScanPlan(
        files=(),
        data_schema=StructType(tuple(f for f in selected.fields if f.name.lower() not in parts)),
        partition_fields=tuple(f for f in selected.fields if f.name.lower() in parts),
        output_schema=to_arrow_schema(schema),
        columns=result.names,
        predicate=None,
        skipped_files=0,
    )
    if spark_reader and _spark_can_read(layout, files, plan):
        return _spark_rows(spark, layout, files, plan, spark_schema)
    arrow_schema = spark_arrow_schema(spark, result)
    arrow_schema = arrow_schema.append(pa.field(FILE_INDEX, pa.int32(), False)).append(
        pa.field(ROW_INDEX, pa.int64(), False)
    )
    task = _FileRowsTask(layout=layout, plan=plan, mode=column_mapping_mode(layout.configuration),
                         arrow_schema=arrow_schema)
    return map_in_arrow(file_frame(spark, files, with_stats=False), task, spark_schema)


# ------------------------------------------------------------------------------ Spark's own reader


def _is_local(location: str) -> bool:
    return urlparse(location).scheme in ("", "file") or (len(location) > 1 and location[1] == ":")


def _spark_can_read(layout: WriteTarget, files: Sequence[AddFile], plan: ScanPlan) -> bool:
    """Whether Spark's Parquet reader gives exactly the engine's rows for these files and columns."""
    mode = column_mapping_mode(layout.configuration)
    if not _is_local(layout.location) or mode == "id":
        return False
    if str(layout.configuration.get("delta.enableTypeWidening", "false")).lower() == "true":
        return False
    if any(f.deletion_vector for f in files):
        return False
    if mode == "name" and any(isinstance(f.type, (StructType, ArrayType, MapType)) for f in plan.data_schema):
        return False  # nested fields have physical names of their own
    if not all(_PLAIN_PATH.fullmatch(layout.storage.resolve(f.path)) for f in files):
        return False
    return len({_file_name(f) for f in files}) == len(files)


def _file_name(add: AddFile) -> str:
    return posixpath.basename(unquote(add.path))


def _spark_rows(
    spark: SparkSession, layout: WriteTarget, files: Sequence[AddFile], plan: ScanPlan, spark_schema: st.StructType
) -> DataFrame:
    mode = column_mapping_mode(layout.configuration)
    physical = {f.name: physical_name(f) if mode != "none" else f.name for f in plan.data_schema}
    read_schema = to_spark_schema(without_column_mapping(StructType(tuple(
        f.__class__(physical[f.name], f.type, True, {}) for f in plan.data_schema
    ))))
    paths = [layout.storage.resolve(f.path) for f in files]
    rows = spark.read.schema(read_schema).parquet(*paths).select(
        *[F.col(f"`{physical[f.name]}`").alias(f.name) for f in plan.data_schema],
        F.col("_metadata.file_name").alias(_FILE_NAME),
        F.col("_metadata.row_index").alias(ROW_INDEX),
    )
    joined = rows.join(F.broadcast(_files_frame(spark, files, plan, mode)), [_FILE_NAME])
    return joined.select(*[F.col(f"`{name}`") for name in spark_schema.names])


def _files_frame(spark: SparkSession, files: Sequence[AddFile], plan: ScanPlan, mode: ColumnMappingMode) -> DataFrame:
    """One row per file: name, index, and its partition values (decoded by core)."""
    partitions = [decoded_partition_values(f.partition_values, plan.partition_fields, mode) for f in files]
    columns = {
        _FILE_NAME: pa.array([_file_name(f) for f in files], pa.string()),
        FILE_INDEX: pa.array(range(len(files)), pa.int32()),
    }
    arrow = plan.output_schema
    for f in plan.partition_fields:
        columns[f.name] = pa.array([p[f.name] for p in partitions], arrow.field(f.name).type)
    table = pa.table(columns)
    spark_fields = [
        st.StructField(_FILE_NAME, st.StringType()), st.StructField(FILE_INDEX, st.IntegerType()),
        *to_spark_schema(without_column_mapping(StructType(plan.partition_fields))).fields,
    ]
    return spark.createDataFrame(table, st.StructType(spark_fields))


# ------------------------------------------------------------------------------ the engine's reader


@dataclass(frozen=True)
class _FileRowsTask:
    """``mapInArrow`` function over a file frame: each file's live rows (some columns) with their positions."""

    layout: WriteTarget
    plan: ScanPlan
    mode: ColumnMappingMode
    arrow_schema: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for payload in task_payloads(batches):
            with delta_errors():
                rows = read_file(self.layout, AddFile.from_dict(payload["add"]), self.plan, self.mode)
            n = rows.num_rows
            if not n:
                continue
            read_schema = self.plan.read_schema
            rows = rows.select(read_schema.names).cast(read_schema).select(list(self.plan.columns))
            rows = rows.append_column(FILE_INDEX, pa.array(np.full(n, payload["index"], np.int32)))
            rows = rows.append_column(ROW_INDEX, pa.array(np.arange(n, dtype=np.int64)))
            yield from rows.cast(self.arrow_schema).to_batches(max_chunksize=_BATCH_ROWS)

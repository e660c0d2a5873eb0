"""The ``write`` job: an idempotent append or overwrite (Delta's replaceWhere) of rows into a table.

Options:
    mode ("append" | "overwrite", default "append"): add rows, or replace the table's rows (those
        matching ``predicate`` when given) with them.
    predicate (str, overwrite only): a SQL filter; every new row must satisfy it.
    source ({"path": ..., "format": "parquet", "options": {...}}): data read with Spark
        (``spark.read.format(format).options(**options).load(path)``) and written by Spark executors
        (:class:`~airflow_provider_delta.spark.executor.SparkExecutor`): no row passes through the driver.
    rows (list of objects): inline rows instead of ``source`` (small writes, tests); a DataFrame of
        them under Spark, a pyarrow table with ``--engine local``.
    isolation_level ("Serializable" | "WriteSerializable", default: the table's ``delta.isolationLevel``):
        under ``WriteSerializable`` a concurrent blind append into what an overwrite read does not
        conflict; under ``Serializable`` it raises ``ConcurrentAppendException``.

With ``app_id``/``app_version`` in the spec the commit records Delta's ``txn`` action, and a run that
finds the table already holds that application at that version or later writes nothing
(``committed: false``, metric ``alreadyCommitted``): an Airflow retry of a task whose commit landed
does not write twice. A concurrent writer with the same ``app_id`` makes the commit fail with
``ConcurrentTransactionException``.

Under spark-submit the data plane is Spark: the engine plans and commits in the driver, the Spark
executors write the data (and change data) files; with ``--engine local`` it is pyarrow in this process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core.commands.write import write
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import JobSpecError
from airflow_provider_delta.spark.jobs.context import JobOutput

if TYPE_CHECKING:
    from airflow_provider_delta.core.executor import Executor
    from airflow_provider_delta.spark.jobs.context import JobContext

MODES = ("append", "overwrite")
ISOLATION_LEVELS = ("Serializable", "WriteSerializable")


def _load_data(ctx: JobContext) -> Any:
    """The rows to write (cached across attempts): a DataFrame under Spark, a pyarrow table without.

    ``rows`` inline, or ``source`` read with Spark (lazily: Spark executors read it when the
    executor's tasks run, so the rows never pass through the driver).
    """
    if "data" in ctx.cache:
        return ctx.cache["data"]
    rows = ctx.option("rows", kind=list)
    source = ctx.option("source", kind=dict)
    if (rows is None) == (source is None):
        raise JobSpecError("Cannot run job 'write': pass exactly one of options 'rows' and 'source'")
    data: Any
    if rows is not None:
        data = pa.Table.from_pylist(rows)
        if ctx.spark is not None and data.num_columns:
            data = ctx.spark.createDataFrame(data)
    else:
        spark = ctx.require_spark("option 'source'")
        if not isinstance(source.get("path"), str):
            raise JobSpecError(f"Cannot run job 'write': option 'source' needs a 'path', found {source!r}")
        reader = spark.read.format(source.get("format", "parquet")).options(**source.get("options", {}))
        data = reader.load(source["path"])
    ctx.cache["data"] = data
    return data


def _executor(ctx: JobContext, data: Any) -> Executor | None:
    """The Spark executor when ``data`` is a DataFrame; None (the local executor) for a pyarrow table."""
    if isinstance(data, pa.Table):
        return None
    from airflow_provider_delta.spark.executor import SparkExecutor  # lazy: imports pyspark

    return SparkExecutor(ctx.spark)


def run(ctx: JobContext) -> JobOutput:
    """Append (or overwrite) the job's rows; idempotent with the spec's ``app_id``/``app_version``.

    Example:
        >>> spec = JobSpec(job="write", table="/data/t", options={"rows": [{"id": 1}]},
        ...                app_id="airflow:d:t:run1", app_version=0)
        >>> run(JobContext(spec)).committed                                  # doctest: +SKIP
        True
    """
    mode = ctx.option("mode", "append", kind=str)
    predicate = ctx.option("predicate", kind=str)
    isolation = ctx.option("isolation_level", kind=str)
    if isolation is not None and isolation not in ISOLATION_LEVELS:
        raise JobSpecError(
            f"Cannot run job 'write': option 'isolation_level' must be one of {ISOLATION_LEVELS}, found {isolation!r}"
        )
    if mode not in MODES:
        raise JobSpecError(f"Cannot run job 'write': option 'mode' must be one of {MODES}, found {mode!r}")
    if predicate is not None and mode != "overwrite":
        raise JobSpecError("Cannot run job 'write': option 'predicate' needs mode 'overwrite'")
    data = _load_data(ctx)
    snapshot = DeltaTable(ctx.spec.table, storage_options=ctx.spec.storage_options).snapshot
    result = write(
        snapshot, data, mode=mode, predicate=predicate, isolation_level=isolation,
        app_id=ctx.spec.app_id, app_version=ctx.spec.app_version, before_commit=ctx.before_commit,
        executor=_executor(ctx, data),
    )
    if not result.committed:
        return JobOutput(
            version=snapshot.version,
            committed=False,
            metrics={"alreadyCommitted": True, **result.metrics},
        )
    return JobOutput(version=result.version, committed=True, metrics=result.metrics)

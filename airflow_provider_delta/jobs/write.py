"""The ``write`` job: an idempotent append or overwrite (Delta's replaceWhere) of rows into a table.

Its options are declared in :data:`JOB` (``python -m airflow_provider_delta.jobs`` lists them).

With ``app_id``/``app_version`` in the spec the commit records Delta's ``txn`` action, and a run that
finds the table already holds that application at that version or later writes nothing
(``committed: false``, metric ``alreadyCommitted``): an Airflow retry of a task whose commit landed
does not write twice. A concurrent writer with the same ``app_id`` makes the commit fail with
``ConcurrentTransactionException``.

Under spark-submit the data plane is Spark: the engine plans and commits in the driver, the Spark
executors write the data (and change data) files; on engine ``local`` it is pyarrow in this process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core.commands.write import write
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import JobSpecError
from airflow_provider_delta.jobs.context import JobOutput
from airflow_provider_delta.jobs.definition import JobDefinition, Option, isolation_level_option

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_delta.jobs.context import JobContext

MODES = ("append", "overwrite")
SOURCE_KEYS = frozenset({"path", "format", "options"})


def _check(options: Mapping[str, Any]) -> None:
    if (options["rows"] is None) == (options["source"] is None):
        raise JobSpecError("pass exactly one of options 'rows' and 'source'")
    if options["predicate"] is not None and options["mode"] != "overwrite":
        raise JobSpecError("option 'predicate' needs mode 'overwrite'")
    if options["partition_by"] is not None and options["schema_mode"] != "overwrite":
        raise JobSpecError("option 'partition_by' needs schema_mode 'overwrite'")
    source = options["source"]
    if source is not None:
        unknown = sorted(set(source) - SOURCE_KEYS)
        if unknown:
            raise JobSpecError(
                f"option 'source' has unknown key {unknown[0]!r} (keys: {', '.join(sorted(SOURCE_KEYS))})"
            )
        if not isinstance(source.get("path"), str) or not source["path"]:
            raise JobSpecError(f"option 'source' needs a 'path' (a string), found {source!r}")


JOB = JobDefinition(
    name="write",
    summary="Append rows to a table, or overwrite it (all of it, or the rows matching a predicate).",
    options=(
        Option("mode", str, "append", "Add the rows, or replace the table's rows with them.", choices=MODES),
        Option(
            "predicate", str, None,
            "Overwrite only: Delta's replaceWhere, a SQL filter; only matching rows are replaced and every "
            "new row must satisfy it.",
            aliases=("replace_where", "replaceWhere", "where"), renderer="sql",
        ),
        Option(
            "source", dict, None,
            "Data read by Spark: `{\"path\": ..., \"format\": \"parquet\", \"options\": {...}}`, "
            "written by Spark executors (no row passes through the driver).",
            spark_only=True,
        ),
        Option("rows", list, None, "Inline rows (a list of objects) instead of `source`: small writes, tests."),
        isolation_level_option(
            "Under WriteSerializable a concurrent blind append into what an overwrite read does not conflict."
        ),
        Option(
            "schema_mode", str, None,
            "`merge`: add the rows' new columns to the table (mergeSchema); `overwrite` (full overwrite "
            "only): replace the schema (overwriteSchema).",
            choices=("merge", "overwrite"),
            aliases=("merge_schema", "mergeSchema", "overwrite_schema", "overwriteSchema"),
        ),
        Option(
            "partition_by", list, None, "With schema_mode `overwrite`: the new partition columns.", items=str,
            aliases=("partitionBy", "partition_cols", "partition_columns"),
        ),
    ),
    engines=("spark", "local"),
    default_engine="spark",
    app_transaction=True,
    outlet=True,
    check=_check,
)


def _load_data(ctx: JobContext) -> Any:
    """The rows to write (cached across attempts): a DataFrame under Spark, a pyarrow table without.

    ``rows`` inline, or ``source`` read with Spark (lazily: Spark executors read it when the
    executor's tasks run, so the rows never pass through the driver).
    """
    if "data" in ctx.cache:
        return ctx.cache["data"]
    rows = ctx.option("rows")
    source = ctx.option("source")
    data: Any
    if rows is not None:
        data = pa.Table.from_pylist(rows)
        if ctx.spark is not None and data.num_columns:
            data = ctx.spark.createDataFrame(data)
    else:
        spark = ctx.require_spark("option 'source'")
        reader = spark.read.format(source.get("format", "parquet")).options(**source.get("options", {}))
        data = reader.load(source["path"])
    ctx.cache["data"] = data
    return data


def run(ctx: JobContext) -> JobOutput:
    """Append (or overwrite) the job's rows; idempotent with the spec's ``app_id``/``app_version``.

    Example:
        >>> spec = JobSpec(job="write", table="/data/t", options={"rows": [{"id": 1}]},
        ...                app_id="airflow:d:t:run1", app_version=0)
        >>> run(JobContext(spec)).committed                                  # doctest: +SKIP
        True
    """
    options = ctx.options
    data = _load_data(ctx)
    snapshot = DeltaTable(ctx.spec.table, storage_options=ctx.spec.storage_options).snapshot
    ctx.progress(
        "%s on version %d (%d files, %d bytes)%s", options["mode"], snapshot.version, snapshot.num_files,
        sum(a.size for a in snapshot.files()), f" where {options['predicate']}" if options["predicate"] else "",
    )
    result = write(
        snapshot, data, mode=options["mode"], predicate=options["predicate"],
        isolation_level=options["isolation_level"], schema_mode=options["schema_mode"],
        partition_by=options["partition_by"], app_id=ctx.spec.app_id, app_version=ctx.spec.app_version,
        before_commit=ctx.before_commit, executor=ctx.executor(data),
    )
    if not result.committed:
        return JobOutput(
            version=snapshot.version,
            committed=False,
            metrics={"alreadyCommitted": True, **result.metrics},
        )
    return JobOutput(version=result.version, committed=True, metrics=result.metrics)

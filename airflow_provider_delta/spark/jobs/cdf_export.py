"""The ``cdf_export`` job: one run of an exactly-once change data export (``core.commands.cdf_export``).

Options (as ``export_changes``): ``sink`` (required), ``format`` (parquet | delta | jsonl), ``name``,
``starting_version``, ``ending_version``, ``max_versions``, ``initial_snapshot``, ``envelope`` (flat |
debezium), ``key_columns``, ``sink_storage_options``, ``register_watermark``.

Under spark-submit the driver plans, runs the preflight and commits to the sink; the executors read
the change files and write the output (:class:`~airflow_provider_delta.spark.cdf_export.SparkExportEngine`).
With ``--engine local`` everything runs in this process with pyarrow. The result's ``metrics`` is the
``ExportResult`` (``start``, ``end``, ``versions``, ``rows``, ``skipped``, ``sink_version``, ...);
``committed`` is False when the run found nothing to export or its range had already landed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.commands.cdf_export import export_changes
from airflow_provider_delta.exceptions import JobSpecError
from airflow_provider_delta.spark.jobs.context import JobOutput

if TYPE_CHECKING:
    from airflow_provider_delta.spark.jobs.context import JobContext

_INT_OPTIONS = ("starting_version", "ending_version", "max_versions")


def _options(ctx: JobContext) -> dict[str, Any]:
    sink = ctx.option("sink", kind=str)
    if not sink:
        raise JobSpecError("Cannot run job 'cdf_export': option 'sink' (the export's destination) is required")
    options: dict[str, Any] = {
        "format": ctx.option("format", "parquet", kind=str),
        "name": ctx.option("name", "default", kind=str),
        "initial_snapshot": ctx.option("initial_snapshot", False, kind=bool),
        "envelope": ctx.option("envelope", "flat", kind=str),
        "key_columns": ctx.option("key_columns", kind=list),
        "sink_storage_options": ctx.option("sink_storage_options", kind=dict),
        "register_watermark": ctx.option("register_watermark", kind=bool),
    }
    for name in _INT_OPTIONS:
        value = ctx.option(name, kind=int)
        if isinstance(value, bool):
            raise JobSpecError(f"Cannot run job 'cdf_export': option {name!r} must be int, found {value!r}")
        options[name] = value
    return {"sink": sink, **options}


def run(ctx: JobContext) -> JobOutput:
    """Export the source's new changes into the sink.

    Example:
        >>> spec = JobSpec(job="cdf_export", table="/data/orders", options={"sink": "/exports/orders"})
        >>> run(JobContext(spec)).metrics["end"]  # doctest: +SKIP
        12
    """
    options = _options(ctx)
    engine = None
    if ctx.spark is not None:
        from airflow_provider_delta.spark.cdf_export import SparkExportEngine  # lazy: imports pyspark

        engine = SparkExportEngine(ctx.spark)
    result = export_changes(ctx.spec.table, options.pop("sink"), storage_options=ctx.spec.storage_options,
                            engine=engine, **options)
    version = result.sink_version if result.sink_version is not None else result.end
    return JobOutput(version=version, committed=not result.skipped, metrics=result.to_dict())

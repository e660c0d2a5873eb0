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
from airflow_provider_delta.jobs.context import JobOutput
from airflow_provider_delta.jobs.definition import JobDefinition, Option

if TYPE_CHECKING:
    from airflow_provider_delta.jobs.context import JobContext

JOB = JobDefinition(
    name="cdf_export",
    summary="Export the source table's new change data into a sink, exactly once (the progress lives in the sink).",
    options=(
        Option("sink", str, None, "The export's destination (a path or URI).", aliases=("target", "output"),
               required=True),
        Option("format", str, "parquet", "The sink's format; a sink keeps the format of its first run.",
               choices=("parquet", "delta", "jsonl")),
        Option("name", str, "default", "The exporter's name: one source may feed several exports."),
        Option("starting_version", int, None,
               "First source version to export (default: the sink's watermark + 1; a gap or overlap is an error)."),
        Option("ending_version", int, None, "Last source version to export (default: the latest when planned)."),
        Option("max_versions", int, None, "Export at most this many versions per run."),
        Option("initial_snapshot", bool, False,
               "The first run exports the table's current rows as inserts (else it starts where the feed does)."),
        Option("envelope", str, "flat", "`flat`: the table's columns plus _change_type, _commit_version, "
               "_commit_timestamp; `debezium`: op/before/after/source/ts_ms records.", choices=("flat", "debezium")),
        Option("key_columns", list, None, "The key that pairs update pre/post images (Debezium envelope).",
               items=str),
        Option("sink_storage_options", dict, None, "Object-store options of the sink, when it is elsewhere."),
        Option("register_watermark", bool, None,
               "Record the export's watermark in the source table so VACUUM keeps what it still needs."),
    ),
    engines=("spark", "local"),
    default_engine="spark",
)


def _options(ctx: JobContext) -> dict[str, Any]:
    """The declared options (types, choices, defaults and the required ``sink`` checked by ``JOB``)."""
    return {o.name: ctx.option(o.name) for o in JOB.options}


def run(ctx: JobContext) -> JobOutput:
    """Export the source's new changes into the sink.

    Example:
        >>> spec = JobSpec(job="cdf_export", table="/data/orders", options={"sink": "/exports/orders"})
        >>> run(JobContext(spec)).metrics["end"]  # doctest: +SKIP
        12
    """
    options = _options(ctx)
    exporter = None
    if ctx.spark is not None:
        from airflow_provider_delta.spark.cdf_export import SparkExportEngine  # lazy: imports pyspark

        exporter = SparkExportEngine(ctx.spark)
    result = export_changes(ctx.spec.table, options.pop("sink"), storage_options=ctx.spec.storage_options,
                            engine=exporter, **options)
    version = result.sink_version if result.sink_version is not None else result.end
    return JobOutput(version=version, committed=not result.skipped, metrics=result.to_dict())

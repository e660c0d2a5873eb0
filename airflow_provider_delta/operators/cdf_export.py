"""``DeltaCDFExportOperator``: one run of an exactly-once change data export, as a Spark job.

The operator is a thin layer over the ``cdf_export`` job (``jobs/cdf_export.py``, which calls
``core.commands.cdf_export.export_changes``): it renders and validates its options, submits the job
(or, with ``engine="local"``, runs it in the worker without Spark), returns the export's result as
XCom and emits an asset event for the sink whose extra holds the exported range. The progress lives
in the sink, not in Airflow: with no range the run continues where the sink ends, so a missed,
duplicated or concurrent trigger exports nothing twice and skips nothing.

Example:
    >>> DeltaCDFExportOperator(task_id="export", table="/data/orders", sink="/exports/orders")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import Asset
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_delta.core.transaction.policy import ConflictAction, ConflictPolicy
from airflow_provider_delta.operators.delta import DeltaSparkJobOperator
from airflow_provider_delta.operators.lineage import LineageTable

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow.sdk import Context

    from airflow_provider_delta.jobs.spec import JobSpec

ENGINES = ("spark", "local")
#: A run without a range that loses to a concurrent run of the same export re-plans from the sink.
RESUME_POLICY: Mapping[str, ConflictAction] = {"ConcurrentTransactionException": "retry"}


def sink_asset(sink: str) -> Asset:
    """The asset an export's sink is: its URI (``file://`` for a local path).

    Example:
        >>> sink_asset("/exports/orders").uri
        'file:///exports/orders'
    """
    uri = sink if "://" in sink else f"file://{sink}"
    return Asset(name=f"delta_cdf_export:{sink}", uri=uri)


def _version(name: str, value: Any) -> int | None:
    if value is None or value == "" or value == "None":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise AirflowFailException(f"Cannot export changes: {name} must be a version number, found {value!r}") from None


class DeltaCDFExportOperator(DeltaSparkJobOperator):
    """Export a Delta table's change data feed into a sink, exactly once, resuming where the sink ends.

    Args:
        table: the source table: a path/URI or a bare name under the ``delta`` connection (templated).
        sink: the destination: a directory (``parquet``, ``jsonl``) or a Delta table (templated).
        format: ``parquet`` (partitioned by ``_commit_version``), ``delta`` or ``jsonl`` (templated).
        name: the export's name (default ``default``; one export per sink) (templated).
        starting_version, ending_version: an explicit range (templated; default: from the sink's
            watermark + 1 to the latest version). A start that leaves a gap or an overlap fails.
        max_versions: at most this many versions per run (templated).
        initial_snapshot: begin with the table's snapshot as inserts.
        envelope: ``flat`` or ``debezium``; ``key_columns`` pair Debezium's update images (templated).
        sink_storage_options: object-store options of the sink.
        register_watermark: register the export in the source for VACUUM (None: when the table
            supports domain metadata; True: upgrade its protocol to; False: never).
        engine: ``spark`` (spark-submit: executors read and write the files) or ``local`` (pyarrow in
            the worker, no Spark: small tables).
        emit_sink_asset: add the sink's asset (:func:`sink_asset`) to ``outlets``; its event's extra holds
            ``start``, ``end``, ``versions``, ``rows`` and ``skipped``.
        **kwargs: as :class:`DeltaSparkJobOperator` (connections, Spark conf, conflict policy, ...).

    Returns (XCom ``return_value``): the ``ExportResult`` as a dict: ``start``, ``end``, ``versions``,
    ``rows``, ``skipped``, ``sink_version``, ``files``, ``bytes``, ``row_counts``, ...
    """

    template_fields: tuple[str, ...] = (
        *DeltaSparkJobOperator.template_fields, "sink", "format", "name", "starting_version", "ending_version",
        "max_versions", "envelope", "key_columns",
    )
    is_write_job: ClassVar[bool] = False  # exactly-once comes from the sink, not from a txn in the source
    ui_color = "#7fc8a9"

    def __init__(
        self,
        *,
        table: str,
        sink: str,
        format: str = "parquet",  # noqa: A002 - the option's name everywhere else
        name: str | None = None,
        starting_version: int | str | None = None,
        ending_version: int | str | None = None,
        max_versions: int | str | None = None,
        initial_snapshot: bool = False,
        envelope: str = "flat",
        key_columns: list[str] | None = None,
        sink_storage_options: dict[str, str] | None = None,
        register_watermark: bool | None = None,
        engine: str = "spark",
        emit_sink_asset: bool = True,
        **kwargs: Any,
    ) -> None:
        if emit_sink_asset and "{{" not in sink:
            kwargs["outlets"] = [*(kwargs.get("outlets") or []), sink_asset(sink)]
        if kwargs.get("conflict_policy") is None and starting_version is None:
            kwargs["conflict_policy"] = ConflictPolicy(overrides=dict(RESUME_POLICY))
        super().__init__(job="cdf_export", table=table, engine=engine, **kwargs)  # type: ignore[arg-type]
        self.sink, self.format, self.name = sink, format, name
        self.starting_version, self.ending_version, self.max_versions = starting_version, ending_version, max_versions
        self.initial_snapshot, self.envelope, self.key_columns = initial_snapshot, envelope, key_columns
        self.sink_storage_options, self.register_watermark = sink_storage_options, register_watermark

    def options_from_arguments(self) -> dict[str, Any]:
        """The ``cdf_export`` job's options, from the rendered arguments."""
        options = {
            "sink": self.sink, "format": self.format, "name": self.name or "default",
            "starting_version": _version("starting_version", self.starting_version),
            "ending_version": _version("ending_version", self.ending_version),
            "max_versions": _version("max_versions", self.max_versions),
            "initial_snapshot": bool(self.initial_snapshot), "envelope": self.envelope,
            "key_columns": list(self.key_columns) if self.key_columns else None,
            "sink_storage_options": self.sink_storage_options,
            "register_watermark": self.register_watermark,
        }
        return {k: v for k, v in options.items() if v is not None}

    def lineage(self, location: str, result: dict[str, Any], spec: JobSpec) -> list[LineageTable]:
        """The source read up to the exported end; the sink written (a Delta table at its new version)."""
        export = result.get("metrics") or {}
        tables = [LineageTable(location, "input", export.get("end"), rows=export.get("rows"),
                               storage_options=spec.storage_options)]
        if not export.get("skipped"):
            is_delta = export.get("format") == "delta"
            tables.append(LineageTable(self.sink, "output", export.get("sink_version") if is_delta else None,
                                       rows=export.get("rows"), size=export.get("bytes"), files=export.get("files"),
                                       is_delta=is_delta, storage_options=self.sink_storage_options or {}))
        return tables

    def execute(self, context: Context) -> dict[str, Any]:
        """Run the export; return the ``ExportResult`` (XCom) and put the range on the sink's asset event."""
        result = super().execute(context)
        export: dict[str, Any] = dict(result["metrics"])
        context["ti"].xcom_push(key="delta_job_result", value=result)
        for outlet in self.outlets:
            if isinstance(outlet, Asset) and outlet.name == f"delta_cdf_export:{self.sink}":
                context["outlet_events"][outlet].extra = {
                    k: export[k] for k in ("start", "end", "versions", "rows", "skipped", "sink_version")
                }
        self.log.info("Exported versions %s to %s of %s into %s: %s rows%s", export["start"], export["end"],
                      export["source"], export["sink"], export["rows"], " (skipped)" if export["skipped"] else "")
        return export

"""``DeltaCDFExportOperator``: one run of an exactly-once change data export, as a job (on Spark by default).

The operator is a thin layer over the ``cdf_export`` job (``jobs/cdf_export.py``, which calls
``core.commands.cdf_export.export_changes``), whose declared options are its arguments: it renders
and validates them, submits the job
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

from airflow_provider_delta.core.transaction.policy import ConflictAction, ConflictPolicy
from airflow_provider_delta.jobs.definition import is_deferred_value
from airflow_provider_delta.operators.delta import DeltaSparkJobOperator
from airflow_provider_delta.operators.lineage import LineageTable

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow.sdk import Context

    from airflow_provider_delta.jobs.spec import JobSpec

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


class DeltaCDFExportOperator(DeltaSparkJobOperator, job="cdf_export"):
    """Export a Delta table's change data feed into a sink, exactly once, resuming where the sink ends.

    Args:
        table: the source table: a path/URI or a bare name under the ``delta`` connection (templated).
        emit_sink_asset: add the sink's asset (:func:`sink_asset`) to ``outlets``; its event's extra holds
            ``start``, ``end``, ``versions``, ``rows`` and ``skipped``.
        **kwargs: as :class:`DeltaSparkJobOperator` (connections, Spark conf, conflict policy,
            ``engine``: ``spark``, the default, where executors read and write the files, or ``local``,
            pyarrow in the worker for small tables).

    A run without ``starting_version`` that loses to a concurrent run of the same export re-plans from
    the sink (conflict policy ``ConcurrentTransactionException: retry`` unless one is given).

    Returns (XCom ``return_value``): the ``ExportResult`` as a dict: ``start``, ``end``, ``versions``,
    ``rows``, ``skipped``, ``sink_version``, ``files``, ``bytes``, ``row_counts``, ...
    """

    is_write_job: ClassVar[bool] = False  # exactly-once comes from the sink, not from a txn in the source
    # Two of the job's options (declared in jobs/cdf_export.py; set by DeltaSparkJobOperator.__init__).
    sink: str
    sink_storage_options: dict[str, str] | None
    ui_color = "#7fc8a9"

    def __init__(self, *, emit_sink_asset: bool = True, **kwargs: Any) -> None:
        sink = kwargs.get("sink")
        if emit_sink_asset and isinstance(sink, str) and not is_deferred_value(sink):
            kwargs["outlets"] = [*(kwargs.get("outlets") or []), sink_asset(sink)]
        if kwargs.get("conflict_policy") is None and kwargs.get("starting_version") is None:
            kwargs["conflict_policy"] = ConflictPolicy(overrides=dict(RESUME_POLICY))
        super().__init__(**kwargs)
        self.emit_sink_asset = emit_sink_asset

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

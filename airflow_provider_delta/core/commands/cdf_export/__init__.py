"""Change data export: a table's change data feed into a sink, exactly once, triggered as often as you like.

A run exports an inclusive range of source versions, pinned when it plans, and never splits a
version. The progress lives in the sink: a Delta sink records Delta's ``txn`` action in the commit
holding the rows; Parquet and JSON Lines sinks write deterministic file names per source version and
a manifest per version last. So a retry, a duplicated trigger or a concurrent run never exports a
version twice, and a run with no range continues where the sink ends. Before writing anything, a
run checks that the feed was on over the range and that every file it reads still exists
(:mod:`.plan`); exporters register their watermark in the source table so VACUUM can refuse to
delete files they still need (:mod:`.watermarks`).

Modules: :mod:`.model` (result, identity), :mod:`.plan` (range, segments, preflight), :mod:`.units`
(the work items and their output), :mod:`.envelope` (Debezium), :mod:`.sink_files`,
:mod:`.sink_delta`, :mod:`.watermarks` (vacuum coordination) and :mod:`.export` (the run). The data
work is the executor's ``exporter()`` capability (``core/executor/export/``: the units and the local
exporter; Spark's is ``spark/cdf_export.py``).

Example:
    >>> from airflow_provider_delta.core.commands.cdf_export import export_changes
    >>> export_changes("/data/orders", "/exports/orders", format="parquet").versions  # doctest: +SKIP
    13
"""

from __future__ import annotations

from airflow_provider_delta.core.commands.cdf_export.export import export_changes
from airflow_provider_delta.core.commands.cdf_export.model import ExportIdentity, ExportResult, export_app_id
from airflow_provider_delta.core.commands.cdf_export.watermarks import (
    ExporterNeeds,
    RegisteredExporter,
    files_needed_by_exporters,
    refuse_if_exporters_need,
    register_exporter,
    registered_exporters,
    unregister_exporter,
)
from airflow_provider_delta.core.executor.export.local import LocalChangeExporter

LocalExportEngine = LocalChangeExporter
"""The local executor's exporter under the name exports gave it before the executor seam."""

__all__ = [
    "ExportIdentity",
    "ExportResult",
    "ExporterNeeds",
    "LocalChangeExporter",
    "LocalExportEngine",
    "RegisteredExporter",
    "export_app_id",
    "export_changes",
    "files_needed_by_exporters",
    "refuse_if_exporters_need",
    "register_exporter",
    "registered_exporters",
    "unregister_exporter",
]

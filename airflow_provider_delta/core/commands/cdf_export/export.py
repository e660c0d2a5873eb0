"""``export_changes``: one run of an exactly-once change data export (see the package docstring)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.commands.cdf_export import watermarks
from airflow_provider_delta.core.commands.cdf_export.model import (
    ENVELOPES,
    FORMATS,
    ExportIdentity,
    ExportResult,
)
from airflow_provider_delta.core.commands.cdf_export.plan import ExportPlan, RangeRequest, plan_export
from airflow_provider_delta.core.commands.cdf_export.sink_delta import DeltaSink
from airflow_provider_delta.core.commands.cdf_export.sink_files import FileSink
from airflow_provider_delta.core.executor import LocalExecutor
from airflow_provider_delta.core.executor.export.units import UnitJob, output_schema
from airflow_provider_delta.core.snapshot import Snapshot, load_snapshot
from airflow_provider_delta.core.storage import storage_for
from airflow_provider_delta.exceptions import DeltaError, ExportOptionError, ProtocolError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_delta.core.commands.cdf_export.model import Envelope, ExportFormat
    from airflow_provider_delta.core.executor import ChangeExporter, Executor
    from airflow_provider_delta.core.executor.export.units import ExportUnit

__all__ = ["export_changes"]

log = logging.getLogger(__name__)

#: How old (ms) a registered watermark may get before a run moves it to the run's end. A lagging
#: registration only keeps more files from VACUUM, and each move is a commit to the source table.
REGISTRATION_REFRESH_MS = 3_600_000


def _check_options(
    fmt: Any, envelope: Any, name: Any, key_columns: Sequence[str] | None, max_versions: Any,
    starting_version: Any, ending_version: Any,
) -> tuple[str, ...]:
    where = "Cannot export changes"
    if fmt not in FORMATS:
        raise ExportOptionError(f"{where}: format must be one of {', '.join(FORMATS)}, found {fmt!r}")
    if envelope not in ENVELOPES:
        raise ExportOptionError(f"{where}: envelope must be one of {', '.join(ENVELOPES)}, found {envelope!r}")
    if not isinstance(name, str) or not name or "/" in name:
        raise ExportOptionError(f"{where}: name must be a non-empty string without '/', found {name!r}")
    for label, value, low in (("max_versions", max_versions, 1), ("starting_version", starting_version, 0),
                              ("ending_version", ending_version, 0)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            raise ExportOptionError(f"{where}: {label} must be an integer >= {low}, found {value!r}")
    keys = tuple(key_columns or ())
    if isinstance(key_columns, str):
        keys = (key_columns,)
    if envelope == "debezium" and not keys:
        raise ExportOptionError(
            f"{where}: the debezium envelope pairs update images by key, so it needs key_columns. "
            "Help: pass key_columns=['id'] (the columns that identify a row)."
        )
    return keys


def _check_keys(latest: Snapshot, keys: Sequence[str]) -> None:
    names = set(latest.schema.names)
    missing = [k for k in keys if k not in names]
    if missing:
        raise ExportOptionError(
            f"Cannot export changes of table {latest.location!r}: key column {missing[0]!r} is not a column of "
            f"the table at version {latest.version} (columns: {', '.join(latest.schema.names)})"
        )


def export_changes(
    source: str | Snapshot,
    sink: str,
    *,
    format: ExportFormat = "parquet",  # noqa: A002 - the issue's and Spark's name for it
    name: str = "default",
    starting_version: int | None = None,
    ending_version: int | None = None,
    max_versions: int | None = None,
    initial_snapshot: bool = False,
    envelope: Envelope = "flat",
    key_columns: Sequence[str] | None = None,
    storage_options: Mapping[str, str] | None = None,
    sink_storage_options: Mapping[str, str] | None = None,
    register_watermark: bool | None = None,
    executor: Executor | None = None,
    engine: ChangeExporter | None = None,
) -> ExportResult:
    """Export the change data feed of ``source`` into ``sink``, exactly once, resuming where the sink ends.

    Args:
        source: the source table's location (or a snapshot of it; its newest version is used).
        sink: where the changes go: a directory (``parquet``, ``jsonl``) or a Delta table (``delta``).
        format: ``parquet`` (partitioned by ``_commit_version``), ``delta`` (appended, ``txn`` per run)
            or ``jsonl`` (ISO-8601 UTC timestamps, decimals as strings).
        name: the export's name (part of the Delta sink's ``txn`` appId; one export per sink).
        starting_version: the first version; must continue the sink (default: its watermark + 1).
        ending_version: the last version (default: the latest when the run plans).
        max_versions: at most this many versions per run (a version is never split).
        initial_snapshot: start with the snapshot at the start version, as inserts (Debezium ``r``).
        envelope: ``flat`` (the table's columns + ``_change_type``, ``_commit_version``,
            ``_commit_timestamp``) or ``debezium`` (``before``, ``after``, ``op``, ``source``, ``ts_ms``).
        key_columns: the columns identifying a row (required by ``debezium``).
        storage_options, sink_storage_options: object-store options of the source and the sink.
        register_watermark: register the export in the source table for VACUUM (a domainMetadata
            commit): None registers when the table supports domain metadata, True also upgrades its
            protocol to support it, False never registers.
        executor: where the data work runs (default: the local executor): its ``exporter()``.
        engine: the exporter itself, instead of ``executor``'s (e.g. one wrapped by a test).

    Returns:
        An :class:`ExportResult`.

    Raises:
        ExportOptionError: a bad option, a key column the table lacks, Debezium without keys.
        ExportSinkError: the sink holds another format, another table's or another export's changes.
        ExportRangeError: ``starting_version`` leaves a gap or an overlap with the sink, or the range is inverted.
        VersionNotFoundError: the range is outside the table's log.
        ChangeDataNotRecordedError: the feed is off somewhere in the range.
        ChangeDataMissingError: a commit or change/data file of the range is gone (names the version and file).
        ExportSchemaChangeError: a Delta sink cannot take a schema change of the range.
        ConcurrentTransactionException: another run of the export landed the same versions first.
        ExecutorCapabilityError: ``executor`` cannot export change data (it has no exporter).

    Example:
        >>> export_changes("/data/orders", "/exports/orders").to_dict()  # doctest: +SKIP
        {'start': 0, 'end': 12, 'versions': 13, 'rows': 4211, 'skipped': False, 'sink_version': None, ...}
    """
    keys = _check_options(format, envelope, name, key_columns, max_versions, starting_version, ending_version)
    exporter = engine or (executor or LocalExecutor()).exporter()  # before anything is written
    latest = _latest(source, storage_options)
    _check_keys(latest, keys)
    identity = ExportIdentity(latest.metadata.id, latest.location, name, format, envelope, keys)
    opened = (DeltaSink if format == "delta" else FileSink)(sink, sink_storage_options, identity)
    request = RangeRequest(
        watermark=opened.watermark(),
        first_version=getattr(opened, "first_version", None),
        first_snapshot=getattr(opened, "first_snapshot", False),
        starting_version=starting_version, ending_version=ending_version, max_versions=max_versions,
        initial_snapshot=initial_snapshot,
    )
    plan = plan_export(latest, request, envelope=envelope)
    base: dict[str, Any] = {"sink": sink, "format": format, "name": name, "source": latest.location,
            "source_table_id": identity.source_table_id, "initial_snapshot": plan.initial_snapshot}
    if plan.skipped:
        return ExportResult(plan.start, plan.end, 0, 0, True, None, **base,
                            registered=_registration(latest, sink, name) is not None)
    registered = _register(latest, sink, name, format, plan.start - 1, register_watermark, only_if_absent=True)
    run = _Run(identity, plan, exporter)
    result = run.into_delta(opened) if isinstance(opened, DeltaSink) else run.into_files(opened)
    registered = _register(latest, sink, name, format, plan.end, register_watermark) or registered
    return ExportResult(plan.start, plan.end, plan.versions, **result, skipped=False, **base, registered=registered)


def _latest(source: str | Snapshot, storage_options: Mapping[str, str] | None) -> Snapshot:
    if isinstance(source, Snapshot):
        return source.advance()
    location = str(source)
    return load_snapshot(storage_for(location, storage_options), location)


def _registration(latest: Snapshot, sink: str, name: str) -> watermarks.RegisteredExporter | None:
    domain = watermarks.exporter_domain(sink, name)
    return next((e for e in watermarks.registered_exporters(latest) if e.domain == domain), None)


def _register(
    latest: Snapshot, sink: str, name: str, fmt: str, version: int, mode: bool | None, *, only_if_absent: bool = False
) -> bool:
    """Register (or move) the exporter's watermark when allowed; whether it is registered afterwards."""
    if mode is False:
        return False
    if mode is None and not watermarks.supports_domain_metadata(latest):
        log.info("Table %s does not support domain metadata: export %r is not registered for VACUUM "
                 "(set 'delta.feature.domainMetadata' = 'supported' to register it)", latest.location, name)
        return False
    current = _registration(latest.advance(), sink, name)
    if current is not None and (only_if_absent or time.time() * 1000 - current.updated_at < REGISTRATION_REFRESH_MS):
        return True
    try:
        watermarks.register_exporter(latest, sink=sink, name=name, format=fmt, version=version,
                                     upgrade_protocol=bool(mode))
    except ProtocolError:
        raise
    except DeltaError as err:  # a concurrent run registered it: it is registered
        log.warning("Cannot register export %r in %s: %s", name, latest.location, err)
    return True


class _Run:
    """The data part of one run: the plan's units through the exporter into the sink."""

    def __init__(self, identity: ExportIdentity, plan: ExportPlan, engine: ChangeExporter) -> None:
        self.identity = identity
        self.plan = plan
        self.engine = engine
        self.source = {"name": identity.name, "table": identity.source, "table_id": identity.source_table_id}

    def _job(self, segment: Any, sink: FileSink | None) -> UnitJob:
        return UnitJob(segment.layout, self.identity.envelope, self.identity.key_columns, self.source,
                       self.identity.format if sink is not None else "parquet",
                       sink.storage if sink is not None else None)

    def into_files(self, sink: FileSink) -> dict[str, Any]:
        """Each version's files, then its manifest, in version order (a window of units at a time)."""
        sink.begin(self.plan.start, self.plan.initial_snapshot)
        totals: dict[str, Any] = {"rows": 0, "files": 0, "bytes": 0, "row_counts": {}, "sink_version": None}
        for segment in self.plan.segments:
            job = self._job(segment, sink)
            by_version = segment.units(self.identity.envelope)
            window: list[int] = []
            pending = 0
            for version in sorted(by_version):
                window.append(version)
                pending += len(by_version[version])
                if pending >= 64 or version == segment.end:
                    self._write_window(sink, job, [(v, by_version[v]) for v in window], totals, segment.snapshot)
                    window, pending = [], 0
        return totals

    def _write_window(
        self, sink: FileSink, job: UnitJob, window: Sequence[tuple[int, Sequence[ExportUnit]]],
        totals: dict[str, Any], snapshot: bool,
    ) -> None:
        units = [u for _, us in window for u in us]
        records = iter(self.engine.write_files(job, units))
        for version, us in window:
            files = [next(records) for _ in us]
            sink.write_manifest(version, self.plan.timestamps[version], files, job.schema, snapshot=snapshot)
            for f in files:
                totals["rows"] += f["rows"]
                totals["files"] += 1 if f["path"] else 0
                totals["bytes"] += f["bytes"]
                for k, n in f["counts"].items():
                    totals["row_counts"][k] = totals["row_counts"].get(k, 0) + n

    def into_delta(self, sink: DeltaSink) -> dict[str, Any]:
        """One commit: the rows of every segment (the schema evolved by added columns) and the ``txn``."""
        segments = self.plan.segments
        schema = sink.check_schemas([(s.start, output_schema(s.layout, self.identity.envelope)) for s in segments])
        work = [(self._job(s, None), [u for us in s.units(self.identity.envelope).values() for u in us])
                for s in segments]
        outputs: list[Any] = []

        def write(target: Any) -> list[Any]:
            outputs.append(self.engine.write_delta(target, work))
            return list(outputs[-1].adds)

        version, adds = sink.commit(schema, write, start=self.plan.start, end=self.plan.end)
        out = outputs[-1]
        return {"rows": out.rows, "files": len(adds), "bytes": sum(a.size for a in adds),
                "row_counts": out.counts, "sink_version": version}

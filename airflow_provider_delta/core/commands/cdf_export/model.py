"""The vocabulary of change data exports: formats, envelopes, the export's identity and its result."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_provider_delta.core.executor.export.units import Envelope, ExportFormat

__all__ = [
    "ENVELOPES",
    "FORMATS",
    "Envelope",
    "ExportFormat",
    "ExportIdentity",
    "ExportResult",
    "export_app_id",
]

FORMATS: tuple[ExportFormat, ...] = ("parquet", "delta", "jsonl")
ENVELOPES: tuple[Envelope, ...] = ("flat", "debezium")


def export_app_id(source_table_id: str, name: str) -> str:
    """The application id of an export: Delta's ``txn.appId`` in a Delta sink.

    Example:
        >>> export_app_id("3f2a", "orders")
        'delta-cdf-export/3f2a/orders'
    """
    return f"delta-cdf-export/{source_table_id}/{name}"


@dataclass(frozen=True)
class ExportIdentity:
    """What makes two runs the same export: the sink refuses runs of another identity.

    Attributes:
        source_table_id: the source's ``metaData.id`` (a recreated table has a new one).
        source: the source's location (informational: a table may move).
        name: the export's name (several exports of one table need several sinks).
        format: the sink's format.
        envelope: ``flat`` or ``debezium``.
        key_columns: the Debezium pairing keys.
    """

    source_table_id: str
    source: str
    name: str
    format: ExportFormat
    envelope: Envelope
    key_columns: tuple[str, ...] = ()

    @property
    def app_id(self) -> str:
        """Delta's ``txn.appId`` of this export."""
        return export_app_id(self.source_table_id, self.name)

    def mismatch(self, other: ExportIdentity) -> str | None:
        """Why ``other`` (what a sink records) is another export than this one, or None."""
        if other.source_table_id != self.source_table_id:
            return (
                f"it holds the export of another table (table id {other.source_table_id!r} at "
                f"{other.source!r}; this table's id is {self.source_table_id!r})"
            )
        for what, mine, theirs in (
            ("format", self.format, other.format),
            ("name", self.name, other.name),
            ("envelope", self.envelope, other.envelope),
            ("key_columns", list(self.key_columns), list(other.key_columns)),
        ):
            if mine != theirs:
                return f"its first run used {what} {theirs!r}, this run {mine!r}"
        return None


@dataclass(frozen=True)
class ExportResult:
    """What one export run did.

    Attributes:
        start: the first source version of the run's range.
        end: the last source version of the range (``start - 1`` when there was nothing new).
        versions: how many source versions this run exported (0 when skipped).
        rows: change rows written.
        skipped: True when nothing was written: no new version, or the range had already landed.
        sink_version: the Delta sink's committed version (None for file sinks and skipped runs).
        sink: the sink's location.
        format: the sink's format.
        name: the export's name.
        source: the source table's location.
        source_table_id: the source's ``metaData.id``.
        files: output files written.
        bytes: their size in bytes.
        row_counts: rows per ``_change_type`` (Debezium: per ``op``).
        initial_snapshot: whether ``start`` was exported as a snapshot of inserts.
        registered: whether the export's watermark is registered in the source table (vacuum coordination).

    Example:
        >>> ExportResult(start=3, end=7, versions=5, rows=120, skipped=False, sink_version=None).to_dict()["end"]
        7
    """

    start: int
    end: int
    versions: int
    rows: int
    skipped: bool
    sink_version: int | None
    sink: str = ""
    format: str = "parquet"
    name: str = "default"
    source: str = ""
    source_table_id: str = ""
    files: int = 0
    bytes: int = 0
    row_counts: dict[str, int] = field(default_factory=dict)
    initial_snapshot: bool = False
    registered: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the operator's XCom)."""
        return asdict(self)

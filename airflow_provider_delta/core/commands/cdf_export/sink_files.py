"""Parquet and JSON Lines sinks: deterministic file names per source version, a manifest written last.

Layout under the sink's root::

    _commit_version=<v>/part-<seq:05d>.parquet|jsonl    the rows of source version v
    _delta_cdf_export/_export.json                      the export's identity (source, name, format, ...)
    _delta_cdf_export/<v:020d>.json                     version v's manifest: files, row counts, schema

A version's files are written first (each atomically: temporary file then rename, or one PUT), its
manifest last. Readers take only versions with a manifest; the watermark is the last version of the
contiguous run of manifests from the export's first version. A retry rewrites the same bytes under
the same names, so a version is never there twice.

Example:
    >>> sink = FileSink("/exports/orders", None, identity)  # doctest: +SKIP
    >>> sink.watermark()                                     # doctest: +SKIP
    41
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import orjson

from airflow_provider_delta.core.commands.cdf_export.model import ExportIdentity
from airflow_provider_delta.core.schema.arrow import from_arrow_schema
from airflow_provider_delta.core.storage import storage_for
from airflow_provider_delta.exceptions import ExportSinkError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pyarrow as pa

__all__ = ["EXPORT_DIR", "IDENTITY_FILE", "FileSink", "manifest_path"]

EXPORT_DIR = "_delta_cdf_export"
IDENTITY_FILE = f"{EXPORT_DIR}/_export.json"
_MANIFEST = re.compile(r"^(\d{20})\.json$")


def manifest_path(version: int) -> str:
    """The manifest of source version ``version``, relative to the sink's root.

    Example:
        >>> manifest_path(7)
        '_delta_cdf_export/00000000000000000007.json'
    """
    return f"{EXPORT_DIR}/{version:020d}.json"


def _identity_of(record: Mapping[str, Any]) -> ExportIdentity:
    return ExportIdentity(
        source_table_id=str(record.get("sourceTableId")),
        source=str(record.get("source")),
        name=str(record.get("name")),
        format=record["format"],
        envelope=record["envelope"],
        key_columns=tuple(record.get("keyColumns") or ()),
    )


class FileSink:
    """A directory of Parquet or JSON Lines files holding one export (see the module docstring)."""

    def __init__(self, location: str, storage_options: Mapping[str, str] | None, identity: ExportIdentity) -> None:
        self.location = location
        self.storage = storage_for(location, storage_options)
        self.identity = identity
        self.record = self._check()

    def _fail(self, reason: str) -> ExportSinkError:
        return ExportSinkError(
            f"Cannot export changes of table {self.identity.source!r} to {self.location!r}: {reason}. "
            "Help: export to another path (a sink holds one export).",
            sink=self.location,
        )

    def _check(self) -> dict[str, Any] | None:
        if self.storage.list_dir("_delta_log"):
            raise self._fail(f"it is a Delta table, not a {self.identity.format} export (format 'delta' writes there)")
        try:
            record: dict[str, Any] = orjson.loads(self.storage.read_bytes(IDENTITY_FILE))
        except FileNotFoundError:
            return None
        problem = self.identity.mismatch(_identity_of(record))
        if problem:
            raise self._fail(problem)
        return record

    @property
    def first_version(self) -> int | None:
        """The version the export started at (None before its first run)."""
        return int(self.record["firstVersion"]) if self.record else None

    @property
    def first_snapshot(self) -> bool:
        """Whether the export started with a snapshot."""
        return bool(self.record and self.record.get("initialSnapshot"))

    def watermark(self) -> int | None:
        """The last version of the contiguous manifests from the first version (None: none yet)."""
        first = self.first_version
        if first is None:
            return None
        have = set()
        for info in self.storage.list_dir(EXPORT_DIR):
            m = _MANIFEST.match(info.name)
            if m:
                have.add(int(m.group(1)))
        v = first
        while v in have:
            v += 1
        return v - 1 if v > first else None

    def begin(self, first_version: int, initial_snapshot: bool) -> None:
        """Record the export's identity on its first run (a concurrent first run of another export fails)."""
        if self.record is not None:
            return
        ident = self.identity
        record = {
            "sourceTableId": ident.source_table_id, "source": ident.source, "name": ident.name,
            "format": ident.format, "envelope": ident.envelope, "keyColumns": list(ident.key_columns),
            "firstVersion": first_version, "initialSnapshot": initial_snapshot,
        }
        if not self.storage.write_if_absent(IDENTITY_FILE, orjson.dumps(record, option=orjson.OPT_SORT_KEYS)):
            self.record = self._check()
            if self.record is not None and self.first_version != first_version:
                raise self._fail(f"a concurrent first run started the export at version {self.first_version}")
            return
        self.record = record

    def write_manifest(
        self, version: int, timestamp: int, files: Sequence[Mapping[str, Any]], schema: pa.Schema, *, snapshot: bool
    ) -> None:
        """Write version ``version``'s manifest (after its files): from now on readers see the version."""
        counts: dict[str, int] = {}
        for f in files:
            for k, n in f["counts"].items():
                counts[k] = counts.get(k, 0) + int(n)
        written = [{"path": f["path"], "rows": f["rows"], "bytes": f["bytes"]} for f in files if f["path"]]
        manifest = {
            "version": version,
            "commitTimestamp": timestamp,
            "files": sorted(written, key=lambda f: f["path"]),
            "rows": sum(int(f["rows"]) for f in files),
            "rowCounts": dict(sorted(counts.items())),
            "schema": orjson.loads(from_arrow_schema(schema).to_json()),
            "sourceTableId": self.identity.source_table_id,
            "name": self.identity.name,
            "format": self.identity.format,
            "envelope": self.identity.envelope,
            "snapshot": snapshot,
        }
        self.storage.write(manifest_path(version), orjson.dumps(manifest, option=orjson.OPT_SORT_KEYS))

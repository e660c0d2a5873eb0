"""Vacuum coordination: exporters register their watermark in the source table; vacuum asks who needs what.

An exporter records itself as a Delta domain-metadata entry of the source table (PROTOCOL.md
"Domain Metadata", writer feature ``domainMetadata``): domain ``airflow_provider_delta.cdfExport.<id>``,
configuration ``{"name", "sink", "format", "version", "updatedAt"}`` where ``version`` is the last
source version the export has landed (or, before its first run lands, the version before its start).
A registered version may lag behind the sink (that only keeps more files); it is never ahead of it.

:func:`files_needed_by_exporters` lists, per registered exporter, every file the versions after its
watermark read (change data files, the data files their adds and removes name, their deletion
vectors). ``vacuum(respect_exports=True)`` passes the files it would delete to
:func:`refuse_if_exporters_need`, which raises :class:`~airflow_provider_delta.exceptions.ExportWatermarkError`
naming the exporter and its version: a lagging export fails loudly instead of losing rows.

A domain-metadata registration needs the ``domainMetadata`` writer feature. It is not added silently:
a table gets it with ``ALTER TABLE t SET TBLPROPERTIES ('delta.feature.domainMetadata' = 'supported')``
or with ``register_exporter(..., upgrade_protocol=True)``. Writers that lack the feature (delta-rs 1.6,
Delta Lake before 3.0) can no longer write such a table. A table without the feature keeps the same
protection through a *registration file*: ``_airflow_provider_delta/cdf_exports/<id>.json`` under the
table root, holding the same configuration (:func:`register_exporter_file`). The folder's name starts
with ``_``, so Delta Lake's VACUUM (``DeltaTableUtils.isHiddenDirectory``), delta-rs's and this
engine's never list or delete it, and no reader takes it for data; the log and the protocol are not
touched. :func:`registered_exporters` reads both kinds; where an exporter has both, the lower version
counts.

Example:
    >>> registered_exporters(DeltaTable("/data/events").snapshot)  # doctest: +SKIP
    [RegisteredExporter(domain='airflow_provider_delta.cdfExport.5d41...', name='orders', version=41, ...)]
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import orjson

from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.parallel import run_parallel
from airflow_provider_delta.core.properties import minimal_protocol
from airflow_provider_delta.core.protocol import writer_features
from airflow_provider_delta.core.read.changes import ChangeFileRead, change_file_reads, load_change_commit
from airflow_provider_delta.core.read.deletion_vectors import DeletionVectorDescriptor
from airflow_provider_delta.core.transaction.commit import Transaction
from airflow_provider_delta.exceptions import (
    ConcurrentTransactionException,
    ExportWatermarkError,
    LogCorruptedError,
    ProtocolError,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = [
    "DOMAIN_PREFIX",
    "REGISTRY_DIR",
    "ExporterNeeds",
    "RegisteredExporter",
    "exporter_domain",
    "files_needed_by_exporters",
    "refuse_if_exporters_need",
    "register_exporter",
    "register_exporter_file",
    "registered_exporters",
    "supports_domain_metadata",
    "unregister_exporter",
]

DOMAIN_PREFIX = "airflow_provider_delta.cdfExport."
OPERATION = "CDF EXPORT WATERMARK"
#: Registration files of tables without domain metadata (a ``_`` folder: VACUUM never enters it).
REGISTRY_DIR = "_airflow_provider_delta/cdf_exports"


def exporter_domain(sink: str, name: str) -> str:
    """The domain of the export of ``name`` into ``sink`` (stable: a hash of both).

    Example:
        >>> exporter_domain("/exports/orders", "default").startswith("airflow_provider_delta.cdfExport.")
        True
    """
    digest = hashlib.sha256(f"{sink}\0{name}".encode()).hexdigest()[:20]
    return f"{DOMAIN_PREFIX}{digest}"


@dataclass(frozen=True)
class RegisteredExporter:
    """One exporter registered in a table: the last version it landed (``version``) and where it writes."""

    domain: str
    name: str
    sink: str
    format: str
    version: int
    updated_at: int

    def describe(self) -> str:
        """``'orders' (into '/exports/orders', at version 41)``."""
        return f"{self.name!r} (into {self.sink!r}, at version {self.version})"


def supports_domain_metadata(snapshot: Snapshot) -> bool:
    """Whether the table's protocol lets writers add domain metadata (writer feature ``domainMetadata``)."""
    return "domainMetadata" in writer_features(snapshot.protocol)


def registered_exporters(snapshot: Snapshot) -> list[RegisteredExporter]:
    """The exporters registered in ``snapshot``'s table (domain metadata and files), lowest watermark first.

    Example:
        >>> [e.version for e in registered_exporters(table.snapshot)]  # doctest: +SKIP
        [12, 41]
    """
    found: dict[str, RegisteredExporter] = {}
    entries: list[tuple[str, str | bytes]] = [
        (domain, dm.configuration)
        for domain, dm in snapshot.domain_metadata.items()
        if domain.startswith(DOMAIN_PREFIX)
    ]
    for domain, text in [*entries, *_registration_files(snapshot)]:
        exporter = _parse(domain, text)
        if exporter is not None and (domain not in found or exporter.version < found[domain].version):
            found[domain] = exporter
    return sorted(found.values(), key=lambda e: (e.version, e.domain))


def _parse(domain: str, text: str | bytes) -> RegisteredExporter | None:
    try:
        conf: dict[str, Any] = orjson.loads(text)
        return RegisteredExporter(domain, str(conf.get("name", "")), str(conf.get("sink", "")),
                                  str(conf.get("format", "")), int(conf["version"]), int(conf.get("updatedAt", 0)))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None  # not ours to judge: an unreadable entry protects nothing and breaks nothing


def _registration_file(domain: str) -> str:
    return f"{REGISTRY_DIR}/{domain[len(DOMAIN_PREFIX):]}.json"


def _registration_files(snapshot: Snapshot) -> list[tuple[str, bytes]]:
    """(domain, configuration) of every registration file of the table."""
    storage = snapshot.storage
    names = [f.name for f in storage.list_dir(REGISTRY_DIR) if f.name.endswith(".json")]
    out = []
    for name in names:
        try:
            out.append((DOMAIN_PREFIX + name[: -len(".json")], storage.read_bytes(f"{REGISTRY_DIR}/{name}")))
        except FileNotFoundError:
            continue  # unregistered meanwhile
    return out


def register_exporter_file(
    snapshot: Snapshot, *, sink: str, name: str, format: str, version: int,  # noqa: A002 - the option's name
) -> str:
    """Record (or move) the exporter's watermark in a registration file of the table (no commit).

    For tables without the ``domainMetadata`` feature: the file lives under :data:`REGISTRY_DIR`, which
    VACUUM never lists, and vacuum honours it exactly as a domain-metadata registration.

    Returns:
        The file's path, relative to the table root.
    """
    path = _registration_file(exporter_domain(sink, name))
    configuration = {"name": name, "sink": sink, "format": format, "version": version,
                     "updatedAt": int(time.time() * 1000)}
    snapshot.storage.write(path, orjson.dumps(configuration))
    return path


def _drop_registration_file(snapshot: Snapshot, domain: str) -> bool:
    path = _registration_file(domain)
    if not snapshot.storage.exists(path):
        return False
    snapshot.storage.delete(path)
    return True


def register_exporter(
    snapshot: Snapshot, *, sink: str, name: str, format: str, version: int,  # noqa: A002 - the option's name
    upgrade_protocol: bool = False,
) -> int:
    """Record (or move) the exporter's watermark in the table: one commit with a domainMetadata action.

    Args:
        snapshot: the table (its newest version is used).
        sink, name, format: the export.
        version: the last source version the export has landed.
        upgrade_protocol: add the ``domainMetadata`` writer feature when the table lacks it.

    Returns:
        The committed version.

    Raises:
        ProtocolError: the table lacks the ``domainMetadata`` feature and ``upgrade_protocol`` is False.
        ConcurrentTransactionException: another run registered the same exporter at the same time.
    """
    latest = snapshot.advance()
    txn = Transaction(latest, operation=OPERATION, operation_parameters={"name": name, "sink": sink})
    if not supports_domain_metadata(latest):
        if not upgrade_protocol:
            raise ProtocolError(
                f"Cannot register exporter {name!r} in table {latest.location!r}: the table does not support "
                "domain metadata. Help: ALTER TABLE ... SET TBLPROPERTIES ('delta.feature.domainMetadata' = "
                "'supported') (writers without that feature, such as delta-rs 1.6, can then no longer write it)."
            )
        txn.update_protocol(minimal_protocol({"domainMetadata"}, base=latest.protocol))
    configuration = {"name": name, "sink": sink, "format": format, "version": version,
                     "updatedAt": int(time.time() * 1000)}
    domain = exporter_domain(sink, name)
    txn.set_domain_metadata(domain, orjson.dumps(configuration).decode())
    version_committed = txn.commit()
    _drop_registration_file(latest, domain)  # the table now has domain metadata: one registration
    return version_committed


def unregister_exporter(snapshot: Snapshot, *, sink: str, name: str) -> int | None:
    """Remove the exporter's registration (a retired export stops protecting files); None when absent.

    Returns:
        The committed version when a domain-metadata registration was removed, else None (a
        registration file is deleted without a commit).
    """
    latest = snapshot.advance()
    domain = exporter_domain(sink, name)
    _drop_registration_file(latest, domain)
    if domain not in latest.domain_metadata:
        return None
    txn = Transaction(latest, operation=OPERATION, operation_parameters={"name": name, "sink": sink})
    txn.set_domain_metadata(domain, latest.domain_metadata[domain].configuration, removed=True)
    try:
        return txn.commit()
    except ConcurrentTransactionException:
        return None


@dataclass(frozen=True)
class ExporterNeeds:
    """The files one exporter still needs: every file the versions after its watermark read.

    Attributes:
        exporter: the registered exporter.
        paths: the files, relative to the table root (decoded), or absolute where the log names them so.
        missing_commits: versions after the watermark whose commit file is gone (the export is broken).
    """

    exporter: RegisteredExporter
    paths: frozenset[str]
    missing_commits: tuple[int, ...] = ()


def _normalise(root: str, path: str) -> str:
    path = unquote(path) if "%" in path else path
    if path.startswith("file:"):
        path = path[len("file:"):].lstrip("/")
        path = "/" + path
    prefix = root.rstrip("/") + "/"
    return path[len(prefix):] if path.startswith(prefix) else path


def _paths_of(root: str, read: ChangeFileRead) -> list[str]:
    out = [_normalise(root, read.path)]
    for action in (read.action, read.removed):
        dv = (action or {}).get("deletionVector")
        if dv and dv.get("storageType") != "i":
            out.append(_normalise(root, DeletionVectorDescriptor.from_dict(dv).absolute_path(root)))
    return out


def files_needed_by_exporters(snapshot: Snapshot) -> list[ExporterNeeds]:
    """Per registered exporter, the files the versions after its watermark up to ``snapshot.version`` read.

    Example:
        >>> needs = files_needed_by_exporters(DeltaTable("/data/events").snapshot)  # doctest: +SKIP
        >>> sorted(needs[0].paths)[:1]                                             # doctest: +SKIP
        ['_change_data/cdc-00000-....c000.snappy.parquet']
    """
    exporters = registered_exporters(snapshot)
    if not exporters:
        return []
    lowest = max(0, exporters[0].version + 1)
    versions = list(range(lowest, snapshot.version + 1))

    def reads_of(v: int) -> list[ChangeFileRead] | None:
        try:
            return change_file_reads(load_change_commit(snapshot.storage, v), 0)
        except LogCorruptedError:
            if snapshot.storage.exists(commit_path(v)):
                raise
            return None

    by_version = dict(zip(versions, run_parallel(reads_of, versions), strict=True))
    root = snapshot.storage.root
    out = []
    for exporter in exporters:
        paths: set[str] = set()
        missing = []
        for v in range(max(0, exporter.version + 1), snapshot.version + 1):
            reads = by_version[v]
            if reads is None:
                missing.append(v)
                continue
            for read in reads:
                paths.update(_paths_of(root, read))
        out.append(ExporterNeeds(exporter, frozenset(paths), tuple(missing)))
    return out


def refuse_if_exporters_need(snapshot: Snapshot, paths: Iterable[str]) -> None:
    """Raise when a registered exporter still needs one of ``paths`` (files an operation would delete).

    ``paths`` are relative to the table root (as VACUUM lists them) or absolute.

    Raises:
        ExportWatermarkError: naming the exporter with the lowest watermark that needs a file, its
            version and the file. ``vacuum(respect_exports=False)`` overrides.
    """
    root = snapshot.storage.root
    wanted = {_normalise(root, p): p for p in paths}
    for needs in files_needed_by_exporters(snapshot):
        hit = sorted(needs.paths & wanted.keys())
        if hit:
            e = needs.exporter
            raise ExportWatermarkError(
                f"Cannot delete {len(hit)} file(s) of table {snapshot.location!r}: change data exporter "
                f"{e.describe()} still needs them to export versions {e.version + 1} to {snapshot.version}, "
                f"e.g. {hit[0]!r}. Help: run that export first, unregister it if it is retired, or pass "
                "respect_exports=False to delete them anyway (the export then fails on them).",
                exporter=e.name, version=e.version, path=hit[0],
            )

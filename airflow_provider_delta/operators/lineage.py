"""OpenLineage for the Delta operators: one mixin, one line per operator.

An operator that inherits :class:`DeltaLineageMixin` and records what it read and wrote (a list of
:class:`LineageTable` in ``self.delta_lineage``, usually set in ``execute``) gets
``get_openlineage_facets_on_complete``, which Airflow's OpenLineage provider calls after the task:

- a dataset per table: namespace and name from its location (``file`` + the absolute path for local
  tables; ``s3://bucket`` + the key, ``gs://``, ``abfss://`` ... for object stores);
- on Delta tables, the version read or written (``version`` facet) and the schema at that version;
- row and byte counts from the commit metrics (``outputStatistics`` / ``inputStatistics``).

The OpenLineage imports happen inside the method (install ``airflow-provider-delta[openlineage]``):
without the provider the method is never called.

Example:
    >>> class DeltaVacuumOperator(DeltaLineageMixin, DeltaSparkJobOperator): ...  # doctest: +SKIP
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["DeltaLineageMixin", "LineageTable", "dataset_naming"]


@dataclass(frozen=True)
class LineageTable:
    """One dataset an operator read (``role="input"``) or wrote (``role="output"``).

    Attributes:
        location: the table's (or directory's) path or URI.
        role: ``input`` or ``output``.
        version: the Delta version read or written (None for a non-Delta dataset).
        rows: rows read or written (from the commit metrics), when known.
        size: bytes read or written, when known.
        files: files read or written, when known.
        is_delta: whether the location is a Delta table (its schema is read at ``version``).
        storage_options: object-store options to read the schema with.
    """

    location: str
    role: Literal["input", "output"]
    version: int | None = None
    rows: int | None = None
    size: int | None = None
    files: int | None = None
    is_delta: bool = True
    storage_options: Mapping[str, str] = field(default_factory=dict)


def dataset_naming(location: str) -> tuple[str, str]:
    """OpenLineage's (namespace, name) of a location (its naming conventions for file systems).

    Example:
        >>> dataset_naming("s3a://bucket/lake/events")
        ('s3://bucket', 'lake/events')
        >>> dataset_naming("/data/events")
        ('file', '/data/events')
    """
    parsed = urlparse(location)
    scheme = {"s3a": "s3", "s3n": "s3"}.get(parsed.scheme, parsed.scheme)
    if scheme in ("", "file") or len(scheme) == 1:
        path = parsed.path if parsed.scheme == "file" else location
        return "file", os.path.abspath(path)
    return f"{scheme}://{parsed.netloc}", parsed.path.lstrip("/")


def _schema_facet(table: LineageTable) -> Any:
    from openlineage.client.generated.schema_dataset import SchemaDatasetFacet, SchemaDatasetFacetFields

    from airflow_provider_delta.core import DeltaError, DeltaTable

    try:
        schema = DeltaTable(table.location, version=table.version, storage_options=table.storage_options).schema
    except DeltaError:
        return None
    return SchemaDatasetFacet(fields=[
        SchemaDatasetFacetFields(name=f.name, type=f.type.simple_string(), description=f.metadata.get("comment"))
        for f in schema.fields
    ])


def _dataset(table: LineageTable) -> Any:
    from openlineage.client.event_v2 import InputDataset, OutputDataset
    from openlineage.client.generated.dataset_version_dataset import DatasetVersionDatasetFacet
    from openlineage.client.generated.input_statistics_input_dataset import InputStatisticsInputDatasetFacet
    from openlineage.client.generated.output_statistics_output_dataset import (
        OutputStatisticsOutputDatasetFacet,
    )

    namespace, name = dataset_naming(table.location)
    facets: dict[str, Any] = {}
    if table.is_delta and table.version is not None:
        facets["version"] = DatasetVersionDatasetFacet(datasetVersion=str(table.version))
        schema = _schema_facet(table)
        if schema is not None:
            facets["schema"] = schema
    counts: dict[str, Any] = {"rowCount": table.rows, "size": table.size, "fileCount": table.files}
    has_stats = any(v is not None for v in counts.values())
    if table.role == "input":
        stats: dict[str, Any] = {"inputStatistics": InputStatisticsInputDatasetFacet(**counts)} if has_stats else {}
        return InputDataset(namespace=namespace, name=name, facets=facets, inputFacets=stats)
    out_stats: dict[str, Any] = {"outputStatistics": OutputStatisticsOutputDatasetFacet(**counts)} if has_stats else {}
    return OutputDataset(namespace=namespace, name=name, facets=facets, outputFacets=out_stats)


class DeltaLineageMixin:
    """Adds ``get_openlineage_facets_on_complete`` to an operator that fills ``self.delta_lineage``."""

    delta_lineage: list[LineageTable] | None = None

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The datasets this task read and wrote (called by Airflow's OpenLineage provider after the task)."""
        from airflow.providers.openlineage.extractors import OperatorLineage

        del task_instance
        tables = self.delta_lineage or []
        return OperatorLineage(
            inputs=[_dataset(t) for t in tables if t.role == "input"],
            outputs=[_dataset(t) for t in tables if t.role == "output"],
        )


def job_lineage(job: str, location: str, result: Mapping[str, Any], options: Mapping[str, Any],
                storage_options: Mapping[str, str], *, is_write_job: bool) -> list[LineageTable]:
    """What a Delta job read and wrote, from its result: the table, and a ``source`` it read.

    A write job (``write``, MERGE) writes the table at the committed version (rows and bytes from
    ``numOutputRows``/``numOutputBytes``) and reads its ``source`` option when it has one (MERGE's
    source too); other jobs (``checkpoint``) read the table at the version they processed.
    """
    del job
    metrics = result.get("metrics") or {}
    version = result.get("version")
    tables: list[LineageTable] = []
    source = options.get("source")
    if isinstance(source, dict) and isinstance(source.get("path"), str):
        tables.append(LineageTable(source["path"], "input", is_delta=source.get("format") == "delta"))
    if is_write_job and result.get("committed"):
        tables.append(LineageTable(location, "output", version, _int(metrics.get("numOutputRows")),
                                   _int(metrics.get("numOutputBytes")), _int(metrics.get("numFiles")),
                                   storage_options=storage_options))
    else:
        tables.append(LineageTable(location, "input", version, storage_options=storage_options))
    return tables


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None

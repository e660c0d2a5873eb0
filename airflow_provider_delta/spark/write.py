"""Write a Spark DataFrame into a Delta table: files written by Spark executors, one commit by the driver.

:func:`write_delta` is core's WRITE command (:func:`airflow_provider_delta.core.commands.write.write`)
with the :class:`~airflow_provider_delta.spark.executor.SparkExecutor`: append, overwrite, Delta's
replaceWhere (``predicate``), ``mergeSchema``/``overwriteSchema`` (``schema_mode``), idempotent writes
(``app_id``/``app_version``, Delta's ``txn``), change data on a change-data-feed table, conflict
checks and the commit are the engine's; the rows never pass through the driver. A table that does
not exist yet is created by the same commit (version 0 holds the table and the rows, as Delta on
Spark does), from the DataFrame's schema (every column nullable), ``partition_by`` and ``properties``.

Example:
    >>> write_delta(spark.range(1000).withColumn("day", F.lit("2024-01-01")), "/data/t",
    ...             partition_by=["day"])  # doctest: +SKIP
    1
    >>> write_delta(fixes, "/data/t", mode="overwrite", predicate="day = '2024-01-01'")  # doctest: +SKIP
    2
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from airflow_provider_delta.core.commands.create import table_before_creation
from airflow_provider_delta.core.commands.write import WriteResult, write
from airflow_provider_delta.core.schema.evolution import as_nullable
from airflow_provider_delta.core.schema.types import StructType
from airflow_provider_delta.core.storage import storage_for
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import (
    DeltaError,
    MetadataChangedException,
    ProtocolChangedException,
    TableNotFoundError,
)
from airflow_provider_delta.spark.executor import SparkExecutor
from airflow_provider_delta.spark.types import from_spark_schema

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pyspark.sql import DataFrame

    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["write_delta"]


def write_delta(
    df: DataFrame,
    location: str,
    *,
    mode: Literal["append", "overwrite"] = "append",
    predicate: Any = None,
    schema_mode: Literal["merge", "overwrite"] | None = None,
    partition_by: Sequence[str] | None = None,
    properties: Mapping[str, Any] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> int:
    """Write the rows of ``df`` into the Delta table at ``location`` with Spark executors.

    Args:
        df: the rows; columns are matched to the table's by name (ignoring case) and cast safely.
        location: the table's path or URI; the table is created when there is none.
        mode: ``append`` the rows, or ``overwrite`` the table's rows with them.
        predicate: overwrite only: Delta's replaceWhere, a SQL predicate every new row must satisfy;
            only the rows matching it are replaced.
        schema_mode: ``merge`` (mergeSchema: add the DataFrame's new columns) or, for an overwrite
            without predicate, ``overwrite`` (overwriteSchema: replace schema and partitioning).
        partition_by: the partition columns of a new table (or, with ``schema_mode="overwrite"``, the
            table's new partitioning); for an existing table it must match its partitioning.
        properties: table properties (``delta.enableChangeDataFeed``, ...) of a new table; for an
            existing table they must equal its own (change them with ``DeltaTable.alter``).
        app_id, app_version: an idempotent write (Delta's ``txn``): when the table already records
            ``app_id`` at ``app_version`` or later, nothing is written.
        storage_options: options for object stores (as for ``DeltaTable``).

    Returns:
        The version committed; when ``app_id`` had already written ``app_version``, the table's
        current version (nothing committed).

    Raises:
        SchemaMismatchError: the DataFrame does not fit the table (without ``schema_mode``), a row
            breaks a CHECK constraint or lies outside ``predicate``; nothing is committed.
        SchemaEvolutionError: the schema cannot evolve as asked.
        UnsupportedFeatureError: the table needs a writer feature this engine lacks.
        DeltaConcurrentModificationException: a concurrent commit conflicts with this write.

    Example:
        >>> write_delta(df, "/data/t", mode="append", app_id="dag.load", app_version=7)  # doctest: +SKIP
        5
    """
    def run(snapshot: Snapshot) -> WriteResult:
        return write(
            snapshot, df, mode=mode, predicate=predicate, schema_mode=schema_mode, partition_by=partition_by,
            app_id=app_id, app_version=app_version, executor=SparkExecutor(df.sparkSession),
        )

    snapshot = _open_or_plan(df, location, partition_by=partition_by, properties=properties,
                             storage_options=storage_options)
    try:
        result = run(snapshot)
    except (MetadataChangedException, ProtocolChangedException):
        if not snapshot.is_new_table:
            raise
        # Another writer created the table first: write into theirs (this attempt's files are orphans).
        snapshot = _open_or_plan(df, location, partition_by=partition_by, properties=properties,
                                 storage_options=storage_options)
        result = run(snapshot)
    return result.version if result.version is not None else snapshot.version


def _open_or_plan(
    df: DataFrame,
    location: str,
    *,
    partition_by: Sequence[str] | None,
    properties: Mapping[str, Any] | None,
    storage_options: Mapping[str, str] | None,
) -> Snapshot:
    """The table's newest snapshot; when there is no table, its state before creation from ``df``'s schema."""
    try:
        table = DeltaTable(location, storage_options=storage_options)
    except TableNotFoundError:
        schema = as_nullable(from_spark_schema(df.schema))
        assert isinstance(schema, StructType)
        return table_before_creation(storage_for(location, storage_options), location, schema,
                                     partition_by=partition_by or (), properties=properties)
    _check_properties(table, properties)
    return table.snapshot


def _check_properties(table: DeltaTable, properties: Mapping[str, Any] | None) -> None:
    configuration = table.configuration
    for key, value in (properties or {}).items():
        found = configuration.get(key)
        if found is None or str(found).lower() != str(value).lower():
            raise DeltaError(
                f"Cannot write to table {table.location!r} with property {key}={value!r}: the table exists "
                f"with {key}={found!r} (properties apply only when write_delta creates the table). Help: "
                "change table properties with DeltaTable.alter(\"ALTER TABLE ... SET TBLPROPERTIES ...\")"
            )

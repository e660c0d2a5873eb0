"""MERGE INTO a Delta table from a Spark DataFrame, executed by Spark: :func:`merge_delta` and :func:`merge_delta_sql`.

The statement is planned by the engine in the driver exactly as ``DeltaTable.merge`` plans it (clause
model, schema evolution with ``* EXCEPT``, file pruning from the ON condition and the source's key
range, the transaction's read set); the row work runs on Spark executors
(:mod:`airflow_provider_delta.spark.merge.execution`) and the driver commits one ``MERGE`` version with
Delta's metrics. Clause conditions and values are Spark SQL: anything Spark evaluates (``CASE``,
``current_date()``, string and date functions, ...) can be used.

Example:
    >>> metrics = (merge_delta(spark, "/data/customers", updates, "t.id = s.id", source_alias="s",
    ...                        target_alias="t", schema_evolution=True)        # doctest: +SKIP
    ...            .when_matched_update_all().when_not_matched_insert_all().execute())
    >>> merge_delta_sql(spark, "MERGE INTO delta.`/data/customers` t USING updates s ON t.id = s.id "
    ...                 "WHEN MATCHED THEN UPDATE SET *")                     # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.errors import AnalysisException

from airflow_provider_delta.core.commands.merge.builder import MergeBuilder
from airflow_provider_delta.core.commands.merge.sql import parse_merge_sql
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import MergeError
from airflow_provider_delta.spark.executor import SparkExecutor
from airflow_provider_delta.spark.merge.source import SparkMergeSource
from airflow_provider_delta.spark.read import read_delta

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from pyspark.sql import DataFrame, SparkSession

    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["merge_delta", "merge_delta_sql", "statement_source"]

_FILE_FORMATS = frozenset({"parquet", "csv", "json", "orc", "avro", "text"})


def _latest(location: str, storage_options: Mapping[str, str] | None) -> Callable[[], Snapshot]:
    return lambda: DeltaTable(location, storage_options=storage_options).snapshot


def merge_delta(
    spark: SparkSession,
    location: str,
    source: DataFrame,
    on: str,
    *,
    source_alias: str = "source",
    target_alias: str = "target",
    schema_evolution: bool = False,
    isolation_level: Any = None,
    storage_options: Mapping[str, str] | None = None,
) -> MergeBuilder:
    """Start a MERGE of the DataFrame ``source`` into the Delta table at ``location``, run by Spark.

    Returns the same builder as ``DeltaTable.merge``: add clauses with ``when_matched_update[_all]``,
    ``when_matched_delete``, ``when_not_matched_insert[_all]``, ``when_not_matched_by_source_update``
    and ``..._delete`` (conditions and values in Spark SQL over the aliases), then ``execute()``.

    Args:
        spark: the SparkSession whose executors do the work.
        location: the target table's path or URI.
        source: the source rows.
        on: the join condition, e.g. ``"t.id = s.id"``.
        source_alias: how conditions and values name the source.
        target_alias: how they name the target.
        schema_evolution: ``MERGE WITH SCHEMA EVOLUTION``: add the source's new columns.
        isolation_level: ``Serializable`` or ``WriteSerializable`` (the table's when None).
        storage_options: options for object stores (as for ``DeltaTable``).

    Returns:
        The builder; its ``execute()`` returns Delta's merge metrics plus ``version`` (None when
        nothing changed).

    Raises (from ``execute()``):
        MergeError: an invalid clause, unknown column, type conflict (before anything is written).
        MergeMultipleMatchError: several source rows matched one target row to update or delete;
            nothing is committed.
        DeltaConcurrentModificationException: a concurrent commit conflicts.

    Example:
        >>> (merge_delta(spark, "/data/t", df, "target.id = source.id")             # doctest: +SKIP
        ...     .when_matched_update(set={"n": "CASE WHEN source.n > target.n THEN source.n ELSE target.n END"})
        ...     .when_not_matched_insert_all().execute())["numTargetRowsInserted"]
        3
    """
    return MergeBuilder(
        _latest(location, storage_options),
        SparkMergeSource(source),
        on,
        source_alias=source_alias,
        target_alias=target_alias,
        schema_evolution=schema_evolution,
        isolation_level=isolation_level,
        executor=SparkExecutor(spark),
    )


def merge_delta_sql(
    spark: SparkSession,
    statement: str,
    *,
    sources: Mapping[str, DataFrame] | None = None,
    location: str | None = None,
    isolation_level: Any = None,
    storage_options: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``MERGE [WITH SCHEMA EVOLUTION] INTO <table> [t] USING <source> [s] ON ... WHEN ...`` on Spark.

    The target is ``location`` when given, else the name after ``INTO`` as ``delta.`<path>``` or a
    back-quoted path. The source after ``USING`` is a DataFrame of ``sources`` (by name), else
    ``delta.`<path>``` (read with ``read_delta``), ``parquet.`<path>``` (or ``csv``/``json``/``orc``/
    ``avro``/``text``: read by Spark), or a temporary view or table of the session.

    Returns:
        Delta's merge metrics plus ``version``.

    Raises:
        MergeError: the statement does not parse, or its target or source cannot be found (``clause``
            is ``INTO`` or ``USING``); plus everything ``merge_delta(...).execute()`` raises.

    Example:
        >>> updates.createOrReplaceTempView("updates")                                        # doctest: +SKIP
        >>> merge_delta_sql(spark, "MERGE WITH SCHEMA EVOLUTION INTO delta.`/data/t` t USING updates s "
        ...                 "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
        ... # doctest: +SKIP
    """
    parsed = parse_merge_sql(statement)
    target = location or _target_location(parsed.target_parts)
    source = statement_source(spark, parsed.source_parts, sources=sources, storage_options=storage_options)
    builder = MergeBuilder.from_spec(
        _latest(target, storage_options), SparkMergeSource(source), parsed.spec,
        isolation_level=isolation_level, executor=SparkExecutor(spark),
    )
    return builder.execute()


def _target_location(parts: Sequence[str]) -> str:
    if len(parts) == 2 and parts[0].lower() == "delta":
        return parts[1]
    if len(parts) == 1 and ("/" in parts[0] or ":" in parts[0]):
        return parts[0]
    raise MergeError(
        f"Cannot run MERGE: the target {'.'.join(parts)!r} is not a Delta table path. Help: write "
        "INTO delta.`/path/to/table`, or pass location=",
        clause="INTO",
    )


def statement_source(
    spark: SparkSession,
    parts: Sequence[str],
    *,
    sources: Mapping[str, DataFrame] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> DataFrame:
    """The DataFrame a MERGE statement's ``USING`` names (see :func:`merge_delta_sql`).

    Raises:
        MergeError: no such view, table or readable path (``clause`` is ``USING``).
    """
    name = ".".join(parts)
    found = [frame for key, frame in (sources or {}).items() if key.lower() == name.lower()]
    if found:
        return found[0]
    try:
        if len(parts) == 2 and parts[0].lower() == "delta":
            return read_delta(spark, parts[1], storage_options=storage_options)
        if len(parts) == 2 and parts[0].lower() in _FILE_FORMATS:
            return spark.read.format(parts[0].lower()).load(parts[1])
        return spark.table(name)
    except AnalysisException as err:
        raise MergeError(
            f"Cannot read the MERGE source {name!r}: {str(err).splitlines()[0]}. Help: register it with "
            "df.createOrReplaceTempView(...), pass sources={name: df}, or name a path as delta.`/path` or "
            "parquet.`/path`",
            clause="USING",
        ) from None

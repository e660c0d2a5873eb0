"""A Spark DataFrame as the source of a MERGE: its schema, its key summary, Spark's SQL typer.

Core plans a MERGE against a :class:`~airflow_provider_delta.core.executor.merge.source.MergeSource`.
:class:`SparkMergeSource` answers for a DataFrame without collecting it: the schema comes from the
DataFrame's (Spark types to Delta to Arrow), the summary of the join keys (row counts, min/max, the
distinct values of partition keys) from one aggregation job, and SQL that core's expressions do not
cover (``CASE``, the Spark function library) is typed by Spark's analyzer (:class:`SparkSqlTyper`), so
such clauses are planned like any other and evaluated by Spark.

Example:
    >>> source = SparkMergeSource(spark.range(10))                                 # doctest: +SKIP
    >>> source.summarize(None, [(("id",), False)]).keys[0].bounds.to_pylist()       # doctest: +SKIP
    [0, 9]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

from airflow_provider_delta.core.commands.merge.plan import quote_sql
from airflow_provider_delta.core.executor.merge.source import IN_LIST_LIMIT, KeySummary, SourceSummary
from airflow_provider_delta.core.expressions import to_sql
from airflow_provider_delta.core.schema.arrow import from_arrow_schema, to_arrow_schema, to_arrow_type
from airflow_provider_delta.exceptions import MergeError, SchemaError
from airflow_provider_delta.spark.types import from_spark_schema, from_spark_type, to_spark_schema

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pyspark.sql import Column, DataFrame, SparkSession

    from airflow_provider_delta.core.expressions import Expr

__all__ = ["SparkMergeSource", "SparkSqlTyper"]


class SparkMergeSource:
    """A DataFrame as a MERGE source (see the module docstring).

    Raises (on construction):
        MergeError: a column's Spark type has no Delta equivalent.
    """

    def __init__(self, frame: DataFrame) -> None:
        self.frame = frame
        try:
            self._schema = to_arrow_schema(from_spark_schema(frame.schema))
        except SchemaError as err:
            raise MergeError(f"Cannot merge from this DataFrame: {err}", clause="source") from err

    @property
    def schema(self) -> pa.Schema:
        """The DataFrame's columns as Delta's Arrow types."""
        return self._schema

    def summarize(self, filter: Expr | None, keys: Sequence[tuple[tuple[str, ...], bool]]) -> SourceSummary:  # noqa: A002
        """One Spark aggregation: row counts, and per key its non-null count, min, max (and distinct values)."""
        where = F.expr(to_sql(filter)) if filter is not None else None
        matchable = F.count(F.when(where, F.lit(1)) if where is not None else F.lit(1))
        aggs: list[Column] = [F.count(F.lit(1)).alias("n"), matchable.alias("m")]
        for i, (path, distinct) in enumerate(keys):
            value = F.col(quote_sql(*path))
            if where is not None:
                value = F.when(where, value)
            aggs += [F.count(value).alias(f"c{i}"), F.min(value).alias(f"lo{i}"), F.max(value).alias(f"hi{i}")]
            if distinct:
                aggs.append(F.array_sort(F.collect_set(value)).alias(f"set{i}"))
        row = self.frame.agg(*aggs).toArrow()
        summaries = []
        for i, (_path, distinct) in enumerate(keys):
            count = int(row.column(f"c{i}")[0].as_py())
            if not count:
                summaries.append(KeySummary(0))
                continue
            bounds = pa.concat_arrays([row.column(f"lo{i}").chunk(0), row.column(f"hi{i}").chunk(0)])
            values = None
            if distinct:
                found = row.column(f"set{i}").chunk(0)[0].values
                values = found if len(found) <= IN_LIST_LIMIT else None
            summaries.append(KeySummary(count, bounds, values))
        return SourceSummary(int(row.column("n")[0].as_py()), int(row.column("m")[0].as_py()), tuple(summaries))

    def sql_typer(self) -> SparkSqlTyper:
        """Spark's analyzer types SQL outside core's expressions."""
        return SparkSqlTyper(self.frame.sparkSession)


class SparkSqlTyper:
    """Types a clause's SQL with Spark's analyzer over empty DataFrames of the clause's aliases."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._scopes: dict[tuple[tuple[str, pa.Schema], ...], DataFrame] = {}

    def type_of(self, sql: str, scope: Mapping[str, pa.Schema], *, where: str) -> pa.DataType:
        """The Arrow type Spark gives ``sql`` (nothing runs: analysis only).

        Raises:
            MergeError: Spark cannot parse or resolve it (naming ``where`` and the unresolved column).
        """
        frame = self._scope(scope)
        try:
            spark_type = frame.selectExpr(sql).schema.fields[0].dataType
        except AnalysisException as err:  # ParseException is an AnalysisException
            column = (err.getMessageParameters() or {}).get("objectName")
            message = str(err).splitlines()[0]
            raise MergeError(
                f"Cannot resolve {sql!r} in the {where}: {message}",
                clause=where,
                column=column.replace("`", "") if column else None,
            ) from None
        try:
            return to_arrow_type(from_spark_type(spark_type))
        except SchemaError as err:
            raise MergeError(f"Cannot use {sql!r} in the {where}: {err}", clause=where) from err

    def _scope(self, scope: Mapping[str, pa.Schema]) -> DataFrame:
        key = tuple(scope.items())
        if key not in self._scopes:
            frames = [
                self.spark.createDataFrame([], to_spark_schema(from_arrow_schema(schema))).alias(alias)
                for alias, schema in scope.items()
            ]
            frame = frames[0]
            for other in frames[1:]:
                frame = frame.crossJoin(other)
            self._scopes[key] = frame
        return self._scopes[key]

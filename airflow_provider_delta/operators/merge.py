"""Operators for MERGE WITH SCHEMA EVOLUTION and schema changes, run as Spark jobs.

- :class:`DeltaMergeWithEvolutionOperator` submits the ``merge`` job (``jobs/merge.py``): the
  MERGE is planned by the engine in the Spark driver and executed on the Spark executors
  (``merge_delta``), one commit.
- :class:`DeltaSchemaEvolveOperator` submits the ``schema_evolve`` job: DDL statements or builder
  steps applied as one metadata commit.

Both are thin layers over :class:`~airflow_provider_delta.operators.delta.DeltaSparkJobOperator`: the
same connections, Spark conf, conflict policy, idempotency key (an Airflow retry after the commit
landed writes nothing) and job protocol; they only turn their arguments into the job's options.
This module imports no pyspark.
"""

from __future__ import annotations

from typing import Any, ClassVar

from airflow_provider_delta.operators.delta import DeltaSparkJobOperator

__all__ = ["DeltaMergeWithEvolutionOperator", "DeltaSchemaEvolveOperator"]

# The base operator's templated fields but ``job_options``: these operators render their own arguments.
_BASE_FIELDS = tuple(f for f in DeltaSparkJobOperator.template_fields if f != "job_options")


def _drop_none(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if v is not None}


class DeltaMergeWithEvolutionOperator(DeltaSparkJobOperator):
    """MERGE a source into a Delta table on Spark, adding the source's new columns (schema evolution).

    Args:
        table: the target: a full path/URI or a bare name under the ``delta`` connection (templated).
        source: the rows to merge (templated): ``{"path": ..., "format": "parquet", "options": {...}}``
            read by Spark, ``{"table": <delta location>, "version": n}`` read with ``read_delta``, or
            ``{"sql": "SELECT ..."}``; with ``merge_sql`` it may be left out when the statement's
            ``USING`` names a view, table or ``delta.`/path``` itself.
        on: the join condition, e.g. ``"target.id = source.id"`` (templated); or
        merge_sql: one ``MERGE [WITH SCHEMA EVOLUTION] INTO ... USING ... ON ... WHEN ...`` statement
            (templated); the table after ``INTO`` is ``table``.
        when_matched, when_not_matched, when_not_matched_by_source: clauses in order (templated), each
            ``{"action": "update", "set": {...}, "condition": ...}``, ``{"action": "update_all",
            "except": [...]}``, ``{"action": "delete"}``, ``{"action": "insert", "values": {...}}`` or
            ``{"action": "insert_all", "except": [...]}``; conditions and values are Spark SQL.
        schema_evolution: add new source columns to the table (default True).
        source_alias, target_alias: the names conditions use (default ``source`` / ``target``).
        isolation_level: ``Serializable`` or ``WriteSerializable`` (default: the table's).
        **kwargs: as :class:`DeltaSparkJobOperator` (``conflict_policy``, ``spark_conn_id``,
            ``spark_conf``, ``idempotent``, ``retries``, ...).

    Returns (XCom ``return_value``): the job result: ``version``, ``committed`` and ``metrics`` (Delta's
    merge metrics: ``numTargetRowsInserted``, ``numTargetRowsUpdated``, ``numTargetRowsDeleted``, ...).

    ``source``, ``on``, ``merge_sql``, the clauses and the aliases are templated (every path, condition
    and the SQL may use Jinja); rendered, they become the job's options. A ``source`` table is declared
    as the task's inlet, the target as its outlet.

    Raises:
        JobSpecError (a ValueError): at DAG parse time, when neither or both of ``on`` and ``merge_sql``
            are given, ``on`` comes without a clause, the source has no or two kinds, or a clause
            object is malformed.

    Example:
        >>> DeltaMergeWithEvolutionOperator(
        ...     task_id="upsert", table="/data/customers",
        ...     source={"path": "/landing/{{ ds }}/customers.parquet", "format": "parquet"},
        ...     on="target.id = source.id",
        ...     when_matched=[{"action": "update_all", "except": ["op"]}],
        ...     when_not_matched=[{"action": "insert_all", "except": ["op"]}],
        ... )  # doctest: +SKIP
    """

    template_fields: tuple[str, ...] = (
        *_BASE_FIELDS, "source", "on", "merge_sql", "when_matched", "when_not_matched",
        "when_not_matched_by_source", "source_alias", "target_alias",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {
        **DeltaSparkJobOperator.template_fields_renderers, "source": "json", "on": "sql", "merge_sql": "sql",
        "when_matched": "json", "when_not_matched": "json", "when_not_matched_by_source": "json",
    }
    ui_color = "#7fd3e6"

    def __init__(
        self,
        *,
        table: str,
        source: dict[str, Any] | None = None,
        on: str | None = None,
        merge_sql: str | None = None,
        when_matched: list[dict[str, Any]] | None = None,
        when_not_matched: list[dict[str, Any]] | None = None,
        when_not_matched_by_source: list[dict[str, Any]] | None = None,
        schema_evolution: bool = True,
        source_alias: str = "source",
        target_alias: str = "target",
        isolation_level: str | None = None,
        **kwargs: Any,
    ) -> None:
        inlets = list(kwargs.pop("inlet_tables", ()))
        if isinstance(source, dict) and isinstance(source.get("table"), str):
            inlets.append(source["table"])  # the source table is an inlet (data-aware scheduling, lineage)
        options = _merge_options(
            source=source, on=on, merge_sql=merge_sql, when_matched=when_matched or [],
            when_not_matched=when_not_matched or [], when_not_matched_by_source=when_not_matched_by_source or [],
            schema_evolution=schema_evolution, source_alias=source_alias, target_alias=target_alias,
            isolation_level=isolation_level,
        )
        # The job's declaration checks the options now (DAG parse) and again after rendering.
        super().__init__(job="merge", table=table, job_options=options, inlet_tables=inlets, **kwargs)
        self.source = source
        self.on = on
        self.merge_sql = merge_sql
        self.when_matched = when_matched or []
        self.when_not_matched = when_not_matched or []
        self.when_not_matched_by_source = when_not_matched_by_source or []
        self.schema_evolution = schema_evolution
        self.source_alias = source_alias
        self.target_alias = target_alias
        self.isolation_level = isolation_level

    def options_from_arguments(self) -> dict[str, Any]:
        """The ``merge`` job's options, from the rendered arguments."""
        return _merge_options(
            source=self.source, on=self.on, merge_sql=self.merge_sql, when_matched=self.when_matched,
            when_not_matched=self.when_not_matched, when_not_matched_by_source=self.when_not_matched_by_source,
            schema_evolution=self.schema_evolution, source_alias=self.source_alias,
            target_alias=self.target_alias, isolation_level=self.isolation_level,
        )


def _merge_options(
    *, source: dict[str, Any] | None, on: str | None, merge_sql: str | None, when_matched: list[dict[str, Any]],
    when_not_matched: list[dict[str, Any]], when_not_matched_by_source: list[dict[str, Any]],
    schema_evolution: bool, source_alias: str, target_alias: str, isolation_level: str | None,
) -> dict[str, Any]:
    return _drop_none({
        "source": source,
        "on": on,
        "merge_sql": merge_sql,
        "when_matched": when_matched or None,
        "when_not_matched": when_not_matched or None,
        "when_not_matched_by_source": when_not_matched_by_source or None,
        "schema_evolution": schema_evolution,
        "source_alias": source_alias if merge_sql is None else None,
        "target_alias": target_alias if merge_sql is None else None,
        "isolation_level": isolation_level,
    })


class DeltaSchemaEvolveOperator(DeltaSparkJobOperator):
    """Apply Delta DDL statements (or builder steps) to a table as ONE metadata commit.

    Args:
        table: a full path/URI or a bare name under the ``delta`` connection (templated).
        statements: ``ALTER TABLE`` statements as in Delta's docs (templated): ``ADD COLUMNS (...
            AFTER x)``, ``ALTER COLUMN c FIRST``, ``RENAME COLUMN a TO b``, ``DROP COLUMNS (...)``,
            ``REPLACE COLUMNS (...)``, ``SET TBLPROPERTIES (...)``; the ``ALTER TABLE <name>`` prefix
            is optional. Or
        changes: builder steps (templated), e.g. ``{"op": "add_column", "path": "info.b",
            "type": "STRING", "after": "a"}``, ``{"op": "rename_column", "path": "a", "new_name": "b"}``
            (see ``jobs/schema_evolve.py`` for every step).
        isolation_level: ``Serializable`` or ``WriteSerializable`` (default: the table's).
        **kwargs: as :class:`DeltaSparkJobOperator`.

    The commit records the task instance's idempotency key (Delta's ``txn``): an Airflow retry after
    the commit landed finds it and does nothing (``committed: false``, metric ``alreadyCommitted``)
    instead of failing on "column already exists". A statement that does not parse, names a missing
    column or adds a field inside an array fails before anything is written, naming the statement.

    Returns (XCom ``return_value``): the job result; ``metrics`` holds ``numOperations``,
    ``columnsBefore``, ``columns`` and ``properties``.

    Example:
        >>> DeltaSchemaEvolveOperator(task_id="evolve", table="/data/customers", statements=[
        ...     "ALTER TABLE customers ADD COLUMNS (tier STRING COMMENT 'loyalty tier' AFTER name)",
        ... ])  # doctest: +SKIP
    """

    template_fields: tuple[str, ...] = (*_BASE_FIELDS, "statements", "changes")
    template_fields_renderers: ClassVar[dict[str, str]] = {
        **DeltaSparkJobOperator.template_fields_renderers, "statements": "json", "changes": "json",
    }
    ui_color = "#b3e0ea"

    def __init__(
        self,
        *,
        table: str,
        statements: list[str] | None = None,
        changes: list[dict[str, Any]] | None = None,
        isolation_level: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(job="schema_evolve", table=table,
                         job_options=_schema_options(statements, changes, isolation_level), **kwargs)
        self.statements = statements or []
        self.changes = changes or []
        self.isolation_level = isolation_level

    def options_from_arguments(self) -> dict[str, Any]:
        """The ``schema_evolve`` job's options, from the rendered arguments."""
        return _schema_options(self.statements, self.changes, self.isolation_level)


def _schema_options(
    statements: list[str] | None, changes: list[dict[str, Any]] | None, isolation_level: str | None
) -> dict[str, Any]:
    return _drop_none({
        "statements": statements or None, "changes": changes or None, "isolation_level": isolation_level,
    })

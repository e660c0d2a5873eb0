"""Operators for MERGE WITH SCHEMA EVOLUTION and schema changes, run as jobs.

- :class:`DeltaMergeWithEvolutionOperator` submits the ``merge`` job (``jobs/merge.py``): the
  MERGE is planned by the engine in the Spark driver and executed on the Spark executors
  (``merge_delta``), one commit.
- :class:`DeltaSchemaEvolveOperator` submits the ``schema_evolve`` job: DDL statements or builder
  steps applied as one metadata commit.

Both are :class:`~airflow_provider_delta.operators.delta.DeltaSparkJobOperator` subclasses for one job:
the same connections, Spark conf, conflict policy, idempotency key (an Airflow retry after the commit
landed writes nothing) and job runner; their arguments are the job's declared options (templated,
checked when the DAG is parsed and again after rendering). This module imports no pyspark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_delta.operators.delta import DeltaSparkJobOperator

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["DeltaMergeWithEvolutionOperator", "DeltaSchemaEvolveOperator"]


class DeltaMergeWithEvolutionOperator(DeltaSparkJobOperator, job="merge"):
    """MERGE a source into a Delta table on Spark, adding the source's new columns (schema evolution).

    Args:
        table: the target: a full path/URI or a bare name under the ``delta`` connection (templated).
        inlet_tables: tables the task reads besides ``source``'s table (which is an inlet already).
        **kwargs: as :class:`DeltaSparkJobOperator` (``conflict_policy``, ``spark_conn_id``,
            ``spark_conf``, ``idempotent``, ``retries``, ...).

    Returns (XCom ``return_value``): the job result: ``version``, ``committed`` and ``metrics`` (Delta's
    merge metrics: ``numTargetRowsInserted``, ``numTargetRowsUpdated``, ``numTargetRowsDeleted``, ...).

    Every option is templated (every path, condition and the SQL may use Jinja) and shown rendered in
    the task's Rendered Template view. A ``source`` table is declared as the task's inlet, the target
    as its outlet.

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

    ui_color = "#7fd3e6"

    def __init__(self, *, inlet_tables: Sequence[str] = (), **kwargs: Any) -> None:
        inlets = list(inlet_tables)
        source = kwargs.get("source")
        if isinstance(source, dict) and isinstance(source.get("table"), str):
            inlets.append(source["table"])  # the source table is an inlet (data-aware scheduling, lineage)
        super().__init__(inlet_tables=inlets, **kwargs)


class DeltaSchemaEvolveOperator(DeltaSparkJobOperator, job="schema_evolve"):
    """Apply Delta DDL statements (or builder steps) to a table as ONE metadata commit.

    Args:
        table: a full path/URI or a bare name under the ``delta`` connection (templated).
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

    ui_color = "#b3e0ea"

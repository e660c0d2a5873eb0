"""What the ``vacuum``, ``optimize`` and ``reorg`` jobs share: the executor and two options.

Under spark-submit the data work runs on the Spark executors
(:class:`~airflow_provider_delta.spark.executor.SparkExecutor`: bins rewritten in tasks, long delete
lists deleted by tasks); the planning and the commit stay in the driver. With ``--engine local`` it
is the local executor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_delta.exceptions import JobSpecError
from airflow_provider_delta.jobs.definition import Option

if TYPE_CHECKING:
    from airflow_provider_delta.jobs.context import JobContext


def columns_option(ctx: JobContext, name: str) -> list[str] | None:
    """A list of column names (a list of strings, or one comma-separated string).

    Raises:
        JobSpecError: neither.
    """
    value: Any = ctx.option(name)
    if value is None:
        return None
    if isinstance(value, str):
        return [c.strip() for c in value.split(",") if c.strip()]
    if not all(isinstance(c, str) for c in value):
        raise JobSpecError(f"Cannot run job {ctx.spec.job!r}: option {name!r} must list column names, found {value!r}")
    return list(value)


def where_option(done: str) -> Option:
    """OPTIMIZE's and REORG's ``where``: a predicate on partition columns choosing what is ``done``."""
    return Option("where", str, None, f"A predicate on partition columns: only these partitions are {done}.",
                  aliases=("predicate", "partition_filter"), renderer="sql")

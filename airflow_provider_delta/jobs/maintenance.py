"""What the ``vacuum``, ``optimize`` and ``reorg`` jobs share: the executor and option checks.

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

#: The most paths a result lists (a dry run of a large VACUUM can name millions); ``numFiles`` has the total.
DEFAULT_MAX_FILES_IN_RESULT = 1000


def number_option(ctx: JobContext, name: str, *, minimum: float | None = None) -> float | None:
    """A numeric option (its type checked by the job's declaration), at least ``minimum`` when given.

    Raises:
        JobSpecError: the option is not a number or below the minimum.
    """
    value = ctx.option(name)  # a number, not a bool: checked by the job's declaration
    if value is not None and minimum is not None and value < minimum:
        raise JobSpecError(f"Cannot run job {ctx.spec.job!r}: option {name!r} must be >= {minimum}, found {value!r}")
    return value


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

"""The Spark data plane: Delta tables as Spark DataFrames, and the Spark executor of core's commands.

- :func:`read_delta` (``spark.read``), :func:`write_delta` (``spark.write``) and
  :class:`SparkExecutor` (``spark.executor``): the Spark data plane, where Spark executors read and
  write the files with the engine's own code and only actions reach the driver.
- :func:`merge_delta` and :func:`merge_delta_sql` (``spark.merge``): MERGE INTO from a DataFrame,
  planned by core, joined and written by Spark.

The jobs the operators run live in :mod:`airflow_provider_delta.jobs`, which uses this package on
engine ``spark``; this package never imports the jobs or airflow. It imports no pyspark at import
time either: :func:`read_delta`, :func:`write_delta` and :class:`SparkExecutor` load on first access.

Example:
    >>> from airflow_provider_delta.spark import read_delta, write_delta  # doctest: +SKIP
    >>> write_delta(read_delta(spark, "/data/raw").where("ok"), "/data/clean")  # doctest: +SKIP
    1
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_delta.spark.executor import SparkExecutor
    from airflow_provider_delta.spark.merge.command import merge_delta, merge_delta_sql
    from airflow_provider_delta.spark.read import read_delta
    from airflow_provider_delta.spark.write import write_delta

__all__ = [
    "SparkExecutor",
    "merge_delta",
    "merge_delta_sql",
    "read_delta",
    "write_delta",
]

# Public name -> module that defines it; imported on first access (PEP 562), because these modules
# import pyspark.
_LAZY = {
    "SparkExecutor": "airflow_provider_delta.spark.executor",
    "merge_delta": "airflow_provider_delta.spark.merge.command",
    "merge_delta_sql": "airflow_provider_delta.spark.merge.command",
    "read_delta": "airflow_provider_delta.spark.read",
    "write_delta": "airflow_provider_delta.spark.write",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


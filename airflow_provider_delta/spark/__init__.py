"""Delta tables as Spark DataFrames, and the PySpark jobs of airflow-provider-delta.

- :func:`read_delta` (``spark.read``), :func:`write_delta` (``spark.write``) and
  :class:`SparkExecutor` (``spark.executor``): the Spark data plane, where Spark executors read and
  write the files with the engine's own code and only actions reach the driver.
- :func:`merge_delta` and :func:`merge_delta_sql` (``spark.merge``): MERGE INTO from a DataFrame,
  planned by the engine, joined and written by Spark.
- :func:`job_script` and ``spark.jobs``: spark-submit entry points that the Airflow operators run.

This package imports neither pyspark nor airflow at import time, so the Airflow layer can locate a
job's file cheaply (:func:`job_script`) and read the job protocol (:mod:`.protocol`) without a JVM:
:func:`read_delta`, :func:`write_delta` and :class:`SparkExecutor` are loaded on first access.

Example:
    >>> from airflow_provider_delta.spark import read_delta, write_delta  # doctest: +SKIP
    >>> write_delta(read_delta(spark, "/data/raw").where("ok"), "/data/clean")  # doctest: +SKIP
    1
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_delta.spark.executor import SparkExecutor
    from airflow_provider_delta.spark.merge.command import merge_delta, merge_delta_sql
    from airflow_provider_delta.spark.read import read_delta
    from airflow_provider_delta.spark.write import write_delta

__all__ = [
    "RUNNER_MODULE",
    "SparkExecutor",
    "job_script",
    "merge_delta",
    "merge_delta_sql",
    "read_delta",
    "write_delta",
]

RUNNER_MODULE = "airflow_provider_delta.jobs.runner"

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


def job_script() -> str:
    """The file path of the spark-submit entry point that runs every job (``jobs/runner.py``).

    Example:
        >>> job_script().endswith("runner.py")
        True
    """
    spec = importlib.util.find_spec(RUNNER_MODULE)
    if spec is None or spec.origin is None:  # pragma: no cover - the package ships the file
        raise ImportError(
            f"Cannot locate the Spark job runner {RUNNER_MODULE!r}: reinstall airflow-provider-delta"
        )
    return spec.origin

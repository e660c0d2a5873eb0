"""Whether Spark's executors can run the data plane: their Python must import pyarrow and this package.

The data plane's tasks are Python functions of this package run by ``mapInArrow`` in the executors'
Python workers, so every worker needs pyarrow and the same airflow-provider-delta as the driver
(not delta-spark). When one lacks them, Spark reports a Python traceback deep inside a task failure;
this module turns that into an :class:`~airflow_provider_delta.exceptions.ExecutorEnvironmentError`
that says what is missing and how to install it:

- :func:`require_executor_environment`: once per SparkContext, before the first job of the data
  plane, one small task imports pyarrow and this package on an executor and reports their versions;
  a missing module or another version of this package is an error raised before anything is written.
- every data-plane job reports a missing module in a Python worker the same way
  (:func:`~airflow_provider_delta.spark.tasks.collect_records`): other executors may differ from the
  one that was probed.

Example:
    >>> require_executor_environment(spark)  # doctest: +SKIP
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING

import pyarrow as pa

import airflow_provider_delta
from airflow_provider_delta.exceptions import ExecutorEnvironmentError
from airflow_provider_delta.spark.tasks import (
    EXECUTOR_ENVIRONMENT_HELP,
    RECORD_SCHEMA,
    collect_records,
    map_in_arrow,
    records_batch,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyspark.sql import SparkSession

__all__ = ["require_executor_environment"]

_checked: set[str] = set()
_lock = threading.Lock()


def require_executor_environment(spark: SparkSession) -> None:
    """Check, once per SparkContext, that an executor's Python can run the data plane's tasks.

    Raises:
        ExecutorEnvironmentError: the executors' Python cannot import pyarrow or this package, or has
            another version of this package than the driver.
    """
    key = str(spark.sparkContext.applicationId)
    with _lock:
        if key in _checked:
            return
    [found] = collect_records(map_in_arrow(spark.range(0, 1, 1, numPartitions=1), _probe, RECORD_SCHEMA))
    ours = airflow_provider_delta.__version__
    if found["package"] != ours:
        raise ExecutorEnvironmentError(
            f"Spark executors run airflow-provider-delta {found['package']} (Python {found['python']}) but the "
            f"driver runs {ours}: the data plane's tasks must be the driver's code. {EXECUTOR_ENVIRONMENT_HELP}",
            module="airflow_provider_delta",
        )
    with _lock:
        _checked.add(key)


def _probe(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """In a task: the versions of this package, pyarrow and Python in the executor's interpreter."""
    for _ in batches:
        pass
    yield records_batch([{
        "package": airflow_provider_delta.__version__,
        "pyarrow": pa.__version__,
        "python": sys.version.split()[0],
    }])

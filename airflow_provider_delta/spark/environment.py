"""Whether Spark's executors can run the data plane: their Python must import pyarrow and this package.

The data plane's tasks are Python functions of this package run by ``mapInArrow`` in the executors'
Python workers, so every worker needs pyarrow and the same airflow-provider-delta as the driver
(not delta-spark). When one lacks them, Spark reports a Python traceback deep inside a task failure;
this module turns that into an :class:`~airflow_provider_delta.exceptions.ExecutorEnvironmentError`
that says what is missing and how to install it:

- :func:`require_executor_environment`: once per SparkContext, before the first job of the data
  plane, one small task imports pyarrow and this package on an executor and reports their versions;
  a missing module or another version of this package is an error raised before anything is written.
- :func:`raise_for_executor_environment`: in the driver, for a failed Spark job: raise the same error
  when the failure is a missing module in a Python worker (other executors may differ from the one
  that was probed).

Example:
    >>> require_executor_environment(spark)  # doctest: +SKIP
"""

from __future__ import annotations

import re
import sys
import threading
import warnings
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa

import airflow_provider_delta
from airflow_provider_delta.exceptions import ExecutorEnvironmentError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyspark.sql import SparkSession

__all__ = ["raise_for_executor_environment", "require_executor_environment"]

_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")
_HELP = (
    "Help: install the same airflow-provider-delta (and its pyarrow) into the Python that Spark's "
    "executors run on every worker (the interpreter named by spark.pyspark.python or PYSPARK_PYTHON; "
    "on a standalone cluster set in the workers' environment), or ship a packed virtualenv with "
    "spark.archives (e.g. venv-pack) and point spark.pyspark.python at it. delta-spark is not needed."
)

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
    found = _probe_executor(spark)
    ours = airflow_provider_delta.__version__
    if found["package"] != ours:
        raise ExecutorEnvironmentError(
            f"Spark executors run airflow-provider-delta {found['package']} (Python {found['python']}) but the "
            f"driver runs {ours}: the data plane's tasks must be the driver's code. {_HELP}",
            module="airflow_provider_delta",
        )
    with _lock:
        _checked.add(key)


def raise_for_executor_environment(err: BaseException) -> None:
    """Raise :class:`ExecutorEnvironmentError` when ``err`` is a Python worker missing a module.

    Returns normally for any other failure (the caller re-raises ``err``).
    """
    found = _MISSING_MODULE.findall(str(err))
    if not found:
        return
    module = found[-1]
    raise ExecutorEnvironmentError(
        f"A Spark executor's Python cannot import {module!r} (ModuleNotFoundError in a Python worker), so it "
        f"cannot run the Delta data plane's tasks; nothing was written to the table. {_HELP}",
        module=module,
    ) from err


def _probe(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """In a task: the versions of this package, pyarrow and Python in the executor's interpreter."""
    for _ in batches:
        pass
    report = {
        "package": airflow_provider_delta.__version__,
        "pyarrow": pa.__version__,
        "python": sys.version.split()[0],
    }
    yield pa.RecordBatch.from_arrays([pa.array([orjson.dumps(report).decode()], pa.string())], names=["record"])


def _probe_executor(spark: SparkSession) -> dict[str, Any]:
    frame = spark.range(0, 1, 1, numPartitions=1)
    try:
        with warnings.catch_warnings():  # pyspark's pandas-version warning (see tasks.py)
            warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas", FutureWarning)
            rows = frame.mapInArrow(_probe, "record string").collect()
    except Exception as err:
        raise_for_executor_environment(err)
        raise
    return dict(orjson.loads(rows[0][0]))

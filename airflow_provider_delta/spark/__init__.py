"""PySpark jobs of airflow-provider-delta: spark-submit entry points that run the Delta engine.

This package imports neither pyspark nor airflow at import time, so the Airflow layer can locate a
job's file cheaply (:func:`job_script`) and read the job protocol (:mod:`.protocol`) without a JVM.
Modules that need pyspark import it inside functions.
"""

from __future__ import annotations

import importlib.util

RUNNER_MODULE = "airflow_provider_delta.spark.jobs.run_job"


def job_script() -> str:
    """The file path of the spark-submit entry point that runs every job (``jobs/run_job.py``).

    Example:
        >>> job_script().endswith("run_job.py")
        True
    """
    spec = importlib.util.find_spec(RUNNER_MODULE)
    if spec is None or spec.origin is None:  # pragma: no cover - the package ships the file
        raise ImportError(
            f"Cannot locate the Spark job runner {RUNNER_MODULE!r}: reinstall airflow-provider-delta"
        )
    return spec.origin

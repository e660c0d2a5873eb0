"""The job registry: job name -> module holding ``run(ctx: JobContext) -> JobOutput``.

No pyspark import here: the Airflow layer reads :data:`JOBS` to validate a job name before submitting.
A new job (merge, vacuum, reorg, CDF export) is one module with a ``run`` function and one line here.
"""

from __future__ import annotations

JOBS: dict[str, str] = {
    "cdf_export": "airflow_provider_delta.jobs.cdf_export",
    "checkpoint": "airflow_provider_delta.jobs.checkpoint",
    "optimize": "airflow_provider_delta.jobs.optimize",
    "reorg": "airflow_provider_delta.jobs.reorg",
    "vacuum": "airflow_provider_delta.jobs.vacuum",
    "merge": "airflow_provider_delta.jobs.merge",
    "schema_evolve": "airflow_provider_delta.jobs.schema_evolve",
    "write": "airflow_provider_delta.jobs.write",
}
"""Job name -> module; the module's ``run(ctx)`` does the work (see :mod:`.context`)."""

"""The job registry: job name -> the module holding its declaration ``JOB`` and its ``run(ctx)``.

No pyspark import here (nor in any job module at import time): the Airflow layer reads :data:`JOBS`
and the declarations when a DAG is parsed. A new job is one module with ``JOB`` and ``run`` and one
line in :data:`JOBS`.

``python -m airflow_provider_delta.jobs.registry`` prints every job's options as Markdown (the
README's generated table).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import TYPE_CHECKING

from airflow_provider_delta.exceptions import JobSpecError
from airflow_provider_delta.jobs.definition import JobDefinition

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow_provider_delta.jobs.context import JobContext, JobOutput

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
"""Job name -> module; the module declares ``JOB`` and its ``run(ctx)`` does the work (see :mod:`.context`)."""

#: The module spark-submit runs (``python -m airflow_provider_delta.jobs`` runs it by hand).
RUNNER_MODULE = "airflow_provider_delta.jobs.__main__"


def _module(name: str) -> object:
    if name not in JOBS:
        raise JobSpecError(f"Cannot run job {name!r}: unknown job (known: {', '.join(sorted(JOBS))})")
    return importlib.import_module(JOBS[name])


def job_definition(name: str) -> JobDefinition:
    """The declaration of job ``name`` (imports its module, which imports no pyspark).

    Raises:
        JobSpecError: no such job, or its module declares no ``JOB``.
    """
    definition = getattr(_module(name), "JOB", None)
    if not isinstance(definition, JobDefinition):
        raise JobSpecError(f"Cannot run job {name!r}: module {JOBS[name]!r} declares no JOB = JobDefinition(...)")
    return definition


def job_function(name: str) -> Callable[[JobContext], JobOutput]:
    """The ``run`` function of job ``name``.

    Raises:
        JobSpecError: no such job.
    """
    run: Callable[[JobContext], JobOutput] = _module(name).run  # type: ignore[attr-defined]
    return run


def all_definitions() -> list[JobDefinition]:
    """Every registered job's declaration, by name."""
    return [job_definition(name) for name in sorted(JOBS)]


def jobs_markdown() -> str:
    """Every job's options as Markdown: the README's job table."""
    return "\n".join(d.markdown() for d in all_definitions())


def runner_script() -> str:
    """The file path of the spark-submit application that runs every job (``jobs/__main__.py``).

    Example:
        >>> runner_script().endswith("jobs/__main__.py")
        True
    """
    spec = importlib.util.find_spec(RUNNER_MODULE)
    if spec is None or spec.origin is None:  # pragma: no cover - the package ships the file
        raise ImportError(f"Cannot locate the job runner {RUNNER_MODULE!r}: reinstall airflow-provider-delta")
    return spec.origin


if __name__ == "__main__":
    sys.stdout.write(jobs_markdown())

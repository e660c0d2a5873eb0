"""``python -m airflow_provider_delta.jobs --spec spec.json --result result.json [--engine local]``.

The job runner's command line (:func:`airflow_provider_delta.jobs.runner.main`); spark-submit runs
this file (:func:`airflow_provider_delta.jobs.registry.runner_script`).
"""

from __future__ import annotations

import sys

from airflow_provider_delta.jobs.runner import main

if __name__ == "__main__":
    sys.exit(main())

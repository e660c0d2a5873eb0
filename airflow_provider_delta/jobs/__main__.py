"""``python -m airflow_provider_delta.jobs``: print every job's options as Markdown (the README's table)."""

from __future__ import annotations

import sys

from airflow_provider_delta.jobs.definition import jobs_markdown

if __name__ == "__main__":
    sys.stdout.write(jobs_markdown())

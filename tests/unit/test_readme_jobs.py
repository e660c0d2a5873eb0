"""The README's table of job options is the one the job declarations generate."""

from __future__ import annotations

import re
from pathlib import Path

from airflow_provider_delta.jobs.registry import jobs_markdown

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_lists_every_jobs_options_from_the_declarations() -> None:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- BEGIN job options[^>]*-->\n(.*?)\n<!-- END job options -->", text, re.S)
    assert match, "README.md lost the job options markers"
    assert match.group(1).strip() == jobs_markdown().strip(), (
        "README.md's job options are stale: paste the output of `python -m airflow_provider_delta.jobs.registry`"
    )

"""The pinned Spark and Airflow stack is what the environment really runs.

apache-airflow-providers-apache-spark depends on pyspark-client, which installs into the same
``pyspark/`` folder as pyspark and can silently replace pyspark's Python files with another
version's (PLATFORM-NOTES.md). requirements-overrides.txt keeps it out; these tests notice if it
comes back.
"""

from __future__ import annotations

import importlib.metadata as md
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _pinned(name: str) -> str:
    text = (ROOT / "pyproject.toml").read_text()
    match = re.search(rf'"{re.escape(name)}(?:\[[^\]]*\])?==([^"]+)"', text)
    assert match, f"{name} is not pinned in pyproject.toml"
    return match.group(1)


def test_pyspark_python_files_match_the_pinned_version() -> None:
    pyspark = pytest.importorskip("pyspark")
    assert pyspark.__version__ == _pinned("pyspark") == md.version("pyspark")


def test_pyspark_client_is_not_installed_over_pyspark() -> None:
    with pytest.raises(md.PackageNotFoundError):
        md.version("pyspark-client")


@pytest.mark.parametrize("dist", ["apache-airflow", "apache-airflow-providers-apache-spark"])
def test_airflow_distributions_match_their_pins(dist: str) -> None:
    assert md.version(dist) == _pinned(dist)

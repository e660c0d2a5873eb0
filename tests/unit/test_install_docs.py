"""README's compatibility matrix, pyproject.toml and the environment the tests run in say the same thing."""

from __future__ import annotations

import importlib.metadata as md
import re
import sys
from pathlib import Path

import pytest
import tomllib

from airflow_provider_delta.spark.install import PYSPARK_VERSION

ROOT = Path(__file__).resolve().parents[2]


def matrix() -> dict[str, tuple[str, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Installing into an existing Airflow", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([^|]+?) \| `?([^|`]+?)`? \| ([^|]+?) \|$", section, re.M)
    return {name: (supported, tested) for name, supported, tested in rows if name != "component"}


def requirement(extra: str, name: str) -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = project["dependencies"] if extra == "" else project["optional-dependencies"][extra]
    for req in reqs:
        match = re.fullmatch(rf"{re.escape(name)}(\[[^\]]*\])?(?P<spec>[<>=!~].*)", req)
        if match:
            return match.group("spec")
    raise AssertionError(f"{name} is not in extra {extra!r}")


@pytest.mark.parametrize(
    ("row", "dist", "extra"),
    [
        ("Apache Airflow", "apache-airflow", "spark"),
        ("apache-airflow-providers-apache-spark", "apache-airflow-providers-apache-spark", "spark"),
        ("pyspark", "pyspark", "spark"),
        ("pyarrow", "pyarrow", ""),
    ],
)
def test_the_matrix_is_what_pyproject_declares_and_what_the_tests_run(
    row: str, dist: str, extra: str
) -> None:
    supported, tested = matrix()[row]
    assert supported == requirement(extra, dist)
    assert tested == md.version(dist)


def test_python_pyspark_and_the_pinned_test_stack_agree() -> None:
    table = matrix()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert table["Python"] == (
        project["requires-python"],
        f"{sys.version_info.major}.{sys.version_info.minor}",
    )
    assert table["pyspark"][0] == f"=={PYSPARK_VERSION}"
    assert table["Apache Airflow"][1] == requirement("airflow", "apache-airflow").removeprefix("==")
    assert table["apache-airflow-providers-apache-spark"][1] == requirement(
        "airflow", "apache-airflow-providers-apache-spark"
    ).removeprefix("==")

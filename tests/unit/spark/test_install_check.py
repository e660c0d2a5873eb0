"""The pyspark-client shadowing check, on a real import path holding a shadowed pyspark (a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

from airflow_provider_delta.spark.install import PYSPARK_VERSION, pyspark_install_problem

if TYPE_CHECKING:
    from pathlib import Path


def _dist(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def _problem_in(site: Path) -> str:
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(site)!r})
        from airflow_provider_delta.spark.install import pyspark_install_problem
        print(pyspark_install_problem())
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_this_environment_has_pyspark_as_pinned() -> None:
    assert pyspark_install_problem() is None


def test_pyspark_files_overwritten_by_pyspark_client_are_reported_with_the_repair(tmp_path: Path) -> None:
    (tmp_path / "pyspark").mkdir()
    (tmp_path / "pyspark" / "__init__.py").write_text("")
    (tmp_path / "pyspark" / "version.py").write_text('__version__: str = "4.2.0"\n')
    _dist(tmp_path, "pyspark", PYSPARK_VERSION)
    _dist(tmp_path, "pyspark-client", "4.2.0")
    problem = _problem_in(tmp_path)
    assert (
        "the pyspark files are version 4.2.0 but pyspark 4.3.0 is installed: pyspark-client 4.2.0" in problem
    )
    assert (
        'pip uninstall -y pyspark-client && pip install --no-deps --force-reinstall "pyspark==4.3.0"'
        in problem
    )

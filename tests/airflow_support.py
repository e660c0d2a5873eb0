"""Airflow test environment: a temporary AIRFLOW_HOME with a SQLite metadata database.

``configure_airflow_env()`` runs when tests/conftest.py is imported, before anything imports
Airflow, so every test (and every helper's Airflow tests) sees the same isolated settings:

- ``AIRFLOW_HOME``: a fresh temporary folder (removed at exit); set ``DELTA_TEST_AIRFLOW_HOME`` to
  keep one between runs;
- ``AIRFLOW__CORE__DAGS_FOLDER``: the repository's ``dags/`` (``dag.test()`` needs the file there);
- ``AIRFLOW__CORE__LOAD_EXAMPLES=False``;
- two DAG bundles: ``dags-folder`` (the above) and ``test-dags`` (``tests/airflow/dags``, DAGs that
  only tests run).

The ``airflow_db`` fixture runs ``airflow db migrate`` once per session; request it in any test
that runs tasks or DAGs (``dag.test()``, ``ti.run()``, task state store).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DAGS_FOLDER = REPO / "dags"
# DAGs used only by tests: a second bundle, so dag.test() can serialize them.
TEST_DAGS_FOLDER = REPO / "tests" / "airflow" / "dags"
_LOCAL_BUNDLE = "airflow.dag_processing.bundles.local.LocalDagBundle"
# Starlette warns about httpx in the in-process execution API client that dag.test() uses.
STARLETTE_FILTER = r"ignore:Using .httpx. with .starlette.testclient. is deprecated:Warning"


def configure_airflow_env() -> Path:
    """Point Airflow at a temporary home (idempotent); returns AIRFLOW_HOME."""
    if os.environ.get("_DELTA_TEST_AIRFLOW_CONFIGURED") == "1":
        return Path(os.environ["AIRFLOW_HOME"])
    home = os.environ.get("DELTA_TEST_AIRFLOW_HOME")
    if home:
        Path(home).mkdir(parents=True, exist_ok=True)
    else:
        home = tempfile.mkdtemp(prefix="airflow-home-")
        atexit.register(shutil.rmtree, home, True)
    os.environ["AIRFLOW_HOME"] = home
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(DAGS_FOLDER)
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST"] = json.dumps(
        [
            {"name": "dags-folder", "classpath": _LOCAL_BUNDLE, "kwargs": {}},
            {"name": "test-dags", "classpath": _LOCAL_BUNDLE, "kwargs": {"path": str(TEST_DAGS_FOLDER)}},
        ]
    )
    os.environ.pop("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", None)
    os.environ["_DELTA_TEST_AIRFLOW_CONFIGURED"] = "1"
    return Path(home)


def add_warning_filters(config: pytest.Config) -> None:
    """Register the warning filters Airflow runs need (``filterwarnings = error`` is global)."""
    config.addinivalue_line("filterwarnings", STARLETTE_FILTER)


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """Migrate the metadata database once per session; returns AIRFLOW_HOME."""
    home = configure_airflow_env()
    subprocess.run(
        [str(Path(sys.executable).parent / "airflow"), "db", "migrate"],
        check=True,
        capture_output=True,
        env=os.environ.copy(),
        timeout=300,
    )
    return home

"""Shared fixtures. Pytest settings live in pyproject.toml ([tool.pytest.ini_options])."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

# Airflow settings must be in the environment before anything imports airflow.
from tests.airflow_support import add_warning_filters, airflow_db, configure_airflow_env
from tests.conformance import MISSING_MESSAGE, find_corpus
from tests.conformance import copy_table as _copy_table

configure_airflow_env()
__all__ = ["airflow_db"]

# s3_server / s3: a real S3-compatible server on 127.0.0.1 for every test folder (started on first use).
pytest_plugins = ["tests.s3_fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    """Warning filters for real Airflow runs (tests/airflow_support.py)."""
    add_warning_filters(config)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    """The Delta conformance corpus (``$DELTA_CONFORMANCE`` or ``../shared/conformance``)."""
    corpus = find_corpus()
    if corpus is None:
        pytest.skip(MISSING_MESSAGE)
    return corpus


@pytest.fixture
def copy_table(conformance_dir: Path, tmp_path: Path) -> Callable[..., Path]:
    """Copy a corpus table into ``tmp_path`` (or ``dest_dir``): ``copy_table("golden/snapshot-data3")``."""

    def copy(name: str, dest_dir: Path | None = None) -> Path:
        return _copy_table(conformance_dir, name, dest_dir if dest_dir is not None else tmp_path)

    return copy

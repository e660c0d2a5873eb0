"""Shared fixtures. Pytest settings live in pyproject.toml ([tool.pytest.ini_options])."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

# Airflow settings must be in the environment before anything imports airflow.
from tests.airflow_support import add_warning_filters, airflow_db, configure_airflow_env
from tests.conformance import MISSING_MESSAGE, find_corpus
from tests.conformance import copy_table as _copy_table
from tests.delta_spark import DeltaSpark, is_required, missing_reason, start_oracle

configure_airflow_env()
__all__ = ["airflow_db"]

# s3_server / s3: a real S3-compatible server on 127.0.0.1 for every test folder (started on first use).
pytest_plugins = ["tests.s3_fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    """Warning filters for real Airflow runs (tests/airflow_support.py)."""
    add_warning_filters(config)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that use the Delta Lake on Spark oracle carry the ``delta_spark`` marker (``-m delta_spark``)."""
    for item in items:
        if "delta_spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.delta_spark)


@pytest.fixture(scope="session")
def delta_spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeltaSpark]:
    """Delta Lake on Spark (delta-spark), the reference oracle: one server and JVM for the whole session.

    Skipped with the reason when ``make delta-spark`` has not been run, except in CI (``CI`` or
    ``DELTA_SPARK_REQUIRED`` set), where the tests fail instead. Its log is ``delta-spark*/server.log``
    in pytest's temp dir.
    """
    reason = missing_reason()
    if reason is not None:
        if is_required():
            pytest.fail(f"{reason} (CI requires the oracle)")
        pytest.skip(reason)
    yield from start_oracle(tmp_path_factory.mktemp("delta-spark"))


if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
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

"""Spark fixtures: a local SparkSession (``spark``) and a real standalone cluster (``spark_cluster``).

A process has one SparkContext, so ``spark`` (``local[2]``) and ``cluster_spark`` (on the cluster)
share it through :func:`tests.spark_cluster.spark_session`: asking for one stops the other. Tests that
alternate between them pay a new SparkContext (a few seconds) at each switch; the driver JVM stays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.spark_cluster import StandaloneCluster, shutdown_spark_driver, spark_session

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def _spark_process() -> Iterator[None]:
    """At the end of the test session: stops this process's SparkSession, whichever it is, and its driver."""
    yield
    shutdown_spark_driver()


@pytest.fixture
def spark(_spark_process: None) -> SparkSession:
    """The process's ``local[2]`` SparkSession (UI off, bound to 127.0.0.1)."""
    return spark_session("local[2]")


@pytest.fixture(scope="session")
def spark_cluster(
    tmp_path_factory: pytest.TempPathFactory, _spark_process: None
) -> Iterator[StandaloneCluster]:
    """A Spark standalone master and two workers (1 core, 1 GB each) for the whole session.

    Logs, worker and local dirs stay under pytest's temp dir (``spark-cluster*``) for inspection.
    """
    with StandaloneCluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster
    leftovers = cluster.leftovers()  # executors and Python workers included
    assert not leftovers, f"Spark cluster processes survived the stop: {leftovers}"


@pytest.fixture
def cluster_spark(spark_cluster: StandaloneCluster) -> SparkSession:
    """The process's SparkSession on :func:`spark_cluster` (one 512m executor per worker)."""
    return spark_cluster.session()

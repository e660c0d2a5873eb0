"""The Spark executor's capabilities: all but the reader, which is a typed error (rows stay on the executors)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from airflow_provider_delta.exceptions import ExecutorCapabilityError
from airflow_provider_delta.spark import SparkExecutor
from airflow_provider_delta.spark.cdf_export import SparkChangeExporter
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]


def test_the_spark_executor_has_every_capability_but_the_reader(spark: SparkSession) -> None:
    executor = SparkExecutor(spark)
    assert executor.writer() is executor
    assert executor.rewriter() is executor
    assert executor.deleter() is executor
    assert executor.merger() is executor
    exporter = executor.exporter()
    assert isinstance(exporter, SparkChangeExporter) and exporter.writer is executor
    with pytest.raises(ExecutorCapabilityError, match="rows stay on the executors") as err:
        executor.reader()
    assert (err.value.executor, err.value.capability) == ("spark", "reader")

"""MERGE over nested data on the Spark executor agrees with the model of Delta's rules.

The default run takes a sample of the fixed cases of issue 22 (:mod:`tests.merge_model.regressions`,
whose results were taken from delta-spark 4.4.0); ``-m slow`` adds the others and a generated search
(:func:`tests.merge_model.strategies.merge_cases`). Each case runs with ``merge_delta_sql`` on a
``local[2]`` session and is checked with :func:`tests.merge_model.run.check`: schema, rows, row
counters and change data, or the typed refusal with the table unchanged.
"""

from __future__ import annotations

import tempfile
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings

from airflow_provider_delta.core.schema.arrow import from_arrow_schema
from airflow_provider_delta.spark import merge_delta_sql
from airflow_provider_delta.spark.types import to_spark_schema
from tests.merge_model.regressions import REGRESSIONS
from tests.merge_model.run import arrow_table, check, make_target
from tests.merge_model.strategies import merge_cases
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.merge_model.case import MergeCase

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]


def run_spark(spark: SparkSession, case: MergeCase) -> None:
    with tempfile.TemporaryDirectory() as root:
        location = f"{root}/target"
        make_target(case, location)
        source = arrow_table(case.source_schema, case.source_rows)
        frame = spark.createDataFrame(source, schema=to_spark_schema(from_arrow_schema(source.schema)))

        def merge() -> dict[str, Any]:
            return merge_delta_sql(spark, case.statement(), sources={"source": frame}, location=location)

        check(case, location, merge)


SAMPLE = (
    "1 struct",
    "1 array of structs",
    "2 null source struct",
    "3 update without a field",
    "7 update from another column",
    "7 insert from another column",
    "8 null map value",
)


@pytest.mark.parametrize("name", SAMPLE)
def test_spark_merge_of_the_issue_cases_follows_delta(spark: SparkSession, name: str) -> None:
    run_spark(spark, REGRESSIONS[name][0])


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in REGRESSIONS if n not in SAMPLE])
def test_spark_merge_of_the_other_issue_cases_follows_delta(spark: SparkSession, name: str) -> None:
    run_spark(spark, REGRESSIONS[name][0])


@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=merge_cases())
def test_spark_merge_of_nested_data_follows_delta(spark: SparkSession, case: MergeCase) -> None:
    run_spark(spark, case)

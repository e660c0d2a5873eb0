"""Task slots: groups of work spread evenly over Spark tasks, placed by Spark's own hash partitioning.

Oracle: Spark itself (its ``hash`` function and where ``repartition(n, column)`` puts a row).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from airflow_provider_delta.spark.task_slots import balanced_slots, slot_keys, spark_hash_int
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]


def test_the_largest_groups_go_to_the_least_loaded_slot_first() -> None:
    costs = [250.0, 250.0, 250.0, 100.0, 100.0, 50.0]
    slots = balanced_slots(costs, 2)
    loads = [sum(c for c, s in zip(costs, slots, strict=True) if s == j) for j in range(2)]
    assert sorted(loads) == [500.0, 500.0]
    assert balanced_slots([], 3) == []
    assert balanced_slots([1.0, 1.0], 1) == [0, 0]


def test_the_hash_is_sparks_hash_of_an_int(spark: SparkSession) -> None:
    from pyspark.sql import functions as F

    values = [0, 1, 2, 7, 42, 1000, 2**31 - 1, -1, -2, -(2**31)]
    frame = spark.createDataFrame([(v,) for v in values], "v int")
    got = [row[0] for row in frame.select(F.hash("v")).collect()]
    assert got == [spark_hash_int(v) for v in values]


def test_a_repartition_by_slot_keys_puts_each_slot_in_its_own_partition(spark: SparkSession) -> None:
    from pyspark.sql import functions as F

    slots = 5
    keys = slot_keys(slots)
    frame = spark.range(0, 1000).select(
        F.element_at(F.lit(keys), (F.col("id") % slots + 1).cast("int")).alias("k")
    )
    placed = frame.repartition(slots, "k").select(F.spark_partition_id().alias("p"), "k").distinct().collect()
    assert sorted((row["p"], row["k"]) for row in placed) == list(enumerate(keys))

"""MERGE's store assignment and name resolution on the Spark executor agree with the local executor.

A fixed sample: text into number, boolean, date and timestamp columns, nested values (struct fields
by name, array elements, map values), a value that fails the cast at run time (typed error, table
unchanged), and the statements Delta refuses (a nested INSERT column, a source-qualified name without
evolution). Oracle: the local executor on a copy of the table (``tests/spark/merge_support.py``), whose
rules are checked against Spark's own cast in ``test_store_assignment_spark.py`` and against Delta's
tests in ``tests/unit/core/merge/test_merge_resolution.py``.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core.commands.update import update
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import CastError, MergeCastError, MergeError
from airflow_provider_delta.spark import SparkExecutor, merge_delta, merge_delta_sql
from tests.spark.merge_support import assert_same_merge, canonical
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]

POINT = pa.struct([("x", pa.int32()), ("y", pa.string())])
TARGET = pa.table({
    "id": pa.array([1, 2], pa.int64()), "n": pa.array([10, 20], pa.int64()), "flag": [False, False],
    "day": pa.array([0, 0], pa.date32()), "at": pa.array([0, 0], pa.timestamp("us", tz="UTC")),
    "price": pa.array([0, 0], pa.decimal128(6, 2)), "p": pa.array([{"x": 0, "y": "a"}, {"x": 0, "y": "b"}], POINT),
    "xs": pa.array([[0], [0]], pa.list_(pa.int32())),
    "m": pa.array([[("k", 0)], [("k", 0)]], pa.map_(pa.string(), pa.int32())),
})
SOURCE = pa.table({
    "id": pa.array([2, 3], pa.int64()), "n": [" 12 ", "-7"], "flag": ["yes", "0"], "day": ["2024-1-2", "2024-02-29"],
    "at": ["2024-01-02 03:04:05+02:00", "2024-01-02T03:04:05.123456789"], "price": ["1.255", "2.675"],
    "p": pa.array([{"y": 5, "x": "7"}, {"y": 6, "x": "8"}], pa.struct([("y", pa.int64()), ("x", pa.string())])),
    "xs": pa.array([["1", "2"], []], pa.list_(pa.string())),
    "m": pa.array([[("a", "5")], [("b", "6")]], pa.map_(pa.string(), pa.string())),
})


@pytest.fixture
def spark_utc(spark: SparkSession) -> SparkSession:
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark


def two_tables(tmp_path: Path, data: pa.Table = TARGET) -> tuple[Path, Path]:
    local = tmp_path / "local"
    DeltaTable.create(str(local), data.schema).append(data)
    spark_copy = tmp_path / "spark"
    shutil.copytree(local, spark_copy)
    return local, spark_copy


def upsert(builder: Any) -> Any:
    return builder.when_matched_update_all().when_not_matched_insert_all()


def test_text_and_nested_values_are_cast_alike_on_both_executors(spark_utc: SparkSession, tmp_path: Path) -> None:
    local, spark_copy = two_tables(tmp_path)
    table = DeltaTable(str(local))
    local_metrics = upsert(table.merge(SOURCE, "t.id = s.id", source_alias="s", target_alias="t")).execute()
    spark_metrics = upsert(merge_delta(spark_utc, str(spark_copy), spark_utc.createDataFrame(SOURCE), "t.id = s.id",
                                       source_alias="s", target_alias="t")).execute()
    assert_same_merge(local, spark_copy, 1, local_metrics, spark_metrics)
    got = {r["id"]: r for r in DeltaTable(str(spark_copy)).to_arrow().to_pylist()}
    assert (got[2]["n"], got[2]["flag"], str(got[2]["day"]), str(got[2]["price"])) == (12, True, "2024-01-02", "1.26")
    assert (got[3]["n"], got[3]["flag"], str(got[3]["price"])) == (-7, False, "2.68")
    assert got[2]["p"] == {"x": 7, "y": "5"} and got[2]["xs"] == [1, 2] and got[2]["m"] == [("a", 5)]
    assert got[2]["at"].isoformat() == "2024-01-02T01:04:05+00:00"


def test_a_value_that_fails_the_cast_fails_the_spark_merge_with_a_typed_error(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    _local, spark_copy = two_tables(tmp_path)
    bad = pa.table({"id": pa.array([2], pa.int64()), "v": ["abc"]})
    with pytest.raises(MergeCastError, match="'abc'.*CAST_INVALID_INPUT") as info:
        merge_delta(spark_utc, str(spark_copy), spark_utc.createDataFrame(bad), "t.id = s.id", source_alias="s",
                    target_alias="t").when_matched_update(set={"n": "s.v"}).execute()
    assert (info.value.clause, info.value.column, info.value.value) == ("WHEN MATCHED clause 1 (UPDATE)", "n", "abc")
    assert DeltaTable(str(spark_copy)).version == 1


@pytest.mark.parametrize(("clause", "match"), [
    ("WHEN NOT MATCHED THEN INSERT (id, p.x) VALUES (s.id, 1)", "Nested field is not supported"),
    ("WHEN MATCHED THEN UPDATE SET s.n = s.n", "Cannot resolve column 's.n'"),
])
def test_statements_delta_refuses_are_refused_on_spark(
    spark_utc: SparkSession, tmp_path: Path, clause: str, match: str
) -> None:
    _local, spark_copy = two_tables(tmp_path)
    with pytest.raises(MergeError, match=match):
        merge_delta_sql(spark_utc, f"MERGE INTO delta.`{spark_copy}` t USING src s ON t.id = s.id {clause}",
                        sources={"src": spark_utc.createDataFrame(SOURCE)})
    assert DeltaTable(str(spark_copy)).version == 1


def test_update_on_the_spark_executor_casts_as_locally(spark_utc: SparkSession, tmp_path: Path) -> None:
    local, spark_copy = two_tables(tmp_path)
    assignments = {"n": "' 42 '", "flag": "'yes'", "day": "'2024-1-2'", "price": "'1.255'"}
    update(DeltaTable(str(local)).snapshot, "id = 1", assignments)
    update(DeltaTable(str(spark_copy)).snapshot, "id = 1", assignments, executor=SparkExecutor(spark_utc))
    assert canonical(DeltaTable(str(spark_copy)).to_arrow()) == canonical(DeltaTable(str(local)).to_arrow())
    with pytest.raises(CastError, match="'abc'") as info:
        update(DeltaTable(str(spark_copy)).snapshot, "id = 1", {"n": "'abc'"}, executor=SparkExecutor(spark_utc))
    assert info.value.column == "n"
    assert DeltaTable(str(spark_copy)).version == 2

"""MERGE and UPDATE statements using Spark SQL functions run on both executors with the same result.

The local executor evaluates them with the engine's function library (``core/expressions/functions``),
the Spark executor with Spark (MERGE: the clause SQL; UPDATE: the engine's code in Spark tasks). Both
run on copies of one table; rows, schema, metrics and change data must agree
(``tests/spark/merge_support.py``).
"""

from __future__ import annotations

import datetime as dt
import shutil
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core.commands.update import update
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import MergeError
from airflow_provider_delta.spark import SparkExecutor, merge_delta
from tests.spark.merge_support import assert_same_merge, table_state
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]

TAGS = pa.list_(pa.string())
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("tags", TAGS),
        ("scores", pa.list_(pa.int32())),
        ("name", pa.string()),
        ("props", pa.map_(pa.string(), pa.int32())),
        ("seen", pa.date32()),
        ("amount", pa.float64()),
    ]
)
TARGET = pa.table(
    {
        "id": [1, 2, 3, 4, 5],
        "tags": [["a", "b"], ["x"], None, [], ["b", None, "b"]],
        "scores": [[1, 2], [3, None], [], None, [5, 5]],
        "name": ["ann", "BOB", None, "dee", "eve smith"],
        "props": [[("k", 1)], [], None, [("k", 2), ("j", 3)], [("z", 0)]],
        "seen": [
            dt.date(2024, 1, 31),
            dt.date(2023, 2, 28),
            None,
            dt.date(2020, 2, 29),
            dt.date(2024, 12, 31),
        ],
        "amount": [1.005, -2.5, None, 0.0, 12.345],
    },
    schema=SCHEMA,
)
SOURCE = pa.table(
    {
        "id": pa.array([2, 3, 4, 5, 6, 7], pa.int64()),
        "tags": pa.array([["x", "y"], ["c"], None, ["b", "c"], ["n"], []], TAGS),
        "drop": pa.array([["x"], [], ["q"], [None], None, []], TAGS),
        "name": ["Bobby", "cy", None, "Eve", "new one", "seven"],
        "op": ["u", "u", "d", "u", "i", "i"],
    }
)

CLAUSES: dict[str, Any] = {
    "delete": "s.op = 'd' AND arrays_overlap(t.tags, array('q', 'x')) IS NOT TRUE",
    "update_condition": "s.op = 'u' AND (array_contains(s.tags, 'x') OR size(coalesce(t.tags, array())) <= 3)",
    "update_set": {
        "tags": "array_except(array_union(array_distinct(coalesce(t.tags, array())), s.tags), s.drop)",
        "scores": "array_remove(array_distinct(concat(coalesce(t.scores, array()), array(size(s.tags)))), 5)",
        "name": "CASE WHEN length(s.name) > 3 THEN initcap(lower(s.name)) "
        "ELSE concat_ws('-', upper(s.name), t.name) END",
        "props": "map_concat(map('n', size(array_intersect(coalesce(t.tags, array()), s.tags))), "
        "map('m', coalesce(element_at(t.props, 'k'), -1)))",
        "seen": "add_months(coalesce(t.seen, DATE'2000-01-31'), 1)",
        "amount": "round(coalesce(t.amount, 0.5D) * 2, 1)",
    },
    "insert_values": {
        "id": "s.id",
        "tags": "sort_array(array_union(s.tags, array('new')), false)",
        "scores": "slice(array(1, 2, 3), 2, 5)",
        "name": "regexp_replace(lpad(s.name, 10, '*'), ' ', '_')",
        "props": "map(s.op, length(s.name))",
        "seen": "date_add(DATE'2024-02-28', size(s.tags))",
        "amount": "CAST(greatest(1, size(s.tags)) AS DOUBLE)",
    },
    "by_source_set": {
        "tags": "array_distinct(array_union(t.tags, array('stale')))",
        "name": "nvl2(t.name, upper(t.name), 'none')",
    },
}


def two_tables(tmp_path: Path) -> tuple[Path, Path]:
    local = tmp_path / "local"
    table = DeltaTable.create(str(local), SCHEMA, properties={"delta.enableChangeDataFeed": "true"})
    table.append(TARGET)
    spark_copy = tmp_path / "spark"
    shutil.copytree(local, spark_copy)
    return local, spark_copy


def clauses(builder: Any) -> Any:
    return (
        builder.when_matched_delete(condition=CLAUSES["delete"])
        .when_matched_update(set=CLAUSES["update_set"], condition=CLAUSES["update_condition"])
        .when_not_matched_insert(values=CLAUSES["insert_values"])
        .when_not_matched_by_source_update(set=CLAUSES["by_source_set"], condition="cardinality(t.props) > 0")
    )


@pytest.fixture
def spark_utc(spark: SparkSession) -> SparkSession:
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark


def test_a_merge_with_spark_functions_runs_locally_and_gives_what_spark_gives(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    local, spark_copy = two_tables(tmp_path)
    expected = clauses(
        DeltaTable(str(local)).merge(SOURCE, "t.id = s.id", source_alias="s", target_alias="t")
    ).execute()
    frame = spark_utc.createDataFrame(SOURCE)
    got = clauses(
        merge_delta(spark_utc, str(spark_copy), frame, "t.id = s.id", source_alias="s", target_alias="t")
    ).execute()

    assert_same_merge(local, spark_copy, 1, expected, got)
    assert (got["numTargetRowsUpdated"], got["numTargetRowsInserted"], got["numTargetRowsDeleted"]) == (
        4,
        2,
        1,
    )
    rows = {r["id"]: r for r in DeltaTable(str(local)).to_arrow().to_pylist()}
    assert rows[2]["tags"] == ["y"]  # array_except(array_union(['x'], ['x', 'y']), ['x'])
    assert rows[6]["tags"] == ["new", "n"]  # sort_array(array_union(['n'], ['new']), false)


def test_an_update_with_spark_functions_gives_the_same_table_on_both_executors(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    local, spark_copy = two_tables(tmp_path)
    assignments = {
        "tags": "array_union(array_distinct(tags), split(coalesce(name, ''), ' '))",
        "name": "CASE WHEN array_contains(tags, 'b') THEN reverse(name) ELSE name END",
        "amount": "bround(amount, 1)",
    }
    predicate = "size(array_remove(coalesce(scores, array()), 5)) >= 0 AND id <> 3"
    update(DeltaTable(str(local)).snapshot, predicate, assignments)
    update(DeltaTable(str(spark_copy)).snapshot, predicate, assignments, executor=SparkExecutor(spark_utc))
    assert table_state(spark_copy, 1) == table_state(local, 1)


def test_a_function_the_local_engine_lacks_is_refused_naming_it_and_runs_on_spark(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    local, spark_copy = two_tables(tmp_path)
    with pytest.raises(
        MergeError, match=r"'soundex' is not supported by the local engine.*Spark executor"
    ) as err:
        DeltaTable(str(local)).merge(
            SOURCE, "t.id = s.id", source_alias="s", target_alias="t"
        ).when_matched_update(set={"name": "soundex(s.name)"}).execute()
    assert err.value.clause == "WHEN MATCHED clause 1 (UPDATE)"
    frame = spark_utc.createDataFrame(SOURCE)
    metrics = (
        merge_delta(spark_utc, str(spark_copy), frame, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update(set={"name": "soundex(s.name)"})
        .execute()
    )
    assert metrics["numTargetRowsUpdated"] == 4

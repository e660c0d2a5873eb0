"""MERGE on Spark (``merge_delta``, ``merge_delta_sql``): planned by core, joined and written by Spark.

Oracle: the local executor's MERGE of the same source into a copy of the same table (rows, schema,
metrics, change data; ``tests/spark/merge_support.py``), plus delta-rs reading what Spark wrote. Bad
input fails before anything is committed. One ``local[2]`` session (UTC); the last test runs on a
real standalone cluster.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from typing import TYPE_CHECKING, Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import MergeError, MergeMultipleMatchError, TableNotFoundError
from airflow_provider_delta.spark import SparkExecutor, merge_delta, merge_delta_sql
from airflow_provider_delta.spark.merge.execution import BROADCAST_KEYS_CONF
from tests.conformance import find_corpus
from tests.spark.merge_support import assert_same_merge, canonical
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.string()), ("amount", pa.int32())])
TARGET = pa.table(
    {"id": [1, 2, 3, 4, None], "name": ["a", "b", "c", "d", "n"], "part": ["x", "y", "x", "y", "y"],
     "amount": [10, 20, 30, 40, 50]},
    schema=SCHEMA,
)
SOURCE = pa.table({
    "id": pa.array([2, 3, 5, None], pa.int64()), "name": ["B", "C", "E", "N"], "part": ["y", "x", "x", "y"],
    "amount": pa.array([200, 300, 500, 0], pa.int32()), "tier": ["gold", "silver", "bronze", "none"],
})


@pytest.fixture
def spark_utc(spark: SparkSession) -> SparkSession:
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark


def two_tables(tmp_path: Path, **create: Any) -> tuple[Path, Path]:
    """The same table twice (``local`` and ``spark``), at version 1."""
    local = tmp_path / "local"
    table = DeltaTable.create(str(local), SCHEMA, **create)
    table.append(TARGET)
    spark_copy = tmp_path / "spark"
    shutil.copytree(local, spark_copy)
    return local, spark_copy


def data_files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*.parquet") if "_delta_log" not in p.parts}


def upsert(builder: Any) -> Any:
    return (
        builder.when_matched_delete(condition="s.name = 'C'")
        .when_matched_update_all(except_=["tier"])
        .when_not_matched_insert_all()
        .when_not_matched_by_source_update(set={"name": "concat(t.name, '!')"}, condition="t.id = 1")
    )


def test_merge_delta_gives_what_the_local_merge_gives_with_evolution_partitions_and_cdf(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    local, spark_copy = two_tables(tmp_path, partition_by=["part"], properties={"delta.enableChangeDataFeed": "true"})
    expected = upsert(
        DeltaTable(str(local)).merge(SOURCE, "t.id = s.id", source_alias="s", target_alias="t", schema_evolution=True)
    ).execute()
    got = upsert(merge_delta(spark_utc, str(spark_copy), spark_utc.createDataFrame(SOURCE), "t.id = s.id",
                             source_alias="s", target_alias="t", schema_evolution=True)).execute()

    assert_same_merge(local, spark_copy, 1, expected, got)
    assert (got["version"], got["numTargetRowsUpdated"], got["numTargetRowsDeleted"]) == (2, 2, 1)
    assert (got["numTargetRowsInserted"], got["numSourceRows"]) == (2, 4)
    table = DeltaTable(str(spark_copy))
    assert table.schema.names == ("id", "name", "part", "amount", "tier")  # added by INSERT * (evolution)
    info = table.history(1)[0]
    assert info["operation"] == "MERGE"
    assert json.loads(info["operationParameters"]["matchedPredicates"])[0] == {
        "predicate": "s.name = 'C'", "actionType": "delete"
    }
    assert deltalake.DeltaTable(str(spark_copy)).to_pyarrow_table().num_rows == 6


def test_clauses_use_spark_sql_beyond_the_local_expressions(spark_utc: SparkSession, tmp_path: Path) -> None:
    _local, path = two_tables(tmp_path)
    source = spark_utc.createDataFrame(SOURCE)
    metrics = (
        merge_delta(spark_utc, str(path), source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update(
            set={"name": "CASE WHEN s.amount > 250 THEN initcap(s.tier) ELSE lpad(t.name, 3, '-') END",
                 "amount": "t.amount + size(split(s.tier, 'l'))"},
            condition="s.tier RLIKE '^(gold|silver)$'",
        )
        .when_not_matched_insert(
            values={"id": "s.id", "name": "concat_ws(':', s.name, date_format(current_date(), 'yyyy'))",
                    "part": "s.part", "amount": "datediff(date'2024-01-11', date'2024-01-01')"},
            condition="s.id IS NOT NULL",
        )
        .execute()
    )
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == (2, 1)
    rows = {r["id"]: r for r in DeltaTable(str(path)).to_arrow().to_pylist()}
    assert (rows[2]["name"], rows[2]["amount"]) == ("--b", 22)  # gold: 200 <= 250; split('gold','l') has 2 parts
    assert (rows[3]["name"], rows[3]["amount"]) == ("Silver", 32)
    assert rows[5] == {"id": 5, "name": f"E:{dt.datetime.now(dt.timezone.utc).year}", "part": "x", "amount": 10}


def test_the_local_executor_refuses_spark_only_sql_and_names_the_clause(tmp_path: Path) -> None:
    local, _ = two_tables(tmp_path)
    with pytest.raises(MergeError, match="initcap") as err:
        DeltaTable(str(local)).merge(SOURCE, "t.id = s.id", source_alias="s", target_alias="t") \
            .when_matched_update(set={"name": "initcap(s.name)"}).execute()
    assert err.value.clause == "WHEN MATCHED clause 1 (UPDATE)"


@pytest.mark.parametrize("broadcast_keys", ["2000000", "0"], ids=["broadcast-keys", "shuffle-join"])
def test_two_source_rows_updating_one_target_row_raise_and_commit_nothing(
    spark_utc: SparkSession, tmp_path: Path, broadcast_keys: str
) -> None:
    _local, path = two_tables(tmp_path)
    duplicates = spark_utc.createDataFrame(pa.concat_tables([SOURCE, SOURCE.slice(0, 1)]))
    spark_utc.conf.set(BROADCAST_KEYS_CONF, broadcast_keys)
    try:
        with pytest.raises(MergeMultipleMatchError, match="multiple source rows matched"):
            merge_delta(spark_utc, str(path), duplicates, "t.id = s.id", source_alias="s", target_alias="t") \
                .when_matched_update_all().when_not_matched_insert_all().execute()
    finally:
        spark_utc.conf.unset(BROADCAST_KEYS_CONF)
    assert DeltaTable(str(path)).version == 1
    assert canonical(DeltaTable(str(path)).to_arrow()) == canonical(TARGET)


def test_a_bad_broadcast_keys_conf_is_refused_before_any_file_is_written(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    _local, path = two_tables(tmp_path)
    before = data_files(path)
    spark_utc.conf.set(BROADCAST_KEYS_CONF, "lots")
    try:
        with pytest.raises(MergeError, match="broadcastKeyRows must be a number of source rows, found 'lots'"):
            merge_delta(spark_utc, str(path), spark_utc.createDataFrame(SOURCE), "t.id = s.id", source_alias="s",
                        target_alias="t").when_matched_update_all().execute()
    finally:
        spark_utc.conf.unset(BROADCAST_KEYS_CONF)
    assert (DeltaTable(str(path)).version, data_files(path)) == (1, before)


@pytest.mark.parametrize(
    ("clause", "match", "column"),
    [
        ({"set": {"name": "initcap(s.nope)"}}, "nope", "s.nope"),  # Spark-only SQL: Spark's analyzer names it
        ({"set": {"name": "s.nope"}}, "nope", "name"),  # core's expressions: the column being assigned
        ({"set": {"amount": "s.name"}}, "amount", "amount"),  # a string never becomes a number
        ({"set": {"name": "regexp_extract(s.name"}}, "regexp_extract", None),  # malformed SQL
    ],
)
def test_bad_clauses_are_refused_before_any_file_is_written(
    spark_utc: SparkSession, tmp_path: Path, clause: dict[str, Any], match: str, column: str | None
) -> None:
    _local, path = two_tables(tmp_path)
    before = data_files(path)
    with pytest.raises(MergeError, match=match) as err:
        merge_delta(spark_utc, str(path), spark_utc.createDataFrame(SOURCE), "t.id = s.id", source_alias="s",
                    target_alias="t").when_matched_update(**clause).execute()
    assert err.value.clause is not None and err.value.clause.startswith("WHEN MATCHED clause 1 (UPDATE)")
    if column is not None:
        assert err.value.column == column
    assert (DeltaTable(str(path)).version, data_files(path)) == (1, before)


def test_a_value_that_does_not_fit_its_column_fails_in_the_task_with_a_merge_error(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    _local, path = two_tables(tmp_path)
    builder = merge_delta(spark_utc, str(path), spark_utc.createDataFrame(SOURCE), "t.id = s.id", source_alias="s",
                          target_alias="t")
    with pytest.raises(MergeError, match="amount"):
        builder.when_matched_update(set={"amount": "cast(s.amount as bigint) * 100000000"}).execute()
    assert DeltaTable(str(path)).version == 1


def test_merge_delta_sql_reads_views_and_paths(spark_utc: SparkSession, tmp_path: Path) -> None:
    local, path = two_tables(tmp_path)
    statement = """
        MERGE WITH SCHEMA EVOLUTION INTO delta.`{target}` AS t USING {source} AS s ON t.id = s.id
        WHEN MATCHED AND s.amount > 250 THEN UPDATE SET * EXCEPT (part)
        WHEN NOT MATCHED BY TARGET THEN INSERT *
        WHEN NOT MATCHED BY SOURCE AND t.amount >= 40 THEN DELETE
    """
    expected = DeltaTable(str(local)).merge_sql(statement.format(target=local, source="updates"), {"updates": SOURCE})
    spark_utc.createDataFrame(SOURCE).createOrReplaceTempView("merge_updates")
    got = merge_delta_sql(spark_utc, statement.format(target=path, source="merge_updates"))
    assert_same_merge(local, path, 1, expected, got)
    assert DeltaTable(str(path)).schema.names[-1] == "tier"

    # The source as a path: Parquet read by Spark, or another Delta table read with read_delta.
    pq.write_table(SOURCE.slice(2, 1), tmp_path / "source.parquet")
    got = merge_delta_sql(spark_utc, f"MERGE INTO delta.`{path}` t USING parquet.`{tmp_path / 'source.parquet'}` s "
                                     "ON t.id = s.id WHEN MATCHED THEN UPDATE SET amount = s.amount * 2")
    assert got["numTargetRowsUpdated"] == 1
    got = merge_delta_sql(spark_utc, f"MERGE INTO t USING delta.`{local}` s ON t.id = s.id "
                                     "WHEN NOT MATCHED THEN INSERT *", location=str(path))
    assert got["numTargetRowsInserted"] == 1  # only the row with a null key: null never matches
    assert {r["id"]: r["amount"] for r in DeltaTable(str(path)).to_arrow().to_pylist()}[5] == 1000


def test_merge_delta_sql_names_a_missing_source_or_target(spark_utc: SparkSession, tmp_path: Path) -> None:
    _local, path = two_tables(tmp_path)
    with pytest.raises(MergeError, match="no_such_view") as err:
        merge_delta_sql(spark_utc, f"MERGE INTO delta.`{path}` t USING no_such_view s ON t.id = s.id "
                                   "WHEN MATCHED THEN DELETE")
    assert err.value.clause == "USING"
    with pytest.raises(MergeError, match="not a Delta table path") as err:
        merge_delta_sql(spark_utc, "MERGE INTO events t USING v s ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert err.value.clause == "INTO"
    with pytest.raises(TableNotFoundError):
        merge_delta_sql(spark_utc, f"MERGE INTO delta.`{path}` t USING delta.`{tmp_path / 'none'}` s "
                                   "ON t.id = s.id WHEN MATCHED THEN DELETE")
    with pytest.raises(MergeError, match="expected THEN"):
        merge_delta_sql(spark_utc, f"MERGE INTO delta.`{path}` t USING v s ON t.id = s.id WHEN MATCHED DELETE")
    assert DeltaTable(str(path)).version == 1


def test_an_insert_only_merge_on_a_cdf_table_writes_no_change_files(spark_utc: SparkSession, tmp_path: Path) -> None:
    local, path = two_tables(tmp_path, properties={"delta.enableChangeDataFeed": "true"})
    expected = DeltaTable(str(local)).merge(SOURCE, "t.id = s.id", source_alias="s", target_alias="t") \
        .when_not_matched_insert_all().execute()
    got = merge_delta(spark_utc, str(path), spark_utc.createDataFrame(SOURCE), "t.id = s.id", source_alias="s",
                      target_alias="t").when_not_matched_insert_all().execute()
    assert_same_merge(local, path, 1, expected, got)
    assert not (path / "_change_data").exists()
    # A merge with a matched clause that ends up removing no file keeps none of the insert change files.
    got = merge_delta(spark_utc, str(path), spark_utc.createDataFrame(SOURCE.slice(2, 1)), "t.id = s.id",
                      source_alias="s", target_alias="t") \
        .when_matched_update(set={"amount": "0"}, condition="s.amount < 0").when_not_matched_insert_all().execute()
    assert got["numTargetRowsInserted"] == 0 and got["version"] is None
    assert not (path / "_change_data").exists()


def _copy_corpus_table(name: str, dst: Path) -> Path:
    corpus = find_corpus()
    if corpus is None:
        pytest.skip("the conformance corpus is missing")
    shutil.copytree(corpus / "tables" / name, dst)
    return dst


def test_a_target_with_deletion_vectors_merges_as_locally(spark_utc: SparkSession, tmp_path: Path) -> None:
    local = _copy_corpus_table("golden/dv-partitioned-with-checkpoint", tmp_path / "local")
    path = tmp_path / "spark"
    shutil.copytree(local, path)
    since = DeltaTable(str(local)).version
    source = pa.table({"part": pa.array([1, 2, 0, 7], pa.int32()), "col1": pa.array([31, 32, 0, 99], pa.int32()),
                       "col2": ["one", "two", "zero", "new"]})

    def run(builder: Any) -> Any:
        return builder.when_matched_update_all().when_not_matched_insert_all() \
            .when_not_matched_by_source_delete(condition="t.col1 < 20").execute()

    expected = run(DeltaTable(str(local)).merge(source, "t.part = s.part AND t.col1 = s.col1",
                                                source_alias="s", target_alias="t"))
    got = run(merge_delta(spark_utc, str(path), spark_utc.createDataFrame(source),
                          "t.part = s.part AND t.col1 = s.col1", source_alias="s", target_alias="t"))
    assert_same_merge(local, path, since, expected, got)
    assert got["numTargetRowsUpdated"] == 2 and got["numTargetFilesRemoved"] >= 2


def test_column_mapping_and_a_nested_assignment_merge_as_locally(spark_utc: SparkSession, tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("info", pa.struct([("a", pa.int32()), ("b", pa.string())]))])
    local = tmp_path / "local"
    table = DeltaTable.create(str(local), schema, properties={"delta.columnMapping.mode": "name",
                                                             "delta.enableChangeDataFeed": "true"})
    table.append(pa.table({"id": [1, 2], "info": [{"a": 1, "b": "x"}, None]}, schema=schema))
    table.alter("ALTER TABLE t RENAME COLUMN info TO details")
    path = tmp_path / "spark"
    shutil.copytree(local, path)
    source = pa.table({"id": [1, 2, 3], "b": ["X", "Y", "Z"], "extra": [1.5, 2.5, 3.5]})

    def run(builder: Any) -> Any:
        return builder.when_matched_update(set={"details.b": "s.b", "extra": "s.extra"}) \
            .when_not_matched_insert(values={"id": "s.id", "details.a": "cast(s.id as int)"}).execute()

    expected = run(DeltaTable(str(local)).merge(source, "t.id = s.id", source_alias="s", target_alias="t",
                                                schema_evolution=True))
    got = run(merge_delta(spark_utc, str(path), spark_utc.createDataFrame(source), "t.id = s.id",
                          source_alias="s", target_alias="t", schema_evolution=True))
    assert_same_merge(local, path, 2, expected, got)
    rows = sorted(DeltaTable(str(path)).to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows[1] == {"id": 2, "details": {"a": None, "b": "Y"}, "extra": 2.5}


def test_the_arrow_source_of_delta_table_merge_can_run_on_the_spark_executor(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    from airflow_provider_delta.core.commands.merge.builder import MergeBuilder

    local, path = two_tables(tmp_path)
    builder = MergeBuilder(lambda: DeltaTable(str(path)).snapshot, SOURCE, "t.id = s.id", source_alias="s",
                           target_alias="t", executor=SparkExecutor(spark_utc))
    got = builder.when_matched_update_all(except_=["name"]).execute()
    expected = DeltaTable(str(local)).merge(SOURCE, "t.id = s.id", source_alias="s", target_alias="t") \
        .when_matched_update_all(except_=["name"]).execute()
    assert_same_merge(local, path, 1, expected, got)


# ------------------------------------------------------------------------------------- a real cluster


@pytest.mark.cluster
def test_merge_delta_on_a_standalone_cluster(cluster_spark: SparkSession, tmp_path: Path) -> None:
    spark = cluster_spark
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    local, path = two_tables(tmp_path, partition_by=["part"], properties={"delta.enableChangeDataFeed": "true"})
    expected = upsert(
        DeltaTable(str(local)).merge(SOURCE, "t.id = s.id", source_alias="s", target_alias="t", schema_evolution=True)
    ).execute()
    got = upsert(merge_delta(spark, str(path), spark.createDataFrame(SOURCE).repartition(3), "t.id = s.id",
                             source_alias="s", target_alias="t", schema_evolution=True)).execute()
    assert_same_merge(local, path, 1, expected, got)

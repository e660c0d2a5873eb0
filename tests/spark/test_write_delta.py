"""``write_delta`` and the Spark executor: Spark tasks write the files, the driver commits once.

Oracles: delta-rs (``deltalake``) reads what ``write_delta`` wrote; the local engine's own write of the
same rows (on a copy of the same table) gives the same table and the same change data; ``read_delta``
reads delta-rs' tables as delta-rs does. Bad input fails before anything is committed.

One ``local[2]`` SparkSession (tests/spark/conftest.py) with the session time zone set to UTC; the last
test needs task retries and switches to ``local[2,2]``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import shutil
from typing import TYPE_CHECKING, Any

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import types as st

from airflow_provider_delta.core.commands.delete import delete
from airflow_provider_delta.core.commands.update import update
from airflow_provider_delta.core.commands.write import write
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import (
    DeltaError,
    SchemaEvolutionError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from airflow_provider_delta.spark import SparkExecutor, read_delta, write_delta
from tests.conformance import find_corpus, load_compare
from tests.spark_cluster import PANDAS_3_WARNING, spark_session

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]

_CORPUS = find_corpus()
compare = load_compare(_CORPUS) if _CORPUS is not None else None


@pytest.fixture
def spark_utc(spark: SparkSession) -> SparkSession:
    """The test session with the session time zone UTC."""
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark


def same_rows(got: pa.Table, expected: pa.Table, ignore: list[str] | None = None) -> None:
    if compare is None:
        pytest.skip("the conformance corpus (compare.py) is missing")
    compare.assert_same_rows(got, expected, ignore_columns=ignore or [])


def parquet_files(table: Path) -> set[str]:
    """Data files on disk, relative to the table (change data files excluded)."""
    return {
        str(p.relative_to(table))
        for p in table.rglob("*.parquet")
        if "_delta_log" not in p.parts and "_change_data" not in p.parts
    }


def committed_files(table: Path) -> set[str]:
    from urllib.parse import unquote

    return {unquote(f.path) for f in DeltaTable(str(table)).files()}


# ------------------------------------------------------------------------------------- every type

ALL_TYPES = st.StructType(
    [
        st.StructField("id", st.LongType(), False),
        st.StructField("b", st.ByteType()),
        st.StructField("s", st.ShortType()),
        st.StructField("i", st.IntegerType()),
        st.StructField("f", st.FloatType()),
        st.StructField("d", st.DoubleType()),
        st.StructField("dec", st.DecimalType(38, 18)),
        st.StructField("money", st.DecimalType(5, 2)),
        st.StructField("str", st.StringType()),
        st.StructField("bin", st.BinaryType()),
        st.StructField("flag", st.BooleanType()),
        st.StructField("day", st.DateType()),
        st.StructField("ts", st.TimestampType()),
        st.StructField("ntz", st.TimestampNTZType()),
        st.StructField(
            "nested",
            st.StructType(
                [
                    st.StructField("a", st.IntegerType()),
                    st.StructField(
                        "inner",
                        st.StructType(
                            [
                                st.StructField("x", st.StringType()),
                                st.StructField("t", st.TimestampType()),
                            ]
                        ),
                    ),
                ]
            ),
        ),
        st.StructField("ints", st.ArrayType(st.IntegerType())),
        st.StructField(
            "pairs",
            st.ArrayType(
                st.StructType(
                    [
                        st.StructField("k", st.StringType()),
                        st.StructField("v", st.DoubleType()),
                    ]
                )
            ),
        ),
        st.StructField("m", st.MapType(st.StringType(), st.LongType())),
        st.StructField("m_arr", st.MapType(st.StringType(), st.ArrayType(st.DecimalType(10, 2)))),
    ]
)

UTC = dt.timezone.utc


def all_types_rows() -> list[tuple[Any, ...]]:
    ts = dt.datetime(2024, 3, 1, 12, 30, 45, 123456, tzinfo=UTC)
    return [
        (
            1,
            1,
            300,
            70_000,
            1.5,
            2.25,
            decimal.Decimal("12345678901234567890.123456789012345678"),
            decimal.Decimal("999.99"),
            "héllo",
            b"\x00\x01",
            True,
            dt.date(2024, 3, 1),
            ts,
            dt.datetime(2024, 3, 1, 12, 30, 45, 123456),
            (1, ("x", ts)),
            [1, None, 3],
            [("a", 1.0), ("b", None)],
            {"k": 1, "n": None},
            {"z": [decimal.Decimal("1.25"), None]},
        ),
        (
            2,
            -128,
            -32768,
            -(2**31),
            float("-inf"),
            float("nan"),
            decimal.Decimal("-0.000000000000000001"),
            decimal.Decimal("-1.00"),
            "",
            b"",
            False,
            dt.date(1, 1, 1),
            dt.datetime(1900, 1, 1, tzinfo=UTC),
            dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
            (None, None),
            [],
            [],
            {},
            {},
        ),
        (3, *([None] * (len(ALL_TYPES.fields) - 1))),
    ]


def all_types_frame(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(all_types_rows(), ALL_TYPES, verifySchema=True)


def test_every_type_written_by_write_delta_reads_back_identically_in_delta_rs_and_read_delta(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    frame = all_types_frame(spark_utc)
    source = frame.toArrow()
    path = str(tmp_path / "t")

    assert write_delta(frame, path) == 0  # one commit creates the table with its rows, as Delta on Spark
    first = DeltaTable(path).history()
    assert [(c["version"], c["operation"]) for c in first] == [(0, "WRITE")]
    assert int(first[0]["operationMetrics"]["numOutputRows"]) == frame.count()
    same_rows(deltalake.DeltaTable(path).to_pyarrow_table(), source)
    same_rows(read_delta(spark_utc, path).toArrow(), source)
    same_rows(DeltaTable(path).to_arrow(), source)
    # The table's schema is the DataFrame's, made nullable as Delta on Spark creates tables.
    schema = DeltaTable(path).schema
    assert schema.names == tuple(ALL_TYPES.names)
    assert all(f.nullable for f in schema.fields)
    assert read_delta(spark_utc, path).schema == st.StructType(
        [st.StructField(f.name, f.dataType, True) for f in ALL_TYPES.fields]
    )


def test_a_table_written_by_delta_rs_reads_identically_with_read_delta(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    data = pa.table(
        {
            "id": pa.array(range(6), pa.int64()),
            "part": ["a", "b", None, "a b", "a", "b"],
            "amount": pa.array([decimal.Decimal(f"{i}.5") for i in range(6)], pa.decimal128(10, 2)),
            "at": pa.array(
                [dt.datetime(2024, 1, i + 1, tzinfo=UTC) for i in range(6)], pa.timestamp("us", "UTC")
            ),
            "tags": [["x"], [], None, ["y", "z"], ["x"], None],
            "attrs": pa.array([{"k": i} for i in range(6)], pa.struct([("k", pa.int64())])),
        }
    )
    path = str(tmp_path / "rs")
    deltalake.write_deltalake(path, data, partition_by=["part"])
    deltalake.write_deltalake(path, data.slice(0, 2), mode="append", partition_by=["part"])
    expected = deltalake.DeltaTable(path).to_pyarrow_table()
    got = read_delta(spark_utc, path).toArrow()
    same_rows(got.select(expected.column_names), expected)
    same_rows(got, DeltaTable(path).to_arrow())
    where = "part = 'a b'"
    same_rows(read_delta(spark_utc, path, filter=where).toArrow(), DeltaTable(path).to_arrow(filter=where))


def test_a_task_with_more_rows_than_a_file_holds_writes_several_files(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    # One task (one partition) with 2.5 million rows: write_rows cuts files at a million rows.
    version = write_delta(spark_utc.range(0, 2_500_000, numPartitions=1), str(path))
    files = DeltaTable(str(path)).files()
    assert sorted(f.num_records or 0 for f in files) == [500_000, 1_000_000, 1_000_000]
    assert int(DeltaTable(str(path)).history(1)[0]["operationMetrics"]["numOutputRows"]) == 2_500_000
    assert version == 0
    assert deltalake.DeltaTable(str(path)).to_pyarrow_table().num_rows == 2_500_000


# ------------------------------------------------------------------------------------- modes


def events(spark: SparkSession, ids: range, part: str | None = None) -> DataFrame:
    expr = f"'{part}'" if part is not None else "case when id % 2 = 0 then 'even' else 'odd' end"
    return spark.range(ids.start, ids.stop, numPartitions=2).selectExpr(
        "id", f"{expr} as part", "cast(id * 1.5 as double) as value"
    )


def ids(path: Path, **kwargs: Any) -> list[int]:
    return sorted(DeltaTable(str(path)).to_arrow(**kwargs)["id"].to_pylist())


def test_append_then_overwrite(spark_utc: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    assert write_delta(events(spark_utc, range(10)), str(path)) == 0
    assert write_delta(events(spark_utc, range(10, 15)), str(path)) == 1
    assert ids(path) == list(range(15))
    assert write_delta(events(spark_utc, range(100, 103)), str(path), mode="overwrite") == 2
    assert ids(path) == [100, 101, 102]
    info = DeltaTable(str(path)).history(1)[0]
    assert info["operation"] == "WRITE"
    assert info["operationParameters"]["mode"] == "Overwrite"
    assert int(info["operationMetrics"]["numOutputRows"]) == 3
    assert sorted(deltalake.DeltaTable(str(path)).to_pyarrow_table()["id"].to_pylist()) == [100, 101, 102]


def test_partitioned_table_with_special_partition_values(spark_utc: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    frame = spark_utc.createDataFrame(
        [(1, "a b"), (2, None), (3, "x=y/z"), (4, "ü%"), (5, "a b")], "id long, part string"
    )
    write_delta(frame, str(path), partition_by=["part"])
    table = DeltaTable(str(path))
    assert table.partition_columns == ("part",)
    assert {f.partition_values["part"] for f in table.files()} == {"a b", None, "x=y/z", "ü%"}
    same_rows(deltalake.DeltaTable(str(path)).to_pyarrow_table().select(["id", "part"]), frame.toArrow())
    same_rows(read_delta(spark_utc, str(path)).toArrow().select(["id", "part"]), frame.toArrow())


def test_replace_where_replaces_only_the_matching_partition(spark_utc: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_delta(events(spark_utc, range(10)), str(path), partition_by=["part"])
    version = write_delta(
        events(spark_utc, range(50, 53), "even"), str(path), mode="overwrite", predicate="part = 'even'"
    )
    assert ids(path, filter="part = 'even'") == [50, 51, 52]
    assert ids(path, filter="part = 'odd'") == [1, 3, 5, 7, 9]
    info = DeltaTable(str(path)).history(1)[0]
    assert (info["version"], info["operationParameters"]["predicate"]) == (version, "[\"part = 'even'\"]")


def cdf_table(location: Path) -> Path:
    schema = pa.schema([("id", pa.int64()), ("part", pa.string()), ("value", pa.float64())])
    table = DeltaTable.create(
        str(location), schema, partition_by=["part"], properties={"delta.enableChangeDataFeed": "true"}
    )
    table.append(
        pa.table(
            {"id": [1, 2, 3, 4], "part": ["a", "a", "b", "b"], "value": [1.0, 2.0, 3.0, 4.0]}, schema=schema
        )
    )
    return location


def changes_of(path: Path, version: int) -> pa.Table:
    return DeltaTable(str(path)).changes(starting_version=version).drop_columns(["_commit_timestamp"])


def test_replace_where_on_a_cdf_table_records_the_same_changes_as_the_local_engine(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    local, spark_copy = cdf_table(tmp_path / "local"), tmp_path / "spark"
    shutil.copytree(local, spark_copy)
    new = pa.table({"id": [20, 30], "part": ["a", "b"], "value": [9.0, 9.5]})
    predicate = "value >= 2"  # a data predicate: files are rewritten and change files written

    local_version = DeltaTable(str(local)).overwrite(new, predicate)
    spark_version = write_delta(
        spark_utc.createDataFrame(new), str(spark_copy), mode="overwrite", predicate=predicate
    )

    assert spark_version == local_version == 2
    same_rows(DeltaTable(str(spark_copy)).to_arrow(), DeltaTable(str(local)).to_arrow())
    same_rows(changes_of(spark_copy, 2), changes_of(local, 2))
    got = sorted(
        zip(*changes_of(spark_copy, 2).select(["id", "_change_type"]).to_pydict().values(), strict=True)
    )
    assert got == [(2, "delete"), (3, "delete"), (4, "delete"), (20, "insert"), (30, "insert")]
    assert list((spark_copy / "_change_data").rglob("*.parquet"))
    rs = pa.table(deltalake.DeltaTable(str(spark_copy)).load_cdf(starting_version=2).read_all())
    same_rows(
        rs.select(["id", "part", "value", "_change_type", "_commit_version"]), changes_of(spark_copy, 2)
    )


def test_replace_where_with_change_data_takes_the_dataframe_once(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    # A value drawn from os.urandom differs at each evaluation: the data files and the insert change rows
    # hold the same values only if both were written from one pass over the DataFrame.
    from pyspark.sql import functions as F

    draw = F.udf(lambda: float(int.from_bytes(os.urandom(4), "big")), "double").asNondeterministic()
    path = cdf_table(tmp_path / "t")
    frame = spark_utc.range(100, 110).select(F.col("id"), F.lit("a").alias("part"), draw().alias("value"))
    write_delta(frame, str(path), mode="overwrite", predicate="value >= 0")
    written = DeltaTable(str(path)).to_arrow().select(["id", "value"])
    inserted = (
        changes_of(path, 2).filter(pc.equal(pc.field("_change_type"), "insert")).select(["id", "value"])
    )
    same_rows(inserted, written)
    assert written.num_rows == 10


def test_delete_and_update_with_the_spark_executor_match_the_local_engine(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    local, spark_copy = cdf_table(tmp_path / "local"), tmp_path / "spark"
    shutil.copytree(local, spark_copy)
    executor = SparkExecutor(spark_utc)

    assert delete(DeltaTable(str(local)).snapshot, "value = 2") == 2
    assert delete(DeltaTable(str(spark_copy)).snapshot, "value = 2", executor=executor) == 2
    assert update(DeltaTable(str(local)).snapshot, "id >= 3", {"value": "value * 10"}) == 3
    assert (
        update(DeltaTable(str(spark_copy)).snapshot, "id >= 3", {"value": "value * 10"}, executor=executor)
        == 3
    )

    same_rows(DeltaTable(str(spark_copy)).to_arrow(), DeltaTable(str(local)).to_arrow())
    same_rows(changes_of(spark_copy, 2), changes_of(local, 2))
    for version in (2, 3):
        ours, theirs = (DeltaTable(str(p)).history()[-1 - version] for p in (spark_copy, local))
        assert ours["operationMetrics"] == theirs["operationMetrics"]


def test_schema_mode_merge_adds_the_new_column(spark_utc: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_delta(events(spark_utc, range(3)), str(path))
    wider = events(spark_utc, range(3, 5)).selectExpr("*", "cast(id as string) as label")
    write_delta(wider, str(path), schema_mode="merge")
    table = DeltaTable(str(path))
    assert table.schema.names == ("id", "part", "value", "label")
    assert table.to_arrow(columns=["id", "label"]).sort_by("id")["label"].to_pylist() == [
        None,
        None,
        None,
        "3",
        "4",
    ]
    assert read_delta(spark_utc, str(path)).where("label is not null").count() == 2


def test_schema_mode_overwrite_replaces_schema_and_partitioning(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    write_delta(events(spark_utc, range(3)), str(path), partition_by=["part"])
    other = spark_utc.range(3).selectExpr("cast(id as int) as k", "'x' as day")
    write_delta(other, str(path), mode="overwrite", schema_mode="overwrite", partition_by=["day"])
    table = DeltaTable(str(path))
    assert (table.schema.names, table.partition_columns) == (("k", "day"), ("day",))
    same_rows(read_delta(spark_utc, str(path)).toArrow(), other.toArrow())


def test_the_same_app_id_and_version_writes_once(spark_utc: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    first = write_delta(events(spark_utc, range(4)), str(path), app_id="dag.load", app_version=7)
    files = parquet_files(path)
    again = write_delta(events(spark_utc, range(4)), str(path), app_id="dag.load", app_version=7)
    older = write_delta(events(spark_utc, range(4)), str(path), app_id="dag.load", app_version=6)
    assert first == again == older == DeltaTable(str(path)).version == 0
    assert parquet_files(path) == files  # no task ran: nothing written
    assert write_delta(events(spark_utc, range(4, 6)), str(path), app_id="dag.load", app_version=8) == 1
    assert ids(path) == list(range(6))


# ------------------------------------------------------------------------------------- bad input


def test_a_frame_that_does_not_fit_the_table_is_refused_before_any_file_is_written(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    write_delta(events(spark_utc, range(3)), str(path))
    before = parquet_files(path)
    wrong_type = events(spark_utc, range(3, 5)).selectExpr("id", "part", "cast(value as string) as value")
    with pytest.raises(SchemaMismatchError, match="column 'value' has type string, expected double"):
        write_delta(wrong_type, str(path))
    extra = events(spark_utc, range(3, 5)).selectExpr("*", "1 as extra")
    with pytest.raises(SchemaMismatchError, match="'extra' is not in the table schema.*schema_mode='merge'"):
        write_delta(extra, str(path))
    assert DeltaTable(str(path)).version == 0
    assert parquet_files(path) == before


def test_new_rows_outside_the_replace_where_predicate_fail_the_job_and_commit_nothing(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    write_delta(events(spark_utc, range(10)), str(path), partition_by=["part"])
    with pytest.raises(
        SchemaMismatchError, match="where \"part = 'even'\": .* do not match the predicate"
    ) as info:
        write_delta(events(spark_utc, range(20, 30)), str(path), mode="overwrite", predicate="part = 'even'")
    assert (
        "Job aborted" in str(info.value.__cause__) or "PythonException" in type(info.value.__cause__).__name__
    )
    assert DeltaTable(str(path)).version == 0
    assert ids(path) == list(range(10))


def test_nulls_in_a_not_null_column_fail_in_the_tasks_and_commit_nothing(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    DeltaTable.create(str(path), pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]))
    frame = spark_utc.createDataFrame([(1, "a"), (None, "b")], "id long, v string")
    with pytest.raises(SchemaMismatchError, match="'id'"):
        write_delta(frame, str(path))
    assert DeltaTable(str(path)).version == 0


def test_a_table_with_an_unsupported_writer_feature_is_refused_before_any_task(
    spark_utc: SparkSession, copy_table: Callable[..., Path]
) -> None:
    path = copy_table("peer/generated_columns")
    version = DeltaTable(str(path)).version
    before = parquet_files(path)
    frame = read_delta(spark_utc, str(path))
    with pytest.raises(UnsupportedFeatureError, match="generated column"):
        write_delta(frame, str(path))
    assert DeltaTable(str(path)).version == version
    assert parquet_files(path) == before


def test_bad_options_are_refused(spark_utc: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_delta(events(spark_utc, range(3)), str(path), properties={"delta.appendOnly": "false"})
    with pytest.raises(DeltaError, match="delta.appendOnly.*DeltaTable.alter"):
        write_delta(events(spark_utc, range(3, 4)), str(path), properties={"delta.appendOnly": "true"})
    with pytest.raises(SchemaEvolutionError, match="predicate"):
        write_delta(
            events(spark_utc, range(3, 4)),
            str(path),
            mode="overwrite",
            predicate="id > 1",
            schema_mode="overwrite",
        )
    with pytest.raises(TypeError, match="pyspark.sql.DataFrame"):
        SparkExecutor(spark_utc).write_files(None, pa.table({"id": [1]}))  # type: ignore[arg-type]
    assert DeltaTable(str(path)).version == 0


def test_read_files_is_not_available_on_spark(spark_utc: SparkSession, tmp_path: Path) -> None:
    from airflow_provider_delta.core.write.target import WriteTarget

    path = tmp_path / "t"
    write_delta(events(spark_utc, range(3)), str(path))
    snapshot = DeltaTable(str(path)).snapshot
    with pytest.raises(NotImplementedError, match="rows stay on the executors"):
        SparkExecutor(spark_utc).read_files(WriteTarget.of(snapshot), snapshot.files())


def test_a_delta_error_reported_by_a_task_is_raised_again_with_its_type() -> None:
    from airflow_provider_delta.exceptions import DataFileError
    from airflow_provider_delta.spark.tasks import delta_errors, reraise_task_error

    with pytest.raises(Exception) as in_task, delta_errors():
        raise DataFileError("Cannot read data file 'x.parquet' of version 3: it does not exist", path="x")
    spark_text = (
        f"Job aborted: ... Traceback ...\n{type(in_task.value).__name__}: {in_task.value}\n SQLSTATE: 38000"
    )
    with pytest.raises(DataFileError, match="'x.parquet' of version 3") as info:
        reraise_task_error(RuntimeError(spark_text))
    assert isinstance(info.value.__cause__, RuntimeError)
    with pytest.raises(DeltaError, match="odd"):  # not a DeltaError type: the base class
        reraise_task_error(RuntimeError('delta-task-error: {"type":"KeyError","message":"odd"}'))
    reraise_task_error(RuntimeError("an executor was lost"))  # no report: returns, the caller re-raises


def test_files_are_packed_into_tasks_as_spark_packs_its_scans() -> None:
    from airflow_provider_delta.spark.tasks import file_partitions

    mb = 1 << 20
    assert file_partitions([], parallelism=2) == []
    # As Spark: a file costs its size + 4 MB (openCostInBytes); a split is total / parallelism, at most
    # 128 MB (maxPartitionBytes); big files first, a task closes when the next file would overflow it.
    assert [len(g) for g in file_partitions([mb] * 10, parallelism=2)] == [5, 5]
    assert [len(g) for g in file_partitions([mb] * 100, parallelism=2)] == [26, 26, 26, 22]
    assert file_partitions([200 * mb, 10 * mb, 150 * mb], parallelism=2) == [[0], [2], [1]]


# ------------------------------------------------------------------------------------- the write job


def test_the_write_job_under_spark_writes_its_source_with_spark_executors(
    spark_utc: SparkSession, tmp_path: Path
) -> None:
    from airflow_provider_delta.jobs.runner import run_spec
    from airflow_provider_delta.jobs.spec import JobSpec

    source, path = tmp_path / "source", tmp_path / "t"
    events(spark_utc, range(50)).write.parquet(str(source))
    write_delta(events(spark_utc, range(0)), str(path), partition_by=["part"])
    spec = JobSpec(
        job="write",
        table=str(path),
        options={"source": {"path": str(source)}},
        app_id="airflow:d:t:r1",
        app_version=0,
    )

    result = run_spec(spec, spark_utc)
    assert result.status == "success", result.error
    assert (result.committed, result.version, result.engine["name"]) == (True, 1, "spark")
    assert int(result.metrics["numOutputRows"]) == 50
    assert ids(path) == list(range(50))
    retry = run_spec(spec, spark_utc)
    assert (retry.committed, retry.version) == (False, 1)

    inline = JobSpec(
        job="write",
        table=str(path),
        options={
            "mode": "overwrite",
            "predicate": "part = 'even'",
            "rows": [{"id": 1000, "part": "even", "value": 0.5}],
        },
    )
    replaced = run_spec(inline, spark_utc)
    assert replaced.status == "success", replaced.error
    assert ids(path, filter="part = 'even'") == [1000]
    outside = JobSpec(
        job="write",
        table=str(path),
        options={
            "mode": "overwrite",
            "predicate": "part = 'even'",
            "rows": [{"id": 1001, "part": "odd", "value": 0.5}],
        },
    )
    refused = run_spec(outside, spark_utc)
    assert refused.status == "error"
    assert refused.error is not None
    assert refused.error["type"] == "SchemaMismatchError"
    assert "do not match the predicate" in refused.error["message"]
    assert DeltaTable(str(path)).version == replaced.version


# ------------------------------------------------------------------------------------- task retries


def test_files_of_a_failed_task_attempt_are_never_committed(tmp_path: Path) -> None:
    # local[2,2]: two cores, a task may fail twice (plain local[2] never retries).
    spark = spark_session("local[2,2]", conf={"spark.sql.session.timeZone": "UTC"})
    marks = tmp_path / "attempts"
    marks.mkdir()

    def fail_first_attempt_of_partition_0(actions: Any) -> None:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        assert ctx is not None
        name = f"{ctx.partitionId()}-{ctx.attemptNumber()}.json"
        (marks / name).write_text(json.dumps([a.path for a in actions]))
        if ctx.partitionId() == 0 and ctx.attemptNumber() == 0:
            raise RuntimeError("injected failure after the files were written")

    path = tmp_path / "t"
    table = DeltaTable.create(str(path), pa.schema([("id", pa.int64())]))
    result = write(
        table.snapshot,
        spark.range(0, 100, numPartitions=2),
        executor=SparkExecutor(spark, task_hook=fail_first_attempt_of_partition_0),
    )

    attempts = {p.stem: json.loads(p.read_text()) for p in marks.glob("*.json")}
    assert sorted(attempts) == ["0-0", "0-1", "1-0"]
    assert result.version == 1
    assert committed_files(path) == {*attempts["0-1"], *attempts["1-0"]}
    orphans = parquet_files(path) - committed_files(path)
    assert orphans == set(attempts["0-0"]) != set()
    assert ids(path) == list(range(100))
    assert sorted(deltalake.DeltaTable(str(path)).to_pyarrow_table()["id"].to_pylist()) == list(range(100))


# ------------------------------------------------------------------------------------- a real cluster


@pytest.mark.cluster
def test_write_delta_and_read_delta_on_a_standalone_cluster(
    cluster_spark: SparkSession, tmp_path: Path
) -> None:
    spark = cluster_spark
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    marks = tmp_path / "writers"
    marks.mkdir()

    def record_writer(actions: Any) -> None:
        import os

        (marks / f"{os.getpid()}.json").write_text(json.dumps({"cwd": os.getcwd(), "n": len(actions)}))

    path = tmp_path / "t"
    DeltaTable.create(
        str(path),
        pa.schema([("id", pa.int64()), ("part", pa.string()), ("value", pa.float64())]),
        partition_by=["part"],
        properties={"delta.enableChangeDataFeed": "true"},
    )
    executor = SparkExecutor(spark, task_hook=record_writer)
    frame = spark.range(0, 10_000, numPartitions=4).selectExpr(
        "id", "case when id % 2 = 0 then 'even' else 'odd' end as part", "cast(id as double) as value"
    )
    assert write(DeltaTable(str(path)).snapshot, frame, executor=executor).version == 1
    assert delete(DeltaTable(str(path)).snapshot, "value < 100", executor=executor) == 2

    # The files were written by Python workers of executors on both workers, not by the driver.
    cwds = {json.loads(p.read_text())["cwd"] for p in marks.glob("*.json")}
    workers = {c.split("/work/")[1].split("/")[0] for c in cwds if "/work/worker-" in c}
    assert workers == {"worker-1", "worker-2"}
    assert ids(path) == list(range(100, 10_000))
    assert read_delta(spark, str(path), filter="part = 'odd'").count() == 4_950
    deleted = changes_of(path, 2)
    assert sorted(deleted["id"].to_pylist()) == list(range(100))
    assert set(deleted["_change_type"].to_pylist()) == {"delete"}

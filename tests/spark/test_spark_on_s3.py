"""The Spark data plane on S3: executors read and write the table's files through the engine's storage
(obstore inside ``mapInArrow``), so Spark needs no Hadoop S3 connector (pyspark ships none).

The server is the session's SeaweedFS; the proxy in front of it counts requests, which shows the data
files really went through the executors' own S3 clients.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import deltalake
import pyarrow as pa
import pytest

from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.spark import read_delta, write_delta
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.s3_fixtures import S3Env

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]


def test_pyspark_has_no_hadoop_s3_connector(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    with pytest.raises(Exception, match="S3AFileSystem"):
        jvm.java.lang.Class.forName("org.apache.hadoop.fs.s3a.S3AFileSystem")


def test_write_delta_and_read_delta_on_s3(spark: SparkSession, s3: S3Env) -> None:
    df = spark.range(0, 1000, numPartitions=4).selectExpr("id", "CAST(id % 3 AS STRING) AS part")
    assert (
        write_delta(df, s3.uri, partition_by=["part"], storage_options=s3.options) == 0
    )  # one commit: table + rows
    puts = s3.proxy.snapshot()["put"]
    assert puts >= 4 + 1, "data files written by the tasks, then the commit"
    more = spark.range(1000, 1100, numPartitions=2).selectExpr("id", "CAST(id % 3 AS STRING) AS part")
    assert write_delta(more, s3.uri, storage_options=s3.options) == 1

    ids = sorted(r.id for r in read_delta(spark, s3.uri, storage_options=s3.options).collect())
    assert ids == list(range(1100))
    filtered = read_delta(
        spark, s3.uri, columns=["id"], filter="part = '1' AND id < 10", storage_options=s3.options
    )
    assert sorted(r.id for r in filtered.collect()) == [1, 4, 7]
    rs = deltalake.DeltaTable(s3.uri, storage_options=s3.direct_options)
    assert rs.version() == 1 and rs.to_pyarrow_table().num_rows == 1100


def test_read_delta_reads_a_delta_rs_table_on_s3(spark: SparkSession, s3: S3Env) -> None:
    table = pa.table({"id": pa.array(range(50), pa.int64()), "name": [f"n{i}" for i in range(50)]})
    deltalake.write_deltalake(s3.uri, table, storage_options=s3.direct_options)
    deltalake.DeltaTable(s3.uri, storage_options=s3.direct_options).delete("id >= 40")
    rows = read_delta(spark, s3.uri, storage_options=s3.options).collect()
    assert sorted(r.id for r in rows) == list(range(40))
    write_delta(
        spark.createDataFrame([(100, "x")], "id long, name string"), s3.uri, storage_options=s3.options
    )
    assert DeltaTable(s3.uri, storage_options=s3.options).version == 2

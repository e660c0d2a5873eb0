"""Tables on S3 both ways: delta-spark writes ``s3a://`` and the engine reads ``s3://``, and the reverse.

Delta Lake on Spark runs with hadoop-aws and its AWS SDK bundle on the classpath (``make delta-spark-s3a``:
``.cache/jars/s3a``, hadoop-aws at the Hadoop version the oracle's pyspark ships) against the session's
SeaweedFS server on 127.0.0.1 (tests/s3_fixtures.py); the engine uses its own S3 storage. Each side's
rows are compared with the rows written (never with a result of the other engine alone), and each
table is read by both. A second oracle JVM (its own settings) starts for this module, so it is slow.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from tests.delta_spark import REPO_ROOT, is_required, missing_reason, start_oracle
from tests.interop.delta_spark_support import assert_same_rows
from tests.s3_server import ACCESS_KEY, REGION, SECRET_KEY

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.delta_spark import DeltaSpark
    from tests.s3_server import SeaweedS3

pytestmark = [pytest.mark.interop, pytest.mark.spark, pytest.mark.delta_spark, pytest.mark.slow]

S3A_JARS = REPO_ROOT / ".cache" / "jars" / "s3a"
UTC = dt.timezone.utc


def _missing_s3a() -> str | None:
    reason = missing_reason()
    if reason is None and not list(S3A_JARS.glob("hadoop-aws-*.jar")):
        reason = f"no hadoop-aws jar in {S3A_JARS}: run `make delta-spark-s3a`"
    return reason


def s3a_conf(server: SeaweedS3) -> dict[str, str]:
    """Spark's settings for s3a:// on the test server (path-style, plain HTTP, its static key)."""
    return {
        "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.endpoint": server.endpoint,
        "spark.hadoop.fs.s3a.endpoint.region": REGION,
        "spark.hadoop.fs.s3a.access.key": ACCESS_KEY,
        "spark.hadoop.fs.s3a.secret.key": SECRET_KEY,
        "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
    }


@pytest.fixture(scope="module")
def s3a_oracle(s3_server: SeaweedS3, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeltaSpark]:
    reason = _missing_s3a()
    if reason is not None:
        if is_required():
            pytest.fail(f"{reason} (CI requires the oracle)")
        pytest.skip(reason)
    yield from start_oracle(tmp_path_factory.mktemp("delta-spark-s3a"), extra_jars=[S3A_JARS],
                            conf=s3a_conf(s3_server))


def _rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"n{i}" if i % 7 else None for i in ids], pa.string()),
        "amount": pa.array([i * 0.25 for i in ids], pa.float64()),
        "ts": pa.array([dt.datetime(2026, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i) for i in ids],
                       pa.timestamp("us", tz="UTC")),
        "p": pa.array([f"p{i % 3}" for i in ids], pa.string()),
    })


def _s3a(uri: str) -> str:
    assert uri.startswith("s3://")
    return "s3a://" + uri.removeprefix("s3://")


def test_engine_reads_what_delta_spark_wrote_to_s3a(s3_server: SeaweedS3, s3a_oracle: DeltaSpark) -> None:
    uri = s3_server.new_table_uri("spark-wrote")
    first, second = _rows(0, 40), _rows(40, 25)
    s3a_oracle.sql(f"CREATE TABLE delta.`{_s3a(uri)}` USING DELTA PARTITIONED BY (p) AS SELECT * FROM src",
                   views={"src": first})
    s3a_oracle.sql(f"INSERT INTO delta.`{_s3a(uri)}` SELECT * FROM src", views={"src": second})

    table = DeltaTable(uri, storage_options=s3_server.storage_options)
    assert table.version == 1
    assert table.partition_columns == ("p",)
    assert_same_rows(table.to_arrow(), pa.concat_tables([first, second]))
    assert_same_rows(DeltaTable(uri, version=0, storage_options=s3_server.storage_options).to_arrow(), first)

    # The engine appends to delta-spark's table on S3; delta-spark reads both writers' rows back.
    third = _rows(65, 10)
    table.append(third)
    assert_same_rows(s3a_oracle.read(_s3a(uri)), pa.concat_tables([first, second, third]))


def test_delta_spark_reads_what_the_engine_wrote_to_s3(s3_server: SeaweedS3, s3a_oracle: DeltaSpark) -> None:
    uri = s3_server.new_table_uri("engine-wrote")
    first, second = _rows(0, 30), _rows(30, 30)
    table = DeltaTable.create(uri, first.schema, partition_by=["p"], storage_options=s3_server.storage_options)
    table.append(first)
    table.append(second)

    assert_same_rows(s3a_oracle.read(_s3a(uri)), pa.concat_tables([first, second]))
    assert_same_rows(s3a_oracle.read(_s3a(uri), version=1), first)

    # delta-spark writes to the engine's table on S3; the engine reads both writers' rows back.
    third = _rows(60, 15)
    s3a_oracle.sql(f"INSERT INTO delta.`{_s3a(uri)}` SELECT * FROM src", views={"src": third})
    assert_same_rows(DeltaTable(uri, storage_options=s3_server.storage_options).to_arrow(),
                     pa.concat_tables([first, second, third]))

"""Tables Delta Lake on Spark writes with each table feature: read by the engine, written by it, read back.

For each feature delta-spark creates a table and commits to it (inserts, and the commands that make
the feature visible in the log: a DELETE that writes deletion vectors, a type change, a checkpoint).
Then the engine must read exactly delta-spark's rows and schema, write to the table as a user would
(an append that leaves the feature's columns to the table, a DELETE), and delta-spark must read the
result exactly as the engine does and still write to it.

Features the engine does not write yet are real tests marked ``xfail(strict=True)`` with the typed
error it raises today and the issue that adds them, so each flips to a failure (to unmark) the day
it lands.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.exceptions import UnsupportedFeatureError
from tests.interop.delta_spark_support import assert_same_rows, our_schema, schema_shape

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tests.delta_spark import DeltaSpark

pytestmark = pytest.mark.interop

UTC = dt.timezone.utc


@dataclasses.dataclass(frozen=True)
class Feature:
    """A table delta-spark makes (``{t}`` is the table) and what the engine then writes to it."""

    create: str
    spark_writes: tuple[str, ...]
    engine_write: Callable[[DeltaTable], Any]
    spark_after: str  # a further delta-spark write once the engine has written
    columns: str = "*"  # what delta-spark's rows are read as (a variant is read as its JSON text)


def _append(rows: dict[str, list[Any]], schema: pa.Schema) -> Callable[[DeltaTable], Any]:
    def write(t: DeltaTable) -> None:
        t.append(pa.Table.from_pydict(rows, schema=schema))
        t.delete("id = 2")

    return write


FEATURES = {
    "generated-columns": Feature(
        "CREATE TABLE {t} (id BIGINT, ts TIMESTAMP, d DATE GENERATED ALWAYS AS (CAST(ts AS DATE))) "
        "USING delta PARTITIONED BY (d)",
        (
            "INSERT INTO {t} (id, ts) VALUES (1, TIMESTAMP'2024-01-01 10:00:00'), (2, TIMESTAMP'2024-01-02 23:00:00')",
        ),
        _append(
            {"id": [3], "ts": [dt.datetime(2024, 3, 1, 1, tzinfo=UTC)]},
            pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC"))]),
        ),
        "INSERT INTO {t} (id, ts) VALUES (4, TIMESTAMP'2024-04-01 00:00:00')",
    ),
    "identity-column": Feature(
        "CREATE TABLE {t} (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1), v STRING) USING delta",
        ("INSERT INTO {t} (v) VALUES ('a'), ('b')",),
        lambda t: (t.append(pa.table({"v": ["c"]})), t.delete("v = 'b'")),
        "INSERT INTO {t} (v) VALUES ('d')",
    ),
    "column-defaults": Feature(
        "CREATE TABLE {t} (id BIGINT, c INT DEFAULT 42) USING delta "
        "TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')",
        ("INSERT INTO {t} (id) VALUES (1), (2)",),
        _append({"id": [3]}, pa.schema([("id", pa.int64())])),
        "INSERT INTO {t} (id) VALUES (4)",
    ),
    "check-constraint": Feature(
        "CREATE TABLE {t} (id BIGINT, v INT) USING delta",
        (
            "INSERT INTO {t} VALUES (1, 10), (2, 20)",
            "ALTER TABLE {t} ADD CONSTRAINT v_positive CHECK (v > 0)",
        ),
        _append({"id": [3], "v": [30]}, pa.schema([("id", pa.int64()), ("v", pa.int32())])),
        "INSERT INTO {t} VALUES (4, 40)",
    ),
    "type-widening": Feature(
        "CREATE TABLE {t} (id BIGINT, v INT, d DECIMAL(5, 2)) USING delta "
        "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
        (
            "INSERT INTO {t} VALUES (1, 10, 1.25), (2, 20, 2.5)",
            "ALTER TABLE {t} ALTER COLUMN v TYPE BIGINT",
            "ALTER TABLE {t} ALTER COLUMN d TYPE DECIMAL(10, 4)",
            "INSERT INTO {t} VALUES (5, 5000000000, 123456.1234)",
        ),
        _append(
            {"id": [3], "v": [2**40], "d": [None]},
            pa.schema([("id", pa.int64()), ("v", pa.int64()), ("d", pa.decimal128(10, 4))]),
        ),
        "INSERT INTO {t} VALUES (6, 6, 6.0)",
    ),
    "deletion-vectors": Feature(
        "CREATE TABLE {t} (id BIGINT, v STRING) USING delta TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
        (
            "INSERT INTO {t} SELECT id, concat('v', id) FROM range(0, 50)",
            "DELETE FROM {t} WHERE id % 7 = 0",
            "UPDATE {t} SET v = 'updated' WHERE id = 1",
        ),
        _append({"id": [100], "v": ["new"]}, pa.schema([("id", pa.int64()), ("v", pa.string())])),
        "DELETE FROM {t} WHERE id = 3",
    ),
    "row-tracking": Feature(
        "CREATE TABLE {t} (id BIGINT, v STRING) USING delta TBLPROPERTIES ('delta.enableRowTracking' = 'true')",
        ("INSERT INTO {t} VALUES (1, 'a'), (2, 'b')", "UPDATE {t} SET v = 'A' WHERE id = 1"),
        _append({"id": [3], "v": ["c"]}, pa.schema([("id", pa.int64()), ("v", pa.string())])),
        "INSERT INTO {t} VALUES (4, 'd')",
    ),
    "liquid-clustering": Feature(
        "CREATE TABLE {t} (id BIGINT, v STRING) USING delta CLUSTER BY (id)",
        ("INSERT INTO {t} VALUES (1, 'a'), (2, 'b')", "OPTIMIZE {t}"),
        _append({"id": [3], "v": ["c"]}, pa.schema([("id", pa.int64()), ("v", pa.string())])),
        "INSERT INTO {t} VALUES (4, 'd')",
    ),
    "v2-checkpoints": Feature(
        "CREATE TABLE {t} (id BIGINT, v STRING) USING delta "
        "TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '2')",
        (
            "INSERT INTO {t} VALUES (1, 'a')",
            "INSERT INTO {t} VALUES (2, 'b')",
            "INSERT INTO {t} VALUES (3, 'c')",
        ),
        _append({"id": [4], "v": ["d"]}, pa.schema([("id", pa.int64()), ("v", pa.string())])),
        "INSERT INTO {t} VALUES (5, 'e')",
    ),
    "variant": Feature(
        "CREATE TABLE {t} (id BIGINT, v VARIANT) USING delta",
        ("INSERT INTO {t} VALUES (1, parse_json('{{\"a\": 1}}')), (2, parse_json('[1, \"x\"]'))",),
        lambda t: t.delete("id = 2"),
        "INSERT INTO {t} VALUES (3, parse_json('null'))",
        columns="id, to_json(v) AS v",
    ),
}

XFAIL = {
    "generated-columns": (
        "issue 23: the engine does not compute generated columns on write",
        UnsupportedFeatureError,
    ),
    "identity-column": (
        "issue 23: the engine does not assign identity values on write",
        UnsupportedFeatureError,
    ),
    "column-defaults": (
        "issue 23: the engine refuses the allowColumnDefaults writer feature",
        UnsupportedFeatureError,
    ),
    "row-tracking": ("issue 24: the engine refuses the rowTracking writer feature", UnsupportedFeatureError),
    "liquid-clustering": (
        "issue 24: the engine refuses the clustering writer feature",
        UnsupportedFeatureError,
    ),
    "variant": ("issue 23: the engine refuses the variantType reader feature", UnsupportedFeatureError),
}


def _params() -> list[Any]:
    params = []
    for name, feature in FEATURES.items():
        marks = []
        if name in XFAIL:
            reason, error = XFAIL[name]
            marks.append(pytest.mark.xfail(strict=True, raises=error, reason=reason))
        params.append(pytest.param(feature, id=name, marks=marks))
    return params


def _theirs(oracle: DeltaSpark, location: str, feature: Feature) -> pa.Table:
    if feature.columns == "*":
        return oracle.read(location)
    return oracle.sql(f"SELECT {feature.columns} FROM delta.`{location}`")


def _assert_engine_reads_like_delta_spark(oracle: DeltaSpark, location: str, feature: Feature) -> None:
    assert our_schema(location) == schema_shape(oracle.schema(location))
    assert_same_rows(DeltaTable(location).to_arrow(), _theirs(oracle, location, feature))


@pytest.mark.parametrize("feature", _params())
def test_delta_spark_table_with_feature_is_read_and_written_by_the_engine(
    tmp_path: Path, delta_spark: DeltaSpark, feature: Feature
) -> None:
    location = str(tmp_path / "t")
    table = f"delta.`{location}`"
    delta_spark.sql(feature.create.format(t=table))
    for statement in feature.spark_writes:
        delta_spark.sql(statement.format(t=table))
    _assert_engine_reads_like_delta_spark(delta_spark, location, feature)

    before = DeltaTable.latest_version(location)
    feature.engine_write(DeltaTable(location))
    assert DeltaTable.latest_version(location) > before
    _assert_engine_reads_like_delta_spark(delta_spark, location, feature)

    delta_spark.sql(feature.spark_after.format(t=table))
    _assert_engine_reads_like_delta_spark(delta_spark, location, feature)
    history = delta_spark.history(location)
    assert [h["version"] for h in history] == list(range(DeltaTable.latest_version(location), -1, -1))

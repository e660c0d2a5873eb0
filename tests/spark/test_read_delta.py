"""``read_delta`` (Spark executors) against the engine's local reader, ``DeltaTable.to_arrow``.

Every table of the shared conformance corpus is read both ways at its latest version: where the local
reader returns rows, ``read_delta(...).toArrow()`` must return the same multiset of rows and the same
schema (names, types, nullability); where the local reader refuses the table, ``read_delta`` must
refuse it with the same ``DeltaError`` type (when it plans, or when Spark runs the read tasks).
Time travel (version, timestamp), column projection and filters run on a few tables.

One ``local[2]`` SparkSession (tests/spark/conftest.py) with the session time zone set to UTC.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import (
    DeltaError,
    PredicateError,
    SchemaError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from airflow_provider_delta.spark import read_delta
from tests.conformance import MISSING_MESSAGE, find_corpus, load_compare, manifest_entries
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]

_FOUND = find_corpus()
if _FOUND is None:
    pytest.skip(MISSING_MESSAGE, allow_module_level=True)
CORPUS: Path = _FOUND
ENTRIES = manifest_entries(CORPUS)
compare = load_compare(CORPUS)


@pytest.fixture
def spark_utc(spark: SparkSession) -> SparkSession:
    """The test session with the session time zone UTC (timestamps come back as ``tz=UTC``)."""
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark


def _plain(t: pa.DataType) -> pa.DataType:
    """``t`` without field metadata at any depth (Spark's toArrow attaches its own)."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _plain(f.type), f.nullable) for f in t])
    if pa.types.is_map(t):
        key, item = t.key_field, t.item_field
        return pa.map_(
            pa.field("key", _plain(key.type), False), pa.field("value", _plain(item.type), item.nullable)
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(pa.field("element", _plain(t.value_type), t.value_field.nullable))
    return t


def plain_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, _plain(f.type), f.nullable) for f in schema])


def assert_same_table(got: pa.Table, expected: pa.Table) -> None:
    """Same schema (names, types, nullability) and the same rows as a multiset (order ignored)."""
    assert plain_schema(got.schema) == plain_schema(expected.schema)
    assert got.num_rows == expected.num_rows
    compare.assert_same_rows(got, expected, ignore_columns=[])


def assert_refused_like(err: DeltaError, read: Callable[[], DataFrame]) -> None:
    """``read()`` (or running it) fails with ``err``'s type and message."""
    with pytest.raises(Exception) as info:
        read().toArrow()
    found = info.value
    if isinstance(found, DeltaError):  # refused while planning, in the driver
        assert (type(found), str(found)) == (type(err), str(err))
    else:  # a task refused: Spark's error quotes the task's DeltaError type and message
        assert f'"type":"{type(err).__name__}"' in str(found)


def _corpus_cases() -> list[Any]:
    return [pytest.param(e, id=e["name"]) for e in ENTRIES]


@pytest.mark.parametrize("entry", _corpus_cases())
def test_read_delta_returns_the_local_readers_rows_for_every_corpus_table(
    spark_utc: SparkSession, entry: dict[str, Any]
) -> None:
    path = str(CORPUS / entry["table"])
    try:
        expected = DeltaTable(path).to_arrow()
    except DeltaError as err:  # the engine refuses the table: so must read_delta
        assert_refused_like(err, lambda: read_delta(spark_utc, path))
        return
    assert_same_table(read_delta(spark_utc, path).toArrow(), expected)


TIME_TRAVEL = [
    ("extra/delta-kernel-java/basic-dv-no-checkpoint", 0),
    ("golden/dv-partitioned-with-checkpoint", 7),
    ("golden/time-travel-schema-changes-b", 0),
    ("extra/kernel-rs/cdf-column-mapping-name-mode", 2),
    ("peer/schema_evolution_merge", 3),
    ("peer/overwrite_and_replace_where", 2),
]


@pytest.mark.parametrize(("name", "version"), [pytest.param(n, v, id=f"{n}@v{v}") for n, v in TIME_TRAVEL])
def test_read_delta_at_an_older_version_returns_that_versions_rows(
    spark_utc: SparkSession, name: str, version: int
) -> None:
    path = str(CORPUS / "tables" / name)
    expected = DeltaTable(path, version=version).to_arrow()
    assert expected.num_rows > 0
    assert_same_table(read_delta(spark_utc, path, version=version).toArrow(), expected)


def test_read_delta_at_a_timestamp_reads_the_version_committed_then(spark_utc: SparkSession) -> None:
    table = CORPUS / "tables" / "extra/delta-rs/cdc_ict_table"
    ict = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            if line.strip() and "commitInfo" in (action := json.loads(line)):
                ict[int(commit.stem)] = int(action["commitInfo"]["inCommitTimestamp"])
    # v2's in-commit timestamp lies above every earlier one and below every later one (see
    # tests/conformance/test_conformance.py): it designates v2 unambiguously.
    at = dt.datetime.fromtimestamp(ict[2] / 1000, tz=dt.timezone.utc)
    expected = DeltaTable(str(table), version=2).to_arrow()
    assert DeltaTable(str(table), timestamp=at).version == 2
    assert_same_table(read_delta(spark_utc, str(table), timestamp=at).toArrow(), expected)


PROJECTIONS = [
    ("golden/data-reader-partition-values", ["as_int", "as_string"], "as_int IS NOT NULL"),
    ("golden/dv-partitioned-with-checkpoint", ["col1", "part"], "part = 0 AND col1 < 30"),
    ("extra/delta-rs/table_with_column_mapping", None, "`Company Very Short` = 'BMS'"),
    ("peer/partitioned_typed_values", None, "p_date >= '2024-01-01' OR val IS NULL"),
    ("golden/parquet-all-types", ["LongType", "StringType", "TimestampType"], "LongType % 3 = 0"),
    ("peer/column_mapping_id", None, None),
    ("golden/time-travel-schema-changes-b", ["id"], "id >= 5"),
]


@pytest.mark.parametrize(("name", "columns", "where"), [pytest.param(*p, id=p[0]) for p in PROJECTIONS])
def test_read_delta_with_columns_and_filter_matches_the_local_reader(
    spark_utc: SparkSession, name: str, columns: list[str] | None, where: str | None
) -> None:
    path = str(CORPUS / "tables" / name)
    expected = DeltaTable(path).to_arrow(columns=columns, filter=where)
    got = read_delta(spark_utc, path, columns=columns, filter=where)
    assert got.columns == expected.column_names
    assert_same_table(got.toArrow(), expected)


def test_a_filter_that_prunes_every_file_gives_an_empty_frame_with_the_schema(
    spark_utc: SparkSession,
) -> None:
    path = str(CORPUS / "tables" / "golden/dv-partitioned-with-checkpoint")
    expected = DeltaTable(path).to_arrow(filter="part = 99")
    got = read_delta(spark_utc, path, filter="part = 99")
    assert got.count() == 0
    assert plain_schema(got.toArrow().schema) == plain_schema(expected.schema)


def test_an_empty_table_gives_an_empty_frame_with_the_schema(spark_utc: SparkSession) -> None:
    path = str(CORPUS / "tables" / "peer/empty_table")
    expected = DeltaTable(path).to_arrow()
    assert expected.num_rows == 0
    got = read_delta(spark_utc, path)
    assert got.count() == 0
    assert plain_schema(got.toArrow().schema) == plain_schema(expected.schema)


def test_selecting_no_column_still_counts_every_row(spark_utc: SparkSession) -> None:
    path = str(CORPUS / "tables" / "golden/dv-partitioned-with-checkpoint")
    assert read_delta(spark_utc, path, columns=[]).count() == DeltaTable(path).to_arrow().num_rows


def test_rows_are_read_by_tasks_split_like_sparks_own_file_scan(spark_utc: SparkSession) -> None:
    path = CORPUS / "tables" / "peer/many_commits_checkpoint"
    files = DeltaTable(str(path)).files()
    frame = read_delta(spark_utc, str(path))
    # Many small files are packed into about defaultParallelism tasks, exactly as Spark's Parquet scan
    # packs the same files (FilePartition.getFilePartitions), not one task per file.
    parquet = spark_utc.read.parquet(*(str(path / f.path) for f in files))
    assert frame.rdd.getNumPartitions() == parquet.rdd.getNumPartitions() < len(files)
    assert frame.count() == DeltaTable(str(path)).to_arrow().num_rows


def test_column_mapping_metadata_is_not_in_the_frames_schema(spark_utc: SparkSession) -> None:
    frame = read_delta(spark_utc, str(CORPUS / "tables" / "peer/column_mapping_name"))
    for field in frame.schema.fields:
        assert not any(key.startswith("delta.columnMapping") for key in field.metadata)


# ------------------------------------------------------------------------------------- bad input


def test_a_missing_table_raises_table_not_found(spark_utc: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError, match="no-such-table"):
        read_delta(spark_utc, str(tmp_path / "no-such-table"))


def test_an_unsupported_reader_feature_is_refused_in_the_driver(spark_utc: SparkSession) -> None:
    path = str(CORPUS / "tables" / "extra/delta-rs/simple_table_features")
    with pytest.raises(UnsupportedFeatureError, match="simple_table_features"):
        read_delta(spark_utc, path)


def test_an_unknown_column_or_bad_filter_raises_before_any_task(spark_utc: SparkSession) -> None:
    path = str(CORPUS / "tables" / "golden/snapshot-data3")
    with pytest.raises(SchemaError, match="no_such"):
        read_delta(spark_utc, path, columns=["no_such"])
    with pytest.raises(PredicateError):
        read_delta(spark_utc, path, filter="no_such > 1")


def test_a_version_outside_the_history_raises_version_not_found(spark_utc: SparkSession) -> None:
    with pytest.raises(VersionNotFoundError):
        read_delta(spark_utc, str(CORPUS / "tables" / "golden/snapshot-data3"), version=99)


def test_a_missing_data_file_fails_the_read_with_the_engines_message(
    spark_utc: SparkSession, copy_table: Callable[..., Path]
) -> None:
    table = copy_table("golden/snapshot-data3")
    victim = table / DeltaTable(str(table)).files()[0].path
    victim.unlink()
    frame = read_delta(spark_utc, str(table))  # planning reads only the log
    with pytest.raises(Exception, match="DataFileError") as info:
        frame.toArrow()
    assert victim.name in str(info.value)
    assert "does not exist" in str(info.value)

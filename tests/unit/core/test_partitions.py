"""Partition values: decoding per PROTOCOL.md, Arrow columns, Spark-style encoding and Hive path escaping.

The corpus checks decode every ``add.partitionValues`` entry of every conformance table and compare the
decoded values with the rows independent readers (delta-rs, Spark) return for a few partitioned tables.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections import Counter
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_delta.core.partitions import (
    HIVE_DEFAULT_PARTITION,
    decode_partition_value,
    decode_partition_values,
    encode_partition_value,
    escape_partition_path_component,
    parse_timestamp,
    partition_column,
    partition_path,
    unescape_partition_path_component,
)
from airflow_provider_delta.exceptions import LogCorruptedError, SchemaMismatchError
from tests.conformance import find_corpus

if TYPE_CHECKING:
    from pathlib import Path

UTC = dt.timezone.utc
CORPUS = find_corpus()
needs_corpus = pytest.mark.skipif(CORPUS is None, reason="conformance corpus not found")


# ------------------------------------------------------------------------------------------- decoding


@pytest.mark.parametrize(
    ("raw", "arrow_type", "expected"),
    [
        ("true", pa.bool_(), True),
        ("FALSE", pa.bool_(), False),
        ("True", pa.bool_(), True),
        ("-128", pa.int8(), -128),
        ("32767", pa.int16(), 32767),
        ("-2147483648", pa.int32(), -(2**31)),
        ("9223372036854775807", pa.int64(), 2**63 - 1),
        ("+5", pa.int64(), 5),
        ("1.5", pa.float32(), 1.5),
        ("1.0E10", pa.float64(), 1e10),
        ("-0.0", pa.float64(), -0.0),
        ("Infinity", pa.float64(), math.inf),
        ("-Infinity", pa.float32(), -math.inf),
        ("11.01", pa.decimal128(10, 2), Decimal("11.01")),
        ("-11.01", pa.decimal128(10, 2), Decimal("-11.01")),
        ("1E+2", pa.decimal128(5, 0), Decimal("100")),
        ("5", pa.decimal128(4, 2), Decimal("5.00")),
        ("0", pa.decimal128(1, 0), Decimal("0")),
        ("2021-09-08", pa.date32(), dt.date(2021, 9, 8)),
        ("0001-01-01", pa.date32(), dt.date(1, 1, 1)),
        ("plain", pa.string(), "plain"),
        ("null", pa.string(), "null"),
        (HIVE_DEFAULT_PARTITION, pa.string(), HIVE_DEFAULT_PARTITION),
        ("tab\tchar", pa.large_string(), "tab\tchar"),
        ("\u0001\u0002\u0003", pa.binary(), b"\x01\x02\x03"),
        ("é", pa.binary(), "é".encode()),
    ],
)
def test_decode_partition_value_reads_protocol_formats(
    raw: str, arrow_type: pa.DataType, expected: Any
) -> None:
    value = decode_partition_value(raw, arrow_type)
    assert value == expected
    assert type(value) is type(expected)


def test_decode_partition_value_reads_nan() -> None:
    assert math.isnan(decode_partition_value("NaN", pa.float64()))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2021-09-08 11:11:11", dt.datetime(2021, 9, 8, 11, 11, 11, tzinfo=UTC)),
        ("2020-01-01 08:09:10.001", dt.datetime(2020, 1, 1, 8, 9, 10, 1000, tzinfo=UTC)),
        ("2021-06-02 12:30:15.123456", dt.datetime(2021, 6, 2, 12, 30, 15, 123456, tzinfo=UTC)),
        ("2021-09-08T11:11:11.000000Z", dt.datetime(2021, 9, 8, 11, 11, 11, tzinfo=UTC)),
        ("2021-09-08T11:11:11+01:00", dt.datetime(2021, 9, 8, 10, 11, 11, tzinfo=UTC)),
        ("2021-09-08T11:11:11.5-0230", dt.datetime(2021, 9, 8, 13, 41, 11, 500000, tzinfo=UTC)),
        ("1969-01-01 00:00:00", dt.datetime(1969, 1, 1, tzinfo=UTC)),
        ("2021-09-08", dt.datetime(2021, 9, 8, tzinfo=UTC)),
    ],
)
def test_decode_zoned_timestamp_reads_zone_less_text_as_utc(raw: str, expected: dt.datetime) -> None:
    assert decode_partition_value(raw, pa.timestamp("us", tz="UTC")) == expected


def test_decode_timestamp_ntz_stays_naive() -> None:
    value = decode_partition_value("2013-07-05 17:01:00.123456", pa.timestamp("us"))
    assert value == dt.datetime(2013, 7, 5, 17, 1, 0, 123456)
    assert value.tzinfo is None


@pytest.mark.parametrize(
    "arrow_type",
    [pa.string(), pa.int32(), pa.bool_(), pa.date32(), pa.timestamp("us", tz="UTC"), pa.decimal128(5, 2)],
)
def test_empty_string_and_none_decode_to_null_for_every_type(arrow_type: pa.DataType) -> None:
    assert decode_partition_value("", arrow_type) is None
    assert decode_partition_value(None, arrow_type) is None


@pytest.mark.parametrize(
    ("raw", "arrow_type", "fragment"),
    [
        ("yes", pa.bool_(), "expected 'true' or 'false'"),
        ("1.5", pa.int32(), "not an integer"),
        ("1_000", pa.int64(), "not an integer"),
        (" 1", pa.int64(), "not an integer"),
        ("128", pa.int8(), "out of range"),
        ("abc", pa.float64(), "not a floating-point number"),
        ("1.234", pa.decimal128(5, 2), "does not fit"),
        ("1000", pa.decimal128(4, 2), "more than 4 digits"),
        ("2021-13-01", pa.date32(), "month must be in 1..12"),
        ("09/08/2021", pa.date32(), "expected yyyy-MM-dd"),
        ("2021-09-08 25:00:00", pa.timestamp("us", tz="UTC"), "hour must be in 0..23"),
        ("yesterday", pa.timestamp("us"), "expected"),
        ("2021-09-08 11:11:11.1234567", pa.timestamp("us"), "sub-microsecond"),
    ],
)
def test_unparsable_partition_value_raises_log_corrupted_naming_column_and_value(
    raw: str, arrow_type: pa.DataType, fragment: str
) -> None:
    with pytest.raises(LogCorruptedError, match=re.escape(fragment)) as info:
        decode_partition_value(raw, arrow_type, column="p_col")
    assert "'p_col'" in str(info.value)
    assert repr(raw) in str(info.value)


def test_nested_types_cannot_be_partition_columns() -> None:
    with pytest.raises(LogCorruptedError, match="cannot be a partition column"):
        decode_partition_value("x", pa.list_(pa.int32()), column="l")


def test_decode_partition_values_fills_missing_columns_with_null() -> None:
    schema = pa.schema([("d", pa.date32()), ("n", pa.int64())])
    assert decode_partition_values({"d": "2020-01-01"}, schema) == {"d": dt.date(2020, 1, 1), "n": None}


# ---------------------------------------------------------------------------------------- partition_column


def test_partition_column_repeats_the_decoded_value() -> None:
    array = partition_column("2021-09-08 11:11:11", pa.timestamp("us", tz="UTC"), 3, column="ts")
    assert array.type == pa.timestamp("us", tz="UTC")
    assert array.to_pylist() == [dt.datetime(2021, 9, 8, 11, 11, 11, tzinfo=UTC)] * 3


def test_partition_column_of_null_is_all_null_of_the_type() -> None:
    array = partition_column(None, pa.decimal128(10, 2), 4)
    assert array.type == pa.decimal128(10, 2)
    assert array.null_count == 4


def test_partition_column_of_zero_rows_is_empty() -> None:
    assert len(partition_column("1", pa.int32(), 0)) == 0


def test_partition_column_keeps_nanosecond_unit_and_dictionary_types() -> None:
    assert partition_column("2020-01-01 00:00:00.5", pa.timestamp("ns", tz="UTC"), 1).to_pylist() == [
        dt.datetime(2020, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)
    ]
    assert decode_partition_value("x", pa.dictionary(pa.int32(), pa.string())) == "x"


# ---------------------------------------------------------------------------------------------- encoding


@pytest.mark.parametrize(
    ("value", "arrow_type", "expected"),
    [
        (None, pa.int32(), None),
        ("", pa.string(), None),
        ("a/b", pa.string(), "a/b"),
        (True, pa.bool_(), "true"),
        (-7, pa.int64(), "-7"),
        (0.1, pa.float32(), "0.1"),
        (1.5, pa.float64(), "1.5"),
        (math.nan, pa.float64(), "NaN"),
        (-math.inf, pa.float64(), "-Infinity"),
        (Decimal("1.5"), pa.decimal128(10, 2), "1.50"),
        (3, pa.decimal128(10, 2), "3.00"),
        (dt.date(2020, 1, 2), pa.date32(), "2020-01-02"),
        (
            dt.datetime(2021, 1, 1, 12, 0, tzinfo=UTC),
            pa.timestamp("us", tz="UTC"),
            "2021-01-01 12:00:00.000000",
        ),
        (
            dt.datetime(2021, 1, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
            pa.timestamp("us", tz="UTC"),
            "2021-01-01 10:00:00.000000",
        ),
        (dt.datetime(2021, 1, 1, 12, 0, 0, 5), pa.timestamp("us"), "2021-01-01 12:00:00.000005"),
        (b"\x01\x02", pa.binary(), "\x01\x02"),
    ],
)
def test_encode_partition_value_writes_spark_format(
    value: Any, arrow_type: pa.DataType, expected: str | None
) -> None:
    assert encode_partition_value(value, arrow_type) == expected


@pytest.mark.parametrize(
    ("value", "arrow_type"),
    [
        ("1", pa.int32()),
        (True, pa.int32()),
        (2**40, pa.int32()),
        (1, pa.string()),
        (dt.datetime(2020, 1, 1), pa.date32()),
    ],
)
def test_encode_partition_value_rejects_values_of_the_wrong_type(value: Any, arrow_type: pa.DataType) -> None:
    with pytest.raises(SchemaMismatchError, match="Cannot encode partition value"):
        encode_partition_value(value, arrow_type)


_ROUND_TRIP_TYPES = [
    (st.integers(-(2**63), 2**63 - 1), pa.int64()),
    (st.integers(-128, 127), pa.int8()),
    (st.booleans(), pa.bool_()),
    (st.floats(allow_nan=False, width=64), pa.float64()),
    (st.floats(allow_nan=False, width=32), pa.float32()),
    (st.decimals(min_value=-(10**6), max_value=10**6, places=3, allow_nan=False), pa.decimal128(12, 3)),
    (st.dates(), pa.date32()),
    (st.datetimes(timezones=st.just(UTC)), pa.timestamp("us", tz="UTC")),
    (st.datetimes(), pa.timestamp("us")),
    (st.text(min_size=1), pa.string()),
    (st.binary(min_size=1).filter(lambda b: _is_utf8(b)), pa.binary()),
]


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.parametrize(("strategy", "arrow_type"), _ROUND_TRIP_TYPES, ids=lambda x: str(x)[:30])
def test_encode_then_decode_round_trips(strategy: st.SearchStrategy[Any], arrow_type: pa.DataType) -> None:
    @given(strategy)
    def check(value: Any) -> None:
        decoded = decode_partition_value(encode_partition_value(value, arrow_type), arrow_type)
        assert decoded == value
        assert pa.scalar(decoded, arrow_type).equals(pa.scalar(value, arrow_type))

    check()


# ------------------------------------------------------------------------------------------ path escaping


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("plain", "plain"),
        ("with space", "with space"),
        ("a/b", "a%2Fb"),
        ("a=b", "a%3Db"),
        ("c:d", "c%3Ad"),
        ("100%", "100%25"),
        ("#hash", "%23hash"),
        ("quote'\"", "quote%27%22"),
        ("back\\slash", "back%5Cslash"),
        ("tab\tchar", "tab%09char"),
        ("what?", "what%3F"),
        ("*{[]^\x7f", "%2A%7B%5B%5D%5E%7F"),
        ("\x00\x1f", "%00%1F"),
        ("ünïcödé", "ünïcödé"),
        ("2021-09-08 11:11:11", "2021-09-08 11%3A11%3A11"),
    ],
)
def test_escape_partition_path_component_matches_hive(text: str, escaped: str) -> None:
    assert escape_partition_path_component(text) == escaped
    assert unescape_partition_path_component(escaped) == text


@given(st.text())
def test_escaping_round_trips(text: str) -> None:
    escaped = escape_partition_path_component(text)
    assert "/" not in escaped
    assert "=" not in escaped
    assert unescape_partition_path_component(escaped) == text


def test_unescape_keeps_percent_signs_that_are_not_escapes() -> None:
    assert unescape_partition_path_component("100%") == "100%"
    assert unescape_partition_path_component("%zz%4") == "%zz%4"
    assert unescape_partition_path_component("%2f") == "/"


def test_partition_path_uses_hive_default_partition_for_nulls_and_empty_strings() -> None:
    assert partition_path(["a", "b", "c"], {"a": "1", "b": None, "c": ""}) == (
        f"a=1/b={HIVE_DEFAULT_PARTITION}/c={HIVE_DEFAULT_PARTITION}"
    )
    assert partition_path(["a=b"], {"a=b": "x/y"}) == "a%3Db=x%2Fy"
    assert partition_path([], {}) == ""


# ------------------------------------------------------------------------------------ conformance corpus

_PRIMITIVES = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}


def _delta_type_to_arrow(delta_type: Any) -> pa.DataType | None:
    """Just enough of Delta's type names for partition columns; nested types return None."""
    if not isinstance(delta_type, str):
        return None
    match = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", delta_type)
    if match:
        return pa.decimal128(int(match.group(1)), int(match.group(2)))
    return _PRIMITIVES.get(delta_type)


def _partition_types(metadata: dict[str, Any]) -> dict[str, pa.DataType]:
    """Partition column (by physical name, as partitionValues keys it) -> Arrow type."""
    schema = json.loads(metadata["schemaString"])
    types: dict[str, pa.DataType] = {}
    for field in schema["fields"]:
        arrow_type = _delta_type_to_arrow(field["type"])
        if arrow_type is None:
            continue
        types[field["name"]] = arrow_type
        physical = field.get("metadata", {}).get("delta.columnMapping.physicalName")
        if physical:
            types[physical] = arrow_type
    return types


def _checkpoint_metadata(log_dir: Path) -> dict[str, Any] | None:
    for checkpoint in sorted(log_dir.glob("*.checkpoint*.parquet")):
        parquet = pq.ParquetFile(checkpoint)
        if "metaData" not in parquet.schema_arrow.names:
            continue  # a part of a multi-part checkpoint without the metaData action
        for row in parquet.read(columns=["metaData"]).column("metaData").to_pylist():
            if row and row.get("schemaString"):
                return row
    return None


def _corpus_partition_values() -> list[tuple[str, str, str | None, pa.DataType]]:
    """Every (table, column, raw value, type) in the JSON commits of the corpus."""
    if CORPUS is None:
        return []
    found: set[tuple[str, str, str | None, pa.DataType]] = set()
    for log_dir in sorted((CORPUS / "tables").glob("**/_delta_log")):
        name = str(log_dir.parent.relative_to(CORPUS / "tables"))
        fallback = _checkpoint_metadata(log_dir)
        types = _partition_types(fallback) if fallback else {}
        for commit in sorted(log_dir.glob("*.json")):
            if not re.fullmatch(r"[0-9]{20}\.json", commit.name):
                continue  # e.g. macOS "._" resource forks shipped with some upstream fixtures
            for line in commit.read_text(encoding="utf-8").splitlines():
                try:
                    action = json.loads(line)
                except ValueError:
                    continue  # corrupted-log fixtures; the log reader's business
                if "metaData" in action and action["metaData"].get("schemaString"):
                    types = _partition_types(action["metaData"])
                for kind in ("add", "remove"):
                    for column, raw in ((action.get(kind) or {}).get("partitionValues") or {}).items():
                        if column in types:
                            found.add((name, column, raw, types[column]))
    return sorted(found, key=lambda item: (item[0], item[1], str(item[2]), str(item[3])))


@needs_corpus
def test_every_partition_value_in_the_corpus_decodes() -> None:
    values = _corpus_partition_values()
    assert len(values) > 200  # the corpus has 43 partitioned tables
    kinds = Counter(str(arrow_type) for *_, arrow_type in values)
    assert {"timestamp[us, tz=UTC]", "timestamp[us]", "date32[day]", "decimal128(10, 2)", "bool"} <= set(
        kinds
    )
    for table, column, raw, arrow_type in values:
        value = decode_partition_value(raw, arrow_type, column=column)
        assert (value is None) == (raw in (None, "")), (table, column, raw)
        assert len(partition_column(raw, arrow_type, 2, column=column)) == 2


def _active_adds(table_dir: Path) -> list[dict[str, Any]]:
    """Replay the JSON commits (no checkpoints in the tables used here): the live add actions."""
    live: dict[str, dict[str, Any]] = {}
    for commit in sorted((table_dir / "_delta_log").glob("*.json")):
        for line in commit.read_text(encoding="utf-8").splitlines():
            action = json.loads(line)
            if "add" in action:
                live[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
    return list(live.values())


def _latest_metadata(table_dir: Path) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    for commit in sorted((table_dir / "_delta_log").glob("*.json")):
        for line in commit.read_text(encoding="utf-8").splitlines():
            metadata = json.loads(line).get("metaData", metadata)
    return metadata


@needs_corpus
@pytest.mark.parametrize(
    ("name", "expected_file", "ignore"),
    [
        ("golden/data-reader-partition-values", "table.parquet", ()),
        ("extra/delta-rs/delta-2.2.0-partitioned-types", "table.parquet", ()),
        ("golden/data-reader-escaped-chars", "table.parquet", ()),
        ("peer/partitioned_typed_values", "table.parquet", ()),
        ("peer/partitioned_special_values", "expected_protocol.parquet", ()),
    ],
)
def test_decoded_partition_values_match_expected_rows(
    name: str, expected_file: str, ignore: tuple[str, ...]
) -> None:
    assert CORPUS is not None
    table_dir = CORPUS / "tables" / name
    metadata = _latest_metadata(table_dir)
    columns = [c for c in metadata["partitionColumns"] if c not in ignore]
    types = _partition_types(metadata)
    expected = pq.read_table(CORPUS / "expected" / name / expected_file)
    # Each file contributes its decoded partition tuple once per row it holds.
    actual: Counter[tuple[Any, ...]] = Counter()
    for add in _active_adds(table_dir):
        rows = pq.read_metadata(table_dir / unquote(add["path"])).num_rows
        arrays = [partition_column(add["partitionValues"].get(c), types[c], rows, column=c) for c in columns]
        for row in zip(*(a.to_pylist() for a in arrays), strict=True):
            actual[_canonical(row)] += 1
    wanted = Counter(
        _canonical(row) for row in zip(*(expected.column(c).to_pylist() for c in columns), strict=True)
    )
    assert actual == wanted


def _canonical(row: tuple[Any, ...]) -> tuple[Any, ...]:
    # Expected files carry zoneinfo("UTC"); compare instants, and NaN-safe floats.
    return tuple(
        v.astimezone(UTC) if isinstance(v, dt.datetime) and v.tzinfo else ("NaN" if v != v else v)
        for v in row
    )


@needs_corpus
def test_hive_directory_names_in_the_corpus_unescape_to_the_logged_values() -> None:
    assert CORPUS is not None
    table_dir = CORPUS / "tables" / "golden" / "data-reader-escaped-chars"
    for add in _active_adds(table_dir):
        directory = unquote(add["path"]).split("/")[0]
        column, _, escaped = directory.partition("=")
        assert unescape_partition_path_component(escaped) == add["partitionValues"][column]
        assert partition_path([column], add["partitionValues"]) == directory
        assert (table_dir / directory).is_dir()


def test_parse_timestamp_is_shared_with_expressions() -> None:
    assert parse_timestamp("2020-01-01T00:00:00Z", zoned=False) == dt.datetime(2020, 1, 1)

"""Per-file statistics: exact JSON in delta-spark's shape and formats.

Oracles: PROTOCOL.md "Per-file Statistics", the stats Delta Lake on Spark wrote into the conformance
corpus (``"2021-11-18T02:30:00.123"`` for timestamp_ntz, ``...Z`` for timestamp), and delta-spark's
StatisticsCollection rules (eligible types, leaf counting, the U+FFFD tie-breaker).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_delta.core.schema.mapping import COLUMN_ID_KEY, PHYSICAL_NAME_KEY
from airflow_provider_delta.core.schema.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNtzType,
    TimestampType,
)
from airflow_provider_delta.core.write.stats import (
    NUM_INDEXED_COLS_KEY,
    STATS_COLUMNS_KEY,
    STRING_PREFIX_LENGTH_KEY,
    collect_stats,
    parse_stats_columns,
    stats_leaf_paths,
)
from airflow_provider_delta.exceptions import SchemaError

UTC = dt.timezone.utc


def _stats(
    table: pa.Table, schema: StructType, partitions: tuple[str, ...] = (), **conf: str
) -> dict[str, Any]:
    text = collect_stats(table, schema, configuration=conf, partition_columns=partitions)
    result: dict[str, Any] = json.loads(text)
    return result


def _one(data_type: DataType, values: pa.Array, **conf: str) -> dict[str, Any]:
    schema = StructType((StructField("c", data_type),))
    return _stats(pa.table({"c": values}), schema, (), **conf)


ALL_TYPES = StructType(
    (
        StructField("b", ByteType()),
        StructField("s", ShortType()),
        StructField("i", IntegerType()),
        StructField("l", LongType()),
        StructField("f", FloatType()),
        StructField("d", DoubleType()),
        StructField("dec", DecimalType(10, 2)),
        StructField("dt", DateType()),
        StructField("ts", TimestampType()),
        StructField("ntz", TimestampNtzType()),
        StructField("str", StringType()),
        StructField("bool", BooleanType()),
        StructField("bin", BinaryType()),
        StructField("arr", ArrayType(IntegerType())),
        StructField("m", MapType(StringType(), LongType())),
        StructField(
            "st",
            StructType(
                (
                    StructField("x", LongType()),
                    StructField(
                        "y", StructType((StructField("w", DateType()), StructField("v", BooleanType())))
                    ),
                )
            ),
        ),
        StructField("alln", LongType()),
    )
)


def _all_types_table() -> pa.Table:
    return pa.table(
        {
            "b": pa.array([1, -3, None], pa.int8()),
            "s": pa.array([300, None, -300], pa.int16()),
            "i": pa.array([None, 7, 70000], pa.int32()),
            "l": pa.array([2**40, -(2**62), 5], pa.int64()),
            "f": pa.array([0.5, -1.25, None], pa.float32()),
            "d": pa.array([1e300, -2.5, 0.1], pa.float64()),
            "dec": pa.array(
                [decimal.Decimal("12345678.90"), decimal.Decimal("-0.01"), None], pa.decimal128(10, 2)
            ),
            "dt": pa.array([dt.date(2021, 1, 1), dt.date(1999, 12, 31), None], pa.date32()),
            "ts": pa.array(
                [
                    dt.datetime(2021, 1, 1, 10, 20, 30, 123456, tzinfo=UTC),
                    None,
                    dt.datetime(2020, 5, 6, tzinfo=UTC),
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "ntz": pa.array([dt.datetime(2021, 11, 18, 2, 30, 0, 123999), None, None], pa.timestamp("us")),
            "str": pa.array(["b", "a", "é"]),
            "bool": pa.array([True, False, None]),
            "bin": pa.array([b"\x00", None, b"\xff"]),
            "arr": pa.array([[1, None], None, []], pa.list_(pa.int32())),
            "m": pa.array([[("k", 1)], None, None], pa.map_(pa.string(), pa.int64())),
            "st": pa.array(
                [
                    {"x": 1, "y": {"w": dt.date(2000, 1, 2), "v": True}},
                    None,
                    {"x": None, "y": None},
                ],
                pa.struct([("x", pa.int64()), ("y", pa.struct([("w", pa.date32()), ("v", pa.bool_())]))]),
            ),
            "alln": pa.nulls(3, pa.int64()),
        }
    )


def test_every_type_gets_delta_spark_stats_exactly() -> None:
    text = collect_stats(_all_types_table(), ALL_TYPES, configuration={}, partition_columns=())
    expected = (
        '{"numRecords":3,'
        '"minValues":{"b":-3,"s":-300,"i":7,"l":-4611686018427387904,"f":-1.25,"d":-2.5,"dec":-0.01,'
        '"dt":"1999-12-31","ts":"2020-05-06T00:00:00.000Z","ntz":"2021-11-18T02:30:00.123","str":"a",'
        '"st":{"x":1,"y":{"w":"2000-01-02"}}},'
        '"maxValues":{"b":1,"s":300,"i":70000,"l":1099511627776,"f":0.5,"d":1e+300,"dec":12345678.90,'
        '"dt":"2021-01-01","ts":"2021-01-01T10:20:30.123Z","ntz":"2021-11-18T02:30:00.123","str":"é",'
        '"st":{"x":1,"y":{"w":"2000-01-02"}}},'
        '"nullCount":{"b":1,"s":1,"i":1,"l":0,"f":1,"d":0,"dec":1,"dt":1,"ts":1,"ntz":2,"str":0,"bool":1,'
        '"bin":1,"arr":1,"m":2,"st":{"x":2,"y":{"w":2,"v":2}},"alln":3}}'
    )
    assert text == expected


def test_boolean_binary_array_and_map_columns_get_null_counts_only() -> None:
    stats = _stats(_all_types_table(), ALL_TYPES)
    for name in ("bool", "bin", "arr", "m"):
        assert name not in stats["minValues"]
        assert name not in stats["maxValues"]
        assert name in stats["nullCount"]


def test_all_null_column_has_null_count_equal_to_num_records_and_no_bounds() -> None:
    stats = _one(LongType(), pa.nulls(4, pa.int64()))
    assert stats == {"numRecords": 4, "minValues": {}, "maxValues": {}, "nullCount": {"c": 4}}


def test_column_missing_from_the_data_counts_as_all_null() -> None:
    schema = StructType((StructField("a", LongType()), StructField("gone", StringType())))
    stats = _stats(pa.table({"a": [1, 2]}), schema)
    assert stats["nullCount"] == {"a": 0, "gone": 2}
    assert stats["minValues"] == {"a": 1}


def test_leaf_of_a_null_struct_counts_as_null() -> None:
    schema = StructType((StructField("st", StructType((StructField("x", LongType()),))),))
    data = pa.array([{"x": 1}, None, {"x": None}], pa.struct([("x", pa.int64())]))
    stats = _stats(pa.table({"st": data}), schema)
    assert stats["nullCount"] == {"st": {"x": 2}}
    assert stats["minValues"] == {"st": {"x": 1}}


def test_empty_table_has_zero_counts_and_no_bounds() -> None:
    stats = _one(LongType(), pa.array([], pa.int64()))
    assert stats == {"numRecords": 0, "minValues": {}, "maxValues": {}, "nullCount": {"c": 0}}


# ------------------------------------------------------------------------------------------ strings


def test_long_string_min_is_truncated_and_max_gets_the_tie_breaker() -> None:
    stats = _one(StringType(), pa.array(["a" * 40, "b" * 33, "a" * 32]))
    assert stats["minValues"] == {"c": "a" * 32}
    assert stats["maxValues"] == {"c": "b" * 32 + "\ufffd"}


def test_string_of_exactly_the_prefix_length_is_kept_whole() -> None:
    stats = _one(StringType(), pa.array(["z" * 32]))
    assert stats["minValues"] == stats["maxValues"] == {"c": "z" * 32}


def test_max_keeps_characters_above_the_tie_breaker_after_the_prefix() -> None:
    # U+FFFF and a supplementary character sort above U+FFFD: cutting before them would make the
    # max smaller than the value, so they are kept until a smaller character.
    value = "m" * 32 + "\uffff\U0001f600" + "a" + "tail"
    stats = _one(StringType(), pa.array([value]))
    assert stats["maxValues"] == {"c": "m" * 32 + "\uffff\U0001f600\ufffd"}
    assert stats["maxValues"]["c"] >= value


def test_string_prefix_length_is_configurable() -> None:
    stats = _one(StringType(), pa.array(["abcdef"]), **{STRING_PREFIX_LENGTH_KEY: "3"})
    assert stats["minValues"] == {"c": "abc"}
    assert stats["maxValues"] == {"c": "abc\ufffd"}


def test_strings_compare_in_utf8_byte_order() -> None:
    stats = _one(StringType(), pa.array(["Z", "a", "\u00e9", "\U0001f600"]))
    assert stats["minValues"] == {"c": "Z"}
    assert stats["maxValues"] == {"c": "\U0001f600"}


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.sampled_from(["a", "z", "\ufffc", "\ufffd", "\uffff", "\U0001f600"])), min_size=1
    ),
    st.integers(0, 5),
)
def test_truncated_string_bounds_still_bound_every_value(values: list[str], prefix: int) -> None:
    stats = _one(StringType(), pa.array(values), **{STRING_PREFIX_LENGTH_KEY: str(prefix)})
    assert all(stats["minValues"]["c"] <= v <= stats["maxValues"]["c"] for v in values)


# --------------------------------------------------------------------------------- dates and times


def test_timestamps_are_truncated_down_to_milliseconds() -> None:
    values = [
        dt.datetime(2021, 1, 1, 10, 20, 30, 123999, tzinfo=UTC),
        dt.datetime(2021, 1, 1, 10, 20, 30, 999999, tzinfo=UTC),
    ]
    stats = _one(TimestampType(), pa.array(values, pa.timestamp("us", tz="UTC")))
    assert stats["minValues"] == {"c": "2021-01-01T10:20:30.123Z"}
    assert stats["maxValues"] == {"c": "2021-01-01T10:20:30.999Z"}


def test_timestamps_before_the_epoch_are_floored() -> None:
    values = pa.array([-1, -1001], pa.timestamp("us", tz="UTC"))
    stats = _one(TimestampType(), values)
    assert stats["minValues"] == {"c": "1969-12-31T23:59:59.998Z"}
    assert stats["maxValues"] == {"c": "1969-12-31T23:59:59.999Z"}


def test_timestamps_in_other_units_and_zones_are_stated_in_utc() -> None:
    values = pa.array([1_609_496_430_123_456_789], pa.timestamp("ns", tz="Europe/Paris"))
    stats = _one(TimestampType(), values)
    assert stats["minValues"] == {"c": "2021-01-01T10:20:30.123Z"}


def test_timestamp_ntz_has_no_zone_and_early_years_are_zero_padded() -> None:
    stats = _one(TimestampNtzType(), pa.array([dt.datetime(999, 3, 4, 5, 6, 7)], pa.timestamp("us")))
    assert stats["minValues"] == {"c": "0999-03-04T05:06:07.000"}


def test_dates_are_iso_days() -> None:
    stats = _one(DateType(), pa.array([dt.date(1, 1, 1), dt.date(9999, 12, 31)]))
    assert stats["minValues"] == {"c": "0001-01-01"}
    assert stats["maxValues"] == {"c": "9999-12-31"}


# --------------------------------------------------------------------------------- numbers


def test_decimals_are_exact_json_numbers() -> None:
    big = decimal.Decimal("12345678901234567890.123456789012345678")
    small = decimal.Decimal("-12345678901234567890.123456789012345678")  # not -big: that rounds to 28 digits
    values = pa.array([big, small, decimal.Decimal("0.000000000000000001")], pa.decimal128(38, 18))
    text = collect_stats(
        pa.table({"c": values}),
        StructType((StructField("c", DecimalType(38, 18)),)),
        configuration={},
        partition_columns=(),
    )
    assert '"minValues":{"c":-12345678901234567890.123456789012345678}' in text
    assert '"maxValues":{"c":12345678901234567890.123456789012345678}' in text
    parsed = json.loads(text, parse_float=decimal.Decimal)
    assert parsed["maxValues"]["c"] == big


def test_float_nan_drops_the_max_but_keeps_the_min() -> None:
    stats = _one(DoubleType(), pa.array([1.5, float("nan"), -2.0, None]))
    assert stats["minValues"] == {"c": -2.0}
    assert stats["maxValues"] == {}
    assert stats["nullCount"] == {"c": 1}


def test_all_nan_column_has_no_bounds() -> None:
    stats = _one(FloatType(), pa.array([float("nan")], pa.float32()))
    assert stats["minValues"] == stats["maxValues"] == {}


def test_infinite_bounds_are_left_out() -> None:
    stats = _one(DoubleType(), pa.array([float("-inf"), 3.0, float("inf")]))
    assert stats["minValues"] == stats["maxValues"] == {}
    stats = _one(DoubleType(), pa.array([float("-inf"), 3.0]))
    assert stats["minValues"] == {}
    assert stats["maxValues"] == {"c": 3.0}


def test_float32_bounds_are_the_exact_stored_value() -> None:
    stats = _one(FloatType(), pa.array([0.1], pa.float32()))
    assert pa.scalar(stats["minValues"]["c"], pa.float32()).as_py() == pa.scalar(0.1, pa.float32()).as_py()
    assert stats["minValues"]["c"] == pa.scalar(0.1, pa.float32()).as_py()


def test_dictionary_encoded_strings_are_decoded() -> None:
    stats = _one(StringType(), pa.array(["b", "a", "b"]).dictionary_encode())
    assert stats["minValues"] == {"c": "a"}
    assert stats["maxValues"] == {"c": "b"}


# ------------------------------------------------------------------------------- column mapping


def _mapped(name: str, data_type: DataType, column_id: int) -> StructField:
    return StructField(
        name, data_type, metadata={COLUMN_ID_KEY: column_id, PHYSICAL_NAME_KEY: f"col-{column_id}"}
    )


MAPPED = StructType(
    (
        _mapped("id", LongType(), 1),
        _mapped("nested", StructType((_mapped("inner", StringType(), 3),)), 2),
        _mapped("part", StringType(), 4),
    )
)


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping_keys_stats_by_physical_names(mode: str) -> None:
    table = pa.table({"id": [1, 2], "nested": [{"inner": "x"}, {"inner": None}]})
    stats = _stats(table, MAPPED, ("part",), **{"delta.columnMapping.mode": mode})
    assert stats == {
        "numRecords": 2,
        "minValues": {"col-1": 1, "col-2": {"col-3": "x"}},
        "maxValues": {"col-1": 2, "col-2": {"col-3": "x"}},
        "nullCount": {"col-1": 0, "col-2": {"col-3": 1}},
    }


def test_column_mapping_stats_read_data_named_by_physical_names_too() -> None:
    table = pa.table({"col-1": [5], "col-2": [{"col-3": "q"}]})
    stats = _stats(table, MAPPED, ("part",), **{"delta.columnMapping.mode": "name"})
    assert stats["minValues"] == {"col-1": 5, "col-2": {"col-3": "q"}}


def test_without_column_mapping_logical_names_are_used_even_with_physical_metadata() -> None:
    stats = _stats(pa.table({"id": [1]}), MAPPED, ("part",))
    # A struct with eligible leaves stays in minValues even when they are all null (Spark's to_json).
    assert stats["minValues"] == {"id": 1, "nested": {}}
    assert stats["nullCount"] == {"id": 0, "nested": {"inner": 1}}


# ------------------------------------------------------------------------------- which columns

WIDE = StructType(
    (
        StructField("p", StringType()),
        StructField("a", LongType()),
        StructField("st", StructType((StructField("x", LongType()), StructField("y", LongType())))),
        StructField("arr", ArrayType(LongType())),
        StructField("b", LongType()),
    )
)
WIDE_DATA = pa.table(
    {
        "p": ["k"],
        "a": [1],
        "st": [{"x": 2, "y": 3}],
        "arr": [[4]],
        "b": [5],
    }
)


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        ("0", []),
        ("1", [("a",)]),
        ("2", [("a",), ("st", "x")]),
        ("4", [("a",), ("st", "x"), ("st", "y"), ("arr",)]),
        ("32", [("a",), ("st", "x"), ("st", "y"), ("arr",), ("b",)]),
        ("-1", [("a",), ("st", "x"), ("st", "y"), ("arr",), ("b",)]),
    ],
)
def test_num_indexed_cols_counts_leaves_and_skips_partition_columns(
    limit: str, expected: list[tuple[str, ...]]
) -> None:
    conf = {NUM_INDEXED_COLS_KEY: limit}
    assert stats_leaf_paths(WIDE, configuration=conf, partition_columns=["P"]) == expected


def test_num_indexed_cols_limit_shapes_the_json() -> None:
    stats = _stats(WIDE_DATA, WIDE, ("p",), **{NUM_INDEXED_COLS_KEY: "2"})
    assert stats == {
        "numRecords": 1,
        "minValues": {"a": 1, "st": {"x": 2}},
        "maxValues": {"a": 1, "st": {"x": 2}},
        "nullCount": {"a": 0, "st": {"x": 0}},
    }


def test_zero_indexed_columns_leaves_only_the_record_count() -> None:
    assert _stats(WIDE_DATA, WIDE, ("p",), **{NUM_INDEXED_COLS_KEY: "0"}) == {"numRecords": 1}


def test_default_indexes_the_first_32_leaves() -> None:
    schema = StructType(tuple(StructField(f"c{i}", LongType()) for i in range(40)))
    table = pa.table({f"c{i}": [i] for i in range(40)})
    stats = _stats(table, schema)
    assert list(stats["nullCount"]) == [f"c{i}" for i in range(32)]


def test_stats_columns_pick_exactly_the_listed_columns_ignoring_case() -> None:
    conf = {STATS_COLUMNS_KEY: "B, ST.y", NUM_INDEXED_COLS_KEY: "1"}
    assert stats_leaf_paths(WIDE, configuration=conf, partition_columns=["p"]) == [("st", "y"), ("b",)]
    stats = _stats(WIDE_DATA, WIDE, ("p",), **conf)
    assert stats["minValues"] == {"st": {"y": 3}, "b": 5}


def test_stats_columns_naming_a_struct_bring_all_its_leaves() -> None:
    conf = {STATS_COLUMNS_KEY: "st,arr"}
    assert stats_leaf_paths(WIDE, configuration=conf, partition_columns=["p"]) == [
        ("st", "x"),
        ("st", "y"),
        ("arr",),
    ]
    stats = _stats(WIDE_DATA, WIDE, ("p",), **conf)
    assert stats["minValues"] == {"st": {"x": 2, "y": 3}}
    assert stats["nullCount"] == {"st": {"x": 0, "y": 0}, "arr": 0}


def test_stats_columns_ignore_partition_and_unknown_columns() -> None:
    conf = {STATS_COLUMNS_KEY: "p, nope, a.deeper"}
    assert stats_leaf_paths(WIDE, configuration=conf, partition_columns=["p"]) == []
    assert _stats(WIDE_DATA, WIDE, ("p",), **conf) == {"numRecords": 1}


def test_stats_columns_with_back_quoted_names() -> None:
    schema = StructType((StructField("a.b", StructType((StructField("c`d", LongType()),))),))
    conf = {STATS_COLUMNS_KEY: "`a.b`.`c``d`"}
    assert stats_leaf_paths(schema, configuration=conf, partition_columns=()) == [("a.b", "c`d")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("  ", []),
        ("a", [("a",)]),
        (" a , b.c ", [("a",), ("b", "c")]),
        ("`x,y`.z", [("x,y", "z")]),
        ("`a``b`", [("a`b",)]),
        ("` sp `", [(" sp ",)]),
        (" `a.b` . c , `d` ", [("a.b", "c"), ("d",)]),
    ],
)
def test_parse_stats_columns(text: str, expected: list[tuple[str, ...]]) -> None:
    assert parse_stats_columns(text) == expected


@pytest.mark.parametrize("text", ["a,,b", "a.", "`open", ".a", "a`b`", "`a`b", "`a``"])
def test_malformed_stats_columns_raise(text: str) -> None:
    with pytest.raises(SchemaError, match=r"Cannot parse delta\.dataSkippingStatsColumns"):
        stats_leaf_paths(WIDE, configuration={STATS_COLUMNS_KEY: text}, partition_columns=())


@pytest.mark.parametrize(
    ("key", "value"),
    [(NUM_INDEXED_COLS_KEY, "-2"), (NUM_INDEXED_COLS_KEY, "x"), (STRING_PREFIX_LENGTH_KEY, "-1")],
)
def test_malformed_stats_settings_raise(key: str, value: str) -> None:
    with pytest.raises(SchemaError, match=f"Cannot collect statistics: {key}"):
        _stats(WIDE_DATA, WIDE, ("p",), **{key: value})


def test_void_column_is_counted_as_all_null() -> None:
    schema = StructType((StructField("v", NullType()),))
    assert _stats(pa.table({"v": pa.nulls(2)}), schema) == {"numRecords": 2, "nullCount": {"v": 2}}


def test_output_is_compact_json_that_orjson_reads_back() -> None:
    text = collect_stats(_all_types_table(), ALL_TYPES, configuration={}, partition_columns=())
    assert " " not in text.replace("\u00e9", "")
    assert orjson.loads(text)["numRecords"] == 3

from __future__ import annotations

import datetime as dt
import decimal
import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core.schema.arrow import PARQUET_FIELD_ID_KEY, to_arrow_schema
from airflow_provider_delta.core.schema.conform import (
    conform_array,
    conform_batch,
    conform_table,
    matching_file_columns,
    null_table,
)
from airflow_provider_delta.core.schema.mapping import COLUMN_ID_KEY, PHYSICAL_NAME_KEY
from airflow_provider_delta.core.schema.types import (
    ArrayType,
    DataType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampNtzType,
    TimestampType,
)
from airflow_provider_delta.exceptions import SchemaError, SchemaMismatchError

UTC = dt.timezone.utc


def _mapped(name: str, data_type: DataType, column_id: int, physical: str) -> StructField:
    return StructField(name, data_type, metadata={COLUMN_ID_KEY: column_id, PHYSICAL_NAME_KEY: physical})


def _roundtrip_parquet(table: pa.Table) -> pa.Table:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return pq.read_table(pa.BufferReader(buffer.getvalue()))


def _with_id(name: str, data: pa.Array, column_id: int) -> tuple[pa.Field, pa.Array]:
    return pa.field(name, data.type, metadata={PARQUET_FIELD_ID_KEY: str(column_id).encode()}), data


def _assert_conformed(result: pa.Table, schema: StructType) -> None:
    assert result.schema == to_arrow_schema(schema)
    for column, field in zip(result.columns, result.schema, strict=True):
        assert column.type == field.type


SIMPLE = StructType((StructField("id", LongType()), StructField("name", StringType())))


def test_reordered_columns_come_back_in_schema_order() -> None:
    table = pa.table({"name": ["a", "b"], "id": pa.array([1, 2], pa.int64())})
    result = conform_table(table, SIMPLE, mode="none")
    _assert_conformed(result, SIMPLE)
    assert result.to_pylist() == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]


def test_columns_missing_from_the_file_are_null_filled_and_extra_ones_dropped() -> None:
    table = pa.table({"id": pa.array([1, 2], pa.int64()), "dropped": [True, False]})
    result = conform_table(table, SIMPLE, mode="none")
    _assert_conformed(result, SIMPLE)
    assert result.to_pylist() == [{"id": 1, "name": None}, {"id": 2, "name": None}]


def test_names_differing_only_in_case_are_matched() -> None:
    table = pa.table({"ID": pa.array([7], pa.int64()), "Name": ["x"]})
    assert conform_table(table, SIMPLE, mode="none").to_pylist() == [{"id": 7, "name": "x"}]


def test_exact_name_wins_over_a_case_insensitive_match() -> None:
    table = pa.table({"ID": pa.array([1], pa.int64()), "id": pa.array([2], pa.int64())})
    assert conform_table(table, SIMPLE, mode="none").column("id").to_pylist() == [2]


def test_ambiguous_case_insensitive_candidates_are_not_guessed() -> None:
    table = pa.table({"ID": pa.array([1], pa.int64()), "Id": pa.array([2], pa.int64())})
    assert conform_table(table, SIMPLE, mode="none").column("id").to_pylist() == [None]


def test_missing_nested_struct_field_is_null_filled_and_struct_nulls_are_kept() -> None:
    schema = StructType(
        (
            StructField(
                "s",
                StructType((StructField("a", LongType()), StructField("added", StringType()))),
            ),
        )
    )
    source = pa.array(
        [{"a": 1, "old": "x"}, None, {"a": 3, "old": "z"}],
        pa.struct([("a", pa.int64()), ("old", pa.string())]),
    )
    result = conform_table(_roundtrip_parquet(pa.table({"s": source})), schema, mode="none")
    _assert_conformed(result, schema)
    assert result.column("s").to_pylist() == [{"a": 1, "added": None}, None, {"a": 3, "added": None}]


def test_list_of_structs_and_map_of_structs_are_conformed_recursively() -> None:
    inner = StructType((StructField("x", LongType()), StructField("y", StringType())))
    schema = StructType(
        (
            StructField("l", ArrayType(inner)),
            StructField("m", MapType(StringType(), inner)),
        )
    )
    inner_file = pa.struct([("X", pa.int32())])
    table = pa.table(
        {
            "m": pa.array([[("k", {"X": 1})], None, []], pa.map_(pa.string(), inner_file)),
            "l": pa.array([[{"X": 1}, None], None, [{"X": 2}]], pa.list_(inner_file)),
        }
    )
    result = conform_table(_roundtrip_parquet(table), schema, mode="none")
    _assert_conformed(result, schema)
    assert result.column("l").to_pylist() == [[{"x": 1, "y": None}, None], None, [{"x": 2, "y": None}]]
    assert result.column("m").to_pylist() == [[("k", {"x": 1, "y": None})], None, []]


def test_sliced_nested_arrays_are_conformed_from_their_offset() -> None:
    inner = StructType((StructField("x", LongType()),))
    schema = StructType(
        (StructField("l", ArrayType(inner)), StructField("m", MapType(StringType(), LongType())))
    )
    table = pa.table(
        {
            "l": pa.array([[{"x": 1}], [{"x": 2}, {"x": 3}], None], pa.list_(pa.struct([("x", pa.int32())]))),
            "m": pa.array([[("a", 1)], [("b", 2)], [("c", 3)]], pa.map_(pa.string(), pa.int32())),
        }
    ).slice(1, 2)
    result = conform_table(table, schema, mode="none")
    assert result.to_pylist() == [
        {"l": [{"x": 2}, {"x": 3}], "m": [("b", 2)]},
        {"l": None, "m": [("c", 3)]},
    ]


def test_name_mode_matches_physical_names_recursively() -> None:
    schema = StructType(
        (
            _mapped("id", LongType(), 1, "col-a"),
            _mapped("s", StructType((_mapped("renamed", StringType(), 3, "col-c"),)), 2, "col-b"),
        )
    )
    table = pa.table(
        {
            "col-b": pa.array([{"col-c": "v"}], pa.struct([("col-c", pa.string())])),
            "col-a": pa.array([5], pa.int64()),
            "id": pa.array([99], pa.int64()),
        }
    )
    result = conform_table(table, schema, mode="name")
    _assert_conformed(result, schema)
    assert result.to_pylist() == [{"id": 5, "s": {"renamed": "v"}}]


def test_id_mode_matches_parquet_field_ids_even_when_physical_names_differ() -> None:
    schema = StructType(
        (
            _mapped("id", LongType(), 1, "col-new-id"),
            _mapped("s", StructType((_mapped("x", IntegerType(), 3, "col-new-x"),)), 2, "col-new-s"),
            _mapped("by_name", StringType(), 4, "col-by-name"),
        )
    )
    inner_field, _ = _with_id("old-x", pa.array([0], pa.int32()), 3)
    struct_type = pa.struct([inner_field])
    fields_and_data = [
        _with_id("old-s", pa.array([{"old-x": 42}], struct_type), 2),
        _with_id("old-id", pa.array([7], pa.int64()), 1),
        (pa.field("col-by-name", pa.string()), pa.array(["fallback"])),
        _with_id("col-new-id", pa.array([-1], pa.int64()), 99),
    ]
    table = pa.Table.from_arrays(
        [d for _, d in fields_and_data], schema=pa.schema([f for f, _ in fields_and_data])
    )
    result = conform_table(_roundtrip_parquet(table), schema, mode="id")
    _assert_conformed(result, schema)
    assert result.to_pylist() == [{"id": 7, "s": {"x": 42}, "by_name": "fallback"}]


def test_id_mode_never_matches_a_column_that_carries_another_id_by_name() -> None:
    schema = StructType((_mapped("id", LongType(), 1, "col-id"),))
    column_field, data = _with_id("col-id", pa.array([3], pa.int64()), 2)
    table = pa.Table.from_arrays([data], schema=pa.schema([column_field]))
    assert conform_table(table, schema, mode="id").column("id").to_pylist() == [None]


def test_nanosecond_and_millisecond_timestamps_become_utc_microseconds() -> None:
    schema = StructType(
        (
            StructField("ns", TimestampType()),
            StructField("ms_naive", TimestampType()),
            StructField("ny", TimestampType()),
            StructField("ntz", TimestampNtzType()),
        )
    )
    table = pa.table(
        {
            "ns": pa.array([1_000_001_999], pa.timestamp("ns", tz="UTC")),
            "ms_naive": pa.array([1_500], pa.timestamp("ms")),
            "ny": pa.array([0], pa.timestamp("s", tz="America/New_York")),
            "ntz": pa.array([1_000], pa.timestamp("ns")),
        }
    )
    result = conform_table(table, schema, mode="none")
    _assert_conformed(result, schema)
    row = result.to_pylist()[0]
    assert row["ns"] == dt.datetime(1970, 1, 1, 0, 0, 1, 1, tzinfo=UTC)
    assert row["ms_naive"] == dt.datetime(1970, 1, 1, 0, 0, 1, 500_000, tzinfo=UTC)
    assert row["ny"] == dt.datetime(1970, 1, 1, tzinfo=UTC)
    assert row["ntz"] == dt.datetime(1970, 1, 1, 0, 0, 0, 1)


def test_int96_timestamps_read_as_nanoseconds_become_microseconds() -> None:
    schema = StructType((StructField("t", TimestampType()),))
    value = dt.datetime(2021, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
    buffer = io.BytesIO()
    pq.write_table(
        pa.table({"t": pa.array([value], pa.timestamp("us", tz="UTC"))}),
        buffer,
        use_deprecated_int96_timestamps=True,
    )
    table = pq.read_table(pa.BufferReader(buffer.getvalue()))
    assert table.schema.field("t").type.unit == "ns"
    assert conform_table(table, schema, mode="none").column("t").to_pylist() == [value]


def test_microsecond_timestamps_far_outside_the_nanosecond_range_do_not_overflow() -> None:
    schema = StructType((StructField("t", TimestampType()),))
    far = dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    table = pa.table({"t": pa.array([far, None], pa.timestamp("us"))})
    assert conform_table(table, schema, mode="none").column("t").to_pylist() == [far, None]
    seconds = pa.table({"t": pa.array([-62135596800], pa.timestamp("s"))})  # 0001-01-01
    result = conform_table(seconds, schema, mode="none").column("t").to_pylist()
    assert result == [dt.datetime(1, 1, 1, tzinfo=UTC)]


def test_dictionary_and_large_string_columns_become_plain_strings() -> None:
    schema = StructType((StructField("d", StringType()), StructField("l", StringType())))
    table = pa.table(
        {
            "d": pa.array(["a", "b", "a"]).dictionary_encode(),
            "l": pa.array(["x", None, "z"], pa.large_string()),
        }
    )
    result = conform_table(table, schema, mode="none")
    _assert_conformed(result, schema)
    assert result.to_pylist() == [{"d": "a", "l": "x"}, {"d": "b", "l": None}, {"d": "a", "l": "z"}]


def test_widened_integer_date_and_decimal_types_are_cast() -> None:
    schema = StructType(
        (
            StructField("i", LongType()),
            StructField("d", DecimalType(12, 4)),
            StructField("date_to_ntz", TimestampNtzType()),
            StructField("int_to_decimal", DecimalType(20, 0)),
        )
    )
    table = pa.table(
        {
            "i": pa.array([1, None], pa.int16()),
            "d": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(5, 2)),
            "date_to_ntz": pa.array([dt.date(2020, 1, 2), None], pa.date32()),
            "int_to_decimal": pa.array([12, None], pa.int32()),
        }
    )
    result = conform_table(_roundtrip_parquet(table), schema, mode="none")
    _assert_conformed(result, schema)
    assert result.to_pylist()[0] == {
        "i": 1,
        "d": decimal.Decimal("1.2500"),
        "date_to_ntz": dt.datetime(2020, 1, 2),
        "int_to_decimal": decimal.Decimal(12),
    }


def test_void_column_is_all_null_whatever_the_file_holds() -> None:
    schema = StructType((StructField("v", NullType()),))
    result = conform_table(pa.table({"v": [1, 2]}), schema, mode="none")
    _assert_conformed(result, schema)
    assert result.column("v").null_count == 2


def test_incompatible_file_type_is_a_schema_mismatch_naming_the_column() -> None:
    schema = StructType((StructField("s", StructType((StructField("n", DateType()),))),))
    table = pa.table({"s": pa.array([{"n": [1]}], pa.struct([("n", pa.list_(pa.int64()))]))})
    with pytest.raises(SchemaMismatchError, match=r"Cannot read column 's\.n'"):
        conform_table(table, schema, mode="none")


def test_struct_expected_but_scalar_found_is_a_schema_mismatch() -> None:
    schema = StructType((StructField("s", StructType((StructField("n", LongType()),))),))
    with pytest.raises(SchemaMismatchError, match="expected a struct"):
        conform_table(pa.table({"s": [1]}), schema, mode="none")


def test_invalid_mode_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="'sideways'"):
        conform_table(pa.table({"id": [1]}), SIMPLE, mode="sideways")  # type: ignore[arg-type]


def test_multi_chunk_columns_keep_every_row() -> None:
    chunked = pa.chunked_array([pa.array([1, 2], pa.int32()), pa.array([3], pa.int32())])
    table = pa.table({"id": chunked})
    result = conform_table(table, SIMPLE, mode="none")
    assert result.num_rows == 3
    assert result.column("id").to_pylist() == [1, 2, 3]


def test_non_nullable_fields_appear_non_nullable_in_the_result() -> None:
    schema = StructType((StructField("id", LongType(), nullable=False),))
    result = conform_table(pa.table({"id": pa.array([1], pa.int64())}), schema, mode="none")
    assert result.schema.field("id").nullable is False


def test_unchanged_data_is_passed_through_without_copying() -> None:
    column = pa.array([1, 2], pa.int64())
    result = conform_table(pa.table({"id": column, "name": ["a", "b"]}), SIMPLE, mode="none")
    assert result.column("id").chunk(0).buffers()[1].address == column.buffers()[1].address


def test_conform_batch_matches_conform_table() -> None:
    batch = pa.record_batch({"NAME": ["q"], "id": pa.array([1], pa.int8())})
    result = conform_batch(batch, SIMPLE, mode="none")
    assert result.schema == to_arrow_schema(SIMPLE)
    assert (
        result.to_pylist() == conform_table(pa.Table.from_batches([batch]), SIMPLE, mode="none").to_pylist()
    )


def test_conform_array_converts_one_column() -> None:
    result = conform_array(pa.array([[1]], pa.large_list(pa.int8())), ArrayType(LongType()), mode="none")
    assert result.type == pa.list_(pa.field("element", pa.int64()))
    assert result.to_pylist() == [[1]]


def test_empty_schema_keeps_the_row_count() -> None:
    assert conform_table(pa.table({"a": [1, 2, 3]}), StructType(()), mode="none").num_rows == 3
    assert null_table(StructType(()), 4).num_rows == 4


def test_null_table_has_the_logical_schema_and_only_nulls() -> None:
    schema = StructType(
        (
            StructField("s", StructType((StructField("a", LongType()),))),
            StructField("m", MapType(StringType(), ArrayType(TimestampType()))),
        )
    )
    table = null_table(schema, 3)
    _assert_conformed(table, schema)
    assert table.num_rows == 3
    assert all(column.null_count == 3 for column in table.columns)


def test_empty_table_conforms_to_zero_rows() -> None:
    table = pa.table({"id": pa.array([], pa.int32())})
    result = conform_table(table, SIMPLE, mode="none")
    _assert_conformed(result, SIMPLE)
    assert result.num_rows == 0


def test_matching_file_columns_lists_only_the_columns_the_schema_needs_in_file_order() -> None:
    schema = StructType((_mapped("b", LongType(), 2, "col-b"), _mapped("a", LongType(), 1, "col-a")))
    fields = [
        _with_id("col-a", pa.array([1], pa.int64()), 1)[0],
        pa.field("unused", pa.int64()),
        _with_id("renamed-b", pa.array([1], pa.int64()), 2)[0],
    ]
    file_schema = pa.schema(fields)
    assert matching_file_columns(file_schema, schema, mode="id") == ["col-a", "renamed-b"]
    assert matching_file_columns(file_schema, schema, mode="name") == ["col-a"]


def test_reading_only_the_matching_columns_gives_the_same_result() -> None:
    schema = StructType((StructField("id", LongType()),))
    table = _roundtrip_parquet(pa.table({"other": ["x"], "Id": pa.array([4], pa.int64())}))
    columns = matching_file_columns(table.schema, schema, mode="none")
    assert conform_table(table.select(columns), schema, mode="none") == conform_table(
        table, schema, mode="none"
    )

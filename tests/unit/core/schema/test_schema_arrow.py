from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core.schema.arrow import (
    PARQUET_FIELD_ID_KEY,
    from_arrow_schema,
    from_arrow_type,
    to_arrow_schema,
    to_arrow_type,
)
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
    UnsupportedType,
    schema_from_json,
)
from airflow_provider_delta.exceptions import SchemaError, UnsupportedFeatureError


@pytest.mark.parametrize(
    ("delta_type", "arrow_type"),
    [
        (ByteType(), pa.int8()),
        (ShortType(), pa.int16()),
        (IntegerType(), pa.int32()),
        (LongType(), pa.int64()),
        (FloatType(), pa.float32()),
        (DoubleType(), pa.float64()),
        (DecimalType(10, 2), pa.decimal128(10, 2)),
        (DecimalType(38, 38), pa.decimal128(38, 38)),
        (StringType(), pa.string()),
        (BinaryType(), pa.binary()),
        (BooleanType(), pa.bool_()),
        (DateType(), pa.date32()),
        (TimestampType(), pa.timestamp("us", tz="UTC")),
        (TimestampNtzType(), pa.timestamp("us")),
        (NullType(), pa.null()),
    ],
)
def test_primitive_types_map_to_their_arrow_types_and_back(
    delta_type: DataType, arrow_type: pa.DataType
) -> None:
    assert to_arrow_type(delta_type) == arrow_type
    assert from_arrow_type(arrow_type) == delta_type


def test_nested_types_carry_nullability_on_child_fields() -> None:
    array = to_arrow_type(ArrayType(LongType(), contains_null=False))
    assert array.value_field == pa.field("element", pa.int64(), nullable=False)
    map_type = to_arrow_type(MapType(StringType(), DoubleType(), value_contains_null=False))
    assert map_type.key_field == pa.field("key", pa.string(), nullable=False)
    assert map_type.item_field == pa.field("value", pa.float64(), nullable=False)
    struct = to_arrow_type(StructType((StructField("a", LongType(), nullable=False),)))
    assert struct.field(0) == pa.field("a", pa.int64(), nullable=False)


def test_logical_arrow_schema_uses_display_names_and_no_metadata() -> None:
    schema = StructType(
        (StructField("id", LongType(), metadata={"delta.columnMapping.id": 1, "comment": "x"}),)
    )
    arrow_schema = to_arrow_schema(schema)
    assert arrow_schema.names == ["id"]
    assert arrow_schema.field("id").metadata is None


def test_physical_arrow_schema_uses_physical_names_and_parquet_field_ids_recursively() -> None:
    schema = schema_from_json(
        {
            "type": "struct",
            "fields": [
                {
                    "name": "s",
                    "type": {
                        "type": "struct",
                        "fields": [
                            {
                                "name": "inner",
                                "type": "long",
                                "nullable": True,
                                "metadata": {
                                    "delta.columnMapping.id": 2,
                                    "delta.columnMapping.physicalName": "col-inner",
                                },
                            },
                            {"name": "plain", "type": "string", "nullable": True, "metadata": {}},
                        ],
                    },
                    "nullable": True,
                    "metadata": {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-s"},
                }
            ],
        }
    )
    arrow_schema = to_arrow_schema(schema, physical=True)
    outer = arrow_schema.field(0)
    assert outer.name == "col-s"
    assert outer.metadata == {PARQUET_FIELD_ID_KEY: b"1"}
    assert outer.type.field(0).name == "col-inner"
    assert outer.type.field(0).metadata == {PARQUET_FIELD_ID_KEY: b"2"}
    assert outer.type.field(1).name == "plain"
    assert outer.type.field(1).metadata is None


def test_physical_schema_writes_parquet_field_ids_that_pyarrow_reads_back() -> None:
    schema = StructType(
        (
            StructField(
                "id",
                LongType(),
                metadata={"delta.columnMapping.id": 5, "delta.columnMapping.physicalName": "col-x"},
            ),
        )
    )
    table = pa.Table.from_arrays([pa.array([1, 2])], schema=to_arrow_schema(schema, physical=True))
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    read_back = pq.read_schema(pa.BufferReader(buffer.getvalue()))
    assert read_back.field("col-x").metadata[PARQUET_FIELD_ID_KEY] == b"5"


def test_unsupported_type_cannot_be_converted_to_arrow() -> None:
    schema = StructType((StructField("v", UnsupportedType("variant")),))
    with pytest.raises(UnsupportedFeatureError, match="'variant'") as info:
        to_arrow_schema(schema)
    assert info.value.features == ("variant",)


@pytest.mark.parametrize(
    ("arrow_type", "delta_type"),
    [
        (pa.large_string(), StringType()),
        (pa.string_view(), StringType()),
        (pa.large_binary(), BinaryType()),
        (pa.binary_view(), BinaryType()),
        (pa.binary(16), BinaryType()),
        (pa.large_list(pa.int32()), ArrayType(IntegerType())),
        (pa.list_(pa.int32(), 3), ArrayType(IntegerType())),
        (pa.list_view(pa.int32()), ArrayType(IntegerType())),
        (pa.timestamp("ns"), TimestampNtzType()),
        (pa.timestamp("ms", tz="America/New_York"), TimestampType()),
        (pa.timestamp("s", tz="+01:00"), TimestampType()),
        (pa.dictionary(pa.int32(), pa.string()), StringType()),
        (pa.uint8(), ShortType()),
        (pa.uint16(), IntegerType()),
        (pa.uint32(), LongType()),
        (pa.float16(), FloatType()),
        (pa.date64(), DateType()),
        (pa.decimal256(20, 4), DecimalType(20, 4)),
        (pa.null(), NullType()),
    ],
)
def test_arrow_variants_map_to_the_closest_delta_type(arrow_type: pa.DataType, delta_type: DataType) -> None:
    assert from_arrow_type(arrow_type) == delta_type


@pytest.mark.parametrize("arrow_type", [pa.uint64(), pa.time64("us"), pa.duration("s"), pa.decimal256(40, 2)])
def test_arrow_types_without_delta_equivalent_are_schema_errors(arrow_type: pa.DataType) -> None:
    with pytest.raises(SchemaError, match="Cannot convert"):
        from_arrow_schema(pa.schema([pa.field("c", arrow_type)]))


def test_nested_unconvertible_arrow_type_names_the_field() -> None:
    with pytest.raises(SchemaError, match=r"Cannot convert field 'outer\.x' to Delta"):
        from_arrow_schema(pa.schema([pa.field("outer", pa.struct([pa.field("x", pa.uint64())]))]))


def test_arrow_map_and_list_nullability_becomes_delta_nullability() -> None:
    arrow_schema = pa.schema(
        [
            pa.field("l", pa.list_(pa.field("item", pa.int64(), nullable=False)), nullable=False),
            pa.field("m", pa.map_(pa.string(), pa.field("v", pa.int64(), nullable=False))),
        ]
    )
    assert from_arrow_schema(arrow_schema) == StructType(
        (
            StructField("l", ArrayType(LongType(), contains_null=False), nullable=False),
            StructField("m", MapType(StringType(), LongType(), value_contains_null=False)),
        )
    )


def test_from_arrow_of_to_arrow_is_identity_for_a_nested_schema() -> None:
    schema = StructType(
        (
            StructField("id", LongType(), nullable=False),
            StructField(
                "s",
                StructType(
                    (
                        StructField("d", DecimalType(38, 9)),
                        StructField(
                            "arr", ArrayType(StructType((StructField("t", TimestampType()),)), False)
                        ),
                    )
                ),
            ),
            StructField("m", MapType(StringType(), MapType(IntegerType(), DateType()), False)),
            StructField("n", NullType()),
            StructField("ntz", TimestampNtzType()),
        )
    )
    assert from_arrow_schema(to_arrow_schema(schema)) == schema


def test_arrow_schema_of_a_parquet_file_written_by_pyarrow_round_trips() -> None:
    schema = StructType(
        (
            StructField("a", ArrayType(StringType())),
            StructField("m", MapType(StringType(), LongType())),
            StructField("t", TimestampType()),
        )
    )
    table = pa.Table.from_arrays(
        [pa.nulls(1, f.type) for f in to_arrow_schema(schema)], schema=to_arrow_schema(schema)
    )
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    assert from_arrow_schema(pq.read_schema(pa.BufferReader(buffer.getvalue()))) == schema

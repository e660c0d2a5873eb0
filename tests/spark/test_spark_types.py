"""Delta schema types <-> pyspark types: round trips, Spark's own JSON parser as oracle, errors, and a
real SparkSession whose DataFrames carry the converted schema into Arrow."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from pyspark.sql import types as st

from airflow_provider_delta.core.schema.arrow import to_arrow_schema
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
from airflow_provider_delta.spark.types import (
    CHAR_VARCHAR_TYPE_STRING_KEY,
    from_spark_field,
    from_spark_schema,
    from_spark_type,
    to_spark_field,
    to_spark_schema,
    to_spark_type,
)
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import DataFrame, SparkSession

# pyspark 4.3 warns (FutureWarning) in many DataFrame calls because pandas 3 is installed.
pytestmark = pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")

PRIMITIVES: list[tuple[DataType, st.DataType]] = [
    (ByteType(), st.ByteType()),
    (ShortType(), st.ShortType()),
    (IntegerType(), st.IntegerType()),
    (LongType(), st.LongType()),
    (FloatType(), st.FloatType()),
    (DoubleType(), st.DoubleType()),
    (StringType(), st.StringType()),
    (BinaryType(), st.BinaryType()),
    (BooleanType(), st.BooleanType()),
    (DateType(), st.DateType()),
    (TimestampType(), st.TimestampType()),
    (TimestampNtzType(), st.TimestampNTZType()),
    (NullType(), st.NullType()),
    (DecimalType(10, 0), st.DecimalType(10, 0)),
    (DecimalType(1, 0), st.DecimalType(1, 0)),
    (DecimalType(10, 2), st.DecimalType(10, 2)),
    (DecimalType(38, 18), st.DecimalType(38, 18)),
    (DecimalType(38, 38), st.DecimalType(38, 38)),
]

CM_METADATA = {
    "delta.columnMapping.id": 7,
    "delta.columnMapping.physicalName": "col-5f422f40-de70-45b2-88ab-1d5c90e94db1",
    "comment": "the key",
}


def nested_schema() -> StructType:
    """Every container shape, both values of every null flag, metadata at each level."""
    point = StructType(
        (
            StructField("x", DoubleType(), nullable=False, metadata={"delta.columnMapping.id": 2}),
            StructField("y", DoubleType(), metadata={"comment": "north"}),
        )
    )
    return StructType(
        (
            StructField("id", LongType(), nullable=False, metadata=CM_METADATA),
            StructField("tags", ArrayType(StringType(), contains_null=False)),
            StructField("scores", ArrayType(DecimalType(5, 2), contains_null=True), nullable=False),
            StructField("attrs", MapType(StringType(), LongType(), value_contains_null=False)),
            StructField("by_day", MapType(DateType(), ArrayType(point, contains_null=True), True)),
            StructField(
                "point",
                point,
                metadata={"delta.columnMapping.physicalName": "col-p", "nested": {"a": None, "b": [1, 2]}},
            ),
            StructField("grid", ArrayType(ArrayType(IntegerType(), False), True)),
            StructField("empty", StructType(())),
        )
    )


def all_types_schema() -> StructType:
    """One column per primitive (``c_<name>``) plus the nested ones."""
    columns = [StructField(f"c_{i}_{d.simple_string()}", d) for i, (d, _) in enumerate(PRIMITIVES)]
    return StructType((*columns, *nested_schema().fields))


# ---------------------------------------------------------------------------------------- primitives


@pytest.mark.parametrize(("delta", "spark"), PRIMITIVES, ids=[d.simple_string() for d, _ in PRIMITIVES])
def test_every_primitive_converts_to_its_spark_type_and_back(delta: DataType, spark: st.DataType) -> None:
    assert to_spark_type(delta) == spark
    assert type(to_spark_type(delta)) is type(spark)
    assert from_spark_type(spark) == delta
    assert from_spark_type(to_spark_type(delta)) == delta


def test_timestamp_is_spark_timestamp_and_timestamp_ntz_is_timestamp_ntz() -> None:
    assert isinstance(to_spark_type(TimestampType()), st.TimestampType)
    assert isinstance(to_spark_type(TimestampNtzType()), st.TimestampNTZType)
    assert from_spark_type(st.TimestampType()) == TimestampType()
    assert from_spark_type(st.TimestampNTZType()) == TimestampNtzType()


def test_decimal_keeps_precision_and_scale() -> None:
    spark = to_spark_type(DecimalType(12, 3))
    assert isinstance(spark, st.DecimalType)
    assert (spark.precision, spark.scale) == (12, 3)
    assert from_spark_type(st.DecimalType(38, 9)) == DecimalType(38, 9)


# ---------------------------------------------------------------------------------------- nesting, metadata


def test_nested_schema_round_trips_with_null_flags_and_metadata() -> None:
    schema = nested_schema()
    spark = to_spark_schema(schema)
    back = from_spark_schema(spark)
    assert back == schema
    # StructField equality covers metadata; compare it explicitly all the same, level by level.
    assert [(p, dict(f.metadata)) for p, f in back.walk()] == [
        (p, dict(f.metadata)) for p, f in schema.walk()
    ]
    assert back.to_json() == schema.to_json()


def test_null_flags_reach_spark() -> None:
    spark = to_spark_schema(nested_schema())
    assert spark["id"].nullable is False
    assert spark["tags"].dataType == st.ArrayType(st.StringType(), containsNull=False)
    assert spark["scores"].nullable is False
    assert spark["scores"].dataType == st.ArrayType(st.DecimalType(5, 2), containsNull=True)
    assert spark["attrs"].dataType == st.MapType(st.StringType(), st.LongType(), valueContainsNull=False)
    point = spark["point"].dataType
    assert isinstance(point, st.StructType)
    assert point["x"].nullable is False
    assert point["y"].nullable is True


def test_column_mapping_metadata_and_comments_reach_spark_and_come_back() -> None:
    spark_field = to_spark_field(StructField("id", LongType(), nullable=False, metadata=CM_METADATA))
    assert spark_field.metadata == CM_METADATA
    assert from_spark_field(spark_field).metadata == CM_METADATA
    point = to_spark_schema(nested_schema())["point"]
    assert point.metadata == {"delta.columnMapping.physicalName": "col-p", "nested": {"a": None, "b": [1, 2]}}
    assert isinstance(point.dataType, st.StructType)
    assert point.dataType["x"].metadata == {"delta.columnMapping.id": 2}


def test_metadata_is_copied_not_shared() -> None:
    spark_field = to_spark_field(StructField("p", LongType(), metadata={"n": {"a": [1]}}))
    spark_field.metadata["n"]["a"].append(2)
    delta = from_spark_field(spark_field)
    spark_field.metadata["n"]["a"].append(3)
    assert delta.metadata["n"] == {"a": [1, 2]}


def test_spark_to_delta_to_spark_is_identity_for_spark_schemas() -> None:
    spark = st.StructType(
        [
            st.StructField("k", st.StringType(), False, {"comment": "c"}),
            st.StructField(
                "v", st.MapType(st.IntegerType(), st.ArrayType(st.TimestampNTZType(), False), True)
            ),
            st.StructField("s", st.StructType([st.StructField("d", st.DecimalType(20, 4), False)])),
        ]
    )
    assert to_spark_schema(from_spark_schema(spark)) == spark


def test_conversion_agrees_with_sparks_own_json_parser() -> None:
    # A Delta schemaString is Spark's schema JSON: pyspark's parser is an independent oracle.
    schema = all_types_schema()
    assert to_spark_schema(schema) == st.StructType.fromJson(schema.to_dict())
    assert from_spark_schema(to_spark_schema(schema)) == schema_from_json(to_spark_schema(schema).json())


# Random nested schemas with random JSON metadata (as tests/property/test_schema_roundtrip.py draws them).
_primitive = hs.sampled_from([d for d, _ in PRIMITIVES])
_json = hs.recursive(
    hs.none() | hs.booleans() | hs.integers(-(2**63), 2**63 - 1) | hs.text(max_size=6),
    lambda kids: hs.lists(kids, max_size=3) | hs.dictionaries(hs.text(max_size=5), kids, max_size=3),
    max_leaves=5,
)
_metadata = hs.dictionaries(hs.text(max_size=10), _json, max_size=3)


def _struct_of(children: hs.SearchStrategy[DataType]) -> hs.SearchStrategy[StructType]:
    fields = hs.lists(
        hs.tuples(hs.text(min_size=1, max_size=6), children, hs.booleans(), _metadata),
        max_size=4,
        unique_by=lambda t: t[0],
    )
    return fields.map(lambda items: StructType(tuple(StructField(n, t, b, m) for n, t, b, m in items)))


_types = hs.recursive(
    _primitive,
    lambda kids: (
        hs.builds(ArrayType, kids, hs.booleans())
        | hs.builds(MapType, kids.filter(lambda k: not isinstance(k, NullType)), kids, hs.booleans())
        | _struct_of(kids)
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_struct_of(_types))
def test_random_schemas_round_trip_and_match_sparks_json(schema: StructType) -> None:
    spark = to_spark_schema(schema)
    assert from_spark_schema(spark) == schema
    assert spark == st.StructType.fromJson(json.loads(schema.to_json()))


def test_every_schema_of_the_conformance_corpus_round_trips(conformance_dir: Path) -> None:
    seen = unsupported = 0
    # Commit files only (the corpus also carries macOS "._" resource forks beside them).
    for log_file in sorted((conformance_dir / "tables").glob("**/_delta_log/" + "[0-9]" * 20 + ".json")):
        for line in log_file.read_text().splitlines():
            if '"metaData"' not in line:
                continue
            schema_string = json.loads(line)["metaData"].get("schemaString")
            try:  # the corpus also holds deliberately broken logs
                schema = schema_from_json(schema_string)
            except SchemaError:
                continue
            seen += 1
            if (
                '"variant"' in schema_string
                or '"geometry(' in schema_string
                or '"geography(' in schema_string
            ):
                with pytest.raises(UnsupportedFeatureError, match=r"^Cannot convert field .* to Spark: "):
                    to_spark_schema(schema)
                unsupported += 1
                continue
            spark = to_spark_schema(schema)
            assert from_spark_schema(spark) == schema, log_file
            assert spark == st.StructType.fromJson(json.loads(schema_string)), log_file
    assert seen > 100
    print(f"{seen} corpus schemas, {unsupported} with types Spark conversion refuses")


# ---------------------------------------------------------------------------------------- char/varchar


def test_varchar_becomes_string_with_the_declared_type_in_metadata() -> None:
    spark = st.StructType(
        [
            st.StructField("code", st.VarcharType(3), False, {"comment": "iso"}),
            st.StructField("s", st.StructType([st.StructField("x", st.CharType(4))])),
            st.StructField("m", st.MapType(st.StringType(), st.ArrayType(st.VarcharType(2)))),
        ]
    )
    delta = from_spark_schema(spark)
    assert delta["code"] == StructField(
        "code", StringType(), False, {"comment": "iso", CHAR_VARCHAR_TYPE_STRING_KEY: "varchar(3)"}
    )
    assert delta["s"].metadata == {CHAR_VARCHAR_TYPE_STRING_KEY: "struct<x:char(4)>"}
    assert delta["s"].type == StructType((StructField("x", StringType()),))  # nested: no entry of its own
    assert delta["m"].type == MapType(StringType(), ArrayType(StringType()))
    assert delta["m"].metadata == {CHAR_VARCHAR_TYPE_STRING_KEY: "map<string,array<varchar(2)>>"}
    # Back in Spark the column stays a string carrying the metadata, as Spark reads such a Delta table.
    assert to_spark_schema(delta)["code"] == st.StructField(
        "code", st.StringType(), False, {"comment": "iso", CHAR_VARCHAR_TYPE_STRING_KEY: "varchar(3)"}
    )


# ---------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("name", "feature"),
    [
        ("variant", "variantType"),
        ("geometry(OGC:CRS84)", "geospatial"),
        ("geography(OGC:CRS84)", "geospatial"),
        ("interval", "interval"),
    ],
)
def test_unsupported_delta_types_refuse_conversion_to_spark(name: str, feature: str) -> None:
    schema = StructType((StructField("a", ArrayType(UnsupportedType(name))),))
    with pytest.raises(
        UnsupportedFeatureError,
        match=rf"^Cannot convert field 'a\.element' to Spark: type {re.escape(repr(name))} is unsupported",
    ) as info:
        to_spark_schema(schema)
    assert info.value.features == (feature,)
    with pytest.raises(
        UnsupportedFeatureError, match=r"^Cannot convert type '.*' to Spark: the type is unsupported"
    ):
        to_spark_type(UnsupportedType(name))


def test_udt_object_type_from_a_log_refuses_conversion_to_spark() -> None:
    raw = {"type": "udt", "class": "org.example.PointUDT", "sqlType": "string"}
    schema = schema_from_json(
        {"type": "struct", "fields": [{"name": "p", "type": raw, "nullable": True, "metadata": {}}]}
    )
    with pytest.raises(
        UnsupportedFeatureError, match=r"^Cannot convert field 'p' to Spark: type 'udt' is unsupported"
    ):
        to_spark_schema(schema)


@pytest.mark.parametrize(
    ("spark_type", "feature"),
    [
        (st.VariantType(), "variantType"),
        (st.GeometryType(4326), "geospatial"),
        (st.GeographyType(4326), "geospatial"),
    ],
    ids=["variant", "geometry", "geography"],
)
def test_spark_types_behind_unsupported_table_features_raise_unsupported_feature(
    spark_type: st.DataType, feature: str
) -> None:
    schema = st.StructType([st.StructField("s", st.StructType([st.StructField("v", spark_type)]))])
    with pytest.raises(
        UnsupportedFeatureError, match=r"^Cannot convert field 's\.v' to Delta: type '"
    ) as info:
        from_spark_schema(schema)
    assert info.value.features == (feature,)


def test_collated_strings_raise_unsupported_feature() -> None:
    field = st.StructField("name", st.StringType("UTF8_LCASE"))
    with pytest.raises(
        UnsupportedFeatureError,
        match=r"^Cannot convert field 'name' to Delta: collated strings are unsupported "
        r"\(expected collation 'UTF8_BINARY', found 'UTF8_LCASE'\)",
    ) as info:
        from_spark_field(field)
    assert info.value.features == ("collations",)


class _PointUDT(st.UserDefinedType):
    @classmethod
    def sqlType(cls) -> st.DataType:  # pyspark's name
        return st.ArrayType(st.DoubleType(), False)


@pytest.mark.parametrize(
    "spark_type",
    [
        st.TimeType(),
        st.DayTimeIntervalType(),
        st.YearMonthIntervalType(),
        st.CalendarIntervalType(),
        _PointUDT(),
    ],
    ids=["time", "day-time-interval", "year-month-interval", "calendar-interval", "udt"],
)
def test_spark_types_without_a_delta_equivalent_raise_schema_error(spark_type: st.DataType) -> None:
    schema = st.StructType([st.StructField("m", st.MapType(st.StringType(), spark_type))])
    with pytest.raises(
        SchemaError, match=r"^Cannot convert field 'm\.value' to Delta: .* no Delta equivalent"
    ):
        from_spark_schema(schema)
    with pytest.raises(SchemaError, match=r"^Cannot convert Spark type '.*' to Delta: "):
        from_spark_type(spark_type)


def test_udt_error_names_its_sql_type() -> None:
    with pytest.raises(
        SchemaError,
        match=r"user-defined type \(_PointUDT\) with no Delta equivalent; store its sqlType 'array<double>'",
    ):
        from_spark_type(_PointUDT())


def test_duplicate_field_names_a_dataframe_may_have_raise_schema_error() -> None:
    spark = st.StructType([st.StructField("a", st.LongType()), st.StructField("a", st.StringType())])
    with pytest.raises(SchemaError, match=r"^Cannot convert schema to Delta: .*duplicate field name 'a'"):
        from_spark_schema(spark)


# ---------------------------------------------------------------------------------------- a real SparkSession

UTC = dt.timezone.utc


def all_types_row(schema: StructType) -> dict[str, Any]:
    """One row of :func:`all_types_schema`, by column name (non-null wherever a value is possible)."""
    primitives: dict[type[DataType], Any] = {
        ByteType: -8,
        ShortType: 300,
        IntegerType: -70_000,
        LongType: 2**40,
        FloatType: 1.5,
        DoubleType: -2.25,
        StringType: "ünï",
        BinaryType: b"\x00\xff",
        BooleanType: True,
        DateType: dt.date(2024, 2, 29),
        TimestampType: dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
        TimestampNtzType: dt.datetime(2024, 1, 2, 3, 4, 5, 6),
        NullType: None,
    }
    row: dict[str, Any] = {}
    for f in schema.fields[: len(PRIMITIVES)]:
        if isinstance(f.type, DecimalType):
            row[f.name] = decimal.Decimal(1).scaleb(-f.type.scale)  # one digit: fits every precision
        else:
            row[f.name] = primitives[type(f.type)]
    row.update(
        {
            "id": 1,
            "tags": ["a", "b"],
            "scores": [decimal.Decimal("1.25"), None],
            "attrs": {"k": 1},
            "by_day": {dt.date(2024, 1, 1): [{"x": 1.0, "y": None}]},  # no null struct: see below
            "point": {"x": 0.5, "y": 2.0},
            "grid": [[1, 2], None],
            "empty": {},
        }
    )
    return row


def jvm_batches(df: DataFrame) -> list[pa.RecordBatch]:
    """The Arrow batches as the JVM sends them: ``toArrow()`` without its final cast (private API)."""
    batches: list[pa.RecordBatch] = df._collect_as_arrow()  # type: ignore[operator]
    return batches


def _plain_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every nested field nullable and without metadata (field names kept)."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _plain_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(_plain_type(t.key_type), _plain_type(t.item_type))
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, _plain_type(t.value_type)))
    return t


def _plain_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, _plain_type(f.type)) for f in schema])


def _utc_label(t: pa.DataType) -> pa.DataType:
    """``t`` with every time zone label replaced by ``UTC`` (the instants do not change)."""
    if pa.types.is_timestamp(t) and t.tz is not None:
        return pa.timestamp(t.unit, tz="UTC")
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_utc_label(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_utc_label(t.key_type)), t.item_field.with_type(_utc_label(t.item_type))
        )
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_utc_label(t.value_type)))
    return t


@pytest.mark.spark
def test_dataframe_with_the_converted_schema_keeps_it_and_its_metadata(spark: SparkSession) -> None:
    schema = all_types_schema()
    df = spark.createDataFrame([all_types_row(schema)], to_spark_schema(schema))
    # df.schema comes back from the JVM (its JSON): metadata and null flags survived the trip.
    assert df.schema == to_spark_schema(schema)
    assert from_spark_schema(df.schema) == schema
    assert df.schema["id"].metadata == CM_METADATA


@pytest.mark.spark
def test_dataframe_arrow_schema_equals_the_engines_arrow_schema(spark: SparkSession) -> None:
    schema = all_types_schema()
    df = spark.createDataFrame([all_types_row(schema)], to_spark_schema(schema))
    expected = to_arrow_schema(schema)
    table = df.toArrow()
    # Up to nullability and metadata: the types are the same, field names included (list items are
    # `element`, map entries `entries`/`key`/`value`, as in core.schema.arrow) ...
    assert _plain_schema(table.schema) == _plain_schema(expected)
    # ... and nullability agrees at every level too (pa.Schema equality ignores metadata).
    assert table.schema.equals(expected, check_metadata=False)
    # Spark puts a field's metadata under b"SPARK::metadata::json".
    assert json.loads(table.schema.field("id").metadata[b"SPARK::metadata::json"]) == CM_METADATA
    # The values are the engine's values of those types.
    assert table.to_pylist() == pa.Table.from_pylist([all_types_row(schema)], schema=expected).to_pylist()
    # The raw JVM batches: the same types once the timestamp zone label is normalised (next test).
    (batch,) = jvm_batches(df)
    assert pa.schema([f.with_type(_utc_label(f.type)) for f in batch.schema]).equals(expected)


NOT_NULL_CHILD = StructType((StructField("x", DoubleType(), nullable=False),))
NULL_STRUCT_SCHEMAS = {
    "top-level": (StructType((StructField("p", NOT_NULL_CHILD),)), {"p": None}),
    "array-element": (StructType((StructField("a", ArrayType(NOT_NULL_CHILD)),)), {"a": [None, {"x": 1.0}]}),
    "map-value": (StructType((StructField("m", MapType(StringType(), NOT_NULL_CHILD)),)), {"m": {"k": None}}),
}


@pytest.mark.spark
@pytest.mark.parametrize("case", NULL_STRUCT_SCHEMAS)
def test_collected_batches_hold_null_structs_with_not_null_children(spark: SparkSession, case: str) -> None:
    schema, row = NULL_STRUCT_SCHEMAS[case]
    (batch,) = jvm_batches(spark.createDataFrame([row], to_spark_schema(schema)))
    assert batch.schema.equals(to_arrow_schema(schema))
    assert batch.to_pylist() == pa.Table.from_pylist([row], schema=to_arrow_schema(schema)).to_pylist()


@pytest.mark.spark
@pytest.mark.xfail(
    raises=pa.ArrowInvalid,
    reason="pyspark 4.3.0 + pyarrow 26: toArrow() casts the JVM batches to its own schema and the cast "
    "rejects a null struct whose child is NOT NULL ('nulls in input cannot be viewed as non-nullable'); "
    "_collect_as_arrow() is fine",
)
@pytest.mark.parametrize("case", NULL_STRUCT_SCHEMAS)
def test_to_arrow_holds_null_structs_with_not_null_children(spark: SparkSession, case: str) -> None:
    schema, row = NULL_STRUCT_SCHEMAS[case]
    table = spark.createDataFrame([row], to_spark_schema(schema)).toArrow()
    assert table.to_pylist() == pa.Table.from_pylist([row], schema=to_arrow_schema(schema)).to_pylist()


@pytest.mark.spark
def test_spark_labels_arrow_timestamps_with_utc_in_to_arrow_and_the_session_zone_in_batches(
    spark: SparkSession,
) -> None:
    # What Spark returns for `timestamp` (TimestampType) columns, measured with pyspark 4.3.0:
    # - df.toArrow() casts to pyspark's own Arrow schema: timestamp[us, tz=UTC], whatever the
    #   session time zone (same for an empty result) -- exactly core.schema.arrow's type;
    # - df._collect_as_arrow() returns the JVM's batches, labelled with spark.sql.session.timeZone
    #   ("Etc/UTC" on these machines, "America/New_York" below). Same UTC instants, another label.
    # `timestamp_ntz` is timestamp[us] without a zone in both.
    schema = StructType(
        (
            StructField("ts", TimestampType()),
            StructField("ntz", TimestampNtzType()),
            StructField("nested", ArrayType(TimestampType())),
        )
    )
    instant = dt.datetime(2024, 7, 1, 12, 0, tzinfo=UTC)
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        df = spark.createDataFrame(
            [(instant, dt.datetime(2024, 7, 1, 12, 0), [instant])], to_spark_schema(schema)
        )
        table = df.toArrow()
        (batch,) = jvm_batches(df)
    finally:
        spark.conf.unset("spark.sql.session.timeZone")
    expected = to_arrow_schema(schema)
    assert table.schema.types == expected.types
    assert table.schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert batch.schema.field("ts").type == pa.timestamp("us", tz="America/New_York")
    assert batch.schema.field("ntz").type == pa.timestamp("us")
    assert [_utc_label(t) for t in batch.schema.types] == list(expected.types)
    assert table.column("ts")[0].as_py() == batch.column("ts")[0].as_py() == instant
    assert table.column("ntz")[0].as_py() == dt.datetime(2024, 7, 1, 12, 0)


@pytest.mark.spark
def test_map_in_arrow_accepts_batches_of_the_engines_arrow_schema(spark: SparkSession) -> None:
    # The data plane's contract: executors yield batches typed by core's to_arrow_schema while Spark
    # declares to_spark_schema; mapInArrow accepts only exactly matching Arrow types.
    schema = all_types_schema()
    arrow_schema = to_arrow_schema(schema)
    row = all_types_row(schema)

    def produce(_batches: Any) -> Any:
        yield pa.RecordBatch.from_pylist([row], schema=arrow_schema)

    out = spark.range(1, numPartitions=1).mapInArrow(produce, to_spark_schema(schema)).toArrow()
    assert out.to_pylist() == pa.Table.from_pylist([row], schema=arrow_schema).to_pylist()
    assert from_spark_schema(spark.range(1).mapInArrow(produce, to_spark_schema(schema)).schema) == schema


@pytest.mark.spark
def test_varchar_conversion_matches_sparks_own_char_varchar_replacement(spark: SparkSession) -> None:
    spark_schema = st.StructType(
        [
            st.StructField("c", st.VarcharType(3), False, {"comment": "x"}),
            st.StructField("s", st.StructType([st.StructField("x", st.CharType(4))])),
            st.StructField("m", st.MapType(st.StringType(), st.ArrayType(st.VarcharType(2)))),
            st.StructField("plain", st.StringType()),
        ]
    )
    # What Spark writes into a Delta log for such a schema (CharVarcharUtils, through py4j).
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    java_schema = jvm.org.apache.spark.sql.types.DataType.fromJson(spark_schema.json())
    replaced = jvm.org.apache.spark.sql.catalyst.util.CharVarcharUtils.replaceCharVarcharWithStringInSchema(
        java_schema
    )
    assert from_spark_schema(spark_schema) == schema_from_json(replaced.json())

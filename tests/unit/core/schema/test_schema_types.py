from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_delta.core.schema.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
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
    parse_data_type,
    schema_from_json,
)
from airflow_provider_delta.exceptions import SchemaError


def _field(
    name: str, type_json: object, *, nullable: bool = True, metadata: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"name": name, "type": type_json, "nullable": nullable, "metadata": metadata or {}}


def _schema(*fields: dict[str, Any]) -> str:
    return json.dumps({"type": "struct", "fields": list(fields)}, separators=(",", ":"))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("string", StringType()),
        ("long", LongType()),
        ("integer", IntegerType()),
        ("short", ShortType()),
        ("byte", ByteType()),
        ("float", FloatType()),
        ("double", DoubleType()),
        ("boolean", BooleanType()),
        ("binary", BinaryType()),
        ("date", DateType()),
        ("timestamp", TimestampType()),
        ("timestamp_ntz", TimestampNtzType()),
        ("void", NullType()),
        ("null", NullType()),
        ("decimal(10,2)", DecimalType(10, 2)),
        ("decimal(38, 18)", DecimalType(38, 18)),
        ("decimal( 5 , 0 )", DecimalType(5, 0)),
        ("decimal", DecimalType(10, 0)),
    ],
)
def test_primitive_type_names_parse_to_their_types(name: str, expected: object) -> None:
    assert parse_data_type(name) == expected


@pytest.mark.parametrize("name", ["string", "long", "timestamp_ntz", "void", "decimal(10,2)"])
def test_type_names_serialize_back_to_the_spark_spelling(name: str) -> None:
    assert parse_data_type(name).to_json_value() == name


def test_old_null_type_name_serializes_as_void() -> None:
    assert parse_data_type("null").to_json_value() == "void"


def test_decimal_with_blanks_serializes_without_blanks() -> None:
    assert parse_data_type("decimal(10, 2)").to_json_value() == "decimal(10,2)"


@pytest.mark.parametrize(
    "name", ["variant", "geometry(OGC:CRS84)", "geography(OGC:CRS84, spherical)", "interval"]
)
def test_unknown_type_names_parse_into_unsupported_type(name: str) -> None:
    parsed = schema_from_json(_schema(_field("v", name)))
    assert parsed.field("v").type == UnsupportedType(name)
    assert json.loads(parsed.to_json())["fields"][0]["type"] == name


def test_unknown_complex_type_object_is_kept_for_round_trip() -> None:
    udt = {"type": "udt", "class": "org.example.PointUDT", "sqlType": "string"}
    parsed = schema_from_json(_schema(_field("p", udt)))
    parsed_type = parsed.field("p").type
    assert isinstance(parsed_type, UnsupportedType)
    assert parsed_type.name == "udt"
    assert json.loads(parsed.to_json())["fields"][0]["type"] == udt


@pytest.mark.parametrize("name", ["decimal(39,0)", "decimal(0,0)", "decimal(5,6)"])
def test_out_of_range_decimal_is_a_schema_error(name: str) -> None:
    with pytest.raises(SchemaError, match="invalid decimal"):
        parse_data_type(name)


def test_nested_schema_json_is_written_exactly_as_spark_writes_it() -> None:
    text = (
        '{"type":"struct","fields":['
        '{"name":"id","type":"long","nullable":false,"metadata":{"comment":"the key"}},'
        '{"name":"tags","type":{"type":"array","elementType":"string","containsNull":false},'
        '"nullable":true,"metadata":{}},'
        '{"name":"props","type":{"type":"map","keyType":"string","valueType":'
        '{"type":"struct","fields":[{"name":"x","type":"decimal(10,2)","nullable":true,"metadata":{}}]},'
        '"valueContainsNull":true},"nullable":true,"metadata":{}}]}'
    )
    schema = schema_from_json(text)
    assert schema.to_json() == text
    assert schema.field("tags").type == ArrayType(StringType(), contains_null=False)
    props = schema.field("props").type
    assert isinstance(props, MapType)
    assert props.value_type == StructType((StructField("x", DecimalType(10, 2)),))


def test_schema_accepts_an_already_decoded_dict_and_bytes() -> None:
    text = _schema(_field("a", "integer"))
    assert schema_from_json(json.loads(text)) == schema_from_json(text.encode()) == schema_from_json(text)


def test_rich_metadata_round_trips_exactly_in_order() -> None:
    metadata = {
        "delta.columnMapping.physicalName": "col-1",
        "delta.columnMapping.id": 7,
        "delta.generationExpression": "CAST(ts AS DATE)",
        "delta.identity.start": 1,
        "delta.identity.step": -2,
        "delta.identity.allowExplicitInsert": False,
        "delta.invariants": '{"expression":{"expression":"x > 3"}}',
        "delta.typeChanges": [
            {"toType": "long", "fromType": "integer", "tableVersion": 2, "fieldPath": "key"}
        ],
        "comment": "ünïcode ✓",
        "nested": {"z": 1, "a": [1.5, None, {"b": True}]},
    }
    text = _schema(_field("x", "long", metadata=metadata))
    schema = schema_from_json(text)
    assert dict(schema.field("x").metadata) == metadata
    assert list(schema.field("x").metadata) == list(metadata)
    assert schema.to_json() == json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)


def test_fields_with_equal_metadata_are_equal_and_hash_alike_regardless_of_key_order() -> None:
    a = StructField("x", LongType(), metadata={"a": 1, "b": {"c": [1, 2]}})
    b = StructField("x", LongType(), metadata={"b": {"c": [1, 2]}, "a": 1})
    assert a == b
    assert hash(a) == hash(b)
    assert len({StructType((a,)), StructType((b,))}) == 1


def test_fields_with_different_metadata_are_not_equal() -> None:
    assert StructField("x", LongType(), metadata={"a": 1}) != StructField("x", LongType(), metadata={"a": 2})
    assert StructField("x", LongType(), metadata={"a": 1}) != StructField(
        "x", LongType(), metadata={"a": 1.0}
    )
    assert StructField("x", LongType()) != StructField("x", LongType(), metadata={"a": 1})


def test_field_metadata_is_read_only_and_copied_from_the_caller() -> None:
    source = {"a": 1}
    f = StructField("x", LongType(), metadata=source)
    source["a"] = 2
    assert f.metadata["a"] == 1
    with pytest.raises(TypeError):
        f.metadata["a"] = 3  # type: ignore[index]


def test_struct_lookup_by_name_index_and_case_insensitively() -> None:
    schema = StructType((StructField("id", LongType()), StructField("Name", StringType())))
    assert schema.names == ("id", "Name")
    assert len(schema) == 2
    assert [f.name for f in schema] == ["id", "Name"]
    assert schema.index("Name") == 1
    assert schema.field("id").type == LongType()
    assert schema["Name"] is schema[1]
    assert "id" in schema
    assert schema.get("name") is None
    assert schema.get("name", case_sensitive=False) == schema.field("Name")
    assert schema.get("missing", case_sensitive=False) is None


def test_missing_field_lookup_names_the_field() -> None:
    schema = StructType((StructField("id", LongType()),))
    with pytest.raises(SchemaError, match="Cannot find field 'nope'"):
        schema.field("nope")
    with pytest.raises(SchemaError, match="Cannot find field 'nope'"):
        schema.index("nope")


def test_ambiguous_case_insensitive_lookup_is_a_schema_error() -> None:
    schema = StructType((StructField("Ab", LongType()), StructField("aB", LongType())))
    assert schema.get("Ab", case_sensitive=False) == schema.field("Ab")
    with pytest.raises(SchemaError, match="ambiguous"):
        schema.get("ab", case_sensitive=False)


def test_duplicate_field_names_are_rejected() -> None:
    with pytest.raises(SchemaError, match="duplicate field name 'a'"):
        schema_from_json(_schema(_field("a", "long"), _field("a", "string")))


def test_walk_yields_nested_paths_through_structs_arrays_and_maps() -> None:
    inner = {"type": "struct", "fields": [_field("b", "long")]}
    schema = schema_from_json(
        _schema(
            _field("s", inner),
            _field("l", {"type": "array", "elementType": inner, "containsNull": True}),
            _field("m", {"type": "map", "keyType": "string", "valueType": inner, "valueContainsNull": True}),
        )
    )
    assert [p for p, _ in schema.walk()] == [
        ("s",),
        ("s", "b"),
        ("l",),
        ("l", "element", "b"),
        ("m",),
        ("m", "value", "b"),
    ]


def test_find_path_descends_into_nested_structs() -> None:
    schema = schema_from_json(_schema(_field("a", {"type": "struct", "fields": [_field("B", "long")]})))
    assert schema.find_path(("a", "B")).type == LongType()
    assert schema.find_path(["A", "b"], case_sensitive=False).name == "B"
    with pytest.raises(SchemaError, match="no field 'c'"):
        schema.find_path(("a", "c"))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("not json", "invalid JSON"),
        ("[]", "expected a JSON object with type 'struct'"),
        ('{"type":"array"}', "expected a JSON object with type 'struct'"),
        ('{"type":"struct"}', "missing 'fields'"),
        ('{"type":"struct","fields":{}}', "'fields' must be a list"),
        ('{"type":"struct","fields":[1]}', "expected an object"),
        ('{"type":"struct","fields":[{"type":"long"}]}', "'name' must be a string"),
        ('{"type":"struct","fields":[{"name":"a"}]}', "Cannot parse field 'a': missing 'type'"),
        ('{"type":"struct","fields":[{"name":"a","type":5}]}', "expected a string or an object"),
        ('{"type":"struct","fields":[{"name":"a","type":"long","nullable":"yes"}]}', "must be a boolean"),
        (
            '{"type":"struct","fields":[{"name":"a","type":"long","metadata":[]}]}',
            "'metadata' must be an object",
        ),
        ('{"type":"struct","fields":[{"name":"a","type":{"type":"array"}}]}', "missing 'elementType'"),
        (
            '{"type":"struct","fields":[{"name":"a","type":{"type":"map","keyType":"long"}}]}',
            "missing 'valueType'",
        ),
        ('{"type":"struct","fields":[{"name":"a","type":""}]}', "empty type name"),
        ('{"type":"struct","fields":[{"name":"a","type":{"nope":1}}]}', "no string 'type'"),
    ],
)
def test_malformed_schema_json_is_a_schema_error_naming_the_problem(text: str, fragment: str) -> None:
    with pytest.raises(SchemaError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        schema_from_json(text)


def test_missing_nullability_and_metadata_default_to_nullable_and_empty() -> None:
    schema = schema_from_json('{"type":"struct","fields":[{"name":"a","type":"long"}]}')
    assert schema.field("a") == StructField("a", LongType(), nullable=True)
    assert dict(schema.field("a").metadata) == {}


def test_simple_string_renders_nested_types_for_messages() -> None:
    schema = StructType(
        (
            StructField("a", ArrayType(LongType())),
            StructField("m", MapType(StringType(), DecimalType(5, 1))),
        )
    )
    assert schema.simple_string() == "struct<a:array<long>,m:map<string,decimal(5,1)>>"
    assert str(DecimalType(5, 1)) == "decimal(5,1)"


def test_with_helpers_return_modified_copies() -> None:
    f = StructField("a", LongType(), nullable=False, metadata={"comment": "c"})
    assert f.with_name("b") == StructField("b", LongType(), nullable=False, metadata={"comment": "c"})
    assert f.with_type(IntegerType()).type == IntegerType()
    assert dict(f.with_metadata({}).metadata) == {}
    assert f.data_type is f.type


def test_struct_accepts_a_list_of_fields_and_stores_a_tuple() -> None:
    schema = StructType([StructField("a", LongType())])  # type: ignore[arg-type]
    assert isinstance(schema.fields, tuple)
    assert schema == StructType((StructField("a", LongType()),))

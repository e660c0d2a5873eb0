"""Pure schema transforms: Delta's mergeSchema rules and the explicit column changes."""

from __future__ import annotations

import pytest

from airflow_provider_delta.core.schema.evolution import (
    add_column,
    drop_columns,
    merge_schemas,
    parse_column_path,
    rename_column,
    replace_columns,
    update_column,
)
from airflow_provider_delta.core.schema.types import (
    ArrayType,
    ByteType,
    DataType,
    DecimalType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
)
from airflow_provider_delta.exceptions import SchemaEvolutionError


def struct(*fields: tuple[str, DataType] | StructField) -> StructType:
    return StructType(tuple(f if isinstance(f, StructField) else StructField(f[0], f[1]) for f in fields))


def boxes() -> StructType:
    """Delta's docs example: root{colA, colB{field1, field2}}."""
    return struct(
        ("colA", StringType()), ("colB", struct(("field1", StringType()), ("field2", StringType())))
    )


def shape(dt: DataType) -> object:
    """Names and nesting, compactly: [('colA', 'string'), ('colB', [...])]."""
    if isinstance(dt, StructType):
        return [(f.name, shape(f.type)) for f in dt.fields]
    if isinstance(dt, ArrayType):
        return ("array", shape(dt.element_type))
    if isinstance(dt, MapType):
        return ("map", shape(dt.key_type), shape(dt.value_type))
    return dt.simple_string()


# --- merge_schemas ---------------------------------------------------------------------------------


def test_merge_appends_new_top_level_columns_at_the_end_with_their_case():
    merged = merge_schemas(
        struct(("id", LongType()), ("v", StringType())), struct(("NewCol", StringType()), ("ID", LongType()))
    )
    assert shape(merged) == [("id", "long"), ("v", "string"), ("NewCol", "string")]


def test_merge_keeps_the_table_schema_object_when_nothing_is_new():
    table = boxes()
    assert merge_schemas(table, struct(("COLA", StringType()))) is table


def test_merge_appends_new_struct_fields_at_the_end_of_the_struct():
    data = struct(("colB", struct(("new", LongType()), ("field2", StringType()))))
    assert shape(merge_schemas(boxes(), data)) == [
        ("colA", "string"),
        ("colB", [("field1", "string"), ("field2", "string"), ("new", "long")]),
    ]


def test_merge_evolves_structs_in_array_elements_and_map_values():
    table = struct(
        ("a", ArrayType(struct(("x", LongType())))), ("m", MapType(StringType(), struct(("x", LongType()))))
    )
    data = struct(
        ("a", ArrayType(struct(("x", LongType()), ("y", StringType())))),
        ("m", MapType(StringType(), struct(("z", IntegerType())))),
    )
    assert shape(merge_schemas(table, data)) == [
        ("a", ("array", [("x", "long"), ("y", "string")])),
        ("m", ("map", "string", [("x", "long"), ("z", "integer")])),
    ]


def test_merge_keeps_existing_nullability_comments_and_metadata():
    table = struct(StructField("id", LongType(), False, {"comment": "key"}))
    merged = merge_schemas(table, struct(("id", LongType()), ("x", StringType())))
    assert merged["id"] == table["id"]
    assert merged["id"].metadata["comment"] == "key"


def test_merge_null_type_arriving_for_an_existing_column_keeps_the_old_type():
    assert shape(merge_schemas(struct(("v", LongType())), struct(("v", NullType())))) == [("v", "long")]


def test_merge_keeps_a_new_null_type_column_and_a_later_real_type_evolves_it():
    with_void = merge_schemas(struct(("id", LongType())), struct(("n", NullType())))
    assert shape(with_void) == [("id", "long"), ("n", "void")]
    assert shape(merge_schemas(with_void, struct(("n", StringType())))) == [("id", "long"), ("n", "string")]


@pytest.mark.parametrize(
    ("table", "data", "expected"),
    [
        (ByteType(), ShortType(), "short"),
        (ByteType(), IntegerType(), "integer"),
        (ShortType(), IntegerType(), "integer"),
        (IntegerType(), ShortType(), "integer"),
        (IntegerType(), ByteType(), "integer"),
        (ShortType(), ByteType(), "short"),
    ],
)
def test_merge_widens_among_byte_short_and_int_as_delta_does(table, data, expected):
    assert shape(merge_schemas(struct(("v", table)), struct(("v", data)))) == [("v", expected)]


@pytest.mark.parametrize(
    ("table", "data"),
    [
        (IntegerType(), LongType()),  # Delta's mergeSchema does not widen int -> long without typeWidening
        (LongType(), IntegerType()),
        (StringType(), LongType()),
        (DecimalType(10, 2), DecimalType(12, 2)),
        (struct(("x", LongType())), StringType()),
    ],
)
def test_merge_refuses_incompatible_types_naming_the_column(table, data):
    with pytest.raises(SchemaEvolutionError, match=r"Cannot merge column 's\.v'"):
        merge_schemas(struct(("s", struct(("v", table)))), struct(("s", struct(("v", data)))))


def test_merge_with_implicit_conversions_keeps_the_table_type():
    merged = merge_schemas(
        struct(("v", LongType())), struct(("v", StringType())), allow_implicit_conversions=True
    )
    assert shape(merged) == [("v", "long")]


def test_merge_refuses_duplicate_names_in_the_data():
    with pytest.raises(SchemaEvolutionError, match="'A' appears twice"):
        merge_schemas(struct(("id", LongType())), struct(("a", LongType()), ("A", LongType())))


def test_merge_case_sensitive_treats_other_case_as_a_new_column():
    merged = merge_schemas(struct(("id", LongType())), struct(("ID", LongType())), case_sensitive=True)
    assert merged.names == ("id", "ID")


# --- explicit changes -------------------------------------------------------------------------------


def test_add_nested_column_after_a_field_as_in_deltas_docs():
    result = add_column(boxes(), "colB.nested", StringType(), after="field1")
    assert shape(result) == [
        ("colA", "string"),
        ("colB", [("field1", "string"), ("nested", "string"), ("field2", "string")]),
    ]
    assert result.find_path(["colB", "nested"]).nullable is True


def test_add_column_first_with_comment():
    result = add_column(boxes(), "id", LongType(), first=True, comment="the key")
    assert result.names == ("id", "colA", "colB")
    assert result["id"].metadata == {"comment": "the key"}


def test_add_column_inside_an_array_or_map_is_refused_clearly():
    schema = struct(("a", ArrayType(struct(("x", LongType())))), ("m", MapType(StringType(), StringType())))
    with pytest.raises(SchemaEvolutionError, match="'a' is an array, not a struct"):
        add_column(schema, "a.y", LongType())
    with pytest.raises(SchemaEvolutionError, match="'m' is a map, not a struct"):
        add_column(schema, "m.y", LongType())


@pytest.mark.parametrize(
    ("path", "kwargs", "match"),
    [
        ("COLA", {}, "already exists"),
        ("colB.FIELD1", {}, "already exists"),
        ("nope.x", {}, "no column 'nope'"),
        ("x", {"after": "missing"}, "AFTER 'missing'"),
        ("x", {"first": True, "after": "colA"}, "not both"),
    ],
)
def test_add_column_bad_input_names_the_column(path, kwargs, match):
    with pytest.raises(SchemaEvolutionError, match=match):
        add_column(boxes(), path, StringType(), **kwargs)


def test_alter_nested_column_first_as_in_deltas_docs():
    assert shape(update_column(boxes(), "colB.field2", first=True))[1] == (
        "colB",
        [("field2", "string"), ("field1", "string")],
    )


def test_alter_column_after_and_comment():
    schema = struct(("a", LongType()), ("b", LongType()), ("c", LongType()))
    assert update_column(schema, "a", after="c").names == ("b", "c", "a")
    commented = update_column(schema, "B", comment="bee")
    assert commented["b"].metadata == {"comment": "bee"}
    assert update_column(commented, "b", clear_comment=True)["b"].metadata == {}


def test_replace_columns_reorders_and_adds_as_in_deltas_docs():
    current = add_column(boxes(), "colB.nested", StringType(), after="field1")
    new = struct(
        ("colC", StringType()),
        ("colB", struct(("field2", StringType()), ("nested", StringType()), ("field1", StringType()))),
        ("colA", StringType()),
    )
    assert shape(replace_columns(current, new)) == [
        ("colC", "string"),
        ("colB", [("field2", "string"), ("nested", "string"), ("field1", "string")]),
        ("colA", "string"),
    ]


def test_replace_columns_keeps_existing_metadata_and_takes_new_comments():
    current = struct(StructField("a", LongType(), True, {"delta.columnMapping.id": 1, "comment": "old"}))
    result = replace_columns(current, struct(StructField("A", LongType(), True, {"comment": "new"})))
    assert result.fields[0].name == "A"
    assert dict(result.fields[0].metadata) == {"delta.columnMapping.id": 1, "comment": "new"}


@pytest.mark.parametrize(
    ("new", "match"),
    [
        (struct(("colA", StringType())), "'colB' would be dropped"),
        (
            struct(
                ("colA", LongType()), ("colB", struct(("field1", StringType()), ("field2", StringType())))
            ),
            "'colA' would change type",
        ),
        (
            struct(
                StructField("colA", StringType(), False),
                ("colB", struct(("field1", StringType()), ("field2", StringType()))),
            ),
            "cannot become NOT NULL",
        ),
    ],
)
def test_replace_columns_refuses_drops_type_changes_and_tightening(new, match):
    with pytest.raises(SchemaEvolutionError, match=match):
        replace_columns(boxes(), new)


def test_rename_nested_column_keeps_place_and_metadata():
    schema = struct(
        (
            "colB",
            struct(
                StructField("field1", StringType(), True, {"delta.columnMapping.id": 7}),
                ("field2", StringType()),
            ),
        )
    )
    result = rename_column(schema, "colb.FIELD1", "field001")
    assert shape(result) == [("colB", [("field001", "string"), ("field2", "string")])]
    assert result.find_path(["colB", "field001"]).metadata["delta.columnMapping.id"] == 7


def test_rename_to_an_existing_name_is_refused():
    with pytest.raises(SchemaEvolutionError, match="already exists"):
        rename_column(boxes(), "colB.field1", "FIELD2")


def test_drop_columns_top_level_and_nested():
    assert shape(drop_columns(boxes(), ["colB.field1"])) == [
        ("colA", "string"),
        ("colB", [("field2", "string")]),
    ]
    assert drop_columns(boxes(), ["colA"]).names == ("colB",)


def test_drop_the_last_field_of_a_struct_or_table_is_refused():
    with pytest.raises(SchemaEvolutionError, match="only column of struct 'colB'"):
        drop_columns(boxes(), ["colB.field1", "colB.field2"])
    with pytest.raises(SchemaEvolutionError, match="only column of the table"):
        drop_columns(struct(("a", LongType())), ["a"])


def test_column_paths_support_back_quotes():
    assert parse_column_path("a.`b.c`.d") == ("a", "b.c", "d")
    assert parse_column_path("`x``y`") == ("x`y",)
    with pytest.raises(SchemaEvolutionError, match="empty name"):
        parse_column_path("a..b")

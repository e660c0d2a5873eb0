from __future__ import annotations

import re

import pytest

from airflow_provider_delta.core.schema.mapping import (
    COLUMN_ID_KEY,
    PHYSICAL_NAME_KEY,
    assign_column_mapping,
    column_mapping_mode,
    field_id,
    logical_to_physical_paths,
    max_column_id,
    physical_name,
    physical_schema,
    physical_to_logical_paths,
)
from airflow_provider_delta.core.schema.types import (
    ArrayType,
    DataType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)
from airflow_provider_delta.exceptions import SchemaError


def _mapped(name: str, data_type: DataType, column_id: int, physical: str) -> StructField:
    return StructField(name, data_type, metadata={COLUMN_ID_KEY: column_id, PHYSICAL_NAME_KEY: physical})


@pytest.fixture
def mapped_schema() -> StructType:
    point = StructType((_mapped("x", LongType(), 3, "col-x"), _mapped("y", LongType(), 4, "col-y")))
    return StructType(
        (
            _mapped("id", LongType(), 1, "col-id"),
            _mapped("point", point, 2, "col-point"),
            _mapped(
                "points", ArrayType(StructType((_mapped("z", LongType(), 6, "col-z"),))), 5, "col-points"
            ),
            StructField("plain", StringType()),
        )
    )


@pytest.mark.parametrize(
    ("configuration", "expected"),
    [
        ({}, "none"),
        ({"delta.columnMapping.mode": "name"}, "name"),
        ({"delta.columnMapping.mode": "ID"}, "id"),
    ],
)
def test_column_mapping_mode_is_read_from_the_configuration(
    configuration: dict[str, str], expected: str
) -> None:
    assert column_mapping_mode(configuration) == expected


def test_invalid_column_mapping_mode_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="'bogus'"):
        column_mapping_mode({"delta.columnMapping.mode": "bogus"})


def test_physical_name_and_id_come_from_the_metadata(mapped_schema: StructType) -> None:
    assert physical_name(mapped_schema.field("id")) == "col-id"
    assert field_id(mapped_schema.field("id")) == 1
    assert physical_name(mapped_schema.field("plain")) == "plain"
    assert field_id(mapped_schema.field("plain")) is None


def test_physical_name_is_the_display_name_when_mapping_mode_is_none(mapped_schema: StructType) -> None:
    assert physical_name(mapped_schema.field("id"), mode="none") == "id"


def test_field_id_stored_as_text_is_accepted_and_garbage_rejected() -> None:
    assert field_id(StructField("a", LongType(), metadata={COLUMN_ID_KEY: "12"})) == 12
    with pytest.raises(SchemaError, match="Cannot read column mapping id of field 'a'"):
        field_id(StructField("a", LongType(), metadata={COLUMN_ID_KEY: "x"}))


def test_physical_schema_renames_nested_fields_and_keeps_metadata(mapped_schema: StructType) -> None:
    renamed = physical_schema(mapped_schema)
    assert renamed.names == ("col-id", "col-point", "col-points", "plain")
    point = renamed.field("col-point").type
    assert isinstance(point, StructType)
    assert point.names == ("col-x", "col-y")
    points = renamed.field("col-points").type
    assert isinstance(points, ArrayType)
    assert isinstance(points.element_type, StructType)
    assert points.element_type.names == ("col-z",)
    assert field_id(renamed.field("col-id")) == 1
    assert physical_schema(renamed) == renamed
    assert physical_schema(mapped_schema, mode="none") is mapped_schema


def test_logical_to_physical_paths_cover_nested_columns(mapped_schema: StructType) -> None:
    paths = logical_to_physical_paths(mapped_schema)
    assert paths[("id",)] == ("col-id",)
    assert paths[("point", "y")] == ("col-point", "col-y")
    assert paths[("points", "element", "z")] == ("col-points", "element", "col-z")
    assert paths[("plain",)] == ("plain",)
    assert physical_to_logical_paths(mapped_schema)[("col-point", "col-x")] == ("point", "x")


def test_max_column_id_looks_into_nested_fields(mapped_schema: StructType) -> None:
    assert max_column_id(mapped_schema) == 6
    assert max_column_id(StructType((StructField("a", LongType()),))) == 0


def test_assign_column_mapping_gives_every_nested_field_an_id_and_uuid_name() -> None:
    schema = StructType(
        (
            StructField("a", LongType()),
            StructField("s", StructType((StructField("b", LongType()),))),
            StructField("m", MapType(StringType(), StructType((StructField("c", LongType()),)))),
        )
    )
    assigned, max_id = assign_column_mapping(schema, 1)
    assert max_id == 5
    ids = sorted(field_id(f) or 0 for _, f in assigned.walk())
    assert ids == [1, 2, 3, 4, 5]
    names = [physical_name(f) for _, f in assigned.walk()]
    assert all(re.fullmatch(r"col-[0-9a-f-]{36}", n) for n in names)
    assert len(set(names)) == len(names)
    assert [f.name for f in assigned] == ["a", "s", "m"]


def test_assign_column_mapping_keeps_existing_ids_and_numbers_new_fields_above_them(
    mapped_schema: StructType,
) -> None:
    extended = StructType((*mapped_schema.fields, StructField("new", LongType())))
    assigned, max_id = assign_column_mapping(extended, 3)
    assert max_id == 8
    assert physical_name(assigned.field("id")) == "col-id"
    assert field_id(assigned.field("plain")) == 7
    assert field_id(assigned.field("new")) == 8


def test_assign_column_mapping_can_reuse_logical_names_as_physical_names() -> None:
    assigned, max_id = assign_column_mapping(
        StructType((StructField("a", LongType()),)), 10, physical_names="logical"
    )
    assert (physical_name(assigned.field("a")), field_id(assigned.field("a")), max_id) == ("a", 10, 10)


def test_assign_column_mapping_on_empty_schema_assigns_nothing() -> None:
    assert assign_column_mapping(StructType(()), 1) == (StructType(()), 0)

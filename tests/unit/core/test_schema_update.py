"""Explicit schema changes on real tables: the staged builder and the ALTER TABLE statements of Delta's docs."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.properties import InvalidPropertyError
from airflow_provider_delta.core.schema.arrow import to_arrow_schema
from airflow_provider_delta.core.schema.mapping import physical_name
from airflow_provider_delta.core.schema.types import ArrayType, DataType, MapType, StructType
from airflow_provider_delta.exceptions import DDLParseError, MetadataChangedException, SchemaEvolutionError
from tests.interop import assert_delta_rs_reads_identically

if TYPE_CHECKING:
    from pathlib import Path

BOXES = pa.schema(
    [("colA", pa.string()), ("colB", pa.struct([("field1", pa.string()), ("field2", pa.string())]))]
)
MAP_BY_NAME = "ALTER TABLE b SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
ROWS = [
    {"colA": "a1", "colB": {"field1": "x1", "field2": "y1"}},
    {"colA": "a2", "colB": {"field1": "x2", "field2": "y2"}},
]


def shape(dt: DataType) -> Any:
    if isinstance(dt, StructType):
        return [(f.name, shape(f.type)) for f in dt.fields]
    if isinstance(dt, ArrayType):
        return ("array", shape(dt.element_type))
    if isinstance(dt, MapType):
        return ("map", shape(dt.key_type), shape(dt.value_type))
    return dt.simple_string()


@pytest.fixture
def boxes(tmp_path: Path) -> DeltaTable:
    t = DeltaTable.create(str(tmp_path / "boxes"), BOXES)
    t.append(pa.Table.from_pylist(ROWS, schema=BOXES))
    return t


def mapped(t: DeltaTable) -> DeltaTable:
    t.alter("ALTER TABLE boxes SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    return t


def sorted_rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=json.dumps)


def assert_delta_rs_agrees(t: DeltaTable) -> None:
    """Version, protocol, metadata, schema, files and rows (delta-rs's DataFusion path honours column mapping)."""
    assert_delta_rs_reads_identically(t.location)


# --- the examples of Delta's docs, as DDL -----------------------------------------------------------


def test_add_nested_column_after_field1_as_in_deltas_docs(boxes):
    version = boxes.alter("ALTER TABLE boxes ADD COLUMNS (colB.nested STRING AFTER field1)")
    assert version == 2 == boxes.version
    fresh = DeltaTable(boxes.location)
    assert shape(fresh.schema) == [
        ("colA", "string"),
        ("colB", [("field1", "string"), ("nested", "string"), ("field2", "string")]),
    ]
    assert fresh.schema.find_path(["colB", "nested"]).nullable
    assert sorted_rows(fresh.to_arrow()) == [
        {
            "colA": r["colA"],
            "colB": {"field1": r["colB"]["field1"], "nested": None, "field2": r["colB"]["field2"]},
        }
        for r in ROWS
    ]
    assert fresh.history(1)[0]["operation"] == "ADD COLUMNS"


def test_add_columns_top_level_with_comment_first_and_after(boxes):
    boxes.alter(
        "ALTER TABLE boxes ADD COLUMNS (id BIGINT COMMENT 'key' FIRST, note STRING AFTER colA, tail INT)"
    )
    assert shape(boxes.schema) == [
        ("id", "long"),
        ("colA", "string"),
        ("note", "string"),
        ("colB", [("field1", "string"), ("field2", "string")]),
        ("tail", "integer"),
    ]
    assert boxes.schema["id"].metadata == {"comment": "key"}
    assert all(f.nullable for f in boxes.schema)


def test_alter_nested_column_first_as_in_deltas_docs(boxes):
    boxes.alter("ALTER TABLE boxes ALTER COLUMN colB.field2 FIRST")
    assert shape(boxes.schema)[1] == ("colB", [("field2", "string"), ("field1", "string")])
    assert sorted_rows(boxes.to_arrow())[0] == {"colA": "a1", "colB": {"field2": "y1", "field1": "x1"}}


def test_alter_column_comment_and_after(boxes):
    boxes.alter("ALTER TABLE boxes ALTER COLUMN colA COMMENT 'the A'")
    boxes.alter("ALTER TABLE boxes CHANGE COLUMN colA AFTER colB")
    assert boxes.schema.names == ("colB", "colA")
    assert boxes.schema["colA"].metadata == {"comment": "the A"}


def test_replace_columns_gives_exactly_the_docs_schema(boxes):
    boxes.alter("ALTER TABLE boxes ADD COLUMNS (colB.nested STRING AFTER field1)")
    boxes.alter(
        "ALTER TABLE boxes REPLACE COLUMNS (colC STRING, colB STRUCT<field2:STRING, nested:STRING, "
        "field1:STRING>, colA STRING)"
    )
    assert shape(boxes.schema) == [
        ("colC", "string"),
        ("colB", [("field2", "string"), ("nested", "string"), ("field1", "string")]),
        ("colA", "string"),
    ]
    assert sorted_rows(boxes.to_arrow())[0] == {
        "colC": None,
        "colB": {"field2": "y1", "nested": None, "field1": "x1"},
        "colA": "a1",
    }


def test_rename_nested_column_as_in_deltas_docs_reads_the_old_data(boxes):
    mapped(boxes).alter("ALTER TABLE boxes RENAME COLUMN colB.field1 TO field001")
    assert shape(boxes.schema)[1] == ("colB", [("field001", "string"), ("field2", "string")])
    assert physical_name(boxes.schema.find_path(["colB", "field001"])) == "field1"
    boxes.append(pa.table({"colA": ["a3"], "colB": [{"field001": "x3", "field2": "y3"}]}))
    assert [r["colB"]["field001"] for r in sorted_rows(boxes.to_arrow())] == ["x1", "x2", "x3"]


def test_rename_top_level_column(boxes):
    mapped(boxes).alter("ALTER TABLE boxes RENAME COLUMN colA TO name")
    assert boxes.schema.names == ("name", "colB")
    assert sorted(boxes.to_arrow().column("name").to_pylist()) == ["a1", "a2"]


def test_drop_columns_is_metadata_only_and_the_data_stays_in_the_files(boxes):
    mapped(boxes)
    files_before = {f.path for f in boxes.files()}
    boxes.alter("ALTER TABLE boxes DROP COLUMN colB.field1")
    assert shape(boxes.schema) == [("colA", "string"), ("colB", [("field2", "string")])]
    assert {f.path for f in boxes.files()} == files_before
    boxes.alter("ALTER TABLE boxes DROP COLUMNS (colA)")
    assert sorted_rows(boxes.to_arrow()) == [{"colB": {"field2": "y1"}}, {"colB": {"field2": "y2"}}]


def test_a_re_added_dropped_column_does_not_resurrect_old_data(boxes):
    mapped(boxes).alter("ALTER TABLE boxes DROP COLUMN colA")
    boxes.alter("ALTER TABLE boxes ADD COLUMNS (colA STRING)")
    assert boxes.to_arrow().column("colA").to_pylist() == [None, None]
    assert physical_name(boxes.schema["colA"]).startswith("col-")


def test_enabling_column_mapping_upgrades_the_protocol_and_keeps_names_as_physical_names(boxes):
    mapped(boxes)
    assert (boxes.protocol.min_reader_version, boxes.protocol.min_writer_version) == (2, 5)
    assert boxes.configuration["delta.columnMapping.mode"] == "name"
    assert [physical_name(f) for _, f in boxes.schema.walk()] == ["colA", "colB", "field1", "field2"]
    assert boxes.configuration["delta.columnMapping.maxColumnId"] == "4"
    assert sorted_rows(boxes.to_arrow()) == ROWS


def test_deltas_documented_column_mapping_statement_upgrades_the_protocol_without_keeping_versions(boxes):
    boxes.alter(
        "ALTER TABLE boxes SET TBLPROPERTIES ('delta.minReaderVersion' = '2', "
        "'delta.minWriterVersion' = '5', 'delta.columnMapping.mode' = 'name')"
    )
    assert (boxes.protocol.min_reader_version, boxes.protocol.min_writer_version) == (2, 5)
    assert "delta.minReaderVersion" not in boxes.configuration
    boxes.alter("ALTER TABLE boxes RENAME COLUMN colA TO a")
    assert_delta_rs_agrees(boxes)


def test_set_and_unset_table_properties(boxes):
    boxes.alter("ALTER TABLE boxes SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', 'owner' = 'me')")
    assert boxes.configuration["delta.enableChangeDataFeed"] == "true"
    assert "changeDataFeed" in _features(boxes) or boxes.protocol.min_writer_version >= 4
    boxes.alter("ALTER TABLE boxes UNSET TBLPROPERTIES ('owner')")
    assert "owner" not in boxes.configuration
    version = boxes.version
    boxes.alter("ALTER TABLE boxes UNSET TBLPROPERTIES IF EXISTS ('owner')")
    assert boxes.version == version + 1


def _features(t: DeltaTable) -> set[str]:
    return set(t.protocol.writer_features or ())


# --- the builder ------------------------------------------------------------------------------------


def test_builder_commits_every_change_as_one_metadata_commit(boxes):
    with boxes.update_schema() as u:
        u.add_column("colB.nested", "STRING", after="field1", comment="n")
        u.set_properties({"delta.columnMapping.mode": "name"})
        u.rename_column("colA", "a").move_after("a", "colB").update_comment("colB.field2", "two")
        u.drop_column("colB.field1")
    assert boxes.version == 2
    assert shape(boxes.schema) == [("colB", [("nested", "string"), ("field2", "string")]), ("a", "string")]
    assert boxes.schema.find_path(["colB", "nested"]).metadata["comment"] == "n"
    assert boxes.schema.find_path(["colB", "field2"]).metadata["comment"] == "two"
    assert boxes.history(1)[0]["operation"] == "UPDATE SCHEMA"
    assert sorted_rows(boxes.to_arrow())[0] == {"colB": {"nested": None, "field2": "y1"}, "a": "a1"}


def test_builder_commits_nothing_when_the_block_raises(boxes):
    with pytest.raises(RuntimeError), boxes.update_schema() as u:
        u.add_column("x", pa.int64())
        raise RuntimeError("boom")
    assert DeltaTable(boxes.location).version == 1
    assert DeltaTable(boxes.location).schema.names == ("colA", "colB")


def test_builder_commit_without_changes_writes_nothing(boxes):
    assert boxes.update_schema().commit() is None
    assert DeltaTable.latest_version(boxes.location) == 1


def test_builder_replace_columns_accepts_an_arrow_schema(boxes):
    new = pa.schema([("colB", BOXES.field("colB").type), ("colA", pa.string())])
    boxes.update_schema().replace_columns(new).commit()
    assert boxes.schema.names == ("colB", "colA")


def test_drop_not_null(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([pa.field("id", pa.int64(), nullable=False)]))
    t.alter("ALTER TABLE t ALTER COLUMN id DROP NOT NULL")
    assert t.schema["id"].nullable
    t.append(pa.table({"id": pa.array([None], pa.int64())}))


# --- bad input: typed error naming the column and statement; the table is unchanged ------------------


@pytest.mark.parametrize(
    ("statement", "error", "match"),
    [
        (
            "ALTER TABLE boxes ADD COLUMNS (colA STRING)",
            SchemaEvolutionError,
            "'colA': a column with that name",
        ),
        ("ALTER TABLE boxes ADD COLUMNS (nope.x STRING)", SchemaEvolutionError, "no column 'nope'"),
        ("ALTER TABLE boxes ADD COLUMNS (x STRING NOT NULL)", SchemaEvolutionError, "NOT NULL"),
        ("ALTER TABLE boxes ADD COLUMNS (x STRING AFTER nope)", SchemaEvolutionError, "AFTER 'nope'"),
        (
            "ALTER TABLE boxes ADD COLUMNS (x STRING, X INT)",
            SchemaEvolutionError,
            "'X': a column with that name",
        ),
        ("ALTER TABLE boxes ALTER COLUMN nope FIRST", SchemaEvolutionError, "no column 'nope'"),
        ("ALTER TABLE boxes RENAME COLUMN colA TO b", SchemaEvolutionError, "columnMapping.mode' = 'name'"),
        ("ALTER TABLE boxes DROP COLUMN colA", SchemaEvolutionError, "does not use column mapping"),
        ("ALTER TABLE boxes REPLACE COLUMNS (colA STRING)", SchemaEvolutionError, "'colB' would be dropped"),
        (
            "ALTER TABLE boxes REPLACE COLUMNS (colA INT, colB STRUCT<field1:STRING, field2:STRING>)",
            SchemaEvolutionError,
            "'colA' would change type",
        ),
        ("ALTER TABLE boxes SET TBLPROPERTIES ('delta.nope' = '1')", InvalidPropertyError, "'delta.nope'"),
        (
            "ALTER TABLE boxes SET TBLPROPERTIES ('delta.columnMapping.mode' = 'id')",
            SchemaEvolutionError,
            "'none' to 'id'",
        ),
        ("ALTER TABLE boxes UNSET TBLPROPERTIES ('owner')", SchemaEvolutionError, "'owner': it is not set"),
        (
            "ALTER TABLE boxes ADD COLUMNS (x STRANG)",
            DDLParseError,
            "unknown data type 'STRANG' at position 33",
        ),
    ],
)
def test_bad_statements_raise_and_leave_the_table_unchanged(boxes, statement, error, match):
    before = DeltaTable(boxes.location)
    with pytest.raises(error, match=match):
        boxes.alter(statement)
    after = DeltaTable(boxes.location)
    assert after.version == before.version == 1
    assert after.schema == before.schema
    assert dict(after.configuration) == dict(before.configuration)


def test_adding_a_field_inside_an_array_or_map_is_refused(tmp_path):
    schema = pa.schema(
        [("a", pa.list_(pa.struct([("x", pa.int64())]))), ("m", pa.map_(pa.string(), pa.int64()))]
    )
    t = DeltaTable.create(str(tmp_path / "t"), schema)
    with pytest.raises(SchemaEvolutionError, match="'a' is an array"):
        t.alter("ALTER TABLE t ADD COLUMNS (a.y STRING)")
    with pytest.raises(SchemaEvolutionError, match="'m' is a map"):
        t.update_schema().add_column("m.y", "STRING")
    assert DeltaTable.latest_version(t.location) == 0


def test_dropping_a_partition_column_is_refused(tmp_path):
    t = DeltaTable.create(
        str(tmp_path / "t"),
        pa.schema([("id", pa.int64()), ("day", pa.string())]),
        partition_by=["day"],
        properties={"delta.columnMapping.mode": "name"},
    )
    with pytest.raises(SchemaEvolutionError, match="'day': it is a partition column"):
        t.alter("ALTER TABLE t DROP COLUMN day")
    assert DeltaTable.latest_version(t.location) == 0


def test_renaming_a_partition_column_renames_the_partitioning_and_keeps_the_values(tmp_path):
    t = DeltaTable.create(
        str(tmp_path / "t"),
        pa.schema([("id", pa.int64()), ("day", pa.string())]),
        partition_by=["day"],
        properties={"delta.columnMapping.mode": "name"},
    )
    t.append(pa.table({"id": [1, 2], "day": ["d1", "d2"]}))
    t.alter("ALTER TABLE t RENAME COLUMN day TO dt")
    assert t.partition_columns == ("dt",)
    assert sorted_rows(t.to_arrow(filter="dt = 'd2'")) == [{"id": 2, "dt": "d2"}]
    assert_delta_rs_agrees(t)


def test_columns_used_by_check_constraints_cannot_be_dropped_or_renamed(tmp_path):
    t = DeltaTable.create(
        str(tmp_path / "t"),
        pa.schema([("id", pa.int64()), ("v", pa.int64())]),
        properties={"delta.columnMapping.mode": "name", "delta.constraints.pos": "v > 0"},
    )
    with pytest.raises(SchemaEvolutionError, match="CHECK constraint 'pos'"):
        t.alter("ALTER TABLE t DROP COLUMN v")
    with pytest.raises(SchemaEvolutionError, match="CHECK constraint 'pos'"):
        t.alter("ALTER TABLE t RENAME COLUMN V TO w")
    t.alter("ALTER TABLE t RENAME COLUMN id TO key")
    assert t.schema.names == ("key", "v")


# --- concurrency -------------------------------------------------------------------------------------


def test_a_schema_change_makes_a_concurrent_writer_fail_with_metadata_changed(boxes):
    writer = boxes.transaction(operation="WRITE")  # opened at version 1
    boxes.alter("ALTER TABLE boxes ADD COLUMNS (x STRING)")  # wins version 2
    from airflow_provider_delta.core.write.rows import write_rows
    from airflow_provider_delta.core.write.target import WriteTarget

    writer.add(*write_rows(WriteTarget.of(writer.snapshot), pa.Table.from_pylist(ROWS, schema=BOXES)))
    writer.read_whole_table()
    with pytest.raises(MetadataChangedException):
        writer.commit()
    assert DeltaTable.latest_version(boxes.location) == 2


def test_two_concurrent_schema_updates_conflict(boxes):
    first, second = boxes.update_schema(), DeltaTable(boxes.location).update_schema()
    first.add_column("x", "STRING")
    second.add_column("y", "STRING")
    first.commit()
    with pytest.raises(MetadataChangedException):
        second.commit()
    assert DeltaTable(boxes.location).schema.names == ("colA", "colB", "x")


# --- interop: delta-rs reads what we changed ---------------------------------------------------------


@pytest.mark.interop
@pytest.mark.parametrize(
    "statements",
    [
        ["ALTER TABLE b ADD COLUMNS (colB.nested STRING AFTER field1, colC BIGINT FIRST)"],
        ["ALTER TABLE b ALTER COLUMN colB.field2 FIRST", "ALTER TABLE b ALTER COLUMN colA COMMENT 'a'"],
        [
            "ALTER TABLE b ADD COLUMNS (colB.nested STRING)",
            "ALTER TABLE b REPLACE COLUMNS (colC STRING, colB STRUCT<field2:STRING, nested:STRING, field1:STRING>, "
            "colA STRING)",
        ],
        [MAP_BY_NAME, "ALTER TABLE b RENAME COLUMN colA TO a"],
        [MAP_BY_NAME, "ALTER TABLE b DROP COLUMN colA"],
        [MAP_BY_NAME, "ALTER TABLE b DROP COLUMN colB.field1"],
        [
            MAP_BY_NAME,
            "ALTER TABLE b RENAME COLUMN colB.field2 TO f2",
            "ALTER TABLE b ADD COLUMNS (colB.field2 INT)",
        ],
        ["ALTER TABLE b SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', 'x' = 'y')"],
    ],
    ids=["add", "alter", "replace", "rename", "drop", "drop-nested", "rename-and-re-add", "properties"],
)
def test_delta_rs_reads_the_same_rows_and_schema_after_each_kind_of_change(boxes, statements):
    for statement in statements:
        boxes.alter(statement)
    colb = boxes.schema["colB"].type
    row = {"colB": {f.name: "new" if f.type.simple_string() == "string" else 7 for f in colb.fields}}
    boxes.append(pa.Table.from_pylist([row], schema=to_arrow_schema(boxes.schema)))
    assert_delta_rs_agrees(boxes)


@pytest.mark.interop
def test_delta_rs_reads_a_renamed_nested_field(boxes):
    mapped(boxes).alter("ALTER TABLE boxes RENAME COLUMN colB.field1 TO field001")
    assert_delta_rs_agrees(boxes)

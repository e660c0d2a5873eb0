"""Schema evolution on write: schema_mode="merge" (mergeSchema) and "overwrite" (overwriteSchema)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.commands.write import append
from airflow_provider_delta.core.schema.mapping import field_id, physical_name
from airflow_provider_delta.core.session import session_defaults
from airflow_provider_delta.exceptions import (
    MetadataChangedException,
    SchemaEvolutionError,
    SchemaMismatchError,
)
from tests.interop import assert_delta_rs_reads_identically

BASE = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int64())]))])


def rows(t: DeltaTable) -> list[dict[str, Any]]:
    return sorted(t.to_arrow().to_pylist(), key=json.dumps)


def commit_actions(t: DeltaTable, version: int) -> list[str]:
    path = Path(t.location) / "_delta_log" / f"{version:020d}.json"
    return [next(iter(json.loads(line))) for line in path.read_text().splitlines()]


@pytest.fixture
def table(tmp_path: Path) -> DeltaTable:
    t = DeltaTable.create(str(tmp_path / "t"), BASE)
    t.append(pa.Table.from_pylist([{"id": 1, "s": {"a": 10}}], schema=BASE))
    return t


def unchanged(t: DeltaTable, version: int, schema_json: str) -> None:
    fresh = DeltaTable(t.location)
    assert fresh.version == version
    assert fresh.schema.to_json() == schema_json


# --- merge -----------------------------------------------------------------------------------------


def test_merge_adds_new_columns_at_the_end_with_their_case_in_the_same_commit(table):
    data = pa.table({"NewCol": ["x"], "ID": [2], "s": [{"a": 20, "b": "bee"}]})
    version = table.append(data, schema_mode="merge")
    assert version == 2
    assert [f.name for f in table.schema] == ["id", "s", "NewCol"]
    assert table.schema["s"].type.simple_string() == "struct<a:long,b:string>"
    assert all(f.nullable for f in table.schema)
    assert commit_actions(table, 2) == ["commitInfo", "metaData", "add"]
    assert table.history(1)[0]["operationParameters"]["mergeSchema"] == "true"
    assert rows(table) == [
        {"id": 1, "s": {"a": 10, "b": None}, "NewCol": None},
        {"id": 2, "s": {"a": 20, "b": "bee"}, "NewCol": "x"},
    ]
    assert_delta_rs_reads_identically(table.location)


def test_merge_evolves_structs_inside_map_values_and_array_elements(tmp_path):
    m1 = pa.map_(pa.string(), pa.struct([("x", pa.int64())]))
    a1 = pa.list_(pa.struct([("x", pa.int64())]))
    schema = pa.schema([("m", m1), ("a", a1)])
    t = DeltaTable.create(str(tmp_path / "t"), schema)
    t.append(pa.Table.from_pylist([{"m": [("k", {"x": 1})], "a": [{"x": 1}]}], schema=schema))
    m2 = pa.map_(pa.string(), pa.struct([("x", pa.int64()), ("y", pa.string())]))
    a2 = pa.list_(pa.struct([("x", pa.int64()), ("z", pa.bool_())]))
    t.append(
        pa.table(
            {"m": pa.array([[("k", {"x": 2, "y": "why"})]], m2), "a": pa.array([[{"x": 2, "z": True}]], a2)}
        ),
        schema_mode="merge",
    )
    assert (
        t.schema.simple_string()
        == "struct<m:map<string,struct<x:long,y:string>>,a:array<struct<x:long,z:boolean>>>"
    )
    assert sorted(t.to_arrow().to_pylist(), key=repr) == [
        {"m": [("k", {"x": 1, "y": None})], "a": [{"x": 1, "z": None}]},
        {"m": [("k", {"x": 2, "y": "why"})], "a": [{"x": 2, "z": True}]},
    ]


@pytest.mark.interop
def test_delta_rs_reads_a_struct_evolved_inside_array_elements(tmp_path):
    a1 = pa.list_(pa.struct([("x", pa.int64())]))
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("a", a1)]))
    t.append(pa.table({"a": pa.array([[{"x": 1}]], a1)}))
    a2 = pa.list_(pa.struct([("x", pa.int64()), ("z", pa.bool_())]))
    t.append(pa.table({"a": pa.array([[{"x": 2, "z": True}]], a2)}), schema_mode="merge")
    assert_delta_rs_reads_identically(t.location)


@pytest.mark.interop
@pytest.mark.xfail(
    strict=True,
    reason="delta-rs 1.6.6 (DataFusion) cannot cast an older file's map<k, struct> "
    "to a map whose value struct gained a field",
)
def test_delta_rs_reads_a_struct_evolved_inside_map_values(tmp_path):
    m1 = pa.map_(pa.string(), pa.struct([("x", pa.int64())]))
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("m", m1)]))
    t.append(pa.table({"m": pa.array([[("k", {"x": 1})]], m1)}))
    m2 = pa.map_(pa.string(), pa.struct([("x", pa.int64()), ("y", pa.string())]))
    t.append(pa.table({"m": pa.array([[("k", {"x": 2, "y": "why"})]], m2)}), schema_mode="merge")
    assert_delta_rs_reads_identically(t.location)


def test_without_schema_mode_new_columns_are_refused_and_the_table_is_unchanged(table):
    before = table.schema.to_json()
    with pytest.raises(SchemaMismatchError, match="'extra' is not in the table schema"):
        table.append(pa.table({"id": [2], "extra": ["x"]}))
    unchanged(table, 1, before)


def test_session_auto_merge_enables_merge_and_an_explicit_mode_wins(table):
    with session_defaults(auto_merge_schema=True):
        table.append(pa.table({"id": [2], "extra": ["x"]}))
        assert table.schema.names == ("id", "s", "extra")
        table.overwrite(pa.table({"only": [1]}), schema_mode="overwrite")
    assert table.schema.names == ("only",)
    with pytest.raises(SchemaMismatchError):
        table.append(pa.table({"only": [2], "more": [1]}))  # the default is back to off


def test_incompatible_type_is_an_error_naming_the_column_and_the_table_is_unchanged(table):
    before = table.schema.to_json()
    with pytest.raises(SchemaEvolutionError, match=r"Cannot merge column 's\.a': incompatible types"):
        table.append(pa.table({"s": [{"a": "text"}]}), schema_mode="merge")
    unchanged(table, 1, before)


def test_python_ints_into_an_int_column_are_cast_and_small_integers_widen_as_in_delta(tmp_path):
    schema = pa.schema([("i", pa.int32()), ("h", pa.int16())])
    t = DeltaTable.create(str(tmp_path / "t"), schema)
    t.append(pa.table({"i": [1]}), schema_mode="merge")  # int64 data, int column: values cast
    assert t.version == 1 and commit_actions(t, 1) == ["commitInfo", "add"]
    t.append(pa.table({"h": pa.array([70000], pa.int32())}), schema_mode="merge")  # short -> int
    assert t.schema.simple_string() == "struct<i:integer,h:integer>"
    assert sorted(t.to_arrow().to_pylist(), key=repr) == [{"i": 1, "h": None}, {"i": None, "h": 70000}]


def test_null_type_columns_are_kept_in_the_schema_but_not_written(table):
    table.append(pa.table({"id": [2], "n": pa.nulls(1)}), schema_mode="merge")
    assert table.schema["n"].type.simple_string() == "void"
    newest = max(table.files(), key=lambda f: f.modification_time)
    assert "n" not in pq.read_schema(Path(table.location) / unquote(newest.path)).names
    assert [r["n"] for r in rows(table)] == [None, None]
    assert_delta_rs_reads_identically(table.location)
    table.append(pa.table({"n": ["now a string"]}), schema_mode="merge")
    assert table.schema["n"].type.simple_string() == "string"
    table.append(pa.table({"n": pa.nulls(1)}), schema_mode="merge")  # NullType for an existing column
    assert table.schema["n"].type.simple_string() == "string"
    assert sorted(r["n"] or "" for r in rows(table)) == ["", "", "", "now a string"]


def test_merge_on_a_column_mapped_table_assigns_ids_and_physical_names(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), BASE, properties={"delta.columnMapping.mode": "name"})
    t.append(pa.table({"id": [1], "s": [{"a": 1, "b": 2}], "c": ["x"]}), schema_mode="merge")
    new_fields = [t.schema["c"], t.schema["s"].type["b"]]  # type: ignore[union-attr]
    assert [field_id(f) for f in new_fields] == [5, 4]  # ids follow schema order: s.b before c
    assert all(physical_name(f).startswith("col-") for f in new_fields)
    assert t.configuration["delta.columnMapping.maxColumnId"] == "5"
    assert_delta_rs_reads_identically(t.location)


def test_a_merge_write_loses_to_a_concurrent_schema_change(table):
    stale = table.snapshot
    table.alter("ALTER TABLE t ADD COLUMNS (other STRING)")
    with pytest.raises(MetadataChangedException):
        append(stale, pa.table({"id": [5], "x": [1]}), schema_mode="merge")
    assert DeltaTable(table.location).schema.names == ("id", "s", "other")


# --- overwrite -------------------------------------------------------------------------------------


def test_overwrite_schema_changes_a_type_by_rewriting_the_table(table):
    table.overwrite(pa.table({"id": ["one"], "s": [{"a": 1.5}]}), schema_mode="overwrite")
    assert table.schema.simple_string() == "struct<id:string,s:struct<a:double>>"
    assert rows(table) == [{"id": "one", "s": {"a": 1.5}}]
    assert table.history(1)[0]["operationParameters"]["overwriteSchema"] == "true"
    assert_delta_rs_reads_identically(table.location)


def test_overwrite_schema_renames_a_column_by_rewriting(table):
    renamed = table.to_arrow().rename_columns(["key", "s"])
    table.overwrite(renamed, schema_mode="overwrite")
    assert table.schema.names == ("key", "s")
    assert rows(table) == [{"key": 1, "s": {"a": 10}}]


def test_overwrite_schema_replaces_the_partitioning(table):
    data = pa.table({"id": [1, 2], "day": ["d1", "d2"]})
    table.overwrite(data, schema_mode="overwrite", partition_by=["DAY"])
    assert table.partition_columns == ("day",)
    assert sorted(f.partition_values["day"] for f in table.files()) == ["d1", "d2"]
    assert_delta_rs_reads_identically(table.location)
    table.overwrite(data, schema_mode="overwrite")  # as in Delta: no partition_by, no partitioning
    assert table.partition_columns == ()


def test_overwrite_schema_with_a_predicate_is_a_clear_error(table):
    before = table.schema.to_json()
    with pytest.raises(SchemaEvolutionError, match="schema_mode='overwrite' and a predicate"):
        table.overwrite(pa.table({"id": [1]}), "id = 1", schema_mode="overwrite")
    unchanged(table, 1, before)


def test_changing_the_partitioning_needs_overwrite_schema(table):
    before = table.schema.to_json()
    with pytest.raises(SchemaEvolutionError, match="the partitioning differs"):
        table.overwrite(pa.table({"id": [1]}), partition_by=["id"])
    unchanged(table, 1, before)


def test_overwrite_with_merge_and_a_predicate_evolves_and_replaces_matching_rows(table):
    table.append(pa.Table.from_pylist([{"id": 2, "s": {"a": 20}}], schema=BASE))
    table.overwrite(pa.table({"id": [2], "extra": [True]}), "id = 2", schema_mode="merge")
    assert table.schema.names == ("id", "s", "extra")
    assert rows(table) == [{"id": 1, "s": {"a": 10}, "extra": None}, {"id": 2, "s": None, "extra": True}]


def test_append_refuses_schema_mode_overwrite(table):
    with pytest.raises(SchemaEvolutionError, match="schema_mode must be None or 'merge'"):
        table.append(pa.table({"id": [1]}), schema_mode="overwrite")  # type: ignore[arg-type]

"""How MERGE resolves the columns its assignments write, as Delta Lake on Spark does.

Expected outcomes are Delta's: its own test suite (``MergeIntoSchemaEvolutionSuite``: "existing
top-level column assignment qualified with target alias", "existing nested field assignment qualified
with target alias", "new top-level column assignment qualified with target alias", "new nested field
assignment qualified with target alias", "nested field assignment qualified with source alias";
``PreprocessTableMerge``'s nested-field and duplicate-column checks) and what delta-spark 4.4.0 did on
the same statements (/work/oracle, 2026-11-29). Each case runs through ``merge_sql`` and through the
builder, and a refused statement leaves the table at its version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.exceptions import MergeError

if TYPE_CHECKING:
    from pathlib import Path

T_STRUCT = pa.struct([("a", pa.int32())])
TARGET = pa.table({"a": pa.array([1], pa.int32()), "t": pa.array([{"a": 2}], T_STRUCT)})
SOURCE = pa.table({
    "a": pa.array([3], pa.int32()), "b": pa.array([4], pa.int32()),
    "t": pa.array([{"a": 5, "b": 6}], pa.struct([("a", pa.int32()), ("b", pa.int32())])),
})


def make(tmp_path: Path, data: pa.Table = TARGET) -> DeltaTable:
    table = DeltaTable.create(str(tmp_path / "t"), data.schema)
    table.append(data)
    return table


def state(table: DeltaTable) -> tuple[str, list[dict[str, Any]]]:
    fresh = DeltaTable(table.location)
    return fresh.schema.simple_string(), fresh.to_arrow().to_pylist()


def run_sql(table: DeltaTable, clause: str, *, evolution: bool, on: str = "1 = 1", source: pa.Table = SOURCE) -> Any:
    evolve = " WITH SCHEMA EVOLUTION" if evolution else ""
    return table.merge_sql(f"MERGE{evolve} INTO target t USING src s ON {on} WHEN {clause}", source={"src": source})


def run_builder(table: DeltaTable, assignments: dict[str, str], *, evolution: bool) -> Any:
    builder = table.merge(SOURCE, "1 = 1", source_alias="s", target_alias="t", schema_evolution=evolution)
    return builder.when_matched_update(set=assignments).execute()


API = pytest.mark.parametrize("api", ["sql", "builder"])


def update(table: DeltaTable, api: str, column: str, value: str, *, evolution: bool) -> Any:
    if api == "sql":
        return run_sql(table, f"MATCHED THEN UPDATE SET {column} = {value}", evolution=evolution)
    return run_builder(table, {column: value}, evolution=evolution)


@API
@pytest.mark.parametrize("evolution", [False, True])
def test_a_name_qualified_with_the_target_alias_prefers_the_column_over_a_struct_of_that_name(
    tmp_path: Path, api: str, evolution: bool
) -> None:
    table = make(tmp_path)
    update(table, api, "t.a", "s.a", evolution=evolution)
    assert state(table) == ("struct<a:integer,t:struct<a:integer>>", [{"a": 3, "t": {"a": 2}}])


@API
@pytest.mark.parametrize("evolution", [False, True])
def test_alias_dot_struct_dot_field_writes_the_struct_field(tmp_path: Path, api: str, evolution: bool) -> None:
    table = make(tmp_path)
    update(table, api, "t.t.a", "s.t.a", evolution=evolution)
    assert state(table) == ("struct<a:integer,t:struct<a:integer>>", [{"a": 1, "t": {"a": 5}}])


@API
def test_a_struct_named_like_the_alias_takes_the_field_when_no_column_has_the_name(tmp_path: Path, api: str) -> None:
    # The case: target alias t, struct column t{a, b}; SET t.b = s.b writes t.b, no column b.
    data = pa.table({"k": pa.array([1], pa.int32()),
                     "t": pa.array([{"a": 1, "b": 2}], pa.struct([("a", pa.int32()), ("b", pa.int32())]))})
    table = make(tmp_path, data)
    source = pa.table({"k": pa.array([1], pa.int32()), "b": pa.array([9], pa.int32())})
    if api == "sql":
        table.merge_sql("MERGE WITH SCHEMA EVOLUTION INTO x t USING s ON t.k = s.k "
                        "WHEN MATCHED AND t.b = 2 THEN UPDATE SET t.b = s.b", source=source)
    else:
        (table.merge(source, "t.k = s.k", source_alias="s", target_alias="t", schema_evolution=True)
         .when_matched_update(set={"t.b": "s.b"}, condition="t.b = 2").execute())
    assert state(table) == ("struct<k:integer,t:struct<a:integer,b:integer>>", [{"k": 1, "t": {"a": 1, "b": 9}}])


@API
def test_with_evolution_alias_dot_new_field_adds_the_field_to_the_struct_named_like_the_alias(
    tmp_path: Path, api: str
) -> None:
    table = make(tmp_path)
    update(table, api, "t.b", "s.b", evolution=True)
    assert state(table) == ("struct<a:integer,t:struct<a:integer,b:integer>>", [{"a": 1, "t": {"a": 2, "b": 4}}])


@API
def test_without_evolution_a_missing_struct_field_is_unresolved(tmp_path: Path, api: str) -> None:
    table = make(tmp_path)
    with pytest.raises(MergeError, match="t.b") as info:
        update(table, api, "t.b", "s.b", evolution=False)
    assert info.value.column == "t.b"
    assert DeltaTable(table.location).version == 1


@API
def test_with_evolution_alias_dot_struct_dot_new_field_is_unresolved(tmp_path: Path, api: str) -> None:
    table = make(tmp_path)
    with pytest.raises(MergeError, match="t.t.b"):
        update(table, api, "t.t.b", "s.t.b", evolution=True)
    assert DeltaTable(table.location).version == 1


@API
def test_a_left_side_qualified_with_the_source_alias_resolves_through_the_source_only_with_evolution(
    tmp_path: Path, api: str
) -> None:
    table = make(tmp_path)
    with pytest.raises(MergeError, match="s.t.a"):
        update(table, api, "s.t.a", "s.t.a", evolution=False)
    assert DeltaTable(table.location).version == 1
    update(table, api, "s.t.a", "s.t.a", evolution=True)
    assert state(table) == ("struct<a:integer,t:struct<a:integer>>", [{"a": 1, "t": {"a": 5}}])


# ----------------------------------------------------------------------------------------- INSERT

KV = pa.table({"key": pa.array([1], pa.int32()), "value": pa.array([{"a": 1, "b": 2}], pa.struct(
    [("a", pa.int32()), ("b", pa.int32())]))})
NEW = pa.table({"key": pa.array([2], pa.int32()), "value": pa.array([{"a": 5, "b": 6}], KV.schema.field("value").type)})


@pytest.mark.parametrize("evolution", [False, True])
@pytest.mark.parametrize("column", ["value.b", "t.value.b"])
def test_a_nested_field_in_an_insert_column_list_is_refused(tmp_path: Path, evolution: bool, column: str) -> None:
    table = make(tmp_path, KV)
    with pytest.raises(MergeError, match="Nested field is not supported in the INSERT clause") as info:
        run_sql(table, f"NOT MATCHED THEN INSERT (key, {column}) VALUES (s.key, s.value.b)", evolution=evolution,
                on="t.key = s.key", source=NEW)
    assert info.value.clause == "WHEN NOT MATCHED clause 1 (INSERT)"
    with pytest.raises(MergeError, match="Nested field is not supported"):
        (table.merge(NEW, "t.key = s.key", source_alias="s", target_alias="t", schema_evolution=evolution)
         .when_not_matched_insert(values={"key": "s.key", column: "s.value.b"}).execute())
    assert DeltaTable(table.location).version == 1


def test_insert_columns_qualified_with_the_target_alias_are_top_level_columns(tmp_path: Path) -> None:
    table = make(tmp_path, KV)
    run_sql(table, "NOT MATCHED THEN INSERT (t.key, t.value) VALUES (s.key, s.value)", evolution=False,
            on="t.key = s.key", source=NEW)
    assert sorted(r["key"] for r in DeltaTable(table.location).to_arrow().to_pylist()) == [1, 2]


def test_a_column_listed_twice_in_insert_is_refused(tmp_path: Path) -> None:
    table = make(tmp_path, KV)
    with pytest.raises(MergeError, match="DELTA_DUPLICATE_COLUMNS_ON_INSERT"):
        run_sql(table, "NOT MATCHED THEN INSERT (key, value, value) VALUES (s.key, s.value, s.value)",
                evolution=False, on="t.key = s.key", source=NEW)
    assert DeltaTable(table.location).version == 1


def test_insert_columns_differing_only_in_case_take_the_first_value(tmp_path: Path) -> None:
    # Delta accepts INSERT (key, value, VALUE): the names resolve to one column and its first value wins.
    table = make(tmp_path, pa.table({"key": pa.array([1], pa.int32()), "value": pa.array([1], pa.int32())}))
    source = pa.table({"key": pa.array([2], pa.int32()), "value": pa.array([5], pa.int32())})
    run_sql(table, "NOT MATCHED THEN INSERT (key, value, VALUE) VALUES (s.key, s.value, 99)", evolution=False,
            on="t.key = s.key", source=source)
    assert sorted(DeltaTable(table.location).to_arrow().to_pylist(), key=lambda r: r["key"]) == [
        {"key": 1, "value": 1}, {"key": 2, "value": 5}]


def test_update_set_of_one_column_twice_in_different_case_is_refused(tmp_path: Path) -> None:
    table = make(tmp_path, pa.table({"key": pa.array([1], pa.int32()), "value": pa.array([1], pa.int32())}))
    source = pa.table({"key": pa.array([1], pa.int32()), "value": pa.array([5], pa.int32())})
    with pytest.raises(MergeError, match="more than once"):
        run_sql(table, "MATCHED THEN UPDATE SET value = s.value, VALUE = 99", evolution=False, on="t.key = s.key",
                source=source)
    assert DeltaTable(table.location).version == 1


@pytest.mark.parametrize(("column", "added"), [("new", True), ("s.new", True), ("t.new", False),
                                                ("st.n2", True), ("s.st.n2", True), ("t.st.n2", False)])
def test_with_evolution_a_new_column_is_named_as_the_source_resolves_it(
    tmp_path: Path, column: str, added: bool
) -> None:
    # delta-spark 4.4.0: SET new / s.new / st.n2 / s.st.n2 = <same-named source field> add it with evolution;
    # t.new and t.st.n2 do not resolve (not in the target, and t is not the source's alias).
    data = pa.table({"key": pa.array([1], pa.int32()), "st": pa.array([{"a": 1}], pa.struct([("a", pa.int32())]))})
    source = pa.table({"key": pa.array([1], pa.int32()), "new": pa.array([5], pa.int32()),
                       "st": pa.array([{"a": 7, "n2": 8}], pa.struct([("a", pa.int32()), ("n2", pa.int32())]))})
    table = make(tmp_path, data)
    value = "s.st.n2" if "n2" in column else "s.new"
    statement = f"MATCHED THEN UPDATE SET {column} = {value}"
    if not added:
        with pytest.raises(MergeError, match="Cannot resolve column"):
            run_sql(table, statement, evolution=True, on="t.key = s.key", source=source)
        assert DeltaTable(table.location).version == 1
        return
    run_sql(table, statement, evolution=True, on="t.key = s.key", source=source)
    expected = {"key": 1, "st": {"a": 1, "n2": 8}} if "n2" in column else {"key": 1, "st": {"a": 1}, "new": 5}
    assert DeltaTable(table.location).to_arrow().to_pylist() == [expected]
    with pytest.raises(MergeError, match="Cannot resolve column"):
        run_sql(make(tmp_path / "again", data), statement, evolution=False, on="t.key = s.key", source=source)

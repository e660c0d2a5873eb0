"""MERGE with and without schema evolution: each row of Delta's documented table, the EXCEPT examples,
nested structs and struct map values. Every test asserts the exact schema (names, order, nullability)
and rows afterwards; errors leave the table at its version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.exceptions import DeltaError, MergeError

if TYPE_CHECKING:
    from pathlib import Path


def make_table(tmp_path: Path, data: pa.Table, **kwargs: Any) -> DeltaTable:
    t = DeltaTable.create(str(tmp_path / "t"), data.schema, **kwargs)
    t.append(data)
    return t


def rows(t: DeltaTable, key: str = "key") -> list[dict[str, Any]]:
    return sorted(DeltaTable(t.location).to_arrow().to_pylist(), key=lambda r: r[key])


def fields(t: DeltaTable) -> list[tuple[str, str, bool]]:
    return [(f.name, f.type.simple_string(), f.nullable) for f in DeltaTable(t.location).schema]


def merge(t: DeltaTable, source: pa.Table, *, evolution: bool, on: str = "t.key = s.key") -> Any:
    return t.merge(source, on, source_alias="s", target_alias="t", schema_evolution=evolution)


KV = pa.table({"key": [1, 2], "value": ["a", "b"]})
KOLD = pa.table({"key": [1, 2], "old_value": ["a", "b"]})
SRC_EXTRA = pa.table({"key": [2, 3], "value": ["B", "C"], "new_value": [20, 30]})
SRC_NEW = pa.table({"key": [2, 3], "new_value": [20, 30]})


# -- row 1: target(key, value), source(key, value, new_value), UPDATE SET * / INSERT * ---------------


def test_update_all_insert_all_without_evolution_ignores_the_extra_source_column(tmp_path: Path) -> None:
    t = make_table(tmp_path, KV)
    metrics = (
        merge(t, SRC_EXTRA, evolution=False).when_matched_update_all().when_not_matched_insert_all().execute()
    )
    assert fields(t) == [("key", "long", True), ("value", "string", True)]
    assert rows(t) == [{"key": 1, "value": "a"}, {"key": 2, "value": "B"}, {"key": 3, "value": "C"}]
    assert (
        metrics["numTargetRowsUpdated"],
        metrics["numTargetRowsInserted"],
        metrics["numTargetRowsCopied"],
    ) == (1, 1, 1)


def test_update_all_insert_all_with_evolution_adds_the_new_column(tmp_path: Path) -> None:
    t = make_table(tmp_path, KV)
    merge(t, SRC_EXTRA, evolution=True).when_matched_update_all().when_not_matched_insert_all().execute()
    assert fields(t) == [("key", "long", True), ("value", "string", True), ("new_value", "long", True)]
    assert rows(t) == [
        {"key": 1, "value": "a", "new_value": None},
        {"key": 2, "value": "B", "new_value": 20},
        {"key": 3, "value": "C", "new_value": 30},
    ]


# -- row 2: target(key, old_value), source(key, new_value), UPDATE SET * / INSERT * ------------------


@pytest.mark.parametrize("clause", ["update", "insert"])
def test_star_without_evolution_fails_when_a_target_column_is_missing_from_the_source(
    tmp_path: Path, clause: str
) -> None:
    t = make_table(tmp_path, KOLD)
    builder = merge(t, SRC_NEW, evolution=False)
    builder = (
        builder.when_matched_update_all() if clause == "update" else builder.when_not_matched_insert_all()
    )
    with pytest.raises(MergeError, match="old_value") as info:
        builder.execute()
    assert info.value.column == "old_value"
    assert "clause 1" in str(info.value.clause)
    assert DeltaTable(t.location).version == 1
    assert fields(t) == [("key", "long", True), ("old_value", "string", True)]


def test_star_with_evolution_keeps_old_value_on_update_and_nulls_it_on_insert(tmp_path: Path) -> None:
    t = make_table(tmp_path, KOLD)
    merge(t, SRC_NEW, evolution=True).when_matched_update_all().when_not_matched_insert_all().execute()
    assert fields(t) == [("key", "long", True), ("old_value", "string", True), ("new_value", "long", True)]
    assert rows(t) == [
        {"key": 1, "old_value": "a", "new_value": None},
        {"key": 2, "old_value": "b", "new_value": 20},
        {"key": 3, "old_value": None, "new_value": 30},
    ]


# -- row 3: UPDATE SET new_value = s.new_value --------------------------------------------------------


def test_set_of_a_new_column_without_evolution_is_an_error_naming_it(tmp_path: Path) -> None:
    t = make_table(tmp_path, KOLD)
    with pytest.raises(MergeError, match="new_value") as info:
        merge(t, SRC_NEW, evolution=False).when_matched_update(set={"new_value": "s.new_value"}).execute()
    assert info.value.column == "new_value"
    assert DeltaTable(t.location).version == 1


def test_set_of_a_new_column_with_evolution_adds_it_and_unmatched_rows_get_null(tmp_path: Path) -> None:
    t = make_table(tmp_path, KOLD)
    merge(t, SRC_NEW, evolution=True).when_matched_update(set={"t.new_value": "s.new_value"}).execute()
    assert fields(t) == [("key", "long", True), ("old_value", "string", True), ("new_value", "long", True)]
    assert rows(t) == [
        {"key": 1, "old_value": "a", "new_value": None},
        {"key": 2, "old_value": "b", "new_value": 20},
    ]


# -- row 4: INSERT (key, new_value) VALUES (s.key, s.new_value) ----------------------------------------


def test_insert_of_a_new_column_without_evolution_is_an_error(tmp_path: Path) -> None:
    t = make_table(tmp_path, KOLD)
    with pytest.raises(MergeError, match="new_value"):
        merge(t, SRC_NEW, evolution=False).when_not_matched_insert(
            values={"key": "s.key", "new_value": "s.new_value"}
        ).execute()
    assert DeltaTable(t.location).version == 1


def test_insert_of_a_new_column_with_evolution_adds_it_and_nulls_old_value(tmp_path: Path) -> None:
    t = make_table(tmp_path, KOLD)
    merge(t, SRC_NEW, evolution=True).when_not_matched_insert(
        values={"key": "s.key", "new_value": "s.new_value"}
    ).execute()
    assert fields(t) == [("key", "long", True), ("old_value", "string", True), ("new_value", "long", True)]
    assert rows(t) == [
        {"key": 1, "old_value": "a", "new_value": None},
        {"key": 2, "old_value": "b", "new_value": None},
        {"key": 3, "old_value": None, "new_value": 30},
    ]


# -- row 5: EXCEPT (Delta's docs: id/title/review/last_updated[/internal_count]) ------------------------

TARGET_DOC = pa.table({"id": [1, 2], "title": ["t1", "t2"], "last_updated": ["2024-01-01", "2024-01-01"]})
SOURCE_DOC1 = pa.table(
    {
        "id": [2, 3],
        "title": ["T2", "T3"],
        "review": ["r2", "r3"],
        "last_updated": ["2024-02-02", "2024-03-03"],
    }
)
SOURCE_DOC2 = pa.table(
    {"id": [2, 3], "title": ["T2", "T3"], "review": ["r2", "r3"], "internal_count": [7, 8]}
)
DOC_SQL = (
    "MERGE {evo}INTO target t USING source s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET last_updated = '2025-05-05' "
    "WHEN NOT MATCHED THEN INSERT * EXCEPT ({excluded})"
)


def test_except_example_1_without_evolution_nulls_the_excluded_column_and_ignores_review(
    tmp_path: Path,
) -> None:
    t = make_table(tmp_path, TARGET_DOC)
    t.merge_sql(DOC_SQL.format(evo="", excluded="last_updated"), source=SOURCE_DOC1)
    assert [f[0] for f in fields(t)] == ["id", "title", "last_updated"]
    assert rows(t, "id") == [
        {"id": 1, "title": "t1", "last_updated": "2024-01-01"},
        {"id": 2, "title": "t2", "last_updated": "2025-05-05"},
        {"id": 3, "title": "T3", "last_updated": None},
    ]


def test_except_example_1_with_evolution_adds_review_and_nulls_the_excluded_column(tmp_path: Path) -> None:
    t = make_table(tmp_path, TARGET_DOC)
    t.merge_sql(DOC_SQL.format(evo="WITH SCHEMA EVOLUTION ", excluded="last_updated"), source=SOURCE_DOC1)
    assert fields(t) == [
        ("id", "long", True),
        ("title", "string", True),
        ("last_updated", "string", True),
        ("review", "string", True),
    ]
    assert rows(t, "id") == [
        {"id": 1, "title": "t1", "last_updated": "2024-01-01", "review": None},
        {"id": 2, "title": "t2", "last_updated": "2025-05-05", "review": None},
        {"id": 3, "title": "T3", "last_updated": None, "review": "r3"},
    ]


def test_except_example_2_without_evolution_fails_on_internal_count(tmp_path: Path) -> None:
    t = make_table(tmp_path, TARGET_DOC)
    with pytest.raises(MergeError, match="internal_count") as info:
        t.merge_sql(DOC_SQL.format(evo="", excluded="last_updated, internal_count"), source=SOURCE_DOC2)
    assert info.value.column == "internal_count"
    assert DeltaTable(t.location).version == 1


def test_except_example_2_with_evolution_adds_review_but_not_the_excluded_internal_count(
    tmp_path: Path,
) -> None:
    t = make_table(tmp_path, TARGET_DOC)
    t.merge_sql(
        DOC_SQL.format(evo="WITH SCHEMA EVOLUTION ", excluded="last_updated, internal_count"),
        source=SOURCE_DOC2,
    )
    assert [f[0] for f in fields(t)] == ["id", "title", "last_updated", "review"]
    assert rows(t, "id") == [
        {"id": 1, "title": "t1", "last_updated": "2024-01-01", "review": None},
        {"id": 2, "title": "t2", "last_updated": "2025-05-05", "review": None},
        {"id": 3, "title": "T3", "last_updated": None, "review": "r3"},
    ]


def test_update_all_except_leaves_the_excluded_target_column_unchanged(tmp_path: Path) -> None:
    t = make_table(tmp_path, TARGET_DOC)
    merge(t, SOURCE_DOC1, evolution=False, on="t.id = s.id").when_matched_update_all(
        except_=["last_updated"]
    ).execute()
    assert rows(t, "id")[1] == {"id": 2, "title": "T2", "last_updated": "2024-01-01"}


# -- an assignment to a column the source has evolves it, whatever the value ------------------------------
# Delta (ResolveDeltaMergeInto.computePostEvolutionTargetSchema, delta-spark 4.4.0) keeps the source fields
# assignments name as their target and merges them into the table: the column gets the source column's type.


@pytest.mark.parametrize(("value", "stored"), [("s.new_value + 1", 21), ("s.key", 2)])
def test_an_assignment_of_any_value_to_a_source_column_adds_it_with_the_source_type(
    tmp_path: Path, value: str, stored: int
) -> None:
    t = make_table(tmp_path, KOLD)
    merge(t, SRC_NEW, evolution=True).when_matched_update(set={"new_value": value}).execute()
    assert fields(t) == [("key", "long", True), ("old_value", "string", True), ("new_value", "long", True)]
    assert rows(t) == [
        {"key": 1, "old_value": "a", "new_value": None},
        {"key": 2, "old_value": "b", "new_value": stored},
    ]


def test_an_assignment_to_a_column_the_source_lacks_is_refused_naming_it(tmp_path: Path) -> None:
    t = make_table(tmp_path, KOLD)
    with pytest.raises(MergeError, match="extra") as info:
        merge(t, SRC_NEW, evolution=True).when_matched_update(set={"extra": "s.new_value"}).execute()
    assert info.value.column == "extra"
    assert info.value.clause == "WHEN MATCHED clause 1 (UPDATE)"
    assert DeltaTable(t.location).version == 1
    assert [f[0] for f in fields(t)] == ["key", "old_value"]


def test_a_source_column_only_used_in_an_expression_is_not_added(tmp_path: Path) -> None:
    t = make_table(tmp_path, KOLD)
    merge(t, SRC_NEW, evolution=True).when_matched_update(
        set={"old_value": "CAST(s.new_value AS STRING)"}
    ).execute()
    assert [f[0] for f in fields(t)] == ["key", "old_value"]
    assert rows(t) == [{"key": 1, "old_value": "a"}, {"key": 2, "old_value": "20"}]


def test_session_default_enables_evolution_and_the_argument_wins(tmp_path: Path) -> None:
    from airflow_provider_delta.core.session import session_defaults

    t = make_table(tmp_path, KV)
    with session_defaults(auto_merge_schema=True):
        t.merge(
            SRC_EXTRA, "t.key = s.key", source_alias="s", target_alias="t", schema_evolution=False
        ).when_matched_update_all().execute()
        assert [f[0] for f in fields(t)] == ["key", "value"]
        t.merge(
            SRC_EXTRA, "t.key = s.key", source_alias="s", target_alias="t"
        ).when_matched_update_all().execute()
    assert [f[0] for f in fields(t)] == ["key", "value", "new_value"]


# -- nested structs and struct map values ---------------------------------------------------------------

NESTED_T = pa.table({"key": [1, 2], "s": pa.array([{"a": 1}, {"a": 2}], pa.struct([("a", pa.int64())]))})
NESTED_S = pa.table(
    {
        "key": [2, 3],
        "s": pa.array(
            [{"a": 20, "b": "x"}, {"a": 30, "b": "y"}], pa.struct([("a", pa.int64()), ("b", pa.string())])
        ),
    }
)


def test_update_all_with_evolution_appends_new_struct_fields(tmp_path: Path) -> None:
    t = make_table(tmp_path, NESTED_T)
    merge(t, NESTED_S, evolution=True).when_matched_update_all().when_not_matched_insert_all().execute()
    assert fields(t) == [("key", "long", True), ("s", "struct<a:long,b:string>", True)]
    assert rows(t) == [
        {"key": 1, "s": {"a": 1, "b": None}},
        {"key": 2, "s": {"a": 20, "b": "x"}},
        {"key": 3, "s": {"a": 30, "b": "y"}},
    ]


def test_update_all_without_evolution_refuses_an_extra_struct_field(tmp_path: Path) -> None:
    t = make_table(tmp_path, NESTED_T)
    with pytest.raises(MergeError, match=r"s\.b"):
        merge(t, NESTED_S, evolution=False).when_matched_update_all().execute()
    assert DeltaTable(t.location).version == 1


def test_nested_set_from_the_same_nested_source_field_adds_the_field(tmp_path: Path) -> None:
    t = make_table(tmp_path, NESTED_T)
    merge(t, NESTED_S, evolution=True).when_matched_update(set={"t.s.b": "s.s.b"}).execute()
    assert fields(t) == [("key", "long", True), ("s", "struct<a:long,b:string>", True)]
    assert rows(t) == [{"key": 1, "s": {"a": 1, "b": None}}, {"key": 2, "s": {"a": 2, "b": "x"}}]


def test_struct_inside_a_map_value_evolves(tmp_path: Path) -> None:
    old = pa.map_(pa.string(), pa.struct([("a", pa.int64())]))
    new = pa.map_(pa.string(), pa.struct([("a", pa.int64()), ("c", pa.string())]))
    target = pa.table({"key": [1, 2], "m": pa.array([[("x", {"a": 1})], [("y", {"a": 2})]], old)})
    source = pa.table({"key": [2], "m": pa.array([[("z", {"a": 5, "c": "new"})]], new)})
    t = make_table(tmp_path, target)
    merge(t, source, evolution=True).when_matched_update_all().execute()
    assert fields(t) == [("key", "long", True), ("m", "map<string,struct<a:long,c:string>>", True)]
    assert rows(t) == [
        {"key": 1, "m": [("x", {"a": 1, "c": None})]},
        {"key": 2, "m": [("z", {"a": 5, "c": "new"})]},
    ]


def test_new_column_case_is_preserved_and_existing_names_match_ignoring_case(tmp_path: Path) -> None:
    t = make_table(tmp_path, KV)
    source = pa.table({"KEY": [2], "Value": ["B"], "NewCol": [1]})
    merge(t, source, evolution=True).when_matched_update_all().execute()
    assert [f[0] for f in fields(t)] == ["key", "value", "NewCol"]
    assert rows(t)[1] == {"key": 2, "value": "B", "NewCol": 1}


def test_incompatible_type_with_evolution_is_an_error_naming_the_column(tmp_path: Path) -> None:
    t = make_table(tmp_path, KV)
    source = pa.table({"key": [2], "value": [[1, 2]]})
    with pytest.raises(DeltaError, match="value"):
        merge(t, source, evolution=True).when_matched_update_all().execute()
    assert DeltaTable(t.location).version == 1


def test_numbers_into_a_string_column_are_cast_as_spark_store_assignment_does(tmp_path: Path) -> None:
    t = make_table(tmp_path, KV)
    merge(t, pa.table({"key": [2], "value": [5.5]}), evolution=True).when_matched_update_all().execute()
    assert fields(t) == [("key", "long", True), ("value", "string", True)]
    assert rows(t)[1] == {"key": 2, "value": "5.5"}


def test_a_string_into_a_long_column_is_a_type_conflict_naming_column_and_clause(tmp_path: Path) -> None:
    t = make_table(tmp_path, pa.table({"key": [1], "n": [1]}))
    with pytest.raises(MergeError, match="'n'") as info:
        merge(t, pa.table({"key": [1], "v": ["x"]}), evolution=False).when_matched_update(
            set={"n": "s.v"}
        ).execute()
    assert info.value.column == "n"
    assert info.value.clause == "WHEN MATCHED clause 1 (UPDATE)"
    assert DeltaTable(t.location).version == 1

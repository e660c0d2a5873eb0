"""The SQL form of MERGE: parsing into the same clause model as the builder, and running it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.commands.merge import MergeClause, parse_merge_sql
from airflow_provider_delta.exceptions import MergeError

if TYPE_CHECKING:
    from pathlib import Path


def test_every_clause_form_parses_into_the_clause_model() -> None:
    stmt = parse_merge_sql(
        """MERGE WITH SCHEMA EVOLUTION INTO db.events AS t USING updates s  -- a comment
           ON t.id = s.id AND t.`my col` > 'WHEN'
           WHEN MATCHED AND s.op = 'delete' THEN DELETE
           WHEN MATCHED AND s.v > (1 + 2) THEN UPDATE SET t.v = coalesce(s.v, 0), `my col` = 'x, y'
           WHEN MATCHED THEN UPDATE SET * EXCEPT (a, `b c`)
           WHEN NOT MATCHED BY TARGET AND s.ok THEN INSERT (id, v) VALUES (s.id, concat(s.v, ')'))
           WHEN NOT MATCHED THEN INSERT *
           WHEN NOT MATCHED BY SOURCE AND t.v < 0 THEN UPDATE SET v = 0
           WHEN NOT MATCHED BY SOURCE THEN DELETE;"""
    )
    spec = stmt.spec
    assert (stmt.target_name, stmt.source_name, spec.target_alias, spec.source_alias) == (
        "db.events",
        "updates",
        "t",
        "s",
    )
    assert spec.schema_evolution is True
    assert spec.condition == "t.id = s.id AND t.`my col` > 'WHEN'"
    assert spec.clauses == (
        MergeClause("matched", "delete", "s.op = 'delete'"),
        MergeClause(
            "matched", "update", "s.v > (1 + 2)", (("t.v", "coalesce(s.v, 0)"), ("`my col`", "'x, y'"))
        ),
        MergeClause("matched", "update", None, None, ("a", "`b c`")),
        MergeClause("not_matched", "insert", "s.ok", (("id", "s.id"), ("v", "concat(s.v, ')')"))),
        MergeClause("not_matched", "insert"),
        MergeClause("not_matched_by_source", "update", "t.v < 0", (("v", "0"),)),
        MergeClause("not_matched_by_source", "delete"),
    )


def test_tables_without_alias_are_named_by_their_last_name_part() -> None:
    spec = parse_merge_sql(
        "MERGE INTO db.logs USING newLogs ON logs.id = newLogs.id WHEN NOT MATCHED THEN INSERT *"
    ).spec
    assert (spec.target_alias, spec.source_alias, spec.schema_evolution) == ("logs", "newLogs", False)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("MERGE INTO t USING s ON t.k = s.k", "no WHEN clause"),
        ("MERGE INTO t USING s t.k = s.k WHEN MATCHED THEN DELETE", "expected ON"),
        (
            "MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN INSERT *",
            "INSERT is not allowed in WHEN MATCHED",
        ),
        ("MERGE INTO t USING s ON t.k = s.k WHEN NOT MATCHED THEN INSERT (a, b) VALUES (s.a)", "2 column"),
        ("MERGE INTO t USING (SELECT 1) s ON t.k = s.k WHEN MATCHED THEN DELETE", "subquery"),
        ("MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN DELETE extra", "expected WHEN"),
        ("UPDATE t SET a = 1", "expected MERGE"),
    ],
)
def test_bad_statements_raise_merge_error_saying_where(text: str, fragment: str) -> None:
    with pytest.raises(MergeError, match=fragment):
        parse_merge_sql(text)


def test_sql_and_builder_give_the_same_table(tmp_path: Path) -> None:
    data = pa.table({"key": [1, 2, 3], "v": [10, 20, 30]})
    source = pa.table({"key": [2, 3, 4], "v": [200, -1, 400], "w": ["b", "c", "d"]})
    results = []
    for name in ("sql", "builder"):
        t = DeltaTable.create(str(tmp_path / name), data.schema)
        t.append(data)
        if name == "sql":
            metrics = t.merge_sql(
                "MERGE WITH SCHEMA EVOLUTION INTO target USING updates u ON target.key = u.key "
                "WHEN MATCHED AND u.v < 0 THEN DELETE WHEN MATCHED THEN UPDATE SET * "
                "WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = v + 1",
                source={"updates": source},
            )
        else:
            metrics = (
                t.merge(source, "target.key = u.key", source_alias="u", schema_evolution=True)
                .when_matched_delete(condition="u.v < 0")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .when_not_matched_by_source_update(set={"v": "v + 1"})
                .execute()
            )
        table = DeltaTable(t.location)
        results.append(
            (
                table.schema,
                sorted(table.to_arrow().to_pylist(), key=lambda r: r["key"]),
                {k: v for k, v in metrics.items() if k.startswith("numTargetRows")},
            )
        )
    assert results[0] == results[1]
    assert results[0][1] == [
        {"key": 1, "v": 11, "w": None},
        {"key": 2, "v": 200, "w": "b"},
        {"key": 4, "v": 400, "w": "d"},
    ]


def test_an_unknown_source_name_is_refused_and_the_table_unchanged(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("key", pa.int64())]))
    with pytest.raises(MergeError, match="no source named 'other'"):
        t.merge_sql(
            "MERGE INTO t USING other ON t.key = other.key WHEN MATCHED THEN DELETE",
            source={"updates": pa.table({"key": [1]})},
        )
    assert DeltaTable(t.location).version == 0

"""MERGE clause semantics, file pruning, change data, commit info, conflicts and bad input."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.commands.merge.command import execute_merge
from airflow_provider_delta.exceptions import (
    ConcurrentAppendException,
    MergeError,
    MergeMultipleMatchError,
)

if TYPE_CHECKING:
    from pathlib import Path


def make_table(tmp_path: Path, data: pa.Table, *, files: int = 1, **kwargs: Any) -> DeltaTable:
    t = DeltaTable.create(str(tmp_path / "t"), data.schema, **kwargs)
    step = -(-data.num_rows // files)
    for start in range(0, data.num_rows, step):
        t.append(data.slice(start, step))
    return t


def rows(t: DeltaTable, key: str = "key") -> list[dict[str, Any]]:
    return sorted(DeltaTable(t.location).to_arrow().to_pylist(), key=lambda r: r[key])


def merge(t: DeltaTable, source: pa.Table, on: str = "t.key = s.key") -> Any:
    return t.merge(source, on, source_alias="s", target_alias="t")


TARGET = pa.table({"key": [1, 2, 3, 4], "v": [10, 20, 30, 40]})


def test_first_matching_clause_wins_and_later_clauses_see_the_rest(tmp_path: Path) -> None:
    t = make_table(tmp_path, TARGET)
    source = pa.table({"key": [1, 2, 3, 9], "v": [100, 200, 300, 900], "op": ["del", "upd", "upd", "ins"]})
    metrics = (
        merge(t, source)
        .when_matched_delete(condition="s.op = 'del'")
        .when_matched_update(set={"v": "s.v + t.v"}, condition="s.v > 250")
        .when_matched_update(set={"v": "0"})
        .when_not_matched_insert(values={"key": "s.key", "v": "s.v"}, condition="s.op = 'ins'")
        .execute()
    )
    assert rows(t) == [{"key": 2, "v": 0}, {"key": 3, "v": 330}, {"key": 4, "v": 40}, {"key": 9, "v": 900}]
    assert metrics["numTargetRowsDeleted"] == 1
    assert metrics["numTargetRowsUpdated"] == 2
    assert metrics["numTargetRowsInserted"] == 1
    assert metrics["numTargetRowsCopied"] == 1
    assert metrics["numOutputRows"] == 4
    assert metrics["numSourceRows"] == 4
    assert metrics["version"] == DeltaTable(t.location).version


def test_only_the_last_clause_of_a_kind_may_omit_its_condition(tmp_path: Path) -> None:
    t = make_table(tmp_path, TARGET)
    with pytest.raises(MergeError, match="only the last clause") as info:
        merge(t, TARGET).when_matched_delete().when_matched_update_all(condition="s.v > 1").execute()
    assert info.value.clause == "WHEN MATCHED clause 1 (DELETE)"
    assert DeltaTable(t.location).version == 1


def test_not_matched_by_source_updates_and_deletes_target_rows_without_a_match(tmp_path: Path) -> None:
    t = make_table(tmp_path, TARGET)
    metrics = (
        merge(t, pa.table({"key": [1], "v": [0]}))
        .when_not_matched_by_source_delete(condition="t.v >= 40")
        .when_not_matched_by_source_update(set={"v": "v + 1"})
        .execute()
    )
    assert rows(t) == [{"key": 1, "v": 10}, {"key": 2, "v": 21}, {"key": 3, "v": 31}]
    assert metrics["numTargetRowsNotMatchedBySourceDeleted"] == 1
    assert metrics["numTargetRowsNotMatchedBySourceUpdated"] == 2


def test_two_source_rows_updating_one_target_row_is_an_error_and_the_table_is_unchanged(
    tmp_path: Path,
) -> None:
    t = make_table(tmp_path, TARGET)
    source = pa.table({"key": [2, 2], "v": [1, 2]})
    with pytest.raises(MergeMultipleMatchError, match=r"t\.key = s\.key"):
        merge(t, source).when_matched_update_all().execute()
    assert DeltaTable(t.location).version == 1
    assert rows(t) == TARGET.to_pylist()


def test_duplicate_matches_are_fine_for_an_unconditional_delete_or_when_no_clause_applies(
    tmp_path: Path,
) -> None:
    t = make_table(tmp_path, TARGET)
    merge(t, pa.table({"key": [2, 2], "v": [1, 2]})).when_matched_delete().execute()
    assert [r["key"] for r in rows(t)] == [1, 3, 4]
    merge(t, pa.table({"key": [3, 3], "v": [1, 2]})).when_matched_update_all(condition="s.v > 5").execute()
    assert [r["v"] for r in rows(t)] == [10, 30, 40]


def test_a_target_row_deleted_by_several_matches_counts_once_and_has_one_change_row(tmp_path: Path) -> None:
    t = make_table(tmp_path, TARGET, properties={"delta.enableChangeDataFeed": "true"})
    metrics = merge(t, pa.table({"key": [2, 2, 3], "v": [1, 2, 3]})).when_matched_delete().execute()
    assert metrics["numTargetRowsDeleted"] == metrics["numTargetRowsMatchedDeleted"] == 2
    changes = DeltaTable(t.location).changes(metrics["version"]).to_pylist()
    assert sorted((c["key"], c["_change_type"]) for c in changes) == [(2, "delete"), (3, "delete")]


def test_null_keys_never_match(tmp_path: Path) -> None:
    t = make_table(tmp_path, pa.table({"key": pa.array([1, None], pa.int64()), "v": [1, 2]}))
    merge(
        t, pa.table({"key": pa.array([None], pa.int64()), "v": [3]})
    ).when_matched_delete().when_not_matched_insert_all().execute()
    assert sorted(DeltaTable(t.location).to_arrow()["v"].to_pylist()) == [1, 2, 3]


def test_non_equi_condition_with_residual_terms(tmp_path: Path) -> None:
    t = make_table(tmp_path, TARGET)
    source = pa.table({"lo": [2], "hi": [3]})
    merge(t, source, on="t.key >= s.lo AND t.key <= s.hi AND t.v > 0").when_matched_delete().execute()
    assert [r["key"] for r in rows(t)] == [1, 4]


# -- pruning -------------------------------------------------------------------------------------------


def test_only_files_of_the_matching_partition_are_rewritten(tmp_path: Path) -> None:
    data = pa.table({"key": list(range(12)), "p": ["a", "b", "c"] * 4, "v": [0] * 12})
    t = make_table(tmp_path, data, files=3, partition_by=["p"])
    before = {f.path for f in DeltaTable(t.location).files()}
    source = pa.table({"key": [1, 4], "p": ["b", "b"], "v": [7, 7]})
    metrics = merge(t, source, on="t.p = s.p AND t.key = s.key").when_matched_update_all().execute()
    after = DeltaTable(t.location)
    removed = before - {f.path for f in after.files()}
    # Partition b has keys 1 | 4, 7 | 10 in three files; key stats prune the third (10 > max source key 4).
    assert metrics["numTargetFilesRemoved"] == len(removed) == 2
    assert all("p=b" in path for path in removed)
    assert metrics["numTargetRowsCopied"] == 1  # key 7 shares a file with key 4
    assert sorted(r["key"] for r in after.to_arrow().to_pylist() if r["v"] == 7) == [1, 4]


def test_stats_prune_files_outside_the_source_key_range(tmp_path: Path) -> None:
    data = pa.table({"key": list(range(100)), "v": [0] * 100})
    t = make_table(tmp_path, data, files=4)
    metrics = merge(t, pa.table({"key": [30, 40], "v": [1, 1]})).when_matched_update_all().execute()
    assert metrics["numTargetFilesRemoved"] == 1
    assert metrics["numTargetRowsCopied"] == 23
    assert sum(r["v"] for r in rows(t)) == 2


def test_insert_only_merge_adds_files_and_removes_none(tmp_path: Path) -> None:
    t = make_table(tmp_path, TARGET, files=2)
    before = {f.path for f in DeltaTable(t.location).files()}
    metrics = merge(t, pa.table({"key": [4, 5], "v": [0, 50]})).when_not_matched_insert_all().execute()
    after = DeltaTable(t.location)
    assert before < {f.path for f in after.files()}
    assert (metrics["numTargetFilesRemoved"], metrics["numTargetRowsInserted"]) == (0, 1)
    commit = after.history(1)[0]
    assert commit["operation"] == "MERGE"


def test_a_merge_that_changes_nothing_commits_nothing(tmp_path: Path) -> None:
    t = make_table(tmp_path, TARGET)
    metrics = merge(t, pa.table({"key": [9], "v": [0]})).when_matched_delete().execute()
    assert metrics["version"] is None
    assert DeltaTable(t.location).version == 1


# -- commit info -----------------------------------------------------------------------------------------


def test_commit_info_has_delta_operation_parameters_and_metrics(tmp_path: Path) -> None:
    t = make_table(tmp_path, TARGET)
    merge(t, pa.table({"key": [1, 7], "v": [0, 0]})).when_matched_update(
        set={"v": "s.v"}, condition="s.v = 0"
    ).when_not_matched_insert_all().when_not_matched_by_source_delete().execute()
    info = DeltaTable(t.location).history(1)[0]
    assert info["operation"] == "MERGE"
    params = info["operationParameters"]
    assert params["predicate"] == "t.key = s.key"
    assert json.loads(params["matchedPredicates"]) == [{"predicate": "s.v = 0", "actionType": "update"}]
    assert json.loads(params["notMatchedPredicates"]) == [{"actionType": "insert"}]
    assert json.loads(params["notMatchedBySourcePredicates"]) == [{"actionType": "delete"}]
    metrics = info["operationMetrics"]
    assert metrics["numTargetRowsUpdated"] == "1"
    assert metrics["numTargetRowsInserted"] == "1"
    assert metrics["numTargetRowsDeleted"] == "3"
    assert info["isBlindAppend"] is False


# -- change data feed ----------------------------------------------------------------------------------


def test_merge_on_a_cdf_table_records_inserts_deletes_and_update_images(tmp_path: Path) -> None:
    t = make_table(tmp_path, TARGET, properties={"delta.enableChangeDataFeed": "true"})
    source = pa.table({"key": [1, 2, 8], "v": [11, -1, 80]})
    metrics = (
        merge(t, source)
        .when_matched_delete(condition="s.v < 0")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert metrics["numTargetChangeFilesAdded"] >= 1
    changes = DeltaTable(t.location).changes(starting_version=metrics["version"])
    got = sorted((r["_change_type"], r["key"], r["v"]) for r in changes.to_pylist())
    assert got == [
        ("delete", 2, 20),
        ("insert", 8, 80),
        ("update_postimage", 1, 11),
        ("update_preimage", 1, 10),
    ]


def test_cdf_rows_of_an_evolving_merge_carry_the_new_column(tmp_path: Path) -> None:
    t = make_table(tmp_path, TARGET, properties={"delta.enableChangeDataFeed": "true"})
    source = pa.table({"key": [1], "v": [11], "extra": ["x"]})
    t.merge(
        source, "t.key = s.key", source_alias="s", target_alias="t", schema_evolution=True
    ).when_matched_update_all().execute()
    changes = DeltaTable(t.location).changes(starting_version=2)
    got = sorted((r["_change_type"], r["key"], r["v"], r["extra"]) for r in changes.to_pylist())
    assert got == [("update_postimage", 1, 11, "x"), ("update_preimage", 1, 10, None)]


# -- concurrency ---------------------------------------------------------------------------------------


def test_a_concurrent_append_into_the_read_range_conflicts_under_serializable(tmp_path: Path) -> None:
    data = pa.table({"key": [1, 2, 3], "p": ["a", "b", "c"], "v": [0, 0, 0]})
    t = make_table(tmp_path, data, partition_by=["p"])
    stale = DeltaTable(t.location)
    spec = (
        merge(stale, pa.table({"key": [2], "p": ["b"], "v": [5]}), on="t.p = s.p AND t.key = s.key")
        .when_matched_update_all()
        .spec()
    )
    DeltaTable(t.location).append(pa.table({"key": [2], "p": ["b"], "v": [9]}))
    with pytest.raises(ConcurrentAppendException):
        execute_merge(
            stale.snapshot, spec, pa.table({"key": [2], "p": ["b"], "v": [5]}), isolation_level="Serializable"
        )
    assert DeltaTable(t.location).version == 2


def test_a_concurrent_merge_into_the_read_range_conflicts_under_write_serializable(tmp_path: Path) -> None:
    # WriteSerializable (the default) lets blind appends through, as Delta does; a MERGE that inserts
    # into the range read is no blind append, so it conflicts.
    data = pa.table({"key": [1, 2, 3], "p": ["a", "b", "c"], "v": [0, 0, 0]})
    t = make_table(tmp_path, data, partition_by=["p"])
    stale = DeltaTable(t.location)
    source = pa.table({"key": [2, 5], "p": ["b", "b"], "v": [5, 5]})
    spec = merge(stale, source, on="t.p = s.p AND t.key = s.key").when_matched_update_all().spec()
    merge(
        DeltaTable(t.location), pa.table({"key": [4], "p": ["b"], "v": [9]}), on="t.p = s.p AND t.key = s.key"
    ).when_not_matched_insert_all().execute()
    with pytest.raises(ConcurrentAppendException):
        execute_merge(stale.snapshot, spec, source)


def test_a_concurrent_append_outside_the_read_range_does_not_conflict(tmp_path: Path) -> None:
    data = pa.table({"key": [1, 2, 3], "p": ["a", "b", "c"], "v": [0, 0, 0]})
    t = make_table(tmp_path, data, partition_by=["p"])
    stale = DeltaTable(t.location)
    source = pa.table({"key": [2], "p": ["b"], "v": [5]})
    spec = merge(stale, source, on="t.p = s.p AND t.key = s.key").when_matched_update_all().spec()
    DeltaTable(t.location).append(pa.table({"key": [7], "p": ["z"], "v": [9]}))
    result = execute_merge(stale.snapshot, spec, source)
    assert result["version"] == 3
    assert sorted(r["v"] for r in DeltaTable(t.location).to_arrow().to_pylist()) == [0, 0, 5, 9]


# -- bad input -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("on", "build", "column", "clause"),
    [
        ("t.key = s.nope", lambda b: b.when_matched_delete(), "s.nope", "ON condition"),
        ("key = s.key", lambda b: b.when_matched_delete(), "key", "ON condition"),
        (
            "t.key = s.key",
            lambda b: b.when_matched_update(set={"v": "v"}),
            "v",
            "WHEN MATCHED clause 1 (UPDATE)",
        ),
        (
            "t.key = s.key",
            lambda b: b.when_matched_update(set={"nope": "s.v"}),
            "nope",
            "WHEN MATCHED clause 1 (UPDATE)",
        ),
        (
            "t.key = s.key",
            lambda b: b.when_not_matched_insert(values={"key": "t.key"}),
            "t.key",
            "WHEN NOT MATCHED clause 1 (INSERT)",
        ),
        (
            "t.key = s.key",
            lambda b: b.when_not_matched_by_source_update(set={"v": "s.v"}),
            "s.v",
            "WHEN NOT MATCHED BY SOURCE clause 1 (UPDATE)",
        ),
    ],
)
def test_unknown_and_ambiguous_columns_name_the_column_and_clause(
    tmp_path: Path, on: str, build: Any, column: str, clause: str
) -> None:
    t = make_table(tmp_path, TARGET)
    with pytest.raises(MergeError) as info:
        build(merge(t, TARGET, on=on)).execute()
    assert column in str(info.value)
    assert info.value.clause is not None and clause in info.value.clause
    assert DeltaTable(t.location).version == 1


def test_a_merge_without_clauses_is_refused(tmp_path: Path) -> None:
    t = make_table(tmp_path, TARGET)
    with pytest.raises(MergeError, match="at least one WHEN clause"):
        merge(t, TARGET).execute()


def test_a_value_that_overflows_its_column_names_column_and_clause(tmp_path: Path) -> None:
    t = make_table(tmp_path, pa.table({"key": [1], "small": pa.array([1], pa.int8())}))
    with pytest.raises(MergeError, match="small") as info:
        merge(t, pa.table({"key": [1], "small": [1000]})).when_matched_update_all().execute()
    assert info.value.clause == "WHEN MATCHED clause 1 (UPDATE SET *)"
    assert DeltaTable(t.location).version == 1

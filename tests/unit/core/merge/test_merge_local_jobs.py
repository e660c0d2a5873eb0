"""The local executor's MERGE jobs: files rewritten in parallel, cleanup on failure, speculative change rows.

The target tables here have files large enough (150,000 rows) that each file is rewritten by its own job
on the engine's pool, alongside the job writing the inserted rows. Every test runs twice: joined on an
integer key (each job probes its own files) and on a string key (the condition's columns of every file hash-joined
first, then each job reads its own files whole).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.exceptions import MergeError, MergeMultipleMatchError

if TYPE_CHECKING:
    from pathlib import Path

FILE_ROWS = 150_000
FILES = 3
CDF = {"delta.enableChangeDataFeed": "true"}


def big_table(tmp_path: Path, **kwargs: Any) -> DeltaTable:
    t = DeltaTable.create(
        str(tmp_path / "t"),
        pa.schema([("key", pa.int64()), ("tag", pa.string()), ("small", pa.int8()), ("name", pa.string())]),
        **kwargs,
    )
    for f in range(FILES):
        keys = pa.array(np.arange(f * FILE_ROWS, (f + 1) * FILE_ROWS), pa.int64())
        t.append(
            pa.table(
                {
                    "key": keys,
                    "tag": pc.cast(keys, pa.string()),
                    "small": pa.array(np.arange(FILE_ROWS) % 100, pa.int8()),
                    "name": pc.binary_join_element_wise("n-", pc.cast(keys, pa.string()), ""),
                }
            )
        )
    return t


def files_on_disk(t: DeltaTable) -> set[str]:
    from pathlib import Path

    return {
        str(p.relative_to(t.location))
        for p in Path(t.location).rglob("*.parquet")
        if "_delta_log" not in p.parts
    }


@pytest.fixture(params=["t.key = s.key", "t.tag = s.tag"], ids=["integer-key-probed", "string-key-hash-join"])
def on(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def merge(t: DeltaTable, source: pa.Table, on: str) -> Any:
    tagged = source.append_column("tag", pc.cast(source.column("key"), pa.string()))
    return t.merge(tagged, on, source_alias="s", target_alias="t")


def test_every_file_is_rewritten_once_with_its_updates_inserts_and_change_rows(
    tmp_path: Path, on: str
) -> None:
    t = big_table(tmp_path, properties=CDF)
    before = files_on_disk(t)
    updated = np.arange(7, FILES * FILE_ROWS, 1000)  # rows in every file
    new = np.arange(FILES * FILE_ROWS, FILES * FILE_ROWS + 500)
    source = pa.table(
        {
            "key": pa.array(np.concatenate([updated, new]), pa.int64()),
            "small": pa.array(np.full(len(updated) + len(new), -1), pa.int8()),
            "name": pa.array(["src"] * (len(updated) + len(new))),
        }
    )
    metrics = merge(t, source, on).when_matched_update_all().when_not_matched_insert_all().execute()

    after = DeltaTable(t.location)
    rows = after.to_arrow().sort_by("key")
    assert rows.num_rows == FILES * FILE_ROWS + len(new)
    assert rows.column("key").to_pylist() == list(range(FILES * FILE_ROWS + len(new)))
    changed = pc.equal(rows.column("small"), -1)
    assert pc.sum(changed).as_py() == len(updated) + len(new)
    assert set(rows.filter(changed).column("name").to_pylist()) == {"src"}
    assert (
        metrics["numTargetFilesRemoved"],
        metrics["numTargetRowsUpdated"],
        metrics["numTargetRowsInserted"],
    ) == (FILES, len(updated), len(new))
    assert metrics["numTargetRowsCopied"] == FILES * FILE_ROWS - len(updated)
    assert metrics["numOutputRows"] == FILES * FILE_ROWS + len(new)
    assert metrics["numTargetChangeFilesAdded"] >= 1
    kinds = after.changes(starting_version=metrics["version"]).column("_change_type").to_pylist()
    assert {k: kinds.count(k) for k in set(kinds)} == {
        "update_preimage": len(updated),
        "update_postimage": len(updated),
        "insert": len(new),
    }
    # Nothing written but what the commit references.
    data = {p for p in files_on_disk(after) if not p.startswith("_change_data")}
    assert data == before | {f.path for f in after.files()}
    assert len(files_on_disk(after) - data) == metrics["numTargetChangeFilesAdded"]


def test_a_value_that_does_not_fit_fails_the_merge_and_leaves_no_file_behind(tmp_path: Path, on: str) -> None:
    t = big_table(tmp_path, properties=CDF)
    before = files_on_disk(t)
    keys = np.concatenate([np.arange(5, FILES * FILE_ROWS, 500), [FILES * FILE_ROWS + 1]])
    small = np.zeros(len(keys), dtype=np.int64)
    small[-2] = 1000  # the last file's last updated row overflows the byte column
    source = pa.table(
        {"key": pa.array(keys, pa.int64()), "small": pa.array(small), "name": ["x"] * len(keys)}
    )
    with pytest.raises(MergeError, match="small") as info:
        merge(t, source, on).when_matched_update_all().when_not_matched_insert_all().execute()
    assert info.value.clause == "WHEN MATCHED clause 1 (UPDATE SET *)"
    assert DeltaTable(t.location).version == FILES
    assert files_on_disk(t) == before


def test_matches_that_no_clause_takes_rewrite_nothing_and_inserts_stay_a_plain_append(
    tmp_path: Path, on: str
) -> None:
    t = big_table(tmp_path, properties=CDF)
    before = files_on_disk(t)
    source = pa.table(
        {
            "key": pa.array([10, FILE_ROWS + 10, FILES * FILE_ROWS + 3], pa.int64()),
            "small": pa.array([1, 1, 1], pa.int8()),
            "name": ["a", "b", "c"],
        }
    )
    metrics = (
        merge(t, source, on)
        .when_matched_update_all(condition="s.small > 5")
        .when_not_matched_insert_all()
        .execute()
    )
    assert (metrics["numTargetFilesRemoved"], metrics["numTargetRowsInserted"]) == (0, 1)
    assert metrics["numTargetChangeFilesAdded"] == 0
    after = DeltaTable(t.location)
    new = files_on_disk(after) - before
    assert len(new) == 1 and not any(p.startswith("_change_data") for p in new)
    changes = after.changes(starting_version=metrics["version"])
    inserted = [{"key": FILES * FILE_ROWS + 3, "_change_type": "insert"}]
    assert changes.select(["key", "_change_type"]).to_pylist() == inserted


def test_not_matched_by_source_clauses_reach_every_file(tmp_path: Path, on: str) -> None:
    t = big_table(tmp_path)
    source = pa.table({"key": pa.array([1], pa.int64()), "small": pa.array([0], pa.int8()), "name": ["x"]})
    metrics = merge(t, source, on).when_not_matched_by_source_delete(condition="t.key % 2 = 0").execute()
    assert metrics["numTargetFilesRemoved"] == FILES
    assert metrics["numTargetRowsNotMatchedBySourceDeleted"] == FILES * FILE_ROWS // 2
    keys = DeltaTable(t.location).to_arrow().column("key")
    assert len(keys) == FILES * FILE_ROWS // 2 and pc.all(pc.equal(pc.bit_wise_and(keys, 1), 1)).as_py()


def test_two_source_rows_for_one_target_row_fail_the_merge_and_leave_no_file_behind(
    tmp_path: Path, on: str
) -> None:
    t = big_table(tmp_path, properties=CDF)
    before = files_on_disk(t)
    keys = np.concatenate([np.arange(5, FILES * FILE_ROWS, 500), [FILES * FILE_ROWS - 2] * 2])
    source = pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "small": pa.array(np.zeros(len(keys), np.int8())),
            "name": ["x"] * len(keys),
        }
    )
    with pytest.raises(MergeMultipleMatchError, match="multiple source rows matched the same target row"):
        merge(t, source, on).when_matched_update_all().when_not_matched_insert_all().execute()
    assert DeltaTable(t.location).version == FILES
    assert files_on_disk(t) == before


def test_a_hash_join_reads_the_condition_columns_first_then_only_the_files_it_rewrites(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_delta.core.executor.local import LocalExecutor

    t = big_table(tmp_path)
    reads: list[tuple[str, tuple[str, ...] | None]] = []
    real = LocalExecutor.read_files

    def recording(self: LocalExecutor, target: Any, files: Any, **kwargs: Any) -> list[pa.Table]:
        parts = real(self, target, files, **kwargs)
        columns = kwargs.get("columns")
        reads.extend((f.path, tuple(part.column_names) if columns else None) for f, part in zip(files, parts))
        return parts

    monkeypatch.setattr(LocalExecutor, "read_files", recording)
    # One source row in the middle file; the rest of the condition reads target column `small`.
    source = pa.table(
        {"key": pa.array([FILE_ROWS + 7], pa.int64()), "small": pa.array([0], pa.int8()), "name": ["x"]}
    )
    tagged = source.append_column("tag", pc.cast(source.column("key"), pa.string()))
    metrics = (
        t.merge(tagged, "t.tag = s.tag AND t.small >= s.small", source_alias="s", target_alias="t")
        .when_matched_update(set={"name": "s.name"})
        .execute()
    )
    assert metrics["numTargetRowsMatchedUpdated"] == 1 and metrics["numTargetFilesRemoved"] == 1
    joined = [(path, columns) for path, columns in reads if columns is not None]
    whole = [path for path, columns in reads if columns is None]
    assert reads[: len(joined)] == joined and joined  # every join read before any whole file
    assert {columns for _path, columns in joined} == {
        ("tag", "small")
    }  # the condition's columns, schema order
    removed = {path for path, _ in joined} - {a.path for a in DeltaTable(t.location).files()}
    assert whole == sorted(removed) and len(removed) == 1  # the untouched files are not read again
    row = DeltaTable(t.location).to_arrow().filter(pc.equal(pc.field("key"), FILE_ROWS + 7)).to_pylist()
    assert row == [{"key": FILE_ROWS + 7, "tag": str(FILE_ROWS + 7), "small": 7, "name": "x"}]

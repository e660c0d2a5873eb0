"""The executor seam's capabilities: the local executor has them all and merges by itself; a capability an
executor lacks is a typed error raised before the command writes anything."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.commands.cdf_export import export_changes
from airflow_provider_delta.core.commands.merge.command import execute_merge
from airflow_provider_delta.core.commands.merge.model import MergeClause, MergeSpec
from airflow_provider_delta.core.commands.merge.plan import plan_merge
from airflow_provider_delta.core.executor import (
    Executor,
    FileDeleter,
    FileRewriter,
    FileWriter,
    LocalExecutor,
)
from airflow_provider_delta.core.executor.merge.job import MergeJob, MergeOutcome
from airflow_provider_delta.core.executor.merge.source import ArrowMergeSource
from airflow_provider_delta.exceptions import DeltaError, ExecutorCapabilityError
from tests.unit.core.cdf_export.helpers import busy_table


class WriteOnly(Executor):
    """Only the required capabilities (those of a local executor): no reader, merger or exporter."""

    name = "write-only"

    def __init__(self) -> None:
        self.local = LocalExecutor()

    def writer(self) -> FileWriter:
        return self.local

    def rewriter(self) -> FileRewriter:
        return self.local

    def deleter(self) -> FileDeleter:
        return self.local


UPSERT = MergeSpec(
    condition="t.key = s.key",
    source_alias="s",
    target_alias="t",
    clauses=(MergeClause("matched", "update"), MergeClause("not_matched", "insert")),
)


def table_files(t: DeltaTable) -> list[str]:
    return sorted(str(p.relative_to(t.location)) for p in Path(t.location).rglob("*"))


def keyed_table(tmp_path: Path) -> DeltaTable:
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("key", pa.int64()), ("v", pa.string())]))
    t.append(pa.table({"key": [1, 2], "v": ["a", "b"]}))
    t.append(pa.table({"key": [3, 4], "v": ["c", "d"]}))
    return t


@pytest.mark.parametrize(("capability", "action"), [
    ("reader", "read data files into this process"),
    ("merger", "run MERGE"),
    ("exporter", "export change data"),
])
def test_an_optional_capability_an_executor_lacks_is_a_typed_error(capability: str, action: str) -> None:
    with pytest.raises(ExecutorCapabilityError, match=f"Cannot {action} with the 'write-only' executor") as err:
        getattr(WriteOnly(), capability)()
    assert isinstance(err.value, DeltaError) and isinstance(err.value, NotImplementedError)
    assert (err.value.executor, err.value.capability) == ("write-only", capability)


def test_the_local_executor_has_every_capability() -> None:
    executor = LocalExecutor()
    for capability in ("reader", "writer", "rewriter", "deleter", "merger", "exporter"):
        assert getattr(executor, capability)() is not None


def test_the_local_executor_merges_by_itself_and_leaves_the_commit_to_the_command(tmp_path: Path) -> None:
    t = keyed_table(tmp_path)
    snapshot = t.snapshot
    source = pa.table({"key": [2, 3, 9], "v": ["B", "C", "Z"]})
    plan = plan_merge(snapshot, UPSERT, source)
    job = MergeJob(plan, snapshot, snapshot, tuple(snapshot.files()), ArrowMergeSource(source), False)
    outcome = LocalExecutor().merger().merge(job)
    assert isinstance(outcome, MergeOutcome)
    # Keys 2 and 3 live in the two files (one each): both are rewritten; key 9 is inserted.
    assert sorted(f.path for f in outcome.removed) == sorted(f.path for f in snapshot.files())
    assert outcome.counts["numTargetRowsMatchedUpdated"] == 2
    assert outcome.counts["numTargetRowsInserted"] == 1
    assert outcome.copied_rows == 2
    assert sum(a.num_records or 0 for a in outcome.added) == 5
    assert DeltaTable(t.location).version == snapshot.version  # the executor writes files, never commits


def test_merge_with_an_executor_without_a_merger_is_refused_before_any_file_is_written(tmp_path: Path) -> None:
    t = keyed_table(tmp_path)
    before = table_files(t)
    with pytest.raises(ExecutorCapabilityError, match="Cannot run MERGE with the 'write-only' executor"):
        execute_merge(t.snapshot, UPSERT, pa.table({"key": [1], "v": ["x"]}), executor=WriteOnly())
    assert table_files(t) == before
    assert DeltaTable(t.location).version == t.version


def test_an_export_with_an_executor_without_an_exporter_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    t = busy_table(tmp_path / "src")
    before = table_files(t)
    with pytest.raises(ExecutorCapabilityError, match="Cannot export change data with the 'write-only' executor"):
        export_changes(t.location, str(tmp_path / "sink"), format="delta", register_watermark=True,
                       executor=WriteOnly())
    assert table_files(t) == before  # no watermark registration, no protocol upgrade
    assert not (tmp_path / "sink").exists()


def test_an_export_runs_on_the_executor_it_is_given(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src")
    result = export_changes(t.location, str(tmp_path / "sink"), format="delta", executor=LocalExecutor())
    assert (result.start, result.end) == (0, t.version)
    assert DeltaTable(str(tmp_path / "sink")).to_arrow().num_rows == t.changes(0).num_rows

"""OPTIMIZE and REORG against concurrent writers: Snapshot isolation with ``dataChange=false``.

A concurrent commit lands between the rewrite's read and its commit (the commands' ``before_commit``
hook): a blind append never makes them fail; a commit that removed a file they rewrote raises
``ConcurrentDeleteReadException`` and leaves the table as the winner left it; a retry under the
conflict policy plans again from the new snapshot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.commands.optimize import optimize
from airflow_provider_delta.core.commands.reorg import reorg
from airflow_provider_delta.core.transaction.policy import ConflictPolicy, run_with_conflict_policy
from airflow_provider_delta.exceptions import ConcurrentDeleteReadException
from tests.interop import assert_delta_rs_reads_identically
from tests.maintenance_tables import batch, rows_of, small_files_table, with_deletion_vector

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

pytestmark = pytest.mark.interop


@pytest.fixture
def table(tmp_path: Path) -> DeltaTable:
    return small_files_table(tmp_path / "t", appends=4, properties={"delta.enableDeletionVectors": "true"})


def _once(action: Callable[[], Any]) -> Callable[[], None]:
    done: list[Any] = []

    def hook() -> None:
        if not done:
            done.append(action())

    return hook


def _concurrent_append(location: str) -> Callable[[], Any]:
    return lambda: DeltaTable(location).append(batch(range(9000, 9010), "a"))


@pytest.mark.parametrize("isolation", ["WriteSerializable", "Serializable"])
def test_a_concurrent_blind_append_never_fails_optimize(tmp_path: Path, isolation: str) -> None:
    t = small_files_table(tmp_path / "t", appends=4, properties={"delta.isolationLevel": isolation})
    before = rows_of(t.to_arrow())
    result = optimize(t.snapshot, before_commit=_once(_concurrent_append(t.location)))
    assert result["version"] == t.version + 2  # rebased past the append
    after = DeltaTable(t.location)
    assert len(rows_of(after.to_arrow())) == len(before) + 10
    assert len(after.files()) == 3  # two compacted files plus the appended one
    assert_delta_rs_reads_identically(t.location)


def test_a_concurrent_blind_append_never_fails_zorder_or_reorg(table: DeltaTable) -> None:
    with_deletion_vector(table, table.files()[0], [0])
    snapshot = DeltaTable(table.location).snapshot
    assert reorg(snapshot, before_commit=_once(_concurrent_append(table.location)))["version"] is not None
    snapshot = DeltaTable(table.location).snapshot
    result = optimize(snapshot, zorder_by=["x"], before_commit=_once(_concurrent_append(table.location)))
    assert result["version"] is not None
    assert_delta_rs_reads_identically(table.location)


def test_a_concurrent_delete_of_a_compacted_file_raises_concurrent_delete_read(table: DeltaTable) -> None:
    winner: list[int | None] = []
    hook = _once(lambda: winner.append(DeltaTable(table.location).delete("id = 0")))
    with pytest.raises(ConcurrentDeleteReadException, match=r"DELETE.*deleted file") as err:
        optimize(table.snapshot, before_commit=hook)
    assert err.value.winning_operation == "DELETE"
    latest = DeltaTable(table.location)
    assert latest.version == winner[0] == table.version + 1  # only the DELETE landed
    assert latest.history(1)[0]["operation"] == "DELETE"
    assert_delta_rs_reads_identically(table.location)


def test_a_concurrent_soft_delete_on_a_compacted_file_conflicts(table: DeltaTable) -> None:
    target = table.files()[0]
    hook = _once(lambda: with_deletion_vector(table, target, [0]))
    with pytest.raises(ConcurrentDeleteReadException):
        optimize(table.snapshot, before_commit=hook)


def test_a_concurrent_delete_elsewhere_does_not_conflict(table: DeltaTable) -> None:
    t = table
    only_a = optimize(
        t.snapshot, "p = 'a'", before_commit=_once(lambda: DeltaTable(t.location).delete("p = 'b'"))
    )
    assert only_a["version"] == t.version + 2
    assert_delta_rs_reads_identically(t.location)


def test_a_concurrent_optimize_of_the_same_files_conflicts(table: DeltaTable) -> None:
    hook = _once(lambda: DeltaTable(table.location).optimize())
    with pytest.raises(ConcurrentDeleteReadException, match="OPTIMIZE"):
        optimize(table.snapshot, before_commit=hook)
    assert_delta_rs_reads_identically(table.location)


def test_the_conflict_policy_retries_and_the_retry_plans_again(table: DeltaTable) -> None:
    attempts: list[int] = []
    hook = _once(lambda: DeltaTable(table.location).delete("id = 0"))

    def attempt() -> dict[str, Any]:
        attempts.append(1)
        return optimize(DeltaTable(table.location).snapshot, before_commit=hook)

    result = run_with_conflict_policy(attempt, ConflictPolicy(base_backoff=0, jitter=0))
    assert len(attempts) == 2 and result["version"] == table.version + 2
    latest = DeltaTable(table.location)
    assert len(latest.files()) == 2 and 0 not in {r[0] for r in rows_of(latest.to_arrow())}
    assert_delta_rs_reads_identically(table.location)

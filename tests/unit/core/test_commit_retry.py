"""A losing writer backs off, then looks for the next free version (not the other way round)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pyarrow as pa

import airflow_provider_delta.core.transaction.commit as commit_module
from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.commands.write import append

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

SCHEMA = pa.schema([("id", pa.int64())])


def test_a_writer_that_loses_the_race_picks_its_version_after_backing_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    location = str(tmp_path / "t")
    DeltaTable.create(location, SCHEMA).append(pa.table({"id": [1]}))  # version 1
    loser = DeltaTable(location).snapshot  # reads version 1
    DeltaTable(location).append(pa.table({"id": [2]}))  # version 2: the loser's first try fails
    backoffs: list[float] = []

    def sleep_while_others_commit(seconds: float) -> None:
        backoffs.append(seconds)
        if len(backoffs) <= 5:  # another writer commits during each backoff (steady contention)
            DeltaTable(location).append(pa.table({"id": [100 + len(backoffs)]}))

    monkeypatch.setattr(
        commit_module, "time", SimpleNamespace(sleep=sleep_while_others_commit, time=time.time)
    )
    version = append(loser, pa.table({"id": [3]}))
    # Version 3 was taken during the one backoff; the loser then found 4 free. (Picking the next
    # version before sleeping lost again after every backoff: six tries, version 8.)
    assert (version, len(backoffs)) == (4, 1)
    assert sorted(DeltaTable(location).to_arrow().column("id").to_pylist()) == [1, 2, 3, 101]

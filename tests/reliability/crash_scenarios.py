"""What the kill -9 tests run: a seeded table, and one writer operation on it per scenario.

Every scenario is one call of the public API in a child process (see ``io_steps``). The base table
is partitioned, records its change data feed and checkpoints every 4 versions, so appends, rewrites
(DELETE, UPDATE, MERGE, replaceWhere), a metadata change, a checkpoint and the log cleanup are
covered, and with an even seed the operation's commit also writes the automatic checkpoint.

VACUUM (retention 0: every removed file goes), OPTIMIZE (compaction of the small files) and REORG
(purge of a column dropped under column mapping) are scenarios like the others. Adding a command:
a function ``(location, seed) -> None`` that calls it and an entry in :data:`SCENARIOS`; the checks
in ``crash_harness`` need nothing else: what a complete run commits is learnt from one, and a
killed run must leave every version as it read before the operation or as after a complete run
(for VACUUM: old versions whose files it deleted fail the same way).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

import pyarrow as pa

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.log.cleanup import cleanup_expired_logs

if TYPE_CHECKING:
    from collections.abc import Callable

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
PROPERTIES = {"delta.enableChangeDataFeed": "true", "delta.checkpointInterval": "4"}


def _rows(rng: random.Random, start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {"id": ids, "p": [rng.choice("abc") for _ in ids], "v": [rng.randrange(1000) for _ in ids]},
        schema=SCHEMA,
    )


def build_base(location: str, seed: int) -> None:
    """Create the table: appends and a DELETE (version 3, 4 with an odd seed), a checkpoint at version 2.

    The DELETE leaves removed files for VACUUM; the appends leave small files for OPTIMIZE.
    """
    rng = random.Random(seed)
    t = DeltaTable.create(location, SCHEMA, partition_by=["p"], properties=PROPERTIES)
    for i in range(3 + seed % 2):
        if i == 2:
            DeltaTable(location).delete(f"v % 5 = {seed % 5}")
        else:
            t.append(_rows(rng, 100 * i, rng.randrange(5, 30)))
        if i == 1:
            DeltaTable(location).checkpoint()
    # Age the log so the cleanup scenario has something to delete (everything older than the checkpoint).
    old = 1_000_000_000
    log = os.path.join(location, "_delta_log")
    for name in os.listdir(log):
        os.utime(os.path.join(log, name), (old, old))
        old += 1


# ------------------------------------------------------------------------------------ operations


def append(location: str, seed: int) -> None:
    DeltaTable(location).append(_rows(random.Random(seed + 1), 10_000, 40))


def replace_where(location: str, seed: int) -> None:
    rows = _rows(random.Random(seed + 2), 20_000, 10)
    rows = rows.set_column(1, "p", pa.array(["a"] * rows.num_rows))
    rows = rows.set_column(2, "v", pa.array([v % 500 for v in rows.column("v").to_pylist()], pa.int64()))
    DeltaTable(location).overwrite(rows, predicate="p = 'a' AND v < 500")


def delete(location: str, seed: int) -> None:
    DeltaTable(location).delete(f"v % 3 = {seed % 3}")


def update(location: str, seed: int) -> None:
    DeltaTable(location).update(f"v < {300 + seed % 400}", {"v": "v + 1000"})


def merge(location: str, seed: int) -> None:
    rng = random.Random(seed + 3)
    source = _rows(rng, 0, 30).set_column(0, "id", pa.array(rng.sample(range(400), 30), pa.int64()))
    (
        DeltaTable(location)
        .merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )


def add_column(location: str, seed: int) -> None:
    DeltaTable(location).alter("ALTER TABLE t ADD COLUMNS (note STRING)")


def checkpoint(location: str, seed: int) -> None:
    DeltaTable(location).checkpoint()


def cleanup_log(location: str, seed: int) -> None:
    cleanup_expired_logs(DeltaTable(location).snapshot, retention=timedelta(0))


def vacuum(location: str, seed: int) -> None:
    # Retention 0: every removed file goes (VACUUM START, the deletes, VACUUM END).
    DeltaTable(location).vacuum(retention_hours=0, enforce_retention_duration=False)


def optimize(location: str, seed: int) -> None:
    DeltaTable(location).optimize()


def reorg(location: str, seed: int) -> None:
    # A dropped column (metadata only, under column mapping) is purged from the files by REORG.
    t = DeltaTable(location)
    t.alter("ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    t.alter("ALTER TABLE t DROP COLUMN v")
    DeltaTable(location).reorg()


@dataclass(frozen=True)
class Scenario:
    """One writer operation: its name and the call (what it commits is learnt from a complete run)."""

    name: str
    run: Callable[[str, int], None]


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario("append", append),
        Scenario("replace_where", replace_where),
        Scenario("delete", delete),
        Scenario("update", update),
        Scenario("merge", merge),
        Scenario("add_column", add_column),
        Scenario("checkpoint", checkpoint),
        Scenario("cleanup_log", cleanup_log),
        Scenario("vacuum", vacuum),
        Scenario("optimize", optimize),
        Scenario("reorg", reorg),
    ]
}

"""Tables for the maintenance tests (VACUUM, OPTIMIZE, REORG) and what to check on them.

- :func:`small_files_table`: many small appends over a few partitions (compaction, ZORDER).
- :func:`with_deletion_vector`: soft-delete rows of one file the way Delta on Spark does (a DV file
  and ``remove`` + ``add`` with the descriptor), so REORG has something to purge.
- :func:`make_old`: set files' mtimes into the past (VACUUM's age test).
- :func:`assert_same_rows_as_delta_rs`: delta-rs, the oracle, reads the table with our rows.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core.read.deletion_vectors import write_deletion_vector_file
from airflow_provider_delta.core.table import DeltaTable

if TYPE_CHECKING:
    from airflow_provider_delta.core.actions import AddFile

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.int64()), ("name", pa.string()), ("p", pa.string())])
DAY_MS = 24 * 3600 * 1000


def rows_of(table: pa.Table) -> list[tuple[Any, ...]]:
    """Rows as sorted tuples (column order of the table)."""
    return sorted(tuple(r.values()) for r in table.to_pylist())


def batch(ids: range | list[int], part: str) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {"id": ids, "x": [(i * 7919) % 101 for i in ids], "name": [f"n{i}" for i in ids], "p": [part] * len(ids)},
        schema=SCHEMA,
    )


def small_files_table(
    location: Path, *, appends: int = 6, partitions: tuple[str, ...] = ("a", "b"), rows: int = 20,
    properties: dict[str, str] | None = None,
) -> DeltaTable:
    """``appends`` commits, each writing one small file of ``rows`` rows into every partition."""
    t = DeltaTable.create(str(location), SCHEMA, partition_by=["p"], properties=properties or {})
    next_id = 0
    for _ in range(appends):
        t.append(pa.concat_tables([batch(range(next_id + k * rows, next_id + (k + 1) * rows), p)
                                   for k, p in enumerate(partitions)]))
        next_id += rows * len(partitions)
    return t


def with_deletion_vector(table: DeltaTable, add: AddFile, deleted: list[int]) -> int:
    """Soft-delete rows ``deleted`` (row indexes) of ``add`` with a DV file, as Spark's DELETE does."""
    table = table.refresh()
    [descriptor] = write_deletion_vector_file(table.location, [deleted])
    with table.transaction(operation="DELETE", operation_parameters={"predicate": "[]"}) as txn:
        txn.remove(add)
        txn.add(add._replace(deletion_vector=descriptor.to_dict(), data_change=True))
    assert txn.committed_version is not None
    return txn.committed_version


def make_old(root: Path, *, days: float = 30, skip_log: bool = True) -> None:
    """Set every file's (not folders') mtime ``days`` into the past."""
    old = time.time() - days * 86400
    for folder, _dirs, files in os.walk(root):
        if skip_log and "_delta_log" in Path(folder).parts:
            continue
        for name in files:
            os.utime(os.path.join(folder, name), (old, old))


def disk_files(root: Path) -> set[str]:
    """Every file under ``root`` outside ``_delta_log`` (relative, ``/``-separated)."""
    return {
        p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts
    }


def assert_same_rows_as_delta_rs(location: Path | str, version: int | None = None) -> pa.Table:
    """delta-rs (the oracle, through its DataFusion reader: DVs, column mapping) reads exactly our rows."""
    from tests.interop import assert_same_rows, rs_rows, rs_table

    ours = DeltaTable(str(location), version=version).to_arrow()
    assert_same_rows(ours, rs_rows(rs_table(str(location), version)))
    return ours


def now_plus(days: float) -> int:
    """Epoch ms ``days`` from now (VACUUM's clock for "the retention has passed")."""
    return int(time.time() * 1000 + days * DAY_MS)

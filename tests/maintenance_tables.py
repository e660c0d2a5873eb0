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
        {
            "id": ids,
            "x": [(i * 7919) % 101 for i in ids],
            "name": [f"n{i}" for i in ids],
            "p": [part] * len(ids),
        },
        schema=SCHEMA,
    )


def small_files_table(
    location: Path,
    *,
    appends: int = 6,
    partitions: tuple[str, ...] = ("a", "b"),
    rows: int = 20,
    properties: dict[str, str] | None = None,
) -> DeltaTable:
    """``appends`` commits, each writing one small file of ``rows`` rows into every partition."""
    t = DeltaTable.create(str(location), SCHEMA, partition_by=["p"], properties=properties or {})
    next_id = 0
    for _ in range(appends):
        t.append(
            pa.concat_tables(
                [
                    batch(range(next_id + k * rows, next_id + (k + 1) * rows), p)
                    for k, p in enumerate(partitions)
                ]
            )
        )
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


def expired_files_table(location: Path, n: int, *, partitions: int = 4) -> tuple[list[str], list[str]]:
    """A table of ``n`` data files (copies of one small Parquet file), every other one removed long ago.

    Written straight to the log (fast at thousands of files); every file is 30 days old. Returns
    (live paths, expired paths).
    """
    import json
    import uuid

    import pyarrow.parquet as pq

    log = location / "_delta_log"
    log.mkdir(parents=True)
    now = int(time.time() * 1000)
    old = now - 30 * DAY_MS
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    meta = {
        "id": str(uuid.uuid4()),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(schema),
        "partitionColumns": ["p"],
        "configuration": {},
    }
    template = location / "template.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), template)
    data = template.read_bytes()
    template.unlink()
    adds, removes, live, expired = [], [], [], []
    for i in range(n):
        part = str(i % partitions)
        path = f"p={part}/part-{i:06d}-{uuid.UUID(int=i)}-c000.snappy.parquet"
        (location / path).parent.mkdir(exist_ok=True)
        (location / path).write_bytes(data)
        adds.append(
            {
                "add": {
                    "path": path,
                    "partitionValues": {"p": part},
                    "size": len(data),
                    "modificationTime": old,
                    "dataChange": True,
                    "stats": '{"numRecords":3}',
                }
            }
        )
        if i % 2:
            removes.append(
                {
                    "remove": {
                        "path": path,
                        "deletionTimestamp": old,
                        "dataChange": True,
                        "partitionValues": {"p": part},
                        "size": len(data),
                    }
                }
            )
            expired.append(path)
        else:
            live.append(path)

    def commit(version: int, actions: list[dict[str, Any]]) -> None:
        (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))

    commit(
        0,
        [
            {"commitInfo": {"timestamp": now, "operation": "CREATE TABLE"}},
            {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
            {"metaData": meta},
        ],
    )
    commit(1, [{"commitInfo": {"timestamp": now, "operation": "WRITE"}}, *adds])
    commit(2, [{"commitInfo": {"timestamp": now, "operation": "DELETE"}}, *removes])
    make_old(location)
    return live, expired

"""Tables with a change data feed, and readers of what an export wrote."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_delta.core import DeltaTable

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
CDF = {"delta.enableChangeDataFeed": "true"}
META = "_delta_cdf_export"


def rows(ids: list[int], ps: list[str], vs: list[int]) -> pa.Table:
    return pa.Table.from_pydict({"id": ids, "p": ps, "v": vs}, schema=SCHEMA)


def busy_table(
    path: Path, *, partitioned: bool = True, properties: dict[str, str] | None = None
) -> DeltaTable:
    """Versions 0 (create) 1 (append) 2 (update) 3 (delete by predicate) 4 (append) 5 (replaceWhere)."""
    t = DeltaTable.create(
        str(path), SCHEMA, partition_by=["p"] if partitioned else [], properties={**CDF, **(properties or {})}
    )
    t.append(rows([1, 2, 3, 4], ["a", "a", "b", "b"], [10, 20, 30, 40]))
    t.update("id = 2", {"v": "v + 1"})
    t.delete("v > 35")
    t.append(rows([5, 6], ["a", "c"], [50, 60]))
    t.overwrite(rows([7], ["a"], [70]), "p = 'a' AND v > 45")
    return t


def manifests(sink: Path) -> dict[int, dict[str, Any]]:
    out = {}
    for name in sorted(os.listdir(sink / META)) if (sink / META).exists() else []:
        if name.endswith(".json") and not name.startswith("_"):
            out[int(name[:20])] = orjson.loads((sink / META / name).read_bytes())
    return out


def read_file_sink(sink: Path, fmt: str = "parquet") -> pa.Table:
    """The rows of every version with a manifest, in version then file order (as a reader should)."""
    tables = []
    for version, manifest in sorted(manifests(sink).items()):
        for f in sorted(manifest["files"], key=lambda f: f["path"]):
            if fmt == "parquet":
                table = pq.read_table(sink / f["path"], partitioning=None)
                names = table.column_names
                table = table.add_column(
                    names.index("_commit_timestamp")
                    if "_commit_timestamp" in names and "before" not in names
                    else len(names) - 1,
                    "_commit_version",
                    pa.array([version] * table.num_rows, pa.int64()),
                )
                tables.append(table)
            else:
                lines = (sink / f["path"]).read_bytes().splitlines()
                tables.append(pa.Table.from_pylist([orjson.loads(x) for x in lines]))
    return pa.concat_tables(tables, promote_options="permissive") if tables else pa.table({})


def tree(path: Path) -> dict[str, str]:
    """Every file under ``path`` with a hash of its bytes (to check that nothing was written)."""
    out = {}
    if not path.exists():
        return out
    for root, _, files in os.walk(path):
        for name in files:
            full = Path(root) / name
            out[str(full.relative_to(path))] = hashlib.sha256(full.read_bytes()).hexdigest()
    return out


def sorted_rows(table: pa.Table, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    columns = columns or list(table.column_names)
    return sorted(tuple(r[c] for c in columns) for r in table.select(columns).to_pylist())

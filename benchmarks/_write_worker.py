"""One write-side measurement in a fresh interpreter: ``python -m benchmarks._write_worker '<json request>'``.

Request keys: ``engine`` ("ours" | "delta-rs"), ``op`` and, per op:

* ``probe`` -- which of our write APIs exist;
* ``checkpoint`` -- ``path``: load the latest version, then time only the checkpoint call;
* ``append`` -- ``path``, ``hooks`` (delta-rs: post-commit hooks on/off): load, then time two small appends
  (the process's first write, then a warm one);
* ``advance`` -- ``path``, ``staged`` (commit files, in version order), ``warmup``, ``budget_s``,
  ``min_reps``: load, then per staged commit hard-link it into ``_delta_log`` (another writer
  committing) and time applying it to the loaded state;
* ``load`` -- ``path``: version, active-file count and a digest of the files' paths, sizes, stats and
  partition values (the cross-checks);
* ``read_partition`` -- ``path``, ``copies``: whether the partition the appends write to holds exactly
  ``copies`` copies of the appended batch.

Prints one JSON object on the last line of stdout. Timings cover only the operation, not start-up, import
or (except where the op says so) loading the table.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from benchmarks.workload import APPEND_COUNTRY, APPEND_DATE, finish_lazy_imports, small_append_batch


def _rich_digest(rows: list[tuple[Any, ...]]) -> str:
    h = hashlib.sha256()
    for row in sorted("|".join("None" if v is None else str(v) for v in r) for r in rows):
        h.update(row.encode())
        h.update(b"\n")
    return h.hexdigest()


def _ours_rows(files: list[Any]) -> list[tuple[Any, ...]]:
    import orjson

    rows = []
    for f in files:
        stats = orjson.loads(f.stats) if f.stats else {}
        rows.append(
            (
                f.path,
                f.size,
                f.modification_time,
                stats.get("numRecords"),
                (stats.get("nullCount") or {}).get("name"),
                (stats.get("minValues") or {}).get("id"),
                (stats.get("maxValues") or {}).get("name"),
                f.partition_values.get("date"),
                f.partition_values.get("country"),
            )
        )
    return rows


def _delta_rs_rows(dt: Any) -> list[tuple[Any, ...]]:
    import pyarrow as pa

    t = pa.table(dt.get_add_actions(flatten=True))
    cols = [
        "path",
        "size_bytes",
        "modification_time",
        "num_records",
        "null_count.name",
        "min.id",
        "max.name",
        "partition.date",
        "partition.country",
    ]
    data = [t.column(c).to_pylist() if c in t.column_names else [None] * t.num_rows for c in cols]
    dates = [d.isoformat() if d is not None else None for d in data[7]]
    data[7] = dates
    return list(zip(*data, strict=True))


def _checkpoint_bytes(path: str, version: int) -> int | None:
    p = Path(path) / "_delta_log" / f"{version:020d}.checkpoint.parquet"
    return p.stat().st_size if p.exists() else None


# -- ops ------------------------------------------------------------------------------------------------


def _probe() -> dict[str, Any]:
    from airflow_provider_delta.core import DeltaTable, Snapshot

    return {
        "has_checkpoint": callable(getattr(DeltaTable, "checkpoint", None)),
        "has_append": callable(getattr(DeltaTable, "append", None)),
        "has_advance": callable(getattr(Snapshot, "advance", None)),
    }


def _load(engine: str, path: str) -> tuple[Any, float]:
    """Load the latest version with its file list in memory; returns (table, ms)."""
    gc.collect()
    if engine == "ours":
        from airflow_provider_delta.core import DeltaTable

        t0 = time.perf_counter()
        t = DeltaTable(path)
        t.files()  # the file index is built eagerly; this makes sure of it
        return t, (time.perf_counter() - t0) * 1000
    from deltalake import DeltaTable as Rs

    t0 = time.perf_counter()
    dt = Rs(path)  # delta-rs 1.x loads the active files eagerly
    return dt, (time.perf_counter() - t0) * 1000


def _version(engine: str, t: Any) -> int:
    return int(t.version) if engine == "ours" else int(t.version())


def _op_checkpoint(engine: str, path: str) -> dict[str, Any]:
    t, load_ms = _load(engine, path)
    version = _version(engine, t)
    gc.collect()
    t0 = time.perf_counter()
    if engine == "ours":
        t.checkpoint()
    else:
        t.create_checkpoint()
    ms = (time.perf_counter() - t0) * 1000
    out: dict[str, Any] = {"ms": ms, "load_ms": load_ms, "version": version}
    out["checkpoint_bytes"] = _checkpoint_bytes(path, version)
    if engine == "ours":
        files = t.files()
        out["files"] = len(files)
        out["digest"] = _rich_digest(_ours_rows(files))
    return out


def _op_append(engine: str, path: str, hooks: bool) -> dict[str, Any]:
    """Two appends on the loaded table: the first (timed as ``ms``) is the first write of the process,
    the second (``warm_ms``) runs with everything imported and the write path exercised once."""
    batch = small_append_batch()
    t, load_ms = _load(engine, path)
    before = _version(engine, t)
    if engine == "ours":
        how = "DeltaTable.append(batch)"

        def write() -> None:
            t.append(batch)
    else:
        from deltalake import write_deltalake
        from deltalake.transaction import PostCommitHookProperties

        props = (
            None if hooks else PostCommitHookProperties(create_checkpoint=False, cleanup_expired_logs=False)
        )
        how = "write_deltalake(<loaded DeltaTable>, batch, mode='append')" + ("" if hooks else ", hooks off")

        def write() -> None:
            write_deltalake(t, batch, mode="append", post_commithook_properties=props)

    timings = []
    versions = []
    for _ in range(2):
        gc.collect()
        t0 = time.perf_counter()
        write()
        timings.append((time.perf_counter() - t0) * 1000)
        versions.append(_version(engine, t))
    files = len(t.files()) if engine == "ours" else t.get_add_actions(flatten=False).num_rows
    log = Path(path) / "_delta_log"
    return {
        "ms": timings[0],
        "warm_ms": timings[1],
        "load_ms": load_ms,
        "version_before": before,
        "versions": versions,
        "version": versions[-1],
        "files": files,
        "commits_exist": [(log / f"{v:020d}.json").exists() for v in (before + 1, before + 2)],
        "checkpoints": sorted(p.name for p in log.glob("*.checkpoint*.parquet")),
        "method": how,
    }


def _op_advance(
    engine: str, path: str, staged: list[str], warmup: int, budget_s: float, min_reps: int
) -> dict[str, Any]:
    t, load_ms = _load(engine, path)
    log = Path(path) / "_delta_log"
    state: Any = t.snapshot if engine == "ours" else t
    version = _version(engine, t)
    samples: list[float] = []
    spent = 0.0
    for i, src in enumerate(staged):
        if i >= warmup + min_reps and spent > budget_s:
            break
        # another writer commits: an atomic put-if-absent of the next commit file
        os.link(src, log / Path(src).name)
        version += 1
        t0 = time.perf_counter()
        if engine == "ours":
            state = state.advance()
        else:
            state.update_incremental()
        elapsed = time.perf_counter() - t0
        got = int(state.version) if engine == "ours" else int(state.version())
        if got != version:
            raise RuntimeError(f"after applying commit {version} the table is at version {got}")
        if i >= warmup:
            samples.append(elapsed * 1000)
            spent += elapsed
    if engine == "ours":
        files = state.files()
        n_files = len(files)
        digest = _rich_digest(_ours_rows(files))
    else:
        rows = _delta_rs_rows(state)
        n_files = len(rows)
        digest = _rich_digest(rows)
    return {
        "ms": statistics.median(samples),
        "mean_ms": statistics.fmean(samples),
        "min_ms": min(samples),
        "max_ms": max(samples),
        "reps": len(samples),
        "samples_ms": [round(s, 4) for s in samples],
        "load_ms": load_ms,
        "version": version,
        "files": n_files,
        "digest": digest,
    }


def _op_load(engine: str, path: str) -> dict[str, Any]:
    t, load_ms = _load(engine, path)
    if engine == "ours":
        rows = _ours_rows(t.files())
    else:
        rows = _delta_rs_rows(t)
    return {
        "load_ms": load_ms,
        "version": _version(engine, t),
        "files": len(rows),
        "digest": _rich_digest(rows),
    }


def _op_read_partition(engine: str, path: str, copies: int) -> dict[str, Any]:
    if engine == "ours":
        from airflow_provider_delta.core import DeltaTable

        data = DeltaTable(path).to_arrow(
            filter=f"date = '{APPEND_DATE.isoformat()}' AND country = '{APPEND_COUNTRY}'"
        )
    else:
        from deltalake import DeltaTable as Rs

        data = Rs(path).to_pyarrow_table(
            partitions=[("date", "=", APPEND_DATE.isoformat()), ("country", "=", APPEND_COUNTRY)]
        )
    expected = sorted(small_append_batch().to_pylist() * copies, key=lambda r: r["id"])
    got = sorted(data.select(list(expected[0])).to_pylist(), key=lambda r: r["id"])
    return {"rows": len(got), "equal": got == expected}


def main(argv: list[str]) -> int:
    req = json.loads(argv[1])
    engine = req.get("engine", "ours")
    if engine == "ours":
        finish_lazy_imports()
    try:
        op = req["op"]
        if op == "probe":
            out = _probe()
        elif op == "checkpoint":
            out = _op_checkpoint(engine, req["path"])
        elif op == "append":
            out = _op_append(engine, req["path"], bool(req.get("hooks", True)))
        elif op == "advance":
            out = _op_advance(
                engine,
                req["path"],
                list(req["staged"]),
                int(req.get("warmup", 1)),
                float(req.get("budget_s", 30.0)),
                int(req.get("min_reps", 5)),
            )
        elif op == "load":
            out = _op_load(engine, req["path"])
        elif op == "read_partition":
            out = _op_read_partition(engine, req["path"], int(req.get("copies", 1)))
        else:
            raise ValueError(f"unknown op {op!r}")
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which prints it
        out = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

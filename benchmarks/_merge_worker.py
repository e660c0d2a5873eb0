"""Subprocess worker of bench_merge: one MERGE by one engine on one clone of the target table.

    python -m benchmarks._merge_worker '{"engine": "ours", "path": ..., "source": ...}'

Reads the source Parquet file and loads the table (not timed), then times only the merge call. The last
stdout line is JSON: ``{"ms": ..., "load_ms": ..., "metrics": {...}}`` or ``{"error": ..., "traceback": ...}``.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from typing import Any

import pyarrow.parquet as pq

from benchmarks.workload import finish_lazy_imports

CONDITION = "t.id = s.id"


def _ours(path: str, source: Any) -> dict[str, Any]:
    from airflow_provider_delta.core import DeltaTable

    # The merge modules (and sqlglot, which they load) are imported before the clock starts, as
    # ``import deltalake`` is for delta-rs: the timing is the merge, not module loading.
    import_started = time.perf_counter()
    import airflow_provider_delta.core.commands.merge.command  # noqa: F401

    imports_ms = (time.perf_counter() - import_started) * 1000
    started = time.perf_counter()
    t = DeltaTable(path)
    loaded = time.perf_counter()
    metrics = (
        t.merge(source, CONDITION, source_alias="s", target_alias="t", schema_evolution=True)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    done = time.perf_counter()
    return {
        "ms": (done - loaded) * 1000,
        "load_ms": (loaded - started) * 1000,
        "imports_ms": imports_ms,
        "metrics": metrics,
    }


def _delta_rs(path: str, source: Any) -> dict[str, Any]:
    import deltalake

    started = time.perf_counter()
    dt = deltalake.DeltaTable(path)
    loaded = time.perf_counter()
    metrics = (
        dt.merge(source, CONDITION, source_alias="s", target_alias="t", merge_schema=True)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    done = time.perf_counter()
    return {"ms": (done - loaded) * 1000, "load_ms": (loaded - started) * 1000, "metrics": metrics}


def main(argv: list[str]) -> int:
    req = json.loads(argv[1])
    if req["engine"] == "ours":
        finish_lazy_imports()
    try:
        source = pq.read_table(req["source"])
        run = _ours if req["engine"] == "ours" else _delta_rs
        out = run(req["path"], source)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which prints it
        out = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    sys.stdout.write("\n" + json.dumps(out, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

"""One measurement in a fresh interpreter: ``python -m benchmarks._worker '<json request>'``.

Request keys: ``engine`` ("ours" | "delta-rs"), ``op`` ("probe" | "snapshot" | "latest"), ``path``,
``version`` (int or null, for "snapshot"), ``calls`` / ``budget_s`` (for "latest").
Prints one JSON object on the last line of stdout. Timings cover only the operation, not interpreter
start-up or library import; ``rss_import_kb`` is the peak RSS right after importing the library (the
baseline) and ``rss_peak_kb`` the peak RSS after the operation (VmHWM on Linux, see ``_maxrss_kb``).
"""

from __future__ import annotations

import gc
import hashlib
import json
import resource
import statistics
import sys
import time
import traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable


def _maxrss_kb() -> int:
    """Peak RSS of this process image in KiB.

    On Linux this is ``VmHWM`` from /proc/self/status: ``ru_maxrss`` survives fork+exec, so a child of a big
    parent (the runner after generating tables with delta-rs) would start with the parent's peak.
    """
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS


def _digest(paths: list[str]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.encode())
        h.update(b"\n")
    return h.hexdigest()


def _probe() -> dict[str, Any]:
    from airflow_provider_delta.core import DeltaTable

    return {
        "has_files": callable(getattr(DeltaTable, "files", None)),
        "has_latest_version": callable(getattr(DeltaTable, "latest_version", None)),
    }


def _snapshot_ours(path: str, version: int | None) -> dict[str, Any]:
    from airflow_provider_delta.core import DeltaTable

    gc.collect()
    rss0 = _maxrss_kb()
    t0 = time.perf_counter()
    table = DeltaTable(path) if version is None else DeltaTable(path, version=version)
    files = table.files()
    elapsed = time.perf_counter() - t0
    rss1 = _maxrss_kb()
    paths = [f.path for f in files] if files and hasattr(files[0], "path") else None
    return {
        "ms": elapsed * 1000,
        "files": len(files),
        "version": int(table.version),
        "digest": _digest(paths) if paths is not None else None,
        "rss_import_kb": rss0,
        "rss_peak_kb": rss1,
    }


def _snapshot_delta_rs(path: str, version: int | None) -> dict[str, Any]:
    from deltalake import DeltaTable

    gc.collect()
    rss0 = _maxrss_kb()
    t0 = time.perf_counter()
    table = DeltaTable(path, version=version)
    adds = table.get_add_actions(flatten=True)
    elapsed = time.perf_counter() - t0
    rss1 = _maxrss_kb()
    import pyarrow as pa  # after the measurement: only for the cross-check digest

    paths = pa.table(adds).column("path").to_pylist()
    return {
        "ms": elapsed * 1000,
        "files": adds.num_rows,
        "version": table.version(),
        "digest": _digest(paths),
        "rss_import_kb": rss0,
        "rss_peak_kb": rss1,
    }


def _time_calls(fn: Callable[[], int], calls: int, budget_s: float) -> dict[str, Any]:
    """Median of up to ``calls`` calls (at least 3, fewer if they would exceed ``budget_s``) after warmup."""
    t0 = time.perf_counter()
    version = fn()
    first = time.perf_counter() - t0
    for _ in range(4 if first < 0.01 else 0):
        fn()
    n = max(3, min(calls, int(budget_s / max(first, 1e-6))))
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        v = fn()
        samples.append(time.perf_counter() - t0)
        if v != version:
            raise RuntimeError(f"latest version changed between calls: {version} -> {v}")
    return {
        "ms": statistics.median(samples) * 1000,
        "min_ms": min(samples) * 1000,
        "calls": n,
        "version": version,
    }


def _latest(engine: str, path: str, calls: int, budget_s: float) -> dict[str, Any]:
    if engine == "ours":
        from airflow_provider_delta.core import DeltaTable as Ours

        return {
            **_time_calls(lambda: int(Ours.latest_version(path)), calls, budget_s),
            "method": "latest_version",
        }

    from deltalake import DeltaTable as Rs

    # deltalake 1.6.6 has no public "latest version" call and `without_files=True` is deprecated and ignored
    # (it still materialises every file), so two candidates are timed and the cheaper one is reported:
    # a full load, or loading version 0 (one commit) and asking the log for its newest version.
    candidates: dict[str, Callable[[], int]] = {
        "DeltaTable(path).version()": lambda: int(Rs(path).version()),
        "DeltaTable(path, version=0)._table.get_latest_version()": lambda: int(
            Rs(path, version=0)._table.get_latest_version()
        ),
    }
    results = {name: _time_calls(fn, calls, budget_s) for name, fn in candidates.items()}
    best = min(results, key=lambda name: results[name]["ms"])
    others = {name: round(r["ms"], 3) for name, r in results.items()}
    return {**results[best], "method": best, "candidates_ms": others}


def main(argv: list[str]) -> int:
    req = json.loads(argv[1])
    try:
        if req["op"] == "probe":
            out = _probe()
        elif req["op"] == "snapshot":
            snap = _snapshot_ours if req["engine"] == "ours" else _snapshot_delta_rs
            out = snap(req["path"], req.get("version"))
        elif req["op"] == "latest":
            out = _latest(req["engine"], req["path"], int(req["calls"]), float(req["budget_s"]))
        else:
            raise ValueError(f"unknown op {req['op']!r}")
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which prints it
        out = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

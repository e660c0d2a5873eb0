"""One maintenance measurement in a fresh interpreter: ``python -m benchmarks._maintenance_worker '<json>'``.

Request keys: ``engine`` ("ours" | "delta-rs"), ``op`` and ``path``, plus per op:

* ``vacuum`` -- load the table (not timed), then time a full VACUUM with retention 0 and the check off;
* ``compact`` -- ``target_size``: load (not timed), then time the compaction to that file size;
* ``digest`` -- the table's version, active file count and a digest of its sorted rows, read by this engine
  (delta-rs: its DataFusion reader, the one that honours deletion vectors).

Prints one JSON object on the last line of stdout. Timings cover only the operation, not start-up,
imports (ours imports the command modules first, as ``import deltalake`` loads delta-rs's) or loading.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
import traceback
from typing import Any

from benchmarks.workload import finish_lazy_imports


def _digest(table: Any) -> str:
    import pyarrow as pa

    t = pa.table(table)
    names = sorted(t.column_names)
    plain = {pa.string_view(): pa.string(), pa.large_string(): pa.string(), pa.binary_view(): pa.binary()}
    t = pa.table({n: t.column(n).cast(plain.get(t.column(n).type, t.column(n).type)) for n in names})
    t = t.sort_by([(n, "ascending") for n in names])
    h = hashlib.sha256()
    for batch in t.to_batches():
        h.update(repr(batch.to_pydict()).encode())
    return h.hexdigest()


def _ours(request: dict[str, Any]) -> dict[str, Any]:
    finish_lazy_imports()
    import airflow_provider_delta.core.commands.optimize
    import airflow_provider_delta.core.commands.vacuum  # noqa: F401 - module import is start-up, not the op
    from airflow_provider_delta.core import DeltaTable

    op, path = request["op"], request["path"]
    table = DeltaTable(path)
    if op == "digest":
        return {"version": table.version, "files": len(table.files()), "digest": _digest(table.to_arrow())}
    started = time.perf_counter()
    if op == "vacuum":
        result = table.vacuum(0, enforce_retention_duration=False)
        ms = (time.perf_counter() - started) * 1000
        return {"ms": ms, "deleted": len(result.files)}
    if op == "compact":
        out = table.optimize(target_file_size=int(request["target_size"]))
        ms = (time.perf_counter() - started) * 1000
        return {"ms": ms, "removed": out["numRemovedFiles"], "added": out["numAddedFiles"]}
    raise ValueError(f"unknown op {op!r}")


def _delta_rs(request: dict[str, Any]) -> dict[str, Any]:
    import deltalake

    op, path = request["op"], request["path"]
    table = deltalake.DeltaTable(path)
    if op == "digest":
        rows = deltalake.QueryBuilder().register("t", table).execute("select * from t").read_all()
        return {"version": table.version(), "files": len(table.file_uris()), "digest": _digest(rows)}
    started = time.perf_counter()
    if op == "vacuum":
        deleted = table.vacuum(retention_hours=0, enforce_retention_duration=False, full=True, dry_run=False)
        ms = (time.perf_counter() - started) * 1000
        return {"ms": ms, "deleted": len(deleted)}
    if op == "compact":
        metrics = table.optimize.compact(target_size=int(request["target_size"]))
        ms = (time.perf_counter() - started) * 1000
        return {"ms": ms, "removed": metrics["numFilesRemoved"], "added": metrics["numFilesAdded"]}
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    request = json.loads(sys.argv[1])
    try:
        result = _ours(request) if request["engine"] == "ours" else _delta_rs(request)
    except Exception as exc:  # noqa: BLE001 - reported to the runner
        result = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

"""Maintenance benchmarks: VACUUM and compaction, ours vs delta-rs in the same run.

    python -m benchmarks.bench_maintenance [--quick] [--vacuum-sizes 4000,100000] [--repeats 3] [--json out]

Cases (see benchmarks/README.md):

1. VACUUM of a table with N data files of which N/2 are expired tombstones (10 partitions, every file
   30 days old): ``DeltaTable(path).vacuum(0, enforce_retention_duration=False)`` vs delta-rs
   ``vacuum(retention_hours=0, enforce_retention_duration=False, full=True, dry_run=False)``.
   Target at N=4,000: <= 1.0x delta-rs; N=100,000 is reported.
2. Compaction of 1,000 small files (10 partitions x 100 appends) into target-size files:
   ``t.optimize(target_file_size=T)`` vs delta-rs ``optimize.compact(target_size=T)``. Target <= 1.0x.

Every measurement runs in a fresh subprocess on a private clone of a cached table (data files
hard-linked: deleting unlinks the clone's name only). Cross-checks (exit 1 on failure): after every
run, the files left on disk are exactly the live ones (VACUUM), and both engines read the table of
every clone with the rows of the original (delta-rs's DataFusion reader). Exit 0 even when a target
FAILs: the run is a report.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.bench_read import DELTA_RS, OURS, CrossCheckError, Report, Row, _status, run_and_report
from benchmarks.bench_read import _run_worker as _run_any_worker
from benchmarks.workload import DATA_DIR, MANIFEST

VACUUM_GATED_SIZE = 4000
VACUUM_MAX_RATIO = 1.0
COMPACT_MAX_RATIO = 1.0
COMPACT_FILES = 1000
COMPACT_PARTITIONS = 10
COMPACT_ROWS_PER_FILE = 500
COMPACT_TARGET = 64 * 1024 * 1024
PARTITIONS = 10
FORMAT = 1
_DAY_S = 86400


def _run_worker(request: dict[str, Any], timeout: float) -> dict[str, Any]:
    result = _run_any_worker(request, timeout, module="benchmarks._maintenance_worker")
    if "error" in result and "traceback" in result:
        print("      " + result["traceback"].strip().replace("\n", "\n      "), flush=True)
    return result


# -- tables -------------------------------------------------------------------------------------------


def _commit(log: Path, version: int, actions: list[dict[str, Any]]) -> None:
    (log / f"{version:020d}.json").write_bytes(b"".join(json.dumps(a).encode() + b"\n" for a in actions))


def _vacuum_table(n: int) -> Path:
    """N data files in 10 partitions, every other one removed 30 days ago; all files 30 days old."""
    root = DATA_DIR / f"maint-vacuum-n{n}-p{PARTITIONS}-f{FORMAT}"
    if (root / MANIFEST).exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    started = time.perf_counter()
    log = root / "_delta_log"
    log.mkdir(parents=True)
    now_ms = int(time.time() * 1000)
    old_ms = now_ms - 30 * _DAY_S * 1000
    schema = {"type": "struct", "fields": [
        {"name": n_, "type": t_, "nullable": True, "metadata": {}}
        for n_, t_ in (("id", "long"), ("value", "double"), ("p", "string"))
    ]}
    _commit(log, 0, [
        {"commitInfo": {"timestamp": now_ms, "operation": "CREATE TABLE", "operationParameters": {}}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema), "partitionColumns": ["p"], "configuration": {},
                      "createdTime": now_ms}},
    ])
    template = root / ".template.parquet"
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64()), "value": [0.5 * i for i in range(10)]}),
                   template)
    data = template.read_bytes()
    stats = json.dumps({"numRecords": 10, "minValues": {"id": 0, "value": 0.0},
                        "maxValues": {"id": 9, "value": 4.5}, "nullCount": {"id": 0, "value": 0}})
    adds, removes = [], []
    for i in range(n):
        part = f"p={i % PARTITIONS}"
        (root / part).mkdir(exist_ok=True)
        path = f"{part}/part-{i:06d}-{uuid.UUID(int=i)}-c000.snappy.parquet"
        (root / path).write_bytes(data)
        add = {"path": path, "partitionValues": {"p": str(i % PARTITIONS)}, "size": len(data),
               "modificationTime": old_ms, "dataChange": True, "stats": stats}
        adds.append({"add": add})
        if i % 2:
            removes.append({"remove": {"path": path, "deletionTimestamp": old_ms, "dataChange": True,
                                       "extendedFileMetadata": True, "partitionValues": add["partitionValues"],
                                       "size": len(data)}})
    template.unlink()
    _commit(log, 1, [{"commitInfo": {"timestamp": now_ms, "operation": "WRITE"}}, *adds])
    _commit(log, 2, [{"commitInfo": {"timestamp": now_ms, "operation": "DELETE"}}, *removes])
    old_s = old_ms / 1000
    for folder, _dirs, files in os.walk(root):
        if "_delta_log" not in folder:
            for name in files:
                os.utime(os.path.join(folder, name), (old_s, old_s))
    live = sorted(a["add"]["path"] for i, a in enumerate(adds) if i % 2 == 0)
    (root / MANIFEST).write_text(json.dumps({"files": n, "live": live}))
    print(f"  generated VACUUM table N={n:,} in {time.perf_counter() - started:.1f}s", flush=True)
    return root


def _compact_table() -> Path:
    """1,000 small files: 100 appends of one 500-row file into each of 10 partitions (written by ours)."""
    root = DATA_DIR / f"maint-compact-n{COMPACT_FILES}-p{COMPACT_PARTITIONS}-r{COMPACT_ROWS_PER_FILE}-f{FORMAT}"
    if (root / MANIFEST).exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    from airflow_provider_delta.core import DeltaTable

    started = time.perf_counter()
    schema = pa.schema([("id", pa.int64()), ("value", pa.float64()), ("name", pa.string()),
                        ("ts", pa.timestamp("us", tz="UTC")), ("p", pa.string())])
    table = DeltaTable.create(str(root), schema, partition_by=["p"],
                              properties={"delta.checkpointInterval": "1000"})
    rows = COMPACT_ROWS_PER_FILE * COMPACT_PARTITIONS
    for k in range(COMPACT_FILES // COMPACT_PARTITIONS):
        ids = list(range(k * rows, (k + 1) * rows))
        table.append(pa.table({
            "id": ids,
            "value": [i * 0.25 for i in ids],
            "name": [f"name-{i % 997}" for i in ids],
            "ts": pa.array([1_700_000_000_000_000 + i * 1_000 for i in ids], pa.timestamp("us", tz="UTC")),
            "p": [f"part{i % COMPACT_PARTITIONS}" for i in ids],
        }, schema=schema))
    (root / MANIFEST).write_text(json.dumps({"files": COMPACT_FILES}))
    print(f"  generated compaction table ({COMPACT_FILES:,} files) in {time.perf_counter() - started:.1f}s",
          flush=True)
    return root


def _clone(src: Path, dst: Path) -> None:
    """The table at ``dst``: log files copied, data files hard-linked (keeping their mtimes)."""
    for folder, _dirs, files in os.walk(src):
        rel = Path(folder).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            if name == MANIFEST and rel == Path("."):
                continue
            source, target = Path(folder) / name, dst / rel / name
            if "_delta_log" in rel.parts:
                shutil.copy2(source, target)
            else:
                os.link(source, target)


def _data_files(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts
    )


# -- measurements --------------------------------------------------------------------------------------


class _Workdir:
    def __init__(self) -> None:
        self.root = DATA_DIR / f".bench-maintenance-{os.getpid()}"
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True)
        self.n = 0

    def clone(self, table: Path, label: str) -> Path:
        self.n += 1
        dst = self.root / f"{self.n:03d}-{label}"
        _clone(table, dst)
        return dst

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _check_rows(label: str, clone: Path, expected: str, timeout: float) -> None:
    for engine in (OURS, DELTA_RS):
        res = _run_worker({"engine": engine, "op": "digest", "path": str(clone)}, timeout)
        if "error" in res:
            raise CrossCheckError(f"{label}: {engine} cannot read the table afterwards: {res['error']}")
        if res["digest"] != expected:
            raise CrossCheckError(f"{label}: {engine} reads other rows than the original table's")


def _measure(
    work: _Workdir, table: Path, op: dict[str, Any], repeats: int, timeout: float, check: Any
) -> dict[str, list[dict[str, Any]]]:
    results: dict[str, list[dict[str, Any]]] = {OURS: [], DELTA_RS: []}
    for rep in range(repeats):
        order = (OURS, DELTA_RS) if rep % 2 == 0 else (DELTA_RS, OURS)
        for engine in order:
            clone = work.clone(table, f"{op['op']}-{engine}")
            res = _run_worker({"engine": engine, "path": str(clone), **op}, timeout)
            results[engine].append(res)
            if "error" not in res:
                check(engine, clone, res)
            shutil.rmtree(clone, ignore_errors=True)
    return results


def _median(results: list[dict[str, Any]]) -> float | None:
    vals = [r["ms"] for r in results if "error" not in r]
    return statistics.median(vals) if vals else None


def _row(case: str, results: dict[str, list[dict[str, Any]]], max_ratio: float, gated: bool, note: str) -> Row:
    ours, theirs = _median(results[OURS]), _median(results[DELTA_RS])
    errors = [r["error"] for rs in results.values() for r in rs if "error" in r]
    target = f"<= {max_ratio:g}x delta-rs"
    if ours is None or theirs is None:
        return Row(case, ours, theirs, target, "ERR", note="; ".join(errors[:1]))
    runs = ", ".join(f"{r['ms']:.0f}" for r in results[OURS]) + " vs " + ", ".join(
        f"{r['ms']:.0f}" for r in results[DELTA_RS])
    return Row(case, ours, theirs, target if gated else f"({target})", _status(ours <= theirs * max_ratio, gated),
               note=f"{note}; runs {runs} ms")


def bench_vacuum(work: _Workdir, n: int, repeats: int, timeout: float, report: Report) -> None:
    table = _vacuum_table(n)
    manifest = json.loads((table / MANIFEST).read_text())
    expected_rows: str | None = None
    if n <= VACUUM_GATED_SIZE:
        res = _run_worker({"engine": DELTA_RS, "op": "digest", "path": str(table)}, timeout)
        if "error" in res:
            raise CrossCheckError(f"delta-rs cannot read the VACUUM table: {res['error']}")
        expected_rows = res["digest"]

    def check(engine: str, clone: Path, res: dict[str, Any]) -> None:
        left = _data_files(clone)
        if left != manifest["live"]:
            raise CrossCheckError(f"VACUUM N={n} ({engine}): {len(left)} files left, expected the "
                                  f"{len(manifest['live'])} live ones")
        if res["deleted"] != n // 2:
            raise CrossCheckError(f"VACUUM N={n} ({engine}): reported {res['deleted']} deleted, expected {n // 2}")
        if expected_rows is not None:
            _check_rows(f"VACUUM N={n} ({engine})", clone, expected_rows, timeout)

    print(f"case 1: VACUUM N={n:,} ({n // 2:,} expired), {repeats} run(s) per engine", flush=True)
    results = _measure(work, table, {"op": "vacuum"}, repeats, timeout, check)
    report.raw[f"vacuum-{n}"] = results
    report.add(_row(f"1 VACUUM N={n:,} ({n // 2:,} expired)", results, VACUUM_MAX_RATIO,
                    n == VACUUM_GATED_SIZE, f"{n // 2:,} files deleted by each"))


def bench_compact(work: _Workdir, repeats: int, timeout: float, report: Report) -> None:
    table = _compact_table()
    res = _run_worker({"engine": DELTA_RS, "op": "digest", "path": str(table)}, timeout)
    if "error" in res:
        raise CrossCheckError(f"delta-rs cannot read the compaction table: {res['error']}")
    expected = res["digest"]

    def check(engine: str, clone: Path, res: dict[str, Any]) -> None:
        if res["removed"] != COMPACT_FILES or res["added"] != COMPACT_PARTITIONS:
            raise CrossCheckError(f"compaction ({engine}): {res['removed']} files removed, {res['added']} added; "
                                  f"expected {COMPACT_FILES} and {COMPACT_PARTITIONS}")
        _check_rows(f"compaction ({engine})", clone, expected, timeout)

    print(f"case 2: compaction of {COMPACT_FILES:,} files, {repeats} run(s) per engine", flush=True)
    results = _measure(work, table, {"op": "compact", "target_size": COMPACT_TARGET}, repeats, timeout, check)
    report.raw["compact"] = results
    report.add(_row(f"2 compact {COMPACT_FILES:,} files into {COMPACT_PARTITIONS}", results, COMPACT_MAX_RATIO,
                    True, "rows identical after both (read by both engines)"))


FOOTNOTE = (
    "ms = median over fresh subprocesses, each on its own clone; the table load is not timed for either "
    f"engine. VACUUM's target is gated at N={VACUUM_GATED_SIZE:,}; larger sizes are info."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vacuum-sizes", default="4000,100000", help="data files per VACUUM table")
    parser.add_argument("--quick", action="store_true", help="N=4,000 only, 1 run per engine")
    parser.add_argument("--repeats", type=int, default=None, help="runs per engine and case (3)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per worker subprocess")
    parser.add_argument("--json", type=Path, default=None, help="also write raw results to this file")
    args = parser.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.vacuum_sizes.split(",") if s.strip()]
    if args.quick:
        sizes = [s for s in sizes if s <= VACUUM_GATED_SIZE] or [VACUUM_GATED_SIZE]
    repeats = args.repeats or (1 if args.quick else 3)

    def measure() -> Report:
        report = Report()
        work = _Workdir()
        try:
            for n in sizes:
                bench_vacuum(work, n, repeats if n <= VACUUM_GATED_SIZE else max(1, repeats - 1), args.timeout,
                             report)
            bench_compact(work, repeats, args.timeout, report)
        finally:
            work.close()
        return report

    return run_and_report(measure, FOOTNOTE, args.json)


if __name__ == "__main__":
    raise SystemExit(main())

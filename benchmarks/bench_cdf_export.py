"""CDF export benchmark: ``export_changes`` to Parquet vs delta-rs ``load_cdf`` + ``write_to_dataset``.

The source: 100 versions (a CREATE, then appends of ``rows_per_version`` rows; every 10th version an
UPDATE of ~2% of one version's rows, read from change data files): about 1M change rows in all.

- ours: ``export_changes(src, sink)`` into an empty Parquet sink (planning, preflight, the change
  reads, one Parquet file per change file under ``_commit_version=<v>/``, a manifest per version).
- delta-rs: ``DeltaTable(src).load_cdf(starting_version=0).read_all()`` then
  ``pyarrow.parquet.write_to_dataset(rows, sink, partition_cols=["_commit_version"])`` (string views
  cast to strings first: the dataset writer cannot partition them).

Each is run ``--repeats`` times, alternating, into a fresh sink; the median is reported with the ratio.
Cross-check: both sinks hold the same number of rows. Target: ours <= 1.0x delta-rs.

    .venv/bin/python -m benchmarks.bench_cdf_export [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

VERSIONS = 100
TARGET = 1.0


def make_source(path: Path, rows_per_version: int) -> int:
    from airflow_provider_delta.core import DeltaTable

    schema = pa.schema([("id", pa.int64()), ("kind", pa.string()), ("amount", pa.float64()), ("note", pa.string())])
    t = DeltaTable.create(str(path), schema, properties={"delta.enableChangeDataFeed": "true"})
    for v in range(1, VERSIONS):
        if v % 10 == 0:
            lo = (v - 5) * rows_per_version
            t.update(f"id >= {lo} AND id < {lo + rows_per_version // 50}", {"amount": "amount + 1"})
            continue
        start = v * rows_per_version
        ids = pa.array(range(start, start + rows_per_version), pa.int64())
        t.append(pa.table({"id": ids, "kind": pa.array(["abcdefgh"[i % 8] for i in range(rows_per_version)]),
                           "amount": pa.compute.multiply(ids.cast(pa.float64()), 0.5),
                           "note": pa.array([f"row {i}" for i in range(start, start + rows_per_version)])},
                          schema=schema))
    return DeltaTable(str(path)).changes(0).num_rows


def run_ours(src: Path, sink: Path) -> int:
    from airflow_provider_delta.core.commands.cdf_export import export_changes

    return export_changes(str(src), str(sink), register_watermark=False).rows


def run_delta_rs(src: Path, sink: Path) -> int:
    import deltalake

    rows = deltalake.DeltaTable(str(src)).load_cdf(starting_version=0).read_all()
    table = pa.table(rows)
    # delta-rs returns string_view columns, which write_to_dataset cannot partition: plain strings.
    table = table.cast(pa.schema([f.with_type(pa.string()) if f.type == pa.string_view() else f for f in table.schema]))
    pq.write_to_dataset(table, str(sink), partition_cols=["_commit_version"])
    return table.num_rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k change rows, 3 repeats")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write the measurements here")
    args = parser.parse_args()
    rows_per_version = 1_000 if args.quick else 10_000
    repeats = 3 if args.quick else args.repeats
    work = Path(tempfile.mkdtemp(prefix="bench-cdf-"))
    try:
        started = time.perf_counter()
        total = make_source(work / "src", rows_per_version)
        print(f"source: {VERSIONS} versions, {total:,} change rows (made in {time.perf_counter() - started:.1f}s)")
        times: dict[str, list[float]] = {"ours": [], "delta-rs": []}
        counts: dict[str, int] = {}
        for i in range(repeats):
            order = [("ours", run_ours), ("delta-rs", run_delta_rs)]
            for name, fn in order if i % 2 == 0 else order[::-1]:
                sink = work / f"sink-{name}"
                shutil.rmtree(sink, ignore_errors=True)
                t0 = time.perf_counter()
                counts[name] = fn(work / "src", sink)
                times[name].append(time.perf_counter() - t0)
        if counts["ours"] != counts["delta-rs"] or counts["ours"] != total:
            print(f"CROSS-CHECK FAILED: rows {counts}, expected {total}")
            return 1
        ours, theirs = statistics.median(times["ours"]), statistics.median(times["delta-rs"])
        ratio = ours / theirs
        print(f"load average: {os.getloadavg()[0]:.2f}")
        print(f"{'case':<34} {'ours':>9} {'delta-rs':>9} {'ratio':>7} target")
        verdict = "PASS" if ratio <= TARGET else "FAIL"
        print(f"{'export ' + format(total, ',') + ' rows to Parquet':<34} {ours:>8.2f}s {theirs:>8.2f}s {ratio:>6.2f}x "
              f"<= {TARGET}x {verdict}")
        if args.json:
            Path(args.json).write_text(json.dumps({"rows": total, "versions": VERSIONS, "times": times,
                                                   "ratio": ratio}, indent=2))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())

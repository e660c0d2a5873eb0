"""MERGE benchmark: our local pyarrow merge and our Spark merge vs delta-rs's merge on identical data, same run.

    python -m benchmarks.bench_merge [--rows 5000000] [--source-rows N] [--files 20] [--repeats 2]
                                     [--engines ours,delta-rs,spark] [--rss-rows 20000000] [--job-jvm] [--json out.json]

The target table (``id, name, amount, ts, category``; ``delta.enableChangeDataFeed=true``; ``--files`` files of
consecutive ids) and the source (``--source-rows``, default rows/10: half of them ids that exist in the target,
spread over the whole range, half new ids, plus a new column ``score``) are generated once and cached under
``benchmarks/.data/merge-*``. Each run merges the source into a private hard-linked clone of the table:
``MERGE WITH SCHEMA EVOLUTION ... WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *`` (delta-rs:
``merge(..., merge_schema=True).when_matched_update_all().when_not_matched_insert_all()``), in a fresh
subprocess per engine and run, engines interleaved; only the merge call is timed. ``spark`` is
``merge_delta`` on ``local[2]`` with the source read by Spark (JVM start reported apart, a warm-up merge
first; ``--job-jvm``: with the driver JVM options the operators' jobs get). Afterwards all results are
cross-checked (rows, ids, new-column values, change-feed rows by type).
Targets at the full size (5,000,000 rows): ours <= 1.0x delta-rs, spark <= 2.0x delta-rs; with
``--rss-rows`` the Spark driver's peak RSS for a target of that many rows (same source size) within
64 MB of the full-size run's. Smaller sizes are info. Exit code 1 only when a cross-check fails.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from benchmarks._cpu import summary
from benchmarks.bench_read import (
    DELTA_RS,
    OURS,
    CrossCheckError,
    Report,
    Row,
    _run_worker,
    _status,
    run_and_report,
)
from benchmarks.bench_write import _interleaved, _ratio_row, _shown
from benchmarks.workload import DATA_DIR

MERGE_MAX_RATIO = 1.0
SPARK_MAX_RATIO = 2.0
MAX_DRIVER_GROWTH_MB = 64.0
GATED_ROWS = 5_000_000
FORMAT = 1
SPARK = "spark"


def _generate(root: Path, rows: int, source_rows: int, files: int) -> None:
    """Write the target table and the source file under ``root`` (manifest last: a partial run is redone)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from airflow_provider_delta.core import DeltaTable

    rng = np.random.default_rng(42)

    def batch(ids: np.ndarray) -> pa.Table:
        id_array = pa.array(ids, pa.int64())
        return pa.table(
            {
                "id": id_array,
                "name": pc.binary_join_element_wise(
                    "name-", pc.cast(pc.bit_wise_and(id_array, 1023), pa.string()), ""
                ),
                "amount": pa.array(rng.random(len(ids)) * 1000),
                "ts": pa.array(1_700_000_000_000_000 + ids * 1_000_000, pa.timestamp("us", tz="UTC")),
                "category": pc.binary_join_element_wise(
                    "cat-", pc.cast(pc.bit_wise_and(id_array, 15), pa.string()), ""
                ),
            }
        )

    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    table = DeltaTable.create(
        str(root / "table"), batch(np.arange(1)).schema, properties={"delta.enableChangeDataFeed": "true"}
    )
    bounds = np.linspace(0, rows, files + 1).astype(np.int64)
    for lo, hi in itertools.pairwise(bounds):
        table.append(batch(np.arange(lo, hi)))
    matching = rng.choice(rows, source_rows // 2, replace=False)
    new = np.arange(rows, rows + source_rows - len(matching))
    ids = np.concatenate([matching, new])
    rng.shuffle(ids)
    source = batch(ids).append_column("score", pa.array(rng.random(len(ids))))
    pq.write_table(source, root / "source.parquet")
    manifest = {
        "rows": rows,
        "source_rows": source_rows,
        "files": files,
        "matching": len(matching),
        "inserted": len(new),
        "version": table.version,
    }
    (root / "manifest.json").write_text(json.dumps(manifest))


def ensure_data(rows: int, source_rows: int, files: int) -> tuple[Path, dict[str, Any]]:
    root = DATA_DIR / f"merge-{rows}-{source_rows}-{files}-f{FORMAT}"
    if not (root / "manifest.json").exists():
        print(
            f"generating {rows:,}-row target ({files} files) and {source_rows:,}-row source in {root} ...",
            flush=True,
        )
        started = time.perf_counter()
        _generate(root, rows, source_rows, files)
        print(f"  generated in {time.perf_counter() - started:.1f}s", flush=True)
    return root, json.loads((root / "manifest.json").read_text())


def _clone(table: Path, dst: Path) -> None:
    """Hard-link every file (data files and commits are immutable; both engines only add files)."""
    for dirpath, _dirs, names in os.walk(table):
        rel = Path(dirpath).relative_to(table)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in names:
            os.link(Path(dirpath) / name, dst / rel / name)


def _digest(path: Path, version: int) -> dict[str, Any]:
    """What both engines' merges must agree on, read by delta-rs (an independent reader)."""
    import deltalake
    import pyarrow as pa

    dt = deltalake.DeltaTable(str(path))
    sql = (
        "select count(*) as n, sum(id) as ids, count(score) as scored, round(sum(score), 6) as score_sum, "
        "round(sum(amount), 3) as amount_sum from t"
    )
    summary = pa.table(deltalake.QueryBuilder().register("t", dt).execute(sql).read_all()).to_pylist()[0]
    cdf = pa.table(dt.load_cdf(starting_version=version + 1).read_all())
    kinds: dict[str, int] = {}
    for kind in cdf.column("_change_type").to_pylist():
        kinds[kind] = kinds.get(kind, 0) + 1
    columns = [f.name for f in dt.schema().fields]
    return {
        **summary,
        "version": dt.version(),
        "changes": dict(sorted(kinds.items())),
        "columns": sorted(columns),
    }


def _check(results: dict[str, list[dict[str, Any]]], manifest: dict[str, Any]) -> None:
    expected_rows = manifest["rows"] + manifest["inserted"]
    digests: dict[str, dict[str, Any]] = {}
    for engine, runs in results.items():
        for res in runs:
            if "digest" not in res:
                continue
            d = res["digest"]
            if d["n"] != expected_rows or d["scored"] != manifest["source_rows"]:
                raise CrossCheckError(
                    f"{engine}: {d['n']} rows / {d['scored']} scored rows, expected "
                    f"{expected_rows} / {manifest['source_rows']}"
                )
            digests.setdefault(engine, d)
    reference = digests.get(DELTA_RS) or digests.get(OURS) or next(iter(digests.values()), None)
    for engine, digest in digests.items():
        if digest != reference:
            raise CrossCheckError(f"the engines' merges differ: {engine} {digest} vs {reference}")


def _merge_runs(
    rows: int, source_rows: int, files: int, repeats: int, timeout: float, engines: list[str],
    java_options: str | None = None,
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """Each engine's runs (fresh subprocess, private clone), engines interleaved; cross-checked."""
    root, manifest = ensure_data(rows, source_rows, files)
    work = DATA_DIR / f".bench-merge-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    results: dict[str, list[dict[str, Any]]] = {e: [] for e in engines}
    try:
        for rep in range(repeats):
            for engine in _interleaved(engines, rep):
                clone = work / f"{rep}-{engine}"
                _clone(root / "table", clone)
                request = {"engine": engine, "path": str(clone), "source": str(root / "source.parquet")}
                if engine == SPARK:
                    request["origin"] = str(root / "table")  # a second MERGE in the warm session (info)
                    request["java_options"] = java_options
                res = _run_worker(request, timeout, module="benchmarks._merge_worker")
                if "error" not in res:
                    res["digest"] = _digest(clone, manifest["version"])
                extra = f", CPU {res['cpu_s']:.1f} s" if "cpu_s" in res else ""
                extra += f", JVM start {res['jvm_ms']:.0f} ms apart" if "jvm_ms" in res else ""
                extra += f", again in the warm session {res['again_ms']:.0f} ms" if res.get("again_ms") else ""
                extra += f", driver peak RSS {res['peak_kb'] / 1024:.0f} MB" if "peak_kb" in res else ""
                extra += f"\n      first MERGE {summary(res['cpu_ms'])}" if res.get("cpu_ms") else ""
                extra += f"\n      again {summary(res['again_cpu_ms'])}" if res.get("again_cpu_ms") else ""
                print(f"  run {rep + 1} {engine:<8} {_shown(res, extra)}", flush=True)
                results[engine].append(res)
                shutil.rmtree(clone, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _check(results, manifest)
    return results, manifest


def _files_note(runs: list[dict[str, Any]], who: str) -> str:
    metrics: dict[str, Any] = next((r["metrics"] for r in runs if "metrics" in r), {})
    if not metrics:
        return ""
    return (f"{who} wrote {metrics.get('numTargetFilesAdded', '?')} data + "
            f"{metrics.get('numTargetChangeFilesAdded', '?')} change files")


def run(
    rows: int, source_rows: int, files: int, repeats: int, timeout: float, engines: list[str],
    rss_rows: int | None = None, java_options: str | None = None,
) -> Report:
    report = Report()
    results, manifest = _merge_runs(rows, source_rows, files, repeats, timeout, engines, java_options)
    report.raw["merge"] = results
    case = f"merge {rows:,} x {source_rows:,} (CDF, +1 col)"
    note = f"{manifest['matching']:,} updated, {manifest['inserted']:,} inserted"
    gated = rows >= GATED_ROWS
    if OURS in engines:
        ours_note = "; ".join(n for n in (note, _files_note(results[OURS], "ours")) if n)
        report.add(_ratio_row(case, results, MERGE_MAX_RATIO, gated, note=ours_note))
    if SPARK in engines:
        spark_runs = results[SPARK]
        jvm = [r["jvm_ms"] for r in spark_runs if "jvm_ms" in r]
        again = sorted(r["again_ms"] for r in spark_runs if r.get("again_ms"))
        spark_note = "; ".join(n for n in (
            "merge_delta on local[2], source read by Spark",
            f"driver JVM options {java_options!r}" if java_options else "",
            f"JVM + session start {sorted(jvm)[len(jvm) // 2]:,.0f} ms (not timed)" if jvm else "",
            f"a second MERGE in the warm session {again[len(again) // 2]:,.0f} ms" if again else "",
            _files_note(spark_runs, "spark"),
        ) if n)
        spark_vs = {OURS: spark_runs, DELTA_RS: results.get(DELTA_RS, [])}
        report.add(_ratio_row(f"{case}, Spark executor", spark_vs, SPARK_MAX_RATIO, gated, note=spark_note))
        if rss_rows:
            report.add(_rss_row(spark_runs, rows, rss_rows, source_rows, files, timeout, java_options))
    return report


def _rss_row(small_runs: list[dict[str, Any]], rows: int, rss_rows: int, source_rows: int, files: int,
             timeout: float, java_options: str | None) -> Row:
    """The Spark driver's peak RSS at ``rss_rows`` target rows against the full-size runs' (same source size)."""
    big_runs, _ = _merge_runs(rss_rows, source_rows, files, 1, timeout, [SPARK], java_options)
    small = [r["peak_kb"] / 1024 for r in small_runs if "peak_kb" in r]
    big = [r["peak_kb"] / 1024 for r in big_runs[SPARK] if "peak_kb" in r]
    case = f"Spark driver peak RSS, target {rows:,} -> {rss_rows:,} rows"
    if not small or not big:
        return Row(case, None, None, f"<= +{MAX_DRIVER_GROWTH_MB:g} MB", "ERR", unit="MB",
                   note=str((big_runs[SPARK] or [{}])[0].get("error", "no result")))
    grown = max(big) - max(small)
    ok = grown <= MAX_DRIVER_GROWTH_MB
    return Row(case, max(big), max(small), f"<= +{MAX_DRIVER_GROWTH_MB:g} MB", _status(ok, True), unit="MB",
               note=f"{max(small):.0f} MB -> {max(big):.0f} MB ({grown:+.0f} MB)", reference=f"{rows:,} rows")


FOOTNOTE = (
    "ms = median over fresh subprocesses, one clone of the table per run; table load and source read "
    f"are not timed. The ratio target is gated at {GATED_ROWS:,} target rows; other sizes are info."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=GATED_ROWS, help="target rows (5,000,000)")
    parser.add_argument("--source-rows", type=int, default=None, help="source rows (default rows / 10)")
    parser.add_argument("--files", type=int, default=20, help="target data files (20)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per engine (2)")
    parser.add_argument("--quick", action="store_true", help="500,000 rows, one run per engine")
    parser.add_argument("--engines", default=f"{OURS},{DELTA_RS},{SPARK}", help="subset of: ours,delta-rs,spark")
    parser.add_argument("--rss-rows", type=int, default=None,
                        help="also merge the same source into a target of this many rows with Spark and compare "
                             "the driver's peak RSS (e.g. 20000000)")
    parser.add_argument("--job-jvm", action="store_true",
                        help="start Spark's JVM with the options the operators' jobs get by default "
                             "(DEFAULT_SPARK_CONF's spark.driver.extraJavaOptions) instead of the JVM's defaults")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per worker subprocess")
    parser.add_argument("--json", type=Path, default=None, help="also write raw results to this file")
    args = parser.parse_args(argv)
    rows = 500_000 if args.quick else args.rows
    repeats = 1 if args.quick else args.repeats
    source_rows = args.source_rows or max(2, rows // 10)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if set(engines) - {OURS, DELTA_RS, SPARK} or rows < 1 or repeats < 1 or args.files < 1:
        parser.error("bad --engines, --rows, --repeats or --files")
    java_options = None
    if args.job_jvm:
        # Imports Airflow: only when asked.
        from airflow_provider_delta.operators.delta import DEFAULT_SPARK_CONF

        java_options = DEFAULT_SPARK_CONF["spark.driver.extraJavaOptions"]
    return run_and_report(
        lambda: run(rows, source_rows, args.files, repeats, args.timeout, engines, args.rss_rows, java_options),
        FOOTNOTE,
        args.json,
    )


if __name__ == "__main__":
    raise SystemExit(main())

"""Read-path benchmark: our log engine vs delta-rs on synthetic many-commit tables.

    python -m benchmarks.bench_read [--sizes 1000,10000] [--quick] [--repeats 5] [--json out.json]

See benchmarks/README.md for what is measured and the targets. Exit code: 0 when every measurement ran
(even if a target FAILs -- this is a report), 1 when the correctness cross-check fails (active-file
counts, path sets or versions differ between the engines or from the generator's manifest).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.workload import WorkloadSpec, ensure_table, expected_active_files

if TYPE_CHECKING:
    from collections.abc import Callable

REPO_ROOT = Path(__file__).resolve().parent.parent
OURS = "ours"
DELTA_RS = "delta-rs"
GATED_SIZE = 10_000  # the ratio targets of cases 1, 2 and 4 apply at this size; smaller sizes are "info"


class CrossCheckError(RuntimeError):
    """The engines disagree about a table's contents: the benchmark numbers would be meaningless."""


@dataclass
class Row:
    case: str
    ours: float | None
    theirs: float | None
    target: str
    status: str
    unit: str = "ms"
    note: str = ""
    reference: str = "delta-rs"  # what the second number is (the flatness rows compare ours with ours)

    @property
    def ratio(self) -> float | None:
        if self.ours is None or self.theirs is None or self.theirs == 0:
            return None
        return self.ours / self.theirs


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        print(f"  -> {_format_row(row)}", flush=True)


def _run_worker(request: dict[str, Any], timeout: float, *, module: str = "benchmarks._worker") -> dict[str, Any]:
    """Run one measurement in a fresh interpreter (``python -m module request``); its last stdout line is JSON."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("PYTHONHASHSEED", "0")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", module, json.dumps(request)],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f}s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        return {"error": f"worker exited with {proc.returncode}: " + " | ".join(tail)}
    try:
        result: dict[str, Any] = json.loads(lines[-1])
    except json.JSONDecodeError:
        return {"error": f"unparseable worker output: {lines[-1][:200]}"}
    return result


def _probe_ours(timeout: float) -> tuple[bool, bool, str]:
    """Return (snapshot available, latest_version available, reason if not)."""
    res = _run_worker({"engine": OURS, "op": "probe"}, timeout)
    if "error" in res:
        return False, False, res["error"]
    if not res["has_files"]:
        return False, bool(res["has_latest_version"]), "DeltaTable.files() is missing"
    reason = "" if res["has_latest_version"] else "DeltaTable.latest_version() is missing"
    return True, bool(res["has_latest_version"]), reason


def _warm_os_cache(table: Path) -> None:
    for root, _dirs, files in os.walk(table):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                while f.read(1 << 20):
                    pass


def _format_row(row: Row) -> str:
    def num(v: float | None) -> str:
        if v is None:
            return "-"
        return f"{v:.3f}" if v < 10 else f"{v:.1f}"

    ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "-"
    note = f"  ({row.note})" if row.note else ""
    return (
        f"{row.case:<44} {num(row.ours):>10} {num(row.theirs):>10} {row.unit:<3} {ratio:>8} "
        f"{row.target:<22} {row.status}{note}"
    )


def _status(ok: bool | None, gated: bool) -> str:
    if ok is None or not gated:
        return "info"
    return "PASS" if ok else "FAIL"


def _median(results: list[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in results if "error" not in r]
    return statistics.median(vals) if vals else None


def _first_error(results: list[dict[str, Any]]) -> str:
    return next((r["error"] for r in results if "error" in r), "")


def _cross_check(label: str, expected: int, version: int, results: dict[str, list[dict[str, Any]]]) -> None:
    seen: dict[str, tuple[int, int, str | None]] = {}
    for engine, runs in results.items():
        for r in runs:
            if "error" in r:
                continue
            got = (r["files"], r["version"], r.get("digest"))
            if got[0] != expected or got[1] != version:
                raise CrossCheckError(
                    f"{label}: {engine} saw {got[0]} active files at version {got[1]}, "
                    f"the generator expects {expected} files at version {version}"
                )
            seen.setdefault(engine, got)
    digests = {e: g[2] for e, g in seen.items() if g[2] is not None}
    if len(set(digests.values())) > 1:
        raise CrossCheckError(f"{label}: the engines list different sets of active paths: {digests}")


def _bench_snapshot(
    report: Report,
    case: str,
    table: Path,
    version: int | None,
    expected_version: int,
    expected_files: int,
    engines: list[str],
    repeats: int,
    timeout: float,
) -> dict[str, list[dict[str, Any]]]:
    results: dict[str, list[dict[str, Any]]] = {e: [] for e in engines}
    for rep in range(repeats):
        order = engines if rep % 2 == 0 else list(reversed(engines))
        for engine in order:
            if results[engine] and "error" in results[engine][-1] and engine == OURS:
                continue  # ours failed once on this case: don't burn the budget repeating it
            req = {"engine": engine, "op": "snapshot", "path": str(table), "version": version}
            res = _run_worker(req, timeout)
            results[engine].append(res)
            shown = f"{res['ms']:.1f} ms, {res['files']} files" if "error" not in res else res["error"]
            print(f"    {case} [{engine} #{rep + 1}] {shown}", flush=True)
    _cross_check(case, expected_files, expected_version, results)
    report.raw[case] = results
    return results


def _row_from(
    case: str,
    results: dict[str, list[dict[str, Any]]],
    key: str,
    max_ratio: float | None,
    gated: bool,
    scale: float = 1.0,
    unit: str = "ms",
    ours_missing: str = "",
) -> Row:
    ours_runs = results.get(OURS, [])
    ours = _median(ours_runs, key) if ours_runs else None
    theirs = _median(results.get(DELTA_RS, []), key)
    ours = ours * scale if ours is not None else None
    theirs = theirs * scale if theirs is not None else None
    target = f"<= {max_ratio:g}x delta-rs" if max_ratio is not None else "-"
    note = ""
    if ours is None:
        ok: bool | None = None
        note = _first_error(ours_runs) or ours_missing
        status = "ERR" if ours_runs else "SKIP"
    elif theirs is None:
        ok, status, note = None, "ERR", _first_error(results.get(DELTA_RS, []))
    else:
        ok = ours <= theirs * max_ratio if max_ratio is not None else None
        status = _status(ok, gated)
    return Row(case, ours, theirs, target if gated else f"({target})", status, unit, note)


def _peak_rows(
    report: Report, case: str, results: dict[str, list[dict[str, Any]]], gated: bool, ours_missing: str
) -> None:
    """Peak RSS of the snapshot subprocess minus the RSS it had right after importing the library."""
    mem: dict[str, list[dict[str, Any]]] = {}
    for engine, runs in results.items():
        ok_runs = [r for r in runs if "error" not in r]
        if not ok_runs:
            mem[engine] = list(runs)
            continue
        baseline = statistics.median(r["rss_import_kb"] for r in ok_runs)
        mem[engine] = [{"mb": (r["rss_peak_kb"] - baseline) / 1024} for r in ok_runs]
    report.add(_row_from(f"{case} peak mem", mem, "mb", 1.0, gated, unit="MB", ours_missing=ours_missing))


def run(
    sizes: list[int],
    repeats: int,
    latest_calls: int,
    latest_budget: float,
    timeout: float,
    engines: list[str],
) -> Report:
    report = Report()
    ours_snapshot, ours_latest, why = (False, False, "not requested")
    if OURS in engines:
        ours_snapshot, ours_latest, why = _probe_ours(timeout)
        if not ours_snapshot or not ours_latest:
            print(f"!! ours: {'partly ' if ours_latest or ours_snapshot else ''}skipped -- {why}", flush=True)
    snap_engines = [e for e in engines if e != OURS or ours_snapshot]
    latest_engines = [e for e in engines if e != OURS or ours_latest]
    latest: dict[tuple[int, bool], dict[str, dict[str, Any]]] = {}

    for n in sizes:
        for ckpt in (False, True):
            spec = WorkloadSpec(num_commits=n, checkpoint=ckpt)
            t0 = time.perf_counter()
            table, manifest, generated = ensure_table(spec)
            verb = "generated" if generated else "cached"
            print(f"\n== N={n} {spec.key}: {verb} in {time.perf_counter() - t0:.1f}s ({table})", flush=True)
            report.raw.setdefault("generation_seconds", {})[spec.key] = manifest["generation_seconds"]
            _warm_os_cache(table)
            variant = f"ckpt@{spec.checkpoint_version}" if ckpt else "no-ckpt"
            gated = n == GATED_SIZE

            # 1. snapshot load + file listing at the latest version (+ 4. peak memory)
            case = f"1 load+files N={n} {variant}"
            last = spec.last_version
            res = _bench_snapshot(
                report,
                case,
                table,
                None,
                last,
                expected_active_files(manifest, last),
                snap_engines,
                repeats,
                timeout,
            )
            report.add(_row_from(case, res, "ms", 1.0 if ckpt else 0.5, gated, ours_missing=why))
            _peak_rows(report, f"4 N={n} {variant}", res, gated, why)

            # 2. time travel to N // 2
            tt = n // 2
            case = f"2 time travel v{tt} N={n} {variant}"
            res = _bench_snapshot(
                report,
                case,
                table,
                tt,
                tt,
                expected_active_files(manifest, tt),
                snap_engines,
                repeats,
                timeout,
            )
            report.add(_row_from(case, res, "ms", 0.33, gated, ours_missing=why))

            # 3. latest version (in-process, many calls)
            per_engine: dict[str, dict[str, Any]] = {}
            for engine in latest_engines:
                req = {
                    "engine": engine,
                    "op": "latest",
                    "path": str(table),
                    "calls": latest_calls,
                    "budget_s": latest_budget,
                }
                r = _run_worker(req, timeout)
                if "error" not in r and r["version"] != last:
                    raise CrossCheckError(
                        f"{engine} says the latest version of {table} is {r['version']}, not {last}"
                    )
                per_engine[engine] = r
                shown = (
                    f"{r['ms']:.3f} ms median of {r['calls']} via {r['method']} {r.get('candidates_ms', '')}"
                    if "error" not in r
                    else r["error"]
                )
                print(f"    3 latest_version N={n} {variant} [{engine}] {shown}", flush=True)
            latest[(n, ckpt)] = per_engine
            report.raw[f"3 latest N={n} {variant}"] = per_engine
            ours_r = per_engine.get(OURS)
            ours_ms = ours_r["ms"] if ours_r and "error" not in ours_r else None
            theirs_r = per_engine.get(DELTA_RS)
            theirs_ms = theirs_r["ms"] if theirs_r and "error" not in theirs_r else None
            note = (ours_r or {}).get("error", "") if ours_r else why
            if theirs_r and "method" in theirs_r:
                note = "; ".join(x for x in (note, f"delta-rs via {theirs_r['method']}") if x)
            status = (
                ("PASS" if ours_ms <= 1.0 else "FAIL")
                if ours_ms is not None
                else ("ERR" if ours_r else "SKIP")
            )
            report.add(
                Row(
                    f"3 latest_version N={n} {variant}",
                    ours_ms,
                    theirs_ms,
                    "<= 1 ms absolute",
                    status,
                    note=note,
                )
            )

    # 3b. flatness of latest_version across sizes
    if len(sizes) > 1:
        lo, hi = min(sizes), max(sizes)
        for ckpt in (False, True):
            a = latest.get((lo, ckpt), {}).get(OURS, {})
            b = latest.get((hi, ckpt), {}).get(OURS, {})
            variant = "ckpt" if ckpt else "no-ckpt"
            if "ms" in a and "ms" in b:
                ok = b["ms"] <= max(1.5 * a["ms"], a["ms"] + 0.1)
                report.add(
                    Row(
                        f"3 latest_version flat N={lo}->{hi} {variant}",
                        b["ms"],
                        a["ms"],
                        f"N={hi} <= 1.5x N={lo}",
                        "PASS" if ok else "FAIL",
                        note=f"ours at N={hi} vs ours at N={lo} (in the delta-rs column)",
                        reference=f"ours at N={lo}",
                    )
                )
    return report


def print_report(report: Report, footnote: str) -> None:
    """The results table, one FAIL line per missed target, and what the numbers mean (``footnote``)."""
    print("\n" + "=" * 118)
    print(f"{'case':<44} {'ours':>10} {'delta-rs':>10} {'':<3} {'ratio':>8} {'target':<22} status")
    print("-" * 118)
    for row in report.rows:
        print(_format_row(row))
    print("-" * 118)
    for r in report.rows:
        if r.status == "FAIL":
            theirs = "-" if r.theirs is None else f"{r.theirs:.3f}"
            print(
                f"FAIL: {r.case}: ours {r.ours:.3f} {r.unit} vs {r.reference} {theirs} {r.unit}, target {r.target}"
            )
    skipped = [r for r in report.rows if r.status in ("SKIP", "ERR")]
    if skipped:
        print(f"{len(skipped)} measurement(s) without a result (SKIP/ERR) -- see notes above.")
    print(footnote)


def run_and_report(measure: Callable[[], Report], footnote: str, json_path: Path | None) -> int:
    """Run ``measure`` with the machine's load around it, print the report, optionally save it as JSON.

    Returns the exit code: 1 when a cross-check failed (the numbers would be meaningless), else 0.
    """
    started = time.perf_counter()
    load_before = os.getloadavg()
    print(f"load average at start: {load_before[0]:.2f} ({os.cpu_count()} CPUs)", flush=True)
    try:
        report = measure()
    except CrossCheckError as exc:
        print(
            f"\n!!!!!!!! CROSS-CHECK FAILED: {exc}\n!!!!!!!! benchmark aborted: numbers would be meaningless",
            file=sys.stderr,
            flush=True,
        )
        return 1
    print_report(report, footnote)
    print(
        f"total wall time {time.perf_counter() - started:.0f}s; load average start {load_before[0]:.2f}, "
        f"end {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (other load inflates delta-rs's threaded numbers)"
    )
    if json_path:
        rows = [{**r.__dict__, "ratio": r.ratio} for r in report.rows]
        json_path.write_text(json.dumps({"rows": rows, "raw": report.raw}, indent=1, default=str))
    return 0


FOOTNOTE = (
    "ms = median over fresh subprocesses (cases 1, 2) or over in-process calls (case 3); "
    "delta-rs listing = DeltaTable(...).get_add_actions(flatten=True); "
    "delta-rs latest = cheaper of DeltaTable(path).version() and "
    "DeltaTable(path, version=0)._table.get_latest_version() (see notes). "
    f"Ratio targets are gated at N={GATED_SIZE:,}; other sizes are info."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default="1000,10000", help="comma-separated commit counts (default 1000,10000)"
    )
    parser.add_argument("--quick", action="store_true", help="3 repeats, fewer latest_version calls")
    parser.add_argument(
        "--repeats", type=int, default=None, help="fresh subprocesses per engine and case (5)"
    )
    parser.add_argument("--engines", default=f"{OURS},{DELTA_RS}", help="subset of: ours,delta-rs")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per worker subprocess")
    parser.add_argument("--json", type=Path, default=None, help="also write raw results to this file")
    args = parser.parse_args(argv)

    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = set(engines) - {OURS, DELTA_RS}
    if unknown:
        parser.error(f"unknown engine(s): {', '.join(sorted(unknown))}")
    repeats = args.repeats or (3 if args.quick else 5)
    latest_calls, latest_budget = (50, 1.0) if args.quick else (200, 3.0)

    return run_and_report(
        lambda: run(sizes, repeats, latest_calls, latest_budget, args.timeout, engines), FOOTNOTE, args.json
    )


if __name__ == "__main__":
    raise SystemExit(main())

"""Write-path benchmark: our log engine vs delta-rs on copies of the synthetic many-commit tables.

    python -m benchmarks.bench_write [--sizes 1000,10000] [--quick] [--repeats 3] [--json out.json]

Cases (see benchmarks/README.md): 1. checkpoint write of the loaded latest version; 2. one small append
commit on a loaded table; 3. applying one new commit (written by another writer) to a loaded snapshot.
Every measurement runs on a private clone of the cached no-checkpoint table, so the cache stays pristine.
Exit code: 0 when every measurement ran (even if a target FAILs -- this is a report), 1 when a correctness
cross-check fails (delta-rs cannot read our checkpoint or append, versions or file sets differ, the cache
was modified).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_read import (
    DELTA_RS,
    GATED_SIZE,
    OURS,
    CrossCheckError,
    Report,
    Row,
    _status,
    _warm_os_cache,
    run_and_report,
)
from benchmarks.bench_read import _run_worker as _run_read_worker
from benchmarks.workload import (
    DATA_DIR,
    MANIFEST,
    ExtraCommit,
    WorkloadSpec,
    commit_path,
    continuation_commits,
    ensure_table,
    expected_active_files,
    write_commit_file,
)

CHECKPOINT_MAX_RATIO = 0.1
APPEND_MAX_RATIO = 1.0
ADVANCE_MAX_MS = 1.0


# -- plumbing -------------------------------------------------------------------------------------------


def _run_worker(request: dict[str, Any], timeout: float) -> dict[str, Any]:
    result = _run_read_worker(request, timeout, module="benchmarks._write_worker")
    if "error" in result and "traceback" in result:
        print("      " + result["traceback"].strip().replace("\n", "\n      "), flush=True)
    return result


def _clone(src: Path, dst: Path, full_copy: bool) -> None:
    """A private copy of the table's log at ``dst`` (the manifest is not part of the table).

    By default the commit files are hard-linked: creating the clone is near free and writes nothing, so
    no dirty pages are flushed under a measurement. It is safe because Delta log files are immutable --
    both engines only create new files (atomically) and delete old ones, which unlinks the clone's name
    only. ``_cache_fingerprint`` checks afterwards that the cache did not change. ``full_copy`` copies.
    """
    log = dst / "_delta_log"
    log.mkdir(parents=True)
    for entry in os.scandir(src / "_delta_log"):
        target = log / entry.name
        if full_copy:
            shutil.copy2(entry.path, target)
            continue
        try:
            os.link(entry.path, target)
        except OSError:  # another file system, or no hard links: copy
            shutil.copy2(entry.path, target)


def _cache_fingerprint(table: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for root, _dirs, files in os.walk(table):
        for name in files:
            st = os.stat(os.path.join(root, name))
            out[os.path.relpath(os.path.join(root, name), table)] = (st.st_size, st.st_mtime_ns)
    return out


class _Workdir:
    """Clones live under ``benchmarks/.data/.bench-write-<pid>/`` (same file system as the cache)."""

    def __init__(self, full_copy: bool) -> None:
        self.root = DATA_DIR / f".bench-write-{os.getpid()}"
        if self.root.exists():
            shutil.rmtree(self.root)
        self.root.mkdir(parents=True)
        self.full_copy = full_copy
        self._n = 0

    def clone(self, table: Path, label: str) -> Path:
        self._n += 1
        dst = self.root / f"{self._n:03d}-{label}"
        _clone(table, dst, self.full_copy)
        return dst

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _median(results: list[dict[str, Any]], key: str = "ms") -> float | None:
    vals = [r[key] for r in results if "error" not in r]
    return statistics.median(vals) if vals else None


def _first_error(results: list[dict[str, Any]]) -> str:
    return next((r["error"] for r in results if "error" in r), "")


def _ratio_row(
    case: str,
    results: dict[str, list[dict[str, Any]]],
    max_ratio: float,
    gated: bool,
    note: str = "",
    ours_missing: str = "",
) -> Row:
    ours_runs = results.get(OURS, [])
    theirs_runs = results.get(DELTA_RS, [])
    ours, theirs = _median(ours_runs), _median(theirs_runs)
    target = f"<= {max_ratio:g}x delta-rs"
    notes = [note] if note else []
    if ours is None:
        notes.insert(0, _first_error(ours_runs) or ours_missing)
        status = "ERR" if ours_runs else "SKIP"
    elif theirs is None:
        notes.insert(0, _first_error(theirs_runs) or "delta-rs not measured")
        status = "ERR" if theirs_runs else "info"
    else:
        status = _status(ours <= theirs * max_ratio, gated)
    return Row(case, ours, theirs, target if gated else f"({target})", status, note="; ".join(notes))


def _shown(res: dict[str, Any], extra: str = "") -> str:
    if "error" in res:
        return str(res["error"])
    load = f" (load {res['load_ms']:.0f} ms, not timed)" if "load_ms" in res else ""
    return f"{res['ms']:.3f} ms{extra}{load}"


def _interleaved(engines: list[str], rep: int) -> list[str]:
    return engines if rep % 2 == 0 else list(reversed(engines))


# -- cases ----------------------------------------------------------------------------------------------


def _case_checkpoint(
    report: Report,
    work: _Workdir,
    table: Path,
    spec: WorkloadSpec,
    manifest: dict[str, Any],
    engines: list[str],
    repeats: int,
    timeout: float,
    ours_missing: str,
) -> None:
    n, last = spec.num_commits, spec.last_version
    expected = expected_active_files(manifest, last)
    case = f"1 checkpoint write N={n} ({expected:,} files)"
    results: dict[str, list[dict[str, Any]]] = {e: [] for e in [OURS, DELTA_RS] if e in engines}
    checked = False
    for rep in range(repeats):
        for engine in _interleaved(list(results), rep):
            if engine == OURS and results[OURS] and "error" in results[OURS][-1]:
                continue
            copy = work.clone(table, f"ckpt-{engine}")
            res = _run_worker({"engine": engine, "op": "checkpoint", "path": str(copy)}, timeout)
            results[engine].append(res)
            size = (
                f", checkpoint {res['checkpoint_bytes'] / 1e6:.1f} MB" if res.get("checkpoint_bytes") else ""
            )
            print(f"    {case} [{engine} #{rep + 1}] {_shown(res, size)}", flush=True)
            if "error" not in res:
                if res["version"] != last:
                    raise CrossCheckError(
                        f"{case}: {engine} loaded version {res['version']}, expected {last}"
                    )
                if not res.get("checkpoint_bytes"):
                    raise CrossCheckError(f"{case}: {engine} wrote no {last:020d}.checkpoint.parquet")
                if engine == OURS and not checked:
                    _check_our_checkpoint(copy, last, expected, res, engines, timeout)
                    checked = True
            shutil.rmtree(copy)
    report.raw[case] = results
    sizes = {e: _median(r, "checkpoint_bytes") for e, r in results.items()}
    note = ", ".join(f"{e} {s / 1e6:.1f} MB" for e, s in sizes.items() if s) + " checkpoint"
    if checked:
        note += "; delta-rs reads ours with the JSON below it deleted: same files+stats"
    report.add(_ratio_row(case, results, CHECKPOINT_MAX_RATIO, n == GATED_SIZE, note, ours_missing))


def _check_our_checkpoint(
    copy: Path, version: int, expected: int, ours: dict[str, Any], engines: list[str], timeout: float
) -> None:
    """Delete the commits below our checkpoint; delta-rs (and we) must load the same files from it."""
    for v in range(version):
        commit_path(copy, v).unlink()
    for engine in engines:
        res = _run_worker({"engine": engine, "op": "load", "path": str(copy)}, timeout)
        label = (
            f"checkpoint cross-check: {engine} loading our checkpoint at {version} "
            f"(commits 0..{version - 1} deleted)"
        )
        if "error" in res:
            raise CrossCheckError(f"{label}: {res['error']}")
        if res["version"] != version or res["files"] != expected:
            raise CrossCheckError(
                f"{label}: version {res['version']} with {res['files']} files, expected {version} with {expected}"
            )
        if res["digest"] != ours["digest"]:
            raise CrossCheckError(
                f"{label}: paths/sizes/stats/partition values differ from ours before the checkpoint"
            )
        print(f"    {label}: OK ({res['files']} files, same paths+sizes+stats+partitions)", flush=True)


def _case_append(
    report: Report,
    work: _Workdir,
    table: Path,
    spec: WorkloadSpec,
    extra: list[ExtraCommit],
    staging: Path,
    engines: list[str],
    repeats: int,
    timeout: float,
    ours_missing: str,
) -> None:
    # The appends land at N+1 and N+2: commit N (staged, continuing the workload) is added to the clone
    # first, so neither engine's post-commit checkpoint interval (ours every 10, delta-rs every 100) fires.
    # The first append of the process is the gated number; the second (warm) one is info.
    n = spec.num_commits
    pre = extra[0]
    expected_versions, expected_files = [pre.version + 1, pre.version + 2], pre.active_files + 2
    case = f"2 append 10 rows N={n}"
    variants = [e for e in [OURS, DELTA_RS] if e in engines]
    if DELTA_RS in engines:
        variants.append("delta-rs-nohooks")
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    read_checked: set[str] = set()
    for rep in range(repeats):
        for variant in _interleaved(variants, rep):
            if variant == OURS and results[OURS] and "error" in results[OURS][-1]:
                continue
            engine = OURS if variant == OURS else DELTA_RS
            copy = work.clone(table, f"append-{variant}")
            os.link(staging / f"{pre.version:020d}.json", commit_path(copy, pre.version))
            req = {
                "engine": engine,
                "op": "append",
                "path": str(copy),
                "hooks": variant != "delta-rs-nohooks",
            }
            res = _run_worker(req, timeout)
            results[variant].append(res)
            second = f", 2nd append {res['warm_ms']:.1f} ms" if "warm_ms" in res else ""
            print(f"    {case} [{variant} #{rep + 1}] {_shown(res, second)}", flush=True)
            if "error" not in res:
                got = (res["version_before"], res["versions"], res["files"], res["commits_exist"])
                if got != (pre.version, expected_versions, expected_files, [True, True]):
                    raise CrossCheckError(
                        f"{case}: {variant} went from version {got[0]} to {got[1]} with {got[2]} files "
                        f"(commit files written: {got[3]}); expected {pre.version} -> {expected_versions} "
                        f"with {expected_files} files"
                    )
                if engine not in read_checked:
                    _check_append_readable(
                        copy, engine, engines, expected_versions[-1], expected_files, timeout
                    )
                    read_checked.add(engine)
            shutil.rmtree(copy)
    report.raw[case] = results
    theirs = results.get(DELTA_RS, [])
    how = next((r["method"] for r in theirs if "method" in r), "")
    nohooks = _median(results.get("delta-rs-nohooks", []))
    note = f"delta-rs: {how}" if how else ""
    if nohooks is not None:
        note += f"; delta-rs with post-commit hooks off: {nohooks:.1f} ms"
    note += f"; first write of the process, lands at v{expected_versions[0]}, no checkpoint due"
    ours_ckpts = {c for r in results.get(OURS, []) for c in r.get("checkpoints", [])}
    if ours_ckpts:
        note += f"; ours wrote checkpoint(s) {sorted(ours_ckpts)}"
    two = {OURS: results.get(OURS, []), DELTA_RS: theirs}
    report.add(_ratio_row(case, two, APPEND_MAX_RATIO, n == GATED_SIZE, note, ours_missing))
    warm = {e: [{"ms": r["warm_ms"]} if "warm_ms" in r else r for r in runs] for e, runs in two.items()}
    warm_note = (
        f"the 2nd append in the same process (v{expected_versions[1]}): imports and first-call costs paid"
    )
    report.add(
        _ratio_row(f"2b append 10 rows, warm N={n}", warm, APPEND_MAX_RATIO, False, warm_note, ours_missing)
    )


def _check_append_readable(
    copy: Path, writer: str, engines: list[str], version: int, files: int, timeout: float
) -> None:
    """The other engine must see the appended commits and read back the appended rows (twice the batch)."""
    for engine in engines:
        if engine == writer:
            continue
        label = f"append cross-check: {engine} reading {writer}'s append"
        res = _run_worker({"engine": engine, "op": "load", "path": str(copy)}, timeout)
        if "error" in res or res["version"] != version or res["files"] != files:
            raise CrossCheckError(
                f"{label}: {res.get('error') or res}, expected version {version}, {files} files"
            )
        req = {"engine": engine, "op": "read_partition", "path": str(copy), "copies": 2}
        data = _run_worker(req, timeout)
        if "error" in data or not data["equal"]:
            raise CrossCheckError(f"{label}: rows read back differ: {data}")
        print(
            f"    {label}: OK (version {version}, {files} files, {data['rows']} rows read back equal)",
            flush=True,
        )


def _case_advance(
    report: Report,
    work: _Workdir,
    table: Path,
    spec: WorkloadSpec,
    extra: list[ExtraCommit],
    staging: Path,
    engines: list[str],
    reps: int,
    budget_s: float,
    timeout: float,
    ours_missing: str,
) -> None:
    n = spec.num_commits
    case = f"3 apply 1 new commit N={n}"
    results: dict[str, list[dict[str, Any]]] = {}
    staged = [str(staging / f"{c.version:020d}.json") for c in extra[: 1 + reps]]  # 1 warmup + reps
    for engine in [e for e in [OURS, DELTA_RS] if e in engines]:
        copy = work.clone(table, f"advance-{engine}")
        req = {
            "engine": engine,
            "op": "advance",
            "path": str(copy),
            "staged": staged,
            "warmup": 1,
            "budget_s": budget_s,
            "min_reps": min(reps, 5),
        }
        res = _run_worker(req, max(timeout, budget_s * 3 + 120))
        results[engine] = [res]
        if "error" in res:
            print(f"    {case} [{engine}] {res['error']}", flush=True)
        else:
            applied = extra[res["reps"]]  # warmup commit + reps timed ones
            print(
                f"    {case} [{engine}] median {res['ms']:.3f} ms of {res['reps']} "
                f"(min {res['min_ms']:.3f}, mean {res['mean_ms']:.3f}, max {res['max_ms']:.3f}) "
                f"(load {res['load_ms']:.0f} ms, not timed); now v{res['version']}, {res['files']} files",
                flush=True,
            )
            if res["version"] != applied.version or res["files"] != applied.active_files:
                raise CrossCheckError(
                    f"{case}: {engine} ended at version {res['version']} with {res['files']} files, "
                    f"expected {applied.version} with {applied.active_files}"
                )
        shutil.rmtree(copy)
    digests = {e: r[0]["digest"] for e, r in results.items() if "error" not in r[0]}
    same_end = {e: r[0]["version"] for e, r in results.items() if "error" not in r[0]}
    if len(set(same_end.values())) == 1 and len(set(digests.values())) > 1:
        raise CrossCheckError(f"{case}: the engines' files differ after applying the same commits: {digests}")
    report.raw[case] = results
    ours_r = results.get(OURS, [{}])[0] if OURS in results else None
    theirs_r = results.get(DELTA_RS, [{}])[0] if DELTA_RS in results else None
    ours_ms = ours_r.get("ms") if ours_r else None
    theirs_ms = theirs_r.get("ms") if theirs_r else None
    parts = []
    if ours_r and "reps" in ours_r:
        parts.append(f"ours median of {ours_r['reps']}, max {ours_r['max_ms']:.3f} ms")
    if theirs_r and "reps" in theirs_r:
        parts.append(f"delta-rs update_incremental() median of {theirs_r['reps']}")
    parts.append("every 10th commit removes 3 files")
    if ours_ms is None:
        status = "ERR" if ours_r else "SKIP"
        parts.insert(0, (ours_r or {}).get("error", ours_missing))
    else:
        status = "PASS" if ours_ms <= ADVANCE_MAX_MS else "FAIL"
    report.add(
        Row(case, ours_ms, theirs_ms, f"<= {ADVANCE_MAX_MS:g} ms absolute", status, note="; ".join(parts))
    )


# -- driver ---------------------------------------------------------------------------------------------


def _probe_ours(timeout: float) -> str:
    """'' when our write APIs exist, else why ours is skipped."""
    res = _run_worker({"engine": OURS, "op": "probe"}, timeout)
    if "error" in res:
        return str(res["error"])
    missing = [
        name
        for key, name in (
            ("has_checkpoint", "DeltaTable.checkpoint()"),
            ("has_append", "DeltaTable.append()"),
            ("has_advance", "Snapshot.advance()"),
        )
        if not res[key]
    ]
    return (", ".join(missing) + " missing") if missing else ""


def run(
    sizes: list[int],
    repeats: int,
    advance_reps: int,
    advance_budget: float,
    timeout: float,
    engines: list[str],
    full_copy: bool,
) -> Report:
    report = Report()
    why = ""
    if OURS in engines:
        why = _probe_ours(timeout)
        if why:
            print(f"!! ours: skipped -- {why}", flush=True)
            engines = [e for e in engines if e != OURS]
    work = _Workdir(full_copy)
    try:
        for n in sizes:
            spec = WorkloadSpec(num_commits=n, checkpoint=False)
            t0 = time.perf_counter()
            table, manifest, generated = ensure_table(spec)
            verb = "generated" if generated else "cached"
            print(f"\n== N={n} {spec.key}: {verb} in {time.perf_counter() - t0:.1f}s ({table})", flush=True)
            before = _cache_fingerprint(table)

            t0 = time.perf_counter()
            extra = continuation_commits(spec, 1 + advance_reps)
            staging = work.root / f"staging-n{n}"
            staging.mkdir()
            for c in extra:
                write_commit_file(staging, c)
            print(
                f"   staged commits {extra[0].version}..{extra[-1].version} continuing the workload "
                f"in {time.perf_counter() - t0:.1f}s; clones by {'copy' if full_copy else 'hard link'}",
                flush=True,
            )
            _warm_os_cache(table)
            _warm_os_cache(staging)

            _case_checkpoint(report, work, table, spec, manifest, engines, repeats, timeout, why)
            _case_append(report, work, table, spec, extra, staging, engines, repeats, timeout, why)
            _case_advance(
                report, work, table, spec, extra, staging, engines, advance_reps, advance_budget, timeout, why
            )

            after = _cache_fingerprint(table)
            if after != before:
                changed = sorted(set(before.items()) ^ set(after.items()))[:5]
                raise CrossCheckError(f"the cached table {table} changed during the run: {changed}")
            if MANIFEST not in after:
                raise CrossCheckError(f"the cached table {table} lost its manifest")
    finally:
        work.close()
    return report


FOOTNOTE = (
    "ms = median over fresh subprocesses, each on its own clone of the table (cases 1, 2), or over "
    "commits applied in one process (case 3); load time is excluded everywhere. "
    f"Ratio targets are gated at N={GATED_SIZE:,}; other sizes are info. The 1 ms target of case 3 "
    "applies at every size."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default="1000,10000", help="comma-separated commit counts (default 1000,10000)"
    )
    parser.add_argument("--quick", action="store_true", help="N=1,000 only")
    parser.add_argument("--repeats", type=int, default=5, help="fresh subprocesses per engine, cases 1-2 (5)")
    parser.add_argument(
        "--advance-reps", type=int, default=50, help="commits applied one by one in case 3 (50)"
    )
    parser.add_argument(
        "--advance-budget",
        type=float,
        default=20.0,
        help="seconds of timed update calls per engine in case 3 before stopping early (min 5 reps; 20)",
    )
    parser.add_argument("--engines", default=f"{OURS},{DELTA_RS}", help="subset of: ours,delta-rs")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per worker subprocess")
    parser.add_argument(
        "--full-copy", action="store_true", help="copy the table per run instead of hard-linking"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write raw results to this file")
    args = parser.parse_args(argv)

    sizes = [1000] if args.quick else [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = set(engines) - {OURS, DELTA_RS}
    if unknown:
        parser.error(f"unknown engine(s): {', '.join(sorted(unknown))}")
    if args.advance_reps < 1 or args.repeats < 1:
        parser.error("--repeats and --advance-reps must be >= 1")

    return run_and_report(
        lambda: run(sizes, args.repeats, args.advance_reps, args.advance_budget, args.timeout, engines, args.full_copy),
        FOOTNOTE,
        args.json,
    )


if __name__ == "__main__":
    raise SystemExit(main())

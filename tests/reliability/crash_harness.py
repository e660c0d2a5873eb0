"""Run a writer in a child process, SIGKILL it at a numbered storage step, and check the table.

A *kill point* is ``(scenario, seed, step)``. The child (forked from a forkserver that has the engine
imported, so a run costs milliseconds, not an interpreter start) builds nothing: the parent copies a
prepared base table, the child runs the scenario with its storage steps numbered (``io_steps``) and
waits at step ``step``; the parent kills it with SIGKILL. Then :func:`check_after_kill` checks what
the issue asks of a crash:

- the table loads at the base version plus the commits whose file was linked before the kill (a
  commit lands whole or not at all), and every version reads as it did before the operation or as
  it does after a complete run of it (rows, or the same error for versions a log cleanup removed);
- every commit file in the log parses whole, every checkpoint file reads, ``_last_checkpoint``
  points at a checkpoint that exists: no partial file is ever under a name readers pick up;
- delta-rs loads the same version with the same rows;
- whatever else is on disk is garbage that maintenance removes: data and change files that no
  version references (VACUUM's orphans: delta-rs' full VACUUM lists each one) and the engine's
  temporary files in ``_delta_log`` (the log cleanup deletes those older than a day);
- the next writer commits the next version normally, and delta-rs reads that too.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
import signal
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.log.cleanup import cleanup_expired_logs
from airflow_provider_delta.exceptions import DeltaError
from tests.reliability import io_steps
from tests.reliability.crash_scenarios import SCENARIOS, build_base

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

CHILD_TIMEOUT = 60.0
_COMMIT = re.compile(r"^\d{20}\.json$")
_CHECKPOINT = re.compile(r"^\d{20}\.checkpoint\.parquet$")
_ENGINE_TEMP = re.compile(r"^\.?.+\.[0-9a-f]{32}\.tmp$")

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["tests.reliability.crash_harness"])


# ---------------------------------------------------------------------------------------- child


def _child(conn: Connection, scenario: str, location: str, seed: int, stop_at: int | None) -> None:
    try:
        io_steps.install(location, stop_at=stop_at, conn=conn)
        SCENARIOS[scenario].run(location, seed)
        s = io_steps.steps()
        conn.send(("done", s.labels, s.landed))
    except BaseException:  # noqa: BLE001 - reported to the parent, which fails the test
        conn.send(("error", traceback.format_exc(), []))


@dataclass(frozen=True)
class ChildRun:
    """What a child reported: ``stopped`` at ``step`` (then killed), or ``done`` with every step."""

    outcome: str
    step: int | None
    label: str
    labels: tuple[str, ...]
    landed: tuple[int, ...]
    exitcode: int | None


def run_child(scenario: str, location: str, seed: int, stop_at: int | None) -> ChildRun:
    """Run ``scenario`` on ``location`` in a child; SIGKILL it when it stops at step ``stop_at``."""
    parent, child = _CONTEXT.Pipe()
    process = _CONTEXT.Process(target=_child, args=(child, scenario, location, seed, stop_at), daemon=True)
    process.start()
    child.close()
    try:
        if not parent.poll(CHILD_TIMEOUT):
            raise AssertionError(f"{scenario} (seed {seed}, stop at {stop_at}) hung for {CHILD_TIMEOUT}s")
        message = parent.recv()
    finally:
        if process.is_alive() and process.pid is not None:
            os.kill(process.pid, signal.SIGKILL)  # kill -9: the child waits at its step, or hung
        process.join(CHILD_TIMEOUT)
        parent.close()
    kind = message[0]
    if kind == "error":
        raise AssertionError(f"{scenario} (seed {seed}) failed in the child:\n{message[1]}")
    if kind == "stopped":
        assert process.exitcode == -signal.SIGKILL, process.exitcode
        _, step, label, landed = message
        return ChildRun("stopped", step, label, (), tuple(landed), process.exitcode)
    _, labels, landed = message
    return ChildRun("done", None, "", tuple(labels), tuple(landed), process.exitcode)


# ------------------------------------------------------------------------------- the table's state


def table_rows(table: DeltaTable) -> list[tuple[Any, ...]]:
    """Every row as a tuple in schema order, sorted."""
    return _sorted(tuple(r.values()) for r in table.to_arrow().to_pylist())


def _sorted(rows: Any) -> list[tuple[Any, ...]]:
    return sorted(rows, key=repr)


def version_reads(location: str, version: int) -> tuple[str, Any]:
    """How ``version`` reads: ``("rows", rows)`` or ``("error", error type name)``."""
    try:
        return "rows", table_rows(DeltaTable(location, version=version))
    except DeltaError as err:
        return "error", type(err).__name__


@dataclass
class Expected:
    """A scenario's states: before the operation, and after a complete run of it."""

    base_version: int
    final_version: int
    before: dict[int, tuple[str, Any]]
    after: dict[int, tuple[str, Any]]
    steps: tuple[str, ...]
    landed: tuple[int, ...]


def prepare(work: Path, scenario: str, seed: int) -> tuple[Path, Expected]:
    """Build the base table for ``seed`` and learn the scenario's complete run (in a child, traced)."""
    base = work / f"base-{seed}"
    if not base.exists():
        build_base(str(base), seed)
    base_version = DeltaTable(str(base)).version
    before = {v: version_reads(str(base), v) for v in range(base_version + 1)}
    complete = work / f"complete-{scenario}-{seed}"
    shutil.copytree(base, complete)
    run = run_child(scenario, str(complete), seed, None)
    assert run.outcome == "done"
    final = DeltaTable(str(complete)).version
    assert run.landed == tuple(range(base_version + 1, final + 1))
    after = {v: version_reads(str(complete), v) for v in range(final + 1)}
    return base, Expected(base_version, final, before, after, run.labels, run.landed)


# ------------------------------------------------------------------------------------------ checks


def _log_files_whole(location: str) -> None:
    log = Path(location, "_delta_log")
    checkpoints = set()
    for path in log.iterdir():
        if _COMMIT.match(path.name):
            lines = path.read_bytes().splitlines()
            assert lines, f"empty commit file {path.name}"
            for line in lines:
                orjson.loads(line)  # a partial commit would not parse
        elif _CHECKPOINT.match(path.name):
            pq.read_table(path)  # a partial checkpoint would not read
            checkpoints.add(int(path.name[:20]))
    hint = log / "_last_checkpoint"
    if hint.exists():
        version = orjson.loads(hint.read_bytes())["version"]
        assert version in checkpoints, f"_last_checkpoint points at missing checkpoint {version}"


def _referenced(location: str) -> set[str]:
    """Data and change file paths that any action in the remaining log or checkpoints names."""
    paths: set[str] = set()
    log = Path(location, "_delta_log")
    for path in log.iterdir():
        if _COMMIT.match(path.name):
            for line in path.read_bytes().splitlines():
                action = orjson.loads(line)
                for kind in ("add", "remove", "cdc"):
                    if kind in action:
                        paths.add(action[kind]["path"])
        elif _CHECKPOINT.match(path.name):
            table = pq.read_table(path, columns=["add", "remove"])
            for kind in ("add", "remove"):
                paths |= {p for p in pc_paths(table.column(kind)) if p}
    return {unquote(p) for p in paths}


def pc_paths(column: pa.ChunkedArray) -> list[str | None]:
    return column.combine_chunks().field("path").to_pylist()


def _leftovers(location: str) -> tuple[set[str], set[str]]:
    """(unreferenced data/change files, non-log files in _delta_log), relative to the table root."""
    root = Path(location)
    referenced = _referenced(location)
    data, log_extra = set(), set()
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if rel.startswith("_delta_log/"):
            name = rel[len("_delta_log/") :]
            if not (_COMMIT.match(name) or _CHECKPOINT.match(name) or name == "_last_checkpoint"):
                log_extra.add(rel)
        elif rel not in referenced:
            data.add(rel)
    return data, log_extra


def _delta_rs_rows(location: str) -> tuple[int, list[tuple[Any, ...]]]:
    import deltalake  # lazy: the interop oracle, a test dependency

    dt = deltalake.DeltaTable(location)
    names = [f.name for f in dt.schema().fields]
    columns = ", ".join(f'"{n}"' for n in names)
    data = deltalake.QueryBuilder().register("t", dt).execute(f"select {columns} from t").read_all()
    return dt.version(), _sorted(tuple(r[n] for n in names) for r in pa.table(data).to_pylist())


def _delta_rs_vacuum_candidates(location: str) -> set[str]:
    import deltalake  # lazy: see _delta_rs_rows

    dt = deltalake.DeltaTable(location)
    listed = dt.vacuum(retention_hours=0, dry_run=True, enforce_retention_duration=False, full=True)
    root = Path(location).resolve().as_posix()
    out = set()
    for p in listed:
        p = p.removeprefix("file://")
        out.add(p[len(root) + 1 :] if p.startswith(root + "/") else p)
    return out


def check_after_kill(location: str, expected: Expected, run: ChildRun) -> None:
    """Every check of the module docstring on the table a killed writer left."""
    table = DeltaTable(location)
    assert run.landed == tuple(range(expected.base_version + 1, expected.base_version + 1 + len(run.landed)))
    assert table.version == expected.base_version + len(run.landed), run.label
    for v in range(table.version + 1):
        reads = version_reads(location, v)
        allowed = (
            [expected.after.get(v)] if v > expected.base_version else [expected.before[v], expected.after[v]]
        )
        assert reads in allowed, f"version {v} after a kill at {run.label}: {reads!r}"
    _log_files_whole(location)

    rs_version, rs_rows = _delta_rs_rows(location)
    assert (rs_version, rs_rows) == (table.version, table_rows(table)), "delta-rs disagrees"

    orphans, temp_files = _leftovers(location)
    assert orphans <= _delta_rs_vacuum_candidates(location), "a leftover file VACUUM would not remove"
    assert all(_ENGINE_TEMP.match(Path(t).name) for t in temp_files), temp_files
    if temp_files:
        for rel in temp_files:
            os.utime(Path(location, rel), (1_000_000_000, 1_000_000_000))
        cleanup_expired_logs(DeltaTable(location).snapshot)
        assert _leftovers(location)[1] == set(), "the log cleanup left temporary files"

    # The next writer commits normally, and both readers see it.
    values = {"id": -1, "p": "z", "v": -1}
    names = [f.name for f in table.schema.fields]
    marker = pa.table({n: [values[n]] for n in names if n in values})
    assert DeltaTable(location).append(marker) == table.version + 1
    after = DeltaTable(location)
    marker_row = tuple(values.get(n) for n in names)
    assert table_rows(after) == _sorted([*table_rows(table), marker_row])
    assert _delta_rs_rows(location) == (after.version, table_rows(after))

"""Concurrency under load with real processes: blind appends, conflicting updates, writers killed mid-commit.

Each writer is a separate Python process (``sys.executable``) running the engine against one table on
the local file system; the only coordination between them is the put-if-absent commit of
``_delta_log/NNNNNNNNNNNNNNNNNNNN.json``. Workers print one JSON line per event on stdout, which the
test then checks against what the log says.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.log.paths import commit_path

REPO_ROOT = Path(__file__).resolve().parents[3]

CONFLICT_NAMES = {
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "MetadataChangedException",
    "ConcurrentTransactionException",
    "ProtocolChangedException",
}

# Every worker waits for the "go" file so that all of them race from the first commit, not from
# whenever their interpreter finished importing pyarrow.
_PRELUDE = """
import json, os, sys, time
import pyarrow as pa
from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.exceptions import DeltaConcurrentModificationException
location, go, writer, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
while not os.path.exists(go):
    time.sleep(0.005)
def emit(**event):
    print(json.dumps(event), flush=True)
"""

APPEND_WORKER = (
    _PRELUDE
    + """
table = DeltaTable(location)
for i in range(count):
    rows = pa.table({"writer": pa.array([writer], pa.int64()), "i": pa.array([i], pa.int64())})
    emit(version=table.append(rows), i=i)
"""
)

UPDATE_WORKER = (
    _PRELUDE
    + """
partition = writer % 2
table = DeltaTable(location)
done = 0
while done < count:
    try:
        version = table.update(f"p = {partition}", set={"v": "v + 1"})
    except DeltaConcurrentModificationException as err:
        emit(error=type(err).__name__, winning_version=err.winning_version)
        continue
    done += 1
    emit(version=version, partition=partition)
"""
)

# Appends forever, three rows per commit; the parent kills it with SIGKILL at a random moment.
KILLED_WORKER = (
    _PRELUDE
    + """
table = DeltaTable(location)
i = 0
while True:
    rows = pa.table({"writer": pa.array([writer] * 3, pa.int64()), "i": pa.array([i] * 3, pa.int64())})
    emit(version=table.append(rows))
    i += 1
"""
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _start(code: str, location: str, go: Path, writer: int, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), location, str(go), str(writer), str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )


def _run_all(procs: list[subprocess.Popen[str]], timeout: float) -> list[list[dict[str, Any]]]:
    """Wait for every worker; return each one's events. A worker that failed fails the test."""
    outputs = []
    deadline = time.monotonic() + timeout
    for n, proc in enumerate(procs):
        try:
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise
        assert proc.returncode == 0, f"worker {n} exited with {proc.returncode}:\n{err}"
        outputs.append([json.loads(line) for line in out.splitlines() if line.strip()])
    return outputs


def _commit_files(location: str) -> list[int]:
    log = Path(location) / "_delta_log"
    return sorted(
        int(p.name[:20])
        for p in log.iterdir()
        if p.name.endswith(".json")
        and p.name[:20].isdigit()
        and len(p.name) == len("00000000000000000000.json")
    )


def _parse_commit(location: str, version: int) -> list[dict[str, Any]]:
    """Every line of a commit file is a complete JSON action (no torn writes)."""
    text = (Path(location) / commit_path(version)).read_text()
    assert text.endswith("\n"), f"commit {version} is truncated"
    return [json.loads(line) for line in text.splitlines()]


def _commit_info(location: str, version: int) -> dict[str, Any]:
    (info,) = [a["commitInfo"] for a in _parse_commit(location, version) if "commitInfo" in a]
    return info


def _rows(table: DeltaTable, *columns: str) -> list[tuple[Any, ...]]:
    data = table.to_arrow(columns=list(columns)).to_pylist()
    return sorted(tuple(r[c] for c in columns) for r in data)


def _delta_rs_rows(location: str, *columns: str) -> list[tuple[Any, ...]]:
    deltalake = pytest.importorskip("deltalake")
    data = deltalake.DeltaTable(location).to_pyarrow_table(columns=list(columns)).to_pylist()
    return sorted(tuple(r[c] for c in columns) for r in data)


WRITERS = 8
APPENDS = 50


def test_eight_processes_of_fifty_blind_appends_make_four_hundred_contiguous_commits(tmp_path):
    location = str(tmp_path / "t")
    DeltaTable.create(location, pa.schema([("writer", pa.int64()), ("i", pa.int64())]))
    go = tmp_path / "go"
    procs = [_start(APPEND_WORKER, location, go, w, APPENDS) for w in range(WRITERS)]
    go.touch()
    outputs = _run_all(procs, timeout=300)

    versions = [e["version"] for events in outputs for e in events]
    assert sorted(versions) == list(range(1, WRITERS * APPENDS + 1)), "each commit got its own version"
    assert DeltaTable.latest_version(location) == WRITERS * APPENDS
    assert _commit_files(location) == list(range(WRITERS * APPENDS + 1))
    for v in range(1, WRITERS * APPENDS + 1):
        info = _commit_info(location, v)
        assert info["isBlindAppend"] is True
        assert info["operation"] == "WRITE"
        assert info["readVersion"] < v

    table = DeltaTable(location)
    assert table.version == WRITERS * APPENDS
    expected = sorted((w, i) for w in range(WRITERS) for i in range(APPENDS))
    assert _rows(table, "writer", "i") == expected, "every row present exactly once"
    assert _delta_rs_rows(location, "writer", "i") == expected
    # checkpoints were written along the way (every 10 commits) and agree with the log
    assert (Path(location) / "_delta_log" / "_last_checkpoint").exists()
    assert _rows(DeltaTable(location, version=200), "writer", "i") == sorted(
        (w, e["i"]) for w, events in enumerate(outputs) for e in events if e["version"] <= 200
    )


UPDATERS = 4
UPDATES = 5
KEYS_PER_PARTITION = 3


def test_concurrent_updates_lose_no_update_and_every_loser_gets_a_typed_conflict(tmp_path):
    location = str(tmp_path / "t")
    schema = pa.schema([("p", pa.int64()), ("k", pa.int64()), ("v", pa.int64())])
    t = DeltaTable.create(location, schema, partition_by=["p"])
    t.append(
        pa.table(
            {
                "p": pa.array([p for p in (0, 1) for _ in range(KEYS_PER_PARTITION)], pa.int64()),
                "k": pa.array(list(range(KEYS_PER_PARTITION)) * 2, pa.int64()),
                "v": pa.array([0] * 2 * KEYS_PER_PARTITION, pa.int64()),
            }
        )
    )
    start = t.version
    go = tmp_path / "go"
    procs = [_start(UPDATE_WORKER, location, go, w, UPDATES) for w in range(UPDATERS)]
    go.touch()
    outputs = _run_all(procs, timeout=300)

    events = [e for out in outputs for e in out]
    successes = [e for e in events if "version" in e]
    failures = [e for e in events if "error" in e]
    assert len(successes) == UPDATERS * UPDATES
    assert sorted(e["version"] for e in successes) == list(range(start + 1, start + UPDATERS * UPDATES + 1))
    assert {e["error"] for e in failures} <= CONFLICT_NAMES, Counter(e["error"] for e in failures)
    assert all(e["winning_version"] is not None and e["winning_version"] > start for e in failures)

    per_partition = Counter(e["partition"] for e in successes)
    table = DeltaTable(location)
    assert table.version == start + UPDATERS * UPDATES
    expected = sorted((p, k, per_partition[p]) for p in (0, 1) for k in range(KEYS_PER_PARTITION))
    assert _rows(table, "p", "k", "v") == expected, "no update was lost"
    assert _delta_rs_rows(location, "p", "k", "v") == expected
    # each successful commit rewrote exactly the files of its own partition
    for e in successes:
        actions = _parse_commit(location, e["version"])
        touched = {
            a[kind]["partitionValues"]["p"] for a in actions for kind in ("add", "remove") if kind in a
        }
        assert touched == {str(e["partition"])}
    # the writers really raced: some lost (typed conflict) or were rebased over a winner
    rebased = [e for e in successes if _commit_info(location, e["version"])["readVersion"] < e["version"] - 1]
    assert failures or rebased


def _stray_log_files(location: str) -> list[str]:
    return sorted(
        p.name
        for p in (Path(location) / "_delta_log").iterdir()
        if p.name.startswith(".") or p.name.endswith(".tmp")
    )


def test_writer_killed_with_sigkill_mid_commit_leaves_a_readable_contiguous_table(tmp_path):
    location = str(tmp_path / "t")
    # A short checkpoint interval so kills also land during checkpoint writes.
    DeltaTable.create(
        location,
        pa.schema([("writer", pa.int64()), ("i", pa.int64())]),
        properties={"delta.checkpointInterval": "3"},
    )
    go = tmp_path / "go"
    go.touch()
    rng = random.Random(20240501)
    reported: list[int] = []
    for round_ in range(6):
        proc = _start(KILLED_WORKER, location, go, round_, 0)
        # let it import and commit a few times, then kill it wherever it is
        deadline = time.monotonic() + 30
        while DeltaTable.latest_version(location) < len(reported) + 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.3))
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        reported += [json.loads(line)["version"] for line in out.splitlines() if line.strip().endswith("}")]

    latest = DeltaTable.latest_version(location)
    assert _commit_files(location) == list(range(latest + 1)), "versions are contiguous"
    appends = 0
    for v in range(1, latest + 1):
        actions = _parse_commit(location, v)
        assert sum("commitInfo" in a for a in actions) == 1
        appends += 1
    assert set(reported) <= set(range(1, latest + 1)), "every reported commit is in the log"
    assert len(reported) >= latest - 6, "at most one unreported commit per kill"

    # A torn temporary commit and checkpoint, as a kill during write_if_absent/write would leave.
    log = Path(location) / "_delta_log"
    (log / f".{latest + 1:020d}.json.deadbeef.tmp").write_text('{"commitInfo":{"timest')
    (log / f"{latest + 1:020d}.checkpoint.parquet.deadbeef.tmp").write_bytes(b"PAR1\x00\x00")

    table = DeltaTable(location)
    assert table.version == latest
    rows = table.to_arrow()
    assert rows.num_rows == 3 * appends, "rows equal the committed appends, three rows each"
    assert len(Counter(zip(rows["writer"].to_pylist(), rows["i"].to_pylist(), strict=True))) == appends
    assert _delta_rs_rows(location, "writer", "i") == _rows(table, "writer", "i")
    assert _stray_log_files(location)  # they are there, and readers ignored them
    # and the table stays writable: the next commit takes the next version
    assert (
        table.append(pa.table({"writer": pa.array([99], pa.int64()), "i": pa.array([0], pa.int64())}))
        == latest + 1
    )
    assert DeltaTable(location).to_arrow().num_rows == 3 * appends + 1


def test_winner_landing_between_the_read_and_the_existence_check_is_not_a_log_gap(tmp_path, monkeypatch):
    # The 8-writer race above hits this window now and then: the loser reads version N (absent: nobody
    # has committed it yet), another writer commits N, then the loser checks whether N exists. It does,
    # so the engine must simply check N as one more winner, not report a gap in the log.
    location = str(tmp_path / "t")
    schema = pa.schema([("writer", pa.int64()), ("i", pa.int64())])
    DeltaTable.create(location, schema)
    loser = DeltaTable(location)  # version 0
    DeltaTable(location).append(
        pa.table({"writer": pa.array([1], pa.int64()), "i": pa.array([0], pa.int64())})
    )
    storage = loser.snapshot.storage
    real_read = storage.read_bytes
    raced = []

    def read_while_another_writer_commits(path: str) -> bytes:
        if path == commit_path(2) and not raced:
            raced.append(path)
            try:
                return real_read(path)
            except FileNotFoundError:
                other = pa.table({"writer": pa.array([2], pa.int64()), "i": pa.array([0], pa.int64())})
                assert DeltaTable(location).append(other) == 2  # lands right after our failed read
                raise
        return real_read(path)

    monkeypatch.setattr(storage, "read_bytes", read_while_another_writer_commits)
    with loser.transaction() as txn:
        txn.add(
            *_write(loser, pa.table({"writer": pa.array([0], pa.int64()), "i": pa.array([0], pa.int64())}))
        )
    assert raced, "the race was staged"
    assert txn.committed_version == 3
    assert _commit_files(location) == [0, 1, 2, 3]
    assert _rows(DeltaTable(location), "writer", "i") == [(0, 0), (1, 0), (2, 0)]


def _write(table: DeltaTable, data: pa.Table) -> list[Any]:
    from airflow_provider_delta.core.write.rows import write_rows
    from airflow_provider_delta.core.write.target import WriteTarget

    return write_rows(WriteTarget.of(table.snapshot), data)

"""Soak: 4 writers, 2 time-travelling readers and a sensor poking every 50 ms, on one table at once.

Writers append, delete and MERGE in their own partition (so most commits rebase over the others'
without conflict), the table checkpoints every 10 commits, and everything runs for
``SOAK_SECONDS`` (``make test-all``; bounded, about two minutes with the checks). Then:

- no writer, reader or the sensor failed;
- no commit is lost: the versions the writers were told they committed are exactly versions
  1..latest, each once, each commit's operation is the writer's, and every such version holds the
  writer's rows as the writer modelled them after that commit (time travel to each one);
- no reader saw a partial version: what a reader read at version v is what version v holds;
- the sensor reported every version exactly once, in order, each with its commit summary.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.log.replay import commit_info_of, read_commit
from airflow_provider_delta.core.read.scan import read_add_file
from tests.reliability.soak_workers import create_table, reader_main, sensor_main, writer_main

if TYPE_CHECKING:
    from pathlib import Path

SOAK_SECONDS = float(os.environ.get("DELTA_SOAK_SECONDS", "75"))
WRITERS = 4
READERS = 2
POKE_INTERVAL = 0.05
_OPERATIONS = {"append": "WRITE", "delete": "DELETE", "merge": "MERGE"}

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["tests.reliability.soak_workers"])


def _result(work: Path, name: str) -> dict[str, Any]:
    path = work / f"{name}.json"
    assert path.exists(), f"{name} wrote no result"
    result: dict[str, Any] = json.loads(path.read_text())
    assert "error" not in result, f"{name} failed:\n{result['error']}"
    return result


def _run(work: Path, location: str) -> None:
    deadline = time.time() + SOAK_SECONDS
    writers = [
        _CONTEXT.Process(target=writer_main, args=(str(work), location, i, deadline), daemon=True)
        for i in range(WRITERS)
    ]
    readers = [
        _CONTEXT.Process(target=reader_main, args=(str(work), location, i, deadline), daemon=True)
        for i in range(READERS)
    ]
    sensor = _CONTEXT.Process(target=sensor_main, args=(str(work), location, POKE_INTERVAL), daemon=True)
    everyone = [sensor, *writers, *readers]
    try:
        for p in everyone:
            p.start()
        for p in [*writers, *readers]:
            p.join(SOAK_SECONDS + 120)
            assert p.exitcode == 0, f"{p.name} exited with {p.exitcode}"
        (work / "stop").touch()  # every writer is done: the sensor makes its last poke
        sensor.join(60)
        assert sensor.exitcode == 0
    finally:
        for p in everyone:
            if p.is_alive():
                p.kill()
                p.join()


def _every_version(location: str, latest: int) -> dict[int, dict[str, tuple[int, int]]]:
    """Per version, per writer partition: (rows, digest), followed through the log version by version.

    Each version's files come from the snapshot advanced one commit at a time; each data file is
    read once (paths never change content), and the per-partition digests are kept up to date as
    files come and go.
    """
    snapshot = DeltaTable(location, version=0).snapshot
    rows_of: dict[str, list[tuple[int, int, int]]] = {}
    live: set[str] = set()
    counts: dict[str, int] = {}
    digests: dict[str, int] = {}
    out: dict[int, dict[str, tuple[int, int]]] = {0: {}}
    for version in range(1, latest + 1):
        snapshot = snapshot.advance(version)
        files = {a.path: a for a in snapshot.files()}
        for path, sign in [*((p, -1) for p in live - files.keys()), *((p, 1) for p in files.keys() - live)]:
            if path not in rows_of:
                data = read_add_file(snapshot, files[path]).to_pylist()
                rows_of[path] = [(r["writer"], r["seq"], r["v"]) for r in data]
            for writer, seq, v in rows_of[path]:
                key = str(writer)
                counts[key] = counts.get(key, 0) + sign
                digests[key] = (digests.get(key, 0) + sign * hash((seq, v))) % 2**64
        live = set(files)
        out[version] = {w: (counts[w], digests[w]) for w in counts}
    return out


@pytest.mark.slow
def test_writers_readers_and_a_sensor_on_one_table_lose_nothing(tmp_path: Path) -> None:
    location = str(tmp_path / "table")
    create_table(location)
    _run(tmp_path, location)

    writers = [_result(tmp_path, f"writer-{i}") for i in range(WRITERS)]
    readers = [_result(tmp_path, f"reader-{i}") for i in range(READERS)]
    sensor = _result(tmp_path, "sensor")
    latest = DeltaTable(location).version

    # No commit lost: the acknowledged versions are exactly 1..latest, each once.
    acked = {a["version"]: (w["writer"], a) for w in writers for a in w["acks"]}
    assert sum(len(w["acks"]) for w in writers) == len(acked), "two writers were told the same version"
    assert sorted(acked) == list(range(1, latest + 1))

    # Each acknowledged version is the writer's operation and holds the writer's rows as modelled.
    content = _every_version(location, latest)
    storage = DeltaTable(location).storage
    for version in range(1, latest + 1):
        writer, ack = acked[version]
        info = commit_info_of(read_commit(storage, commit_path(version), version))
        assert info is not None and info.operation == _OPERATIONS[ack["op"]], (version, ack["op"])
        count, digest = content[version].get(str(writer), (0, 0))
        assert (count, digest) == (ack["rows"], ack["digest"]), (
            f"version {version} lost writer {writer}'s rows"
        )
    final = DeltaTable(location).to_arrow().to_pylist()
    for w in writers:
        rows = sorted([r["seq"], r["v"]] for r in final if r["writer"] == w["writer"])
        assert rows == w["final"], f"writer {w['writer']}'s rows differ at the end"

    # No reader saw a partial version.
    reads = [r for reader in readers for r in reader["reads"]]
    for r in reads:
        expected = {w: digest for w, (count, digest) in content[r["version"]].items() if count > 0}
        assert r["partitions"] == expected, f"a reader saw version {r['version']} differently"

    # The sensor reported every version once, in order, with its commit.
    reported = [v for report in sensor["reports"] for v in range(report["start"], report["end"] + 1)]
    assert reported == list(range(1, latest + 1))
    assert [v for report in sensor["reports"] for v in report["versions"]] == reported
    assert not any(report["missing"] for report in sensor["reports"])

    checkpoints = sorted(p.name for p in (tmp_path / "table" / "_delta_log").glob("*.checkpoint.parquet"))
    figures = {
        "seconds": SOAK_SECONDS,
        "commits": latest,
        "by_operation": {op: sum(a["op"] == op for w in writers for a in w["acks"]) for op in _OPERATIONS},
        "conflicts_retried": sum(w["conflicts"] for w in writers),
        "checkpoints": len(checkpoints),
        "reads": len(reads),
        "time_travel_reads": sum(r["travel"] for r in reads),
        "sensor_pokes": sensor["pokes"],
        "sensor_reports": len(sensor["reports"]),
    }
    (tmp_path.parent / "soak-figures.json").write_text(json.dumps(figures, indent=2))
    assert len(checkpoints) == latest // 10
    assert figures["by_operation"]["merge"] and figures["by_operation"]["delete"] and reads

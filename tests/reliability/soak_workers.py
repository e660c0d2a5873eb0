"""The processes of the soak test: writers, time-travelling readers and a poking sensor.

Each runs until a deadline in its own process (forked from a forkserver that has the engine
imported) and writes what it did to ``<work>/<name>.json``; the test checks those records against
the table afterwards. Every writer owns one partition (``writer = i``) and keeps a model of its rows
after each acknowledged commit, so the rows of every version it committed can be checked later.
"""

from __future__ import annotations

import json
import random
import time
import traceback
from pathlib import Path
from typing import Any

import pyarrow as pa

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.log.sensing import new_commits
from airflow_provider_delta.exceptions import DeltaConcurrentModificationException

SCHEMA = pa.schema([("writer", pa.int64()), ("seq", pa.int64()), ("v", pa.int64())])
PROPERTIES = {"delta.checkpointInterval": "10"}


def create_table(location: str) -> None:
    DeltaTable.create(location, SCHEMA, partition_by=["writer"], properties=PROPERTIES)


def rows_hash(pairs: Any) -> int:
    """An order-free digest of a partition's (seq, v) rows: the sum of the rows' hashes mod 2**64.

    Python's hash of int tuples is the same in every process, and a sum can be kept up to date row
    by row, so the test can follow every version of a large log cheaply.
    """
    return sum(hash((int(seq), int(v))) for seq, v in pairs) % 2**64


def _write_result(work: Path, name: str, result: dict[str, Any]) -> None:
    tmp = work / f".{name}.json.tmp"
    tmp.write_text(json.dumps(result))
    tmp.rename(work / f"{name}.json")


# ------------------------------------------------------------------------------------------ writer


class _Writer:
    def __init__(self, location: str, writer: int) -> None:
        self.location = location
        self.writer = writer
        self.rng = random.Random(writer)
        self.model: dict[int, int] = {}  # seq -> v of this writer's partition
        self.next_seq = 0
        self.acks: list[dict[str, Any]] = []
        self.conflicts = 0

    def _table(self, seqs: list[int], values: list[int]) -> pa.Table:
        return pa.table({"writer": [self.writer] * len(seqs), "seq": seqs, "v": values}, schema=SCHEMA)

    def append(self) -> tuple[int | None, dict[int, int]]:
        n = self.rng.randrange(1, 20)
        seqs = list(range(self.next_seq, self.next_seq + n))
        values = [self.rng.randrange(1000) for _ in seqs]
        version = DeltaTable(self.location).append(self._table(seqs, values))
        self.next_seq += n
        return version, {**self.model, **dict(zip(seqs, values, strict=True))}

    def delete(self) -> tuple[int | None, dict[int, int]]:
        k, r = self.rng.randrange(2, 6), self.rng.randrange(6)
        version = DeltaTable(self.location).delete(f"writer = {self.writer} AND seq % {k} = {r % k}")
        return version, {s: v for s, v in self.model.items() if s % k != r % k}

    def merge(self) -> tuple[int | None, dict[int, int]]:
        existing = self.rng.sample(sorted(self.model), min(len(self.model), self.rng.randrange(1, 10)))
        new = list(range(self.next_seq, self.next_seq + self.rng.randrange(0, 5)))
        if not existing and not new:
            new = [self.next_seq]
        seqs = existing + new
        values = [self.rng.randrange(1000, 2000) for _ in seqs]
        metrics = (
            DeltaTable(self.location)
            .merge(
                self._table(seqs, values),
                "t.writer = s.writer AND t.seq = s.seq",
                source_alias="s",
                target_alias="t",
            )
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
        self.next_seq += len(new)
        return metrics["version"], {**self.model, **dict(zip(seqs, values, strict=True))}

    def step(self) -> None:
        op = self.rng.choices(["append", "delete", "merge"], weights=[6, 2, 2])[0]
        while True:
            try:
                version, model = getattr(self, op)()
                break
            except DeltaConcurrentModificationException:
                self.conflicts += 1  # a conflict commits nothing: try again on the new version
        if version is None:
            return  # nothing to change (a delete that matched no row): no commit
        self.model = model
        self.acks.append(
            {"version": version, "op": op, "rows": len(model), "digest": rows_hash(model.items())}
        )


def writer_main(work: str, location: str, writer: int, deadline: float) -> None:
    w = _Writer(location, writer)
    result: dict[str, Any] = {"writer": writer}
    try:
        while time.time() < deadline:
            w.step()
    except BaseException:  # noqa: BLE001 - reported to the test
        result["error"] = traceback.format_exc()
    result.update(acks=w.acks, conflicts=w.conflicts, final=sorted([s, v] for s, v in w.model.items()))
    _write_result(Path(work), f"writer-{writer}", result)


# ------------------------------------------------------------------------------------------ reader


def reader_main(work: str, location: str, reader: int, deadline: float) -> None:
    rng = random.Random(100 + reader)
    seen: list[dict[str, Any]] = []
    result: dict[str, Any] = {"reader": reader}
    try:
        while time.time() < deadline:
            latest = DeltaTable.latest_version(location)
            version = rng.choice([None, rng.randrange(latest + 1)])
            table = DeltaTable(location) if version is None else DeltaTable(location, version=version)
            rows = table.to_arrow().to_pylist()
            by_writer: dict[str, list[tuple[int, int]]] = {}
            for r in rows:
                by_writer.setdefault(str(r["writer"]), []).append((r["seq"], r["v"]))
            partitions = {w: rows_hash(pairs) for w, pairs in by_writer.items()}
            seen.append({"version": table.version, "travel": version is not None, "partitions": partitions})
    except BaseException:  # noqa: BLE001 - reported to the test
        result["error"] = traceback.format_exc()
    result["reads"] = seen
    _write_result(Path(work), f"reader-{reader}", result)


# ------------------------------------------------------------------------------------------ sensor


def sensor_main(work: str, location: str, poke_interval: float) -> None:
    """Poke like DeltaVersionSensor: ``new_commits`` from the last reported version, every ``poke_interval``.

    Stops after one last poke once the test has created ``<work>/stop`` (every writer has finished).
    """
    baseline = 0
    reports: list[dict[str, Any]] = []
    pokes = 0
    result: dict[str, Any] = {}
    stop = Path(work) / "stop"
    try:
        while True:
            done = stop.exists()
            found = new_commits(location, baseline)
            pokes += 1
            if found.has_new_version:
                reports.append(
                    {
                        "start": found.start_version,
                        "end": found.latest_version,
                        "versions": [c.version for c in found.commits],
                        "missing": list(found.missing),
                    }
                )
                assert found.latest_version is not None
                baseline = found.latest_version
            if done:
                break
            time.sleep(poke_interval)
    except BaseException:  # noqa: BLE001 - reported to the test
        result["error"] = traceback.format_exc()
    result.update(reports=reports, pokes=pokes, baseline=baseline)
    _write_result(Path(work), "sensor", result)

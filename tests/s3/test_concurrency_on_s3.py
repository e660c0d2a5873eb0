"""Concurrency on a real S3 server: racing processes, and Delta's conflict matrix.

The only coordination between writers is the conditional PUT (``If-None-Match: *``) of each commit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import deltalake
import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaConcurrentModificationException, DeltaTable
from tests.unit.core.test_conflicts import MATRIX, PARTS, SCHEMA, _file

if TYPE_CHECKING:
    from tests.s3_fixtures import S3Env

REPO_ROOT = Path(__file__).resolve().parents[2]
WRITERS = 8
APPENDS = 25
ROWS = 10

# A writer process: waits for the "go" file so all race from the first commit, then appends.
APPEND_WORKER = """
import json, os, sys, time
import pyarrow as pa
from airflow_provider_delta.core import DeltaTable
location, options, go, writer, count, rows = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], *map(int, sys.argv[4:])
table = DeltaTable(location, storage_options=options)
while not os.path.exists(go):
    time.sleep(0.005)
for i in range(count):
    ids = [writer * 100_000 + i * rows + k for k in range(rows)]
    version = table.append(pa.table({"id": pa.array(ids, pa.int64()), "writer": pa.array([writer] * rows, pa.int64())}))
    print(json.dumps({"version": version, "i": i}), flush=True)
"""


def _run_writers(uri: str, options: dict[str, str], go: Path) -> list[list[dict[str, Any]]]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                textwrap.dedent(APPEND_WORKER),
                uri,
                json.dumps(options),
                str(go),
                str(w),
                str(APPENDS),
                str(ROWS),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for w in range(WRITERS)
    ]
    time.sleep(1.0)  # let the interpreters import pyarrow before the race starts
    go.touch()
    outputs = []
    for n, proc in enumerate(procs):
        try:
            out, err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise
        assert proc.returncode == 0, f"writer {n} exited with {proc.returncode}:\n{err[-3000:]}"
        outputs.append([json.loads(line) for line in out.splitlines() if line.strip()])
    return outputs


def test_eight_processes_of_25_blind_appends_make_200_contiguous_commits(s3: S3Env, tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("writer", pa.int64())])
    DeltaTable.create(s3.uri, schema, storage_options=s3.direct_options)
    outputs = _run_writers(s3.uri, s3.direct_options, tmp_path / "go")

    total = WRITERS * APPENDS
    versions = sorted(e["version"] for events in outputs for e in events)
    assert versions == list(range(1, total + 1)), "every acknowledged commit has its own version"
    table = DeltaTable(s3.uri, storage_options=s3.direct_options)
    commits = sorted(
        int(f.name[:20]) for f in table.storage.list_dir("_delta_log") if f.name.endswith(".json")
    )
    assert commits == list(range(total + 1)), "versions 0..200, no gap, no extra"
    expected = sorted(
        w * 100_000 + i * ROWS + k for w in range(WRITERS) for i in range(APPENDS) for k in range(ROWS)
    )
    ids = table.to_arrow(columns=["id"]).column("id").to_pylist()
    assert len(ids) == WRITERS * APPENDS * ROWS and sorted(ids) == expected, "each row exactly once"
    rs = deltalake.DeltaTable(s3.uri, storage_options=s3.direct_options)
    assert rs.version() == total
    assert sorted(rs.to_pyarrow_table(columns=["id"]).column("id").to_pylist()) == expected
    for info in table.history(limit=5):
        assert info["operation"] == "WRITE" and info["isBlindAppend"] is True


@pytest.fixture(params=["WriteSerializable", "Serializable"])
def isolation(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize(("winner", "loser", "ws_error", "ser_error"), MATRIX)
def test_conflict_matrix_holds_on_s3(
    s3: S3Env, isolation: str, winner: Any, loser: Any, ws_error: Any, ser_error: Any
) -> None:
    t = DeltaTable.create(
        s3.uri,
        SCHEMA,
        partition_by=["date", "country"],
        properties={"delta.isolationLevel": isolation},
        storage_options=s3.options,
    )
    with t.transaction(operation="WRITE") as txn:
        txn.add(*[_file(d, c) for d, c in PARTS])
    table = DeltaTable(s3.uri, storage_options=s3.options)
    expected = ws_error if isolation == "WriteSerializable" else ser_error
    loser_txn = table.transaction()
    winner_txn = table.transaction()
    loser(loser_txn)
    winner(winner_txn)
    winner_version = winner_txn.commit()
    if expected is None:
        assert loser_txn.commit() == winner_version + 1
        return
    with pytest.raises(expected) as info:
        loser_txn.commit()
    assert isinstance(info.value, DeltaConcurrentModificationException)
    assert info.value.winning_version == winner_version
    assert DeltaTable.latest_version(s3.uri, storage_options=s3.options) == winner_version

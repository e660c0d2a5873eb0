"""Example (4), ``example_delta_cdf_export``, driven by a REAL scheduler, triggerer and dag-processor.

A temporary ``AIRFLOW_HOME`` (SQLite, LocalExecutor) and five processes: ``airflow api-server``
(Airflow 3 task processes report to the execution API), ``scheduler``, ``dag-processor`` and
``triggerer``, each in its own process group with a parent-death signal, stopped at the end. The
export runs with ``engine="local"`` (pyarrow in the task process; the Spark path of the same operator
is tested through spark-submit in tests/airflow/test_cdf_export_operator.py). Commits are made to the
source table; the ``AssetWatcher`` fires, the scheduler starts the export DAG, the sink grows. The
scheduler and the triggerer are killed with SIGKILL once in the middle (a commit lands while they are
down) and restarted. At the end the sink holds every (version, row) of ``DeltaTable.changes()``
exactly once.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from tests.airflow_support import DAGS_FOLDER
from tests.spark_cluster import _parent_death_signal, free_ports
from tests.unit.core.cdf_export.helpers import CDF, SCHEMA, manifests, read_file_sink

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

pytestmark = [pytest.mark.system, pytest.mark.integration, pytest.mark.slow]

AIRFLOW = str(Path(sys.executable).parent / "airflow")
DAG_ID = "example_delta_cdf_export"


class Airflow:
    """Airflow's processes on one AIRFLOW_HOME, started from a long-lived thread (parent-death signal)."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._requests: list[tuple[str, list[str]]] = []
        self._lock = threading.Condition()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            with self._lock:
                while not self._requests:
                    self._lock.wait()
                name, args = self._requests.pop(0)
                if name == "__stop__":
                    return
                with (self.root / f"{name}.log").open("ab") as log:
                    self.procs[name] = subprocess.Popen(
                        [AIRFLOW, *args],
                        env=self.env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                        preexec_fn=_parent_death_signal(),
                    )
                self._lock.notify_all()

    def start(self, name: str, *args: str) -> None:
        with self._lock:
            self._requests.append((name, list(args)))
            self._lock.notify_all()
            while name not in self.procs:
                self._lock.wait(timeout=1)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs.pop(name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        proc.wait(timeout=60)

    def stop(self) -> None:
        for name in list(self.procs):
            self.kill(name, signal.SIGTERM)
        with self._lock:
            self._requests.append(("__stop__", []))
            self._lock.notify_all()

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in self.root.glob("*.log")
        )


def wait_for(what: str, condition: Callable[[], bool], airflow: Airflow, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        for name, proc in airflow.procs.items():
            assert proc.poll() is None, (
                f"airflow {name} exited ({proc.returncode}) while waiting for {what}\n" + airflow.logs()
            )
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}\n{airflow.logs()}")
        time.sleep(1)


@pytest.fixture
def airflow_home(tmp_path: Path) -> Iterator[tuple[Airflow, Path, Path]]:
    home, dags = tmp_path / "airflow", tmp_path / "dags"
    dags.mkdir()
    shutil.copy(DAGS_FOLDER / "examples" / "example_delta_cdf_export.py", dags)
    table, sink = tmp_path / "orders", tmp_path / "orders_changes"
    (port,) = free_ports(1)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AIRFLOW") and k != "_DELTA_TEST_AIRFLOW_CONFIGURED"
    }
    env |= {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API_AUTH__JWT_SECRET": "delta-cdf-export-test-secret",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "2",
        "DELTA_EXAMPLE_CDF_TABLE": str(table),
        "DELTA_EXAMPLE_CDF_SINK": str(sink),
        "DELTA_EXAMPLE_CDF_ENGINE": "local",
        "DELTA_EXAMPLE_POLL_INTERVAL": "1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    subprocess.run([AIRFLOW, "db", "migrate"], env=env, check=True, capture_output=True, timeout=300)
    airflow = Airflow(tmp_path, env)
    try:
        yield airflow, table, sink
    finally:
        airflow.stop()


def _watching(root: Path, count: int) -> Callable[[], bool]:
    """The trigger has read its starting version ``count`` times (it logs "Watching <table> ...")."""

    def check() -> bool:
        log = root / "triggerer.log"
        return log.exists() and log.read_text(errors="replace").count("for versions after") >= count

    return check


def _exported_up_to(sink: Path, version: int) -> Callable[[], bool]:
    return lambda: version in manifests(sink) if sink.exists() else False


def _append(table: Path, ids: list[int]) -> int:
    version = DeltaTable(str(table)).append(
        pa.table({"id": ids, "p": ["a"] * len(ids), "v": ids}, schema=SCHEMA)
    )
    assert version is not None
    return version


def test_commits_are_exported_exactly_once_by_a_real_scheduler_with_restarts(airflow_home) -> None:
    airflow, table, sink = airflow_home
    t = DeltaTable.create(str(table), SCHEMA, properties=CDF)
    t.append(pa.table({"id": [0], "p": ["a"], "v": [0]}, schema=SCHEMA))  # before anyone watches
    airflow.start(
        "api-server", "api-server", "--port", airflow.env["AIRFLOW__API__PORT"], "--host", "127.0.0.1"
    )
    for name in ("dag-processor", "scheduler", "triggerer"):
        airflow.start(name, name)
    # Until the trigger has read the table's version, a commit is not news to it (nor after: the
    # export continues from the sink, so the next event would carry it anyway).
    wait_for("the asset watcher's trigger to watch the table", _watching(airflow.root, 1), airflow)

    v2 = _append(table, [1, 2])
    wait_for(f"version {v2} in the sink", _exported_up_to(sink, v2), airflow)
    DeltaTable(str(table)).update("id = 1", {"v": "v + 100"})
    v3 = DeltaTable(str(table)).version
    wait_for(f"version {v3} in the sink", _exported_up_to(sink, v3), airflow)

    airflow.kill("scheduler")
    airflow.kill("triggerer")
    v4 = _append(table, [4])  # lands while no scheduler or triggerer runs
    airflow.start("scheduler", "scheduler")
    airflow.start("triggerer", "triggerer")
    wait_for("the restarted trigger to watch the table", _watching(airflow.root, 2), airflow)
    wait_for(f"version {v4} in the sink after the restart", _exported_up_to(sink, v4), airflow)
    DeltaTable(str(table)).delete("id = 2")
    v5 = DeltaTable(str(table)).version
    wait_for(f"version {v5} in the sink", _exported_up_to(sink, v5), airflow)

    got = read_file_sink(sink)
    expected = DeltaTable(str(table)).changes(0, v5)
    assert got.to_pylist() == expected.to_pylist()  # every (version, row) exactly once, in order
    keys = [(r["_commit_version"], r["id"], r["_change_type"]) for r in got.to_pylist()]
    assert len(keys) == len(set(keys))
    with sqlite3.connect(Path(airflow.env["AIRFLOW_HOME"]) / "airflow.db", timeout=30) as db:
        states = [r[0] for r in db.execute("SELECT state FROM dag_run WHERE dag_id = ?", (DAG_ID,))]
    assert states and "failed" not in states, states  # runs were started by asset events, none failed

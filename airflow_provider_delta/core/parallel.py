"""The engine's one thread pool for file reads and writes on the local machine.

pyarrow releases the GIL while it decodes and encodes Parquet, so a few threads keep both cores busy.
Every parallel step of the local data plane (scans, change-data reads, data-file writes, MERGE
reads) submits *leaf* jobs here. A job that itself asks for parallel work runs that work inline on
its own thread, so a job never waits for a place in the pool it occupies (no deadlock, however the
calls nest).

Example:
    >>> run_parallel(lambda x: x * 2, [1, 2, 3])
    [2, 4, 6]
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

T = TypeVar("T")
R = TypeVar("R")

MAX_THREADS = max(2, min(8, (os.cpu_count() or 2) * 2))

_local = threading.local()
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _mark_pool_thread() -> None:
    _local.in_pool = True


def in_pool_thread() -> bool:
    """Whether the calling thread is one of the pool's (its parallel work must run inline)."""
    return bool(getattr(_local, "in_pool", False))


def shared_pool() -> ThreadPoolExecutor:
    """The process-wide pool, created on first use (``MAX_THREADS`` threads)."""
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(
                    MAX_THREADS, thread_name_prefix="delta-io", initializer=_mark_pool_thread
                )
    return _pool


def run_parallel(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[fn(x) for x in items]`` on the shared pool, results in order; the first error is raised.

    One item, or a call from inside a pool job, runs inline on the calling thread.
    """
    if len(items) <= 1 or in_pool_thread():
        return [fn(item) for item in items]
    return list(shared_pool().map(fn, items))


__all__ = ["MAX_THREADS", "in_pool_thread", "run_parallel", "shared_pool"]

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
from concurrent.futures import ThreadPoolExecutor, wait
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


def run_all_or_undo(jobs: Sequence[Callable[[], R]], undo: Callable[[R], object]) -> list[R]:
    """Every job's result, in order, the jobs run on the shared pool; all of them or none.

    When a job fails, the jobs not started yet are cancelled, the running ones awaited, ``undo`` is
    called (best effort, its errors ignored) on the result of every job that finished, e.g. to delete
    the files it wrote, and the first failure in job order is raised. One job, or a call from inside
    a pool job, runs the jobs one by one on the calling thread.

    Example:
        >>> run_all_or_undo([lambda: 1, lambda: 2], undo=print)
        [1, 2]
    """
    if len(jobs) <= 1 or in_pool_thread():
        done: list[R] = []
        try:
            for job in jobs:
                done.append(job())
        except BaseException:
            _undo(done, undo)
            raise
        return done
    futures = [shared_pool().submit(job) for job in jobs]
    try:
        return [future.result() for future in futures]
    except BaseException:
        for future in futures:
            future.cancel()
        wait(futures)
        _undo([f.result() for f in futures if not f.cancelled() and f.exception() is None], undo)
        raise


def _undo(results: Sequence[R], undo: Callable[[R], object]) -> None:
    for result in results:
        try:
            undo(result)
        except Exception:  # noqa: BLE001 - best effort: the job's error is the one to raise
            continue


__all__ = ["MAX_THREADS", "in_pool_thread", "run_all_or_undo", "run_parallel", "shared_pool"]

"""How data files are encoded and written: dictionary choice and a bounded, ordered pool of file writes.

:func:`dictionary_columns` decides, per file, which columns get Parquet dictionary encoding. Arrow's
writer tries a dictionary for every column and only gives up once the dictionary outgrows its page
limit (1 MiB), so a column of mostly distinct values (ids, measurements, timestamps) pays for hashing
and then for the fallback: about 40 % of the encoding time of a typical file. parquet-mr (Spark)
gives up on such columns after their first page, when the dictionary does not make it smaller. Here
an evenly spread sample of the file's rows decides: mostly distinct values are written ``PLAIN``,
everything else keeps its dictionary. Readers see ordinary Parquet either way, and the column
statistics are written as before.

:class:`OrderedFileWrites` runs file writes on the engine's shared pool (:mod:`..parallel`;
``pyarrow.parquet`` and Arrow's compute kernels release the GIL): results come back in submission
order, at most a few files are in flight at once, the first failure is raised after the other writes
stopped, and the files the call did write are deleted then, so nothing half-done is left for a commit
to reference.

Example:
    >>> import pyarrow as pa
    >>> dictionary_columns(pa.table({"id": list(range(200_000)), "flag": ["a", "b"] * 100_000}), {})
    ['flag']
    >>> writes = OrderedFileWrites(cleanup=lambda result: None)
    >>> for i in range(3):
    ...     writes.submit(lambda i=i: i * i)
    >>> writes.results()
    [0, 1, 4]
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import Future, wait
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_provider_delta.core.parallel import in_pool_thread, shared_pool

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["MAX_WRITE_THREADS", "OrderedFileWrites", "dictionary_columns", "leaf_paths"]

T = TypeVar("T")

MAX_WRITE_THREADS = max(1, min(4, os.cpu_count() or 1))
# Files smaller than this keep Arrow's default (a dictionary for every column): sampling is not worth it.
_SAMPLE_ROWS = 32_768
_MIN_ROWS = 4 * _SAMPLE_ROWS
# Share of distinct values in the sample from which a column is written PLAIN. With 32k sampled rows
# this means >= ~150k distinct values in the file, about where Arrow's 1 MiB dictionary would overflow
# for 8-byte values anyway.
_DISTINCT_SHARE = 0.9


def dictionary_columns(table: pa.Table, nested_leaves: Mapping[str, list[str]]) -> bool | list[str]:
    """The ``use_dictionary`` argument for writing ``table`` as one Parquet file.

    Args:
        table: the file's rows, with the file's (physical) top-level column names.
        nested_leaves: for each struct, list or map column, the dotted Parquet paths of its leaves
            (see :func:`leaf_paths`); those always keep their dictionaries.

    Returns:
        ``True`` (every column) for small files and when every sampled column repeats its values,
        else the columns (Parquet leaf paths) that keep a dictionary.

    Example:
        >>> dictionary_columns(pa.table({"id": [1, 2, 3]}), {})
        True
    """
    if table.num_rows < _MIN_ROWS:
        return True
    step = table.num_rows // _SAMPLE_ROWS
    rows = pa.array(np.arange(0, step * _SAMPLE_ROWS, step, dtype=np.int64))
    chosen: list[str] = []
    plain = False
    for name, column in zip(table.column_names, table.columns, strict=True):
        if name in nested_leaves:
            chosen.extend(nested_leaves[name])
        elif _mostly_distinct(column, rows):
            plain = True
        else:
            chosen.append(name)
    return chosen if plain else True


def _mostly_distinct(column: pa.ChunkedArray, rows: pa.Array) -> bool:
    if pa.types.is_boolean(column.type) or pa.types.is_null(column.type):
        return False  # nothing to decide: Arrow never dictionary-encodes these
    sample = column.take(rows)
    distinct = pc.count_distinct(sample, mode="only_valid").as_py()
    return bool(distinct >= _DISTINCT_SHARE * (len(sample) - sample.null_count) > 0)


def leaf_paths(schema: pa.Schema) -> dict[str, list[str]]:
    """The dotted Parquet leaf paths of each nested (struct, list, map) top-level column of ``schema``.

    They are read back from an empty file written with the same schema, so they are exactly the
    names the Parquet writer matches ``use_dictionary`` against.

    Example:
        >>> leaf_paths(pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string()))]))
        {'tags': ['tags.list.element']}
    """
    out: dict[str, list[str]] = {}
    for f in schema:
        if pa.types.is_nested(f.type):
            sink = pa.BufferOutputStream()
            pq.write_table(pa.schema([f]).empty_table(), sink)
            written = pq.ParquetFile(pa.BufferReader(sink.getvalue())).schema
            out[f.name] = [written.column(i).path for i in range(len(written))]
    return out


class OrderedFileWrites(Generic[T]):
    """File writes on the shared thread pool, results in submission order.

    The first job is held back: a call that writes one file runs it on the calling thread, without
    the pool; so does every job submitted from inside a pool job (see :mod:`..parallel`). With more,
    at most ``2 * max_workers`` jobs are queued or running at once (``submit`` waits for the oldest),
    which bounds the rows held for writing.

    Args:
        cleanup: called (best effort, errors ignored) on every result of a completed job when another
            job fails, e.g. to delete the files written so far.
        max_workers: file writes of this call in flight at once (besides the queued ones).

    Example:
        >>> writes = OrderedFileWrites(cleanup=print)
        >>> writes.submit(lambda: "a.parquet")
        >>> writes.results()
        ['a.parquet']
    """

    def __init__(self, *, cleanup: Callable[[T], object], max_workers: int = MAX_WRITE_THREADS) -> None:
        self._cleanup = cleanup
        self._max_workers = max(1, max_workers)
        self._held: Callable[[], T] | None = None
        self._inline = in_pool_thread()
        self._pooled = False
        self._running: deque[Future[T]] = deque()
        self._done: list[T] = []

    def submit(self, job: Callable[[], T]) -> None:
        """Queue ``job``; wait for the oldest job while too many are in flight (its error is raised)."""
        try:
            if self._inline:
                self._done.append(job())
                return
            if not self._pooled and self._held is None:
                self._held = job
                return
            self._pooled = True
            pool = shared_pool()
            if self._held is not None:
                self._running.append(pool.submit(self._held))
                self._held = None
            self._running.append(pool.submit(job))
            while len(self._running) > 2 * self._max_workers:
                self._done.append(self._running.popleft().result())
        except BaseException:
            self.abort()
            raise

    def results(self) -> list[T]:
        """Every job's result in submission order; the first failure (in that order) is raised."""
        try:
            if self._held is not None:
                self._done.append(self._held())
                self._held = None
            while self._running:
                self._done.append(self._running.popleft().result())
        except BaseException:
            self.abort()
            raise
        return self._done

    def abort(self) -> None:
        """Stop queued jobs, wait for running ones, clean up after every completed one."""
        self._held = None
        for future in self._running:
            future.cancel()
        wait(self._running)
        completed = [*self._done]
        completed.extend(f.result() for f in self._running if not f.cancelled() and f.exception() is None)
        self._running.clear()
        self._done = []
        for result in completed:
            try:
                self._cleanup(result)
            except Exception:  # noqa: BLE001 - best effort: the original error matters
                continue

"""Executors: where commands' data work runs (the local pyarrow one here; Spark's in ``spark/``).

An :class:`Executor` hands out narrow capabilities (:class:`FileWriter`, :class:`FileRewriter`,
:class:`FileDeleter`, and the optional :class:`FileReader`, :class:`Merger`, :class:`ChangeExporter`);
see :mod:`.base`.
"""

from __future__ import annotations

from airflow_provider_delta.core.executor.base import (
    BinLayout,
    ChangeExporter,
    ChangeRows,
    DeleteOutcome,
    Executor,
    FileDeleter,
    FileReader,
    FileRewrite,
    FileRewriter,
    FileWriter,
    Merger,
    RewriteResult,
    RowRewrite,
    delete_paths,
)
from airflow_provider_delta.core.executor.local import LocalExecutor

__all__ = [
    "BinLayout",
    "ChangeExporter",
    "ChangeRows",
    "DeleteOutcome",
    "Executor",
    "FileDeleter",
    "FileReader",
    "FileRewrite",
    "FileRewriter",
    "FileWriter",
    "LocalExecutor",
    "Merger",
    "RewriteResult",
    "RowRewrite",
    "delete_paths",
]

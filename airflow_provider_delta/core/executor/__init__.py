"""Executors: where commands' data work runs (the local pyarrow one here; Spark's in ``spark/``)."""

from __future__ import annotations

from airflow_provider_delta.core.executor.base import (
    BinLayout,
    ChangeRows,
    DeleteOutcome,
    Executor,
    FileRewrite,
    RewriteResult,
    RowRewrite,
    delete_paths,
)
from airflow_provider_delta.core.executor.local import LocalExecutor

__all__ = [
    "BinLayout",
    "ChangeRows",
    "DeleteOutcome",
    "Executor",
    "FileRewrite",
    "LocalExecutor",
    "RewriteResult",
    "RowRewrite",
    "delete_paths",
]

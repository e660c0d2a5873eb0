"""Executors: where commands' data work runs (the local pyarrow one here; Spark's in ``spark/``)."""

from __future__ import annotations

from airflow_provider_delta.core.executor.base import (
    ChangeRows,
    Executor,
    FileRewrite,
    RewriteResult,
    RowRewrite,
)
from airflow_provider_delta.core.executor.local import LocalExecutor

__all__ = ["ChangeRows", "Executor", "FileRewrite", "LocalExecutor", "RewriteResult", "RowRewrite"]

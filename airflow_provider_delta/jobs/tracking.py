"""Files a job attempt wrote, so a failed attempt can delete them before the next one rewrites its data.

A job wraps its executor with :class:`TrackingExecutor` (``ctx.track(executor)``): every data file and
change data file the attempt's executor writes is recorded. When the attempt fails and its commit did
not land, :func:`delete_unreferenced` removes them, so a retry (in the job, or by Airflow) leaves no
orphan behind. Whether the commit landed is decided safely: a conflict means the commit was refused
before anything reached the log; for any other error the newest snapshot is checked, and files it
references are never deleted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from airflow_provider_delta.core.actions import AddCDCFile, AddFile
from airflow_provider_delta.core.executor import Executor
from airflow_provider_delta.core.storage import storage_for
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.core.transaction.policy import classify

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pyarrow as pa

    from airflow_provider_delta.core.change_data import ChangeType
    from airflow_provider_delta.core.executor import (
        BinLayout,
        ChangeExporter,
        ChangeRows,
        FileDeleter,
        FileReader,
        FileRewrite,
        FileRewriter,
        FileWriter,
        Merger,
        RewriteResult,
    )
    from airflow_provider_delta.core.executor.merge.job import MergeJob, MergeOutcome
    from airflow_provider_delta.core.write.target import WriteTarget


class TrackingExecutor(Executor):
    """An executor that records the paths of the files ``inner`` writes (see the module docstring).

    It has the capabilities of ``inner``: its writer, rewriter and merger record what they write;
    its reader, deleter and exporter are ``inner``'s own.
    """

    def __init__(self, inner: Executor) -> None:
        self.inner = inner
        self.name = inner.name
        self.written: list[AddFile | AddCDCFile] = []

    def _record(self, actions: Sequence[Any]) -> None:
        self.written.extend(a for a in actions if isinstance(a, AddFile | AddCDCFile))

    def writer(self) -> FileWriter:
        """This tracker, writing through the inner writer."""
        return self

    def rewriter(self) -> FileRewriter:
        """This tracker, rewriting through the inner rewriter."""
        return self

    def merger(self) -> Merger:
        """This tracker, merging through the inner merger (refused as the inner executor refuses)."""
        self.inner.merger()
        return self

    def reader(self) -> FileReader:
        """The inner reader (reads write nothing)."""
        return self.inner.reader()

    def deleter(self) -> FileDeleter:
        """The inner deleter."""
        return self.inner.deleter()

    def exporter(self) -> ChangeExporter:
        """The inner exporter."""
        return self.inner.exporter()

    def data_schema(self, data: Any) -> pa.Schema:
        """As the inner executor."""
        return self.inner.writer().data_schema(data)

    def write_files(
        self,
        target: WriteTarget,
        data: Any,
        *,
        data_change: bool = True,
        require: Any = None,
        require_text: str = "",
    ) -> list[AddFile]:
        """As the inner executor; the files are recorded."""
        adds = self.inner.writer().write_files(
            target, data, data_change=data_change, require=require, require_text=require_text
        )
        self._record(adds)
        return adds

    def rewrite_files(
        self, target: WriteTarget, files: Sequence[AddFile], rewrite: FileRewrite, *, record_changes: bool
    ) -> RewriteResult:
        """As the inner executor; the new files (and change files already written) are recorded."""
        result = self.inner.rewriter().rewrite_files(target, files, rewrite, record_changes=record_changes)
        self._record(result.added)
        self._record(result.changes)
        return result

    def change_rows(self, target: WriteTarget, data: Any, change_type: ChangeType) -> list[ChangeRows]:
        """As the inner executor (Spark's change rows are change files already written: recorded)."""
        rows = self.inner.writer().change_rows(target, data, change_type)
        self._record(rows)
        return rows

    def write_changes(self, target: WriteTarget, changes: Sequence[ChangeRows]) -> list[AddCDCFile]:
        """As the inner executor; the change files are recorded."""
        cdc = self.inner.writer().write_changes(target, changes)
        self._record([c for c in cdc if all(c is not w for w in self.written)])
        return cdc

    def write_files_and_changes(
        self,
        target: WriteTarget,
        data: Any,
        change_type: ChangeType,
        *,
        require: Any = None,
        require_text: str = "",
    ) -> tuple[list[AddFile], list[ChangeRows]]:
        """As the inner executor (one pass over the rows where it can); the files are recorded."""
        adds, changes = self.inner.writer().write_files_and_changes(
            target, data, change_type, require=require, require_text=require_text
        )
        self._record(adds)
        self._record(changes)
        return adds, changes

    def rewrite_bins(
        self, target: WriteTarget, bins: Sequence[Sequence[AddFile]], layout: BinLayout
    ) -> list[list[AddFile]]:
        """As the inner executor; the new files are recorded."""
        written = self.inner.rewriter().rewrite_bins(target, bins, layout)
        for adds in written:
            self._record(adds)
        return written

    def merge(self, job: MergeJob) -> MergeOutcome:
        """As the inner executor; the files its join wrote are recorded."""
        outcome = self.inner.merger().merge(job)
        self._record(outcome.added)
        self._record(outcome.cdc)
        return outcome

    def __getattr__(self, name: str) -> Any:
        # Anything else an executor offers (e.g. the Spark session) comes from the inner one.
        return getattr(self.inner, name)

    def summary(self) -> tuple[int, int]:
        """How many files were written and their total size in bytes."""
        return len(self.written), sum(int(getattr(a, "size", 0) or 0) for a in self.written)

    def reset(self) -> None:
        """Forget what was written (after a commit, or after the files were deleted)."""
        self.written = []


def _relative(path: str) -> str | None:
    """The path under the table root as stored on disk, or None for an absolute path or URI."""
    if "://" in path or path.startswith(("/", "file:")):
        return None
    return unquote(path) if "%" in path else path


def delete_unreferenced(
    location: str,
    storage_options: Mapping[str, str],
    written: Sequence[AddFile | AddCDCFile],
    error: BaseException,
) -> int:
    """Delete the files of a failed attempt that no version of the table references; returns how many.

    After a conflict nothing of the attempt reached the log. After any other error the newest
    snapshot is read first and every file it references is kept (the commit may have landed before
    the error, e.g. in a post-commit step).
    """
    paths = {p for p in (_relative(a.path) for a in written) if p is not None}
    if not paths:
        return 0
    if classify(error) != "conflict":
        try:
            snapshot = DeltaTable(location, storage_options=dict(storage_options)).snapshot
        except Exception:  # noqa: BLE001 - cannot tell what landed: keep everything (vacuum removes orphans)
            return 0
        referenced = {_relative(a.path) for a in snapshot.files()}
        if paths & referenced:
            return 0
    storage = storage_for(location, storage_options)
    for path in sorted(paths):
        storage.delete(path)
    return len(paths)

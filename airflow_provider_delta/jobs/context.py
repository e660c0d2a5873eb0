"""What a job function receives (:class:`JobContext`) and returns (:class:`JobOutput`).

No pyspark import: the SparkSession is passed in (None when the job runs on engine ``local``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.exceptions import JobSpecError
from airflow_provider_delta.jobs.registry import job_definition

if TYPE_CHECKING:
    from airflow_provider_delta.core.executor import Executor
    from airflow_provider_delta.jobs.definition import JobDefinition
    from airflow_provider_delta.jobs.spec import JobSpec
    from airflow_provider_delta.jobs.tracking import TrackingExecutor

#: The logger of every job: its lines are the job's progress in the Airflow task log.
log = logging.getLogger("airflow_provider_delta.jobs")


@dataclass(frozen=True)
class JobOutput:
    """One successful run of a job.

    Attributes:
        version: the version committed or checkpointed (the table's version when nothing was written).
        committed: whether a commit was written by this run.
        metrics: job-specific numbers for the result and XCom.
    """

    version: int | None
    committed: bool = False
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class JobContext:
    """The spec, the SparkSession (None with ``--engine local``) and the test hooks of one job run.

    A job function is called once per attempt of the conflict policy's retry loop and must start from
    a fresh snapshot each time.

    Example:
        >>> def run(ctx: JobContext) -> JobOutput:                     # doctest: +SKIP
        ...     table = DeltaTable(ctx.spec.table, storage_options=ctx.spec.storage_options)
        ...     return JobOutput(version=table.checkpoint())
    """

    spec: JobSpec
    spark: Any = None
    attempt: int = 0
    cache: dict[str, Any] = field(default_factory=dict)
    _hooks_fired: set[str] = field(default_factory=set)
    _trackers: list[TrackingExecutor] = field(default_factory=list)

    @property
    def engine(self) -> str:
        """``"spark"`` when a SparkSession was given, else ``"local"``."""
        return "local" if self.spark is None else "spark"

    @cached_property
    def definition(self) -> JobDefinition:
        """The job's declaration (``JOB`` in its module)."""
        return job_definition(self.spec.job)

    @cached_property
    def options(self) -> dict[str, Any]:
        """The spec's options checked against the declaration, defaults filled in.

        Raises:
            JobSpecError: an unknown or mistyped option.
        """
        return self.definition.validate(self.spec.options, engine=self.engine)

    def option(self, name: str, default: Any = None) -> Any:
        """The job option ``name`` as declared in the job's ``JOB`` (validated, default filled in).

        ``default`` is used only when the declaration has no default and the option is absent; the
        declaration has the type.

        Raises:
            JobSpecError: the job does not declare ``name`` (a bug in the job), or the spec is invalid.
        """
        self.definition.option(name)
        value = self.options.get(name)
        return default if value is None else value

    def progress(self, message: str, *args: Any) -> None:
        """Log one progress line of this job (``%``-style arguments); the task log shows it."""
        log.info("Job %r on %r: " + message, self.spec.job, self.spec.table, *args)

    def track(self, executor: Executor | None = None) -> Executor:
        """``executor`` (default: the local one) wrapped so this attempt's files are known.

        Pass the result to the command (``executor=ctx.track(...)``): when the attempt fails and its
        commit did not land, the runner deletes those files before the next attempt (no orphans),
        and :meth:`before_commit` logs how much was written.
        """
        # lazy: the executor classes load the engine's writer, which only data-moving jobs need
        from airflow_provider_delta.core.executor import LocalExecutor
        from airflow_provider_delta.jobs.tracking import TrackingExecutor

        tracker = TrackingExecutor(executor if executor is not None else LocalExecutor())
        self._trackers.append(tracker)
        return tracker

    def executor(self, data: Any = None) -> Executor:
        """This attempt's executor, tracked (see :meth:`track`): Spark's under spark-submit, unless the
        job's ``data`` is a pyarrow table (rows already in this process), then the local one.

        Example:
            >>> optimize(snapshot, executor=ctx.executor(), before_commit=ctx.before_commit)  # doctest: +SKIP
        """
        if self.spark is None or isinstance(data, pa.Table):
            return self.track()
        from airflow_provider_delta.spark.executor import SparkExecutor  # lazy: imports pyspark

        return self.track(SparkExecutor(self.spark))

    def discard_attempt_files(self, error: BaseException) -> int:
        """Delete the files the failed attempt wrote and no version references (see ``tracking``)."""
        # lazy: see track()
        from airflow_provider_delta.jobs.tracking import delete_unreferenced

        written = [a for tracker in self._trackers for a in tracker.written]
        self._trackers.clear()
        if not written:
            return 0
        deleted = delete_unreferenced(self.spec.table, self.spec.storage_options, written, error)
        if deleted:
            self.progress("deleted the %d file(s) the failed attempt %d wrote", deleted, self.attempt)
        return deleted

    def require_spark(self, why: str) -> Any:
        """The SparkSession, or a clear error when the job runs with ``--engine local``."""
        if self.spark is None:
            raise JobSpecError(
                f"Cannot run job {self.spec.job!r}: {why} needs Spark (run it with spark-submit)"
            )
        return self.spark

    def before_commit(self) -> None:
        """Test hook between a job's read phase and its commit (first attempt only).

        With ``test_hooks.before_commit = {"signal": path, "wait_for": path, "timeout_s": 60}`` the job
        creates ``signal`` and waits until ``wait_for`` exists, so a test can commit a concurrent
        change at exactly this point and provoke a real conflict. Does nothing in production
        beyond logging what the attempt wrote (with :meth:`track`).
        """
        files = sum(len(t.written) for t in self._trackers)
        if files:
            size = sum(t.summary()[1] for t in self._trackers)
            self.progress("attempt %d wrote %d file(s), %d bytes; committing", self.attempt, files, size)
        self._barrier("before_commit")

    def _barrier(self, name: str) -> None:
        hook = self.spec.test_hooks.get(name)
        if not hook or name in self._hooks_fired:
            return
        self._hooks_fired.add(name)
        Path(hook["signal"]).touch()
        deadline = time.monotonic() + float(hook.get("timeout_s", 60))
        wait_for = Path(hook["wait_for"])
        while not wait_for.exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"Cannot pass test hook {name!r}: {wait_for} did not appear in time")
            time.sleep(0.02)

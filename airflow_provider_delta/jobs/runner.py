"""The job runner: read a JSON spec, run the job (in a Spark driver, or without Spark), write a JSON result.

Usage (``jobs/__main__.py`` is the file spark-submit runs; see :func:`.registry.runner_script`)::

    spark-submit --master 'local[2]' .../airflow_provider_delta/jobs/__main__.py \\
        --spec spec.json --result result.json
    python -m airflow_provider_delta.jobs --spec spec.json --result result.json --engine local

``--spec`` takes a file path or the JSON text itself. ``--engine local`` runs the job without a
SparkSession (pure pyarrow in this process: tests, and jobs that need no Spark).

The job runs inside the conflict policy's retry loop (``core.transaction.policy``); the result file is
always written, success or failure, unless the process dies. Exit codes: 0 success, 2 the job failed
and the result says why, 1 the spec or the result path could not be used.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.transaction.policy import (
    ConflictPolicy,
    classify,
    failure_record,
    run_with_conflict_policy,
)
from airflow_provider_delta.exceptions import JobSpecError
from airflow_provider_delta.jobs.context import JobContext
from airflow_provider_delta.jobs.registry import job_definition, job_function
from airflow_provider_delta.jobs.spec import JobResult, JobSpec

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_delta.jobs.context import JobOutput

log = logging.getLogger("airflow_provider_delta.jobs")

EXIT_OK, EXIT_BAD_INPUT, EXIT_JOB_FAILED = 0, 1, 2


def spark_session(app_name: str) -> Any:
    """The SparkSession of this spark-submit application (its conf comes from spark-submit)."""
    from pyspark.sql import SparkSession

    return SparkSession.builder.appName(app_name).getOrCreate()


def _engine(spark: Any) -> dict[str, Any]:
    if spark is None:
        return {"name": "local", "pid": os.getpid()}
    return {
        "name": "spark",
        "spark_version": spark.version,
        "master": spark.sparkContext.master,
        "application_id": spark.sparkContext.applicationId,
        "pid": os.getpid(),
    }


def run_spec(spec: JobSpec, spark: Any = None) -> JobResult:
    """Run a job under its conflict policy and describe the outcome (never raises for job errors).

    A spec with ``tables`` runs the job once per table, in order, and returns one result per table
    in ``tables`` (see :func:`combine_results`). Without a SparkSession the job runs on engine
    ``local`` (pyarrow in this process).

    Example:
        >>> result = run_spec(JobSpec(job="checkpoint", table="/data/events"))  # doctest: +SKIP
        >>> result.status, result.version                                     # doctest: +SKIP
        ('success', 12)
    """
    if not spec.tables:
        return _run_one(spec, spark)
    started = time.monotonic()
    try:
        definition = job_definition(spec.job)
        if not definition.multi_table:
            raise JobSpecError(f"Cannot run job {spec.job!r} on a list of tables: it takes one table")
    except JobSpecError as exc:
        return _refused(spec, spark, exc, started)
    results = []
    for number, table in enumerate(spec.tables, 1):
        log.info("Job %r: table %d of %d: %s", spec.job, number, len(spec.tables), table)
        results.append(_run_one(replace(spec, table=table, tables=[]), spark))
    return combine_results(spec, results, engine=_engine(spark), duration_s=time.monotonic() - started)


def combine_results(
    spec: JobSpec, results: list[JobResult], *, engine: dict[str, Any], duration_s: float
) -> JobResult:
    """One result for a multi-table run: ``tables`` holds each table's; failures are summed up in ``error``.

    The top-level ``error`` (when any table failed) names every failed table with its error; its
    ``type``, ``kind`` and ``action`` are those of the first failure.
    """
    failed = [r for r in results if r.status != "success"]
    metrics = {"numTables": len(results), "numFailedTables": len(failed)}
    error = None
    if failed:
        first = failed[0].error or {}
        reasons = [f"{r.table!r}: {(r.error or {}).get('type')}: {(r.error or {}).get('message')}" for r in failed]
        error = {
            **first,
            "message": f"{len(failed)} of {len(results)} tables failed: " + "; ".join(reasons),
            "tables": [r.table for r in failed],
        }
    return JobResult(
        status="error" if failed else "success",
        job=spec.job,
        table="",
        committed=any(r.committed for r in results),
        metrics=metrics,
        attempts=max((r.attempts for r in results), default=0),
        duration_s=duration_s,
        engine=engine,
        error=error,
        tables=[r.to_dict() for r in results],
    )


def _refused(spec: JobSpec, spark: Any, exc: BaseException, started: float) -> JobResult:
    log.error("Job %r on %r refused: %s", spec.job, spec.table or spec.tables, exc)
    error = {"type": type(exc).__name__, "message": str(exc), "action": "fail", "attempts": 0, "kind": "permanent"}
    return JobResult(
        status="error", job=spec.job, table=spec.table, engine=_engine(spark), error=error,
        duration_s=time.monotonic() - started,
    )


def _run_one(spec: JobSpec, spark: Any) -> JobResult:
    """Run the job on one table inside the conflict policy's retry loop."""
    started = time.monotonic()
    ctx = JobContext(spec=spec, spark=spark)
    common: dict[str, Any] = {"job": spec.job, "table": spec.table, "engine": _engine(spark)}
    try:
        policy = ConflictPolicy.from_dict(spec.conflict_policy)
        fn = job_function(spec.job)
        ctx.options  # noqa: B018 - validates the options against the job's declaration before any work
    except Exception as exc:  # noqa: BLE001 - a bad spec becomes a failed result, never a crash
        return _refused(spec, spark, exc, started)

    def attempt() -> JobOutput:
        ctx.attempt += 1
        if ctx.attempt > 1:
            log.info("Job %r on %r: attempt %d of %d", spec.job, spec.table, ctx.attempt, policy.max_attempts)
        return fn(ctx)

    def on_retry(exc: BaseException, number: int, delay: float) -> None:
        ctx.discard_attempt_files(exc)
        log.warning(
            "Job %r on %r: attempt %d failed (%s, %s): %s; retrying in %.2f s",
            spec.job, spec.table, number, type(exc).__name__, classify(exc), exc, delay,
        )

    log.info("Job %r on %r: starting on engine %r", spec.job, spec.table, ctx.engine)
    try:
        out = run_with_conflict_policy(attempt, policy, on_retry=on_retry)
    except Exception as exc:
        ctx.discard_attempt_files(exc)
        error = failure_record(exc, policy)
        log.error(
            "Job %r on %r failed after %d attempt(s) (%s, %s error, action %s): %s",
            spec.job, spec.table, ctx.attempt, type(exc).__name__, error["kind"], error["action"], exc,
            exc_info=error["kind"] == "unknown",
        )
        if isinstance(exc, JobSpecError):
            error["action"] = "fail"  # a bad option stays bad on every retry
        return JobResult(
            status="error", error=error, attempts=ctx.attempt, duration_s=time.monotonic() - started, **common
        )
    duration = time.monotonic() - started
    what = f"committed version {out.version}" if out.committed else f"done at version {out.version}"
    if out.version is None:
        what = "done"
    log.info(
        "Job %r on %r: %s in %d attempt(s), %.2f s; metrics: %s",
        spec.job, spec.table, what, ctx.attempt, duration, json.dumps(out.metrics, sort_keys=True, default=str),
    )
    return JobResult(
        status="success",
        version=out.version,
        committed=out.committed,
        metrics=out.metrics,
        attempts=ctx.attempt,
        duration_s=duration,
        **common,
    )


def exit_with_parent(interval: float = 0.2) -> threading.Thread:
    """Exit this process as soon as its parent dies (a daemon thread).

    Under spark-submit the Python driver is a child of the driver JVM. When Airflow kills the task
    (``on_kill`` kills spark-submit, i.e. the JVM), the Python process would be orphaned and could
    still commit; this makes it stop instead. Commits are atomic, so stopping anywhere is safe.
    """
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                log.error("The driver JVM (pid %d) is gone: stopping the job", parent)
                os._exit(EXIT_JOB_FAILED)

    thread = threading.Thread(target=watch, name="exit-with-parent", daemon=True)
    thread.start()
    return thread


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_delta.jobs", description="Run an airflow-provider-delta job."
    )
    parser.add_argument("--spec", required=True, help="the job spec: a JSON file path or JSON text")
    parser.add_argument("--result", required=True, help="where to write the JSON result")
    parser.add_argument(
        "--engine",
        choices=("spark", "local"),
        default="spark",
        help="spark: start a SparkSession (default); local: run without Spark",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run the job, write the result; returns the exit code.

    Example:
        >>> main(["--spec", '{"job": "checkpoint", "table": "/data/t"}', "--result", "/tmp/r.json",
        ...       "--engine", "local"])                                          # doctest: +SKIP
        0
    """
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        spec = JobSpec.load(args.spec)
    except (JobSpecError, OSError) as exc:
        error = {"type": type(exc).__name__, "message": str(exc), "action": "fail", "attempts": 0,
                 "kind": "permanent"}
        JobResult(status="error", job="?", table="?", error=error).write(args.result)
        log.error("%s", exc)
        return EXIT_BAD_INPUT
    spark = None
    if args.engine == "spark":
        exit_with_parent()
        spark = spark_session(f"delta-{spec.job}")
    try:
        result = run_spec(spec, spark)
    finally:
        if spark is not None:
            spark.stop()
    result.write(args.result)
    return EXIT_OK if result.status == "success" else EXIT_JOB_FAILED

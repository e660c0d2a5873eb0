"""Test-only DAGs: how Delta operators end (permanent errors, transient errors, lists of tables).

Every task records what its operator raised or returned in ``{{ params.root }}/outcomes.jsonl``
(``task_id``, ``try_number``, ``raised``, ``message``, ``result``, ``pid``). Jobs run on engine
``local`` (in the task's process) unless a DAG says otherwise.

- ``delta_permanent_errors``: a bad predicate, rows with a column the table lacks, a missing table;
  ``retries=2`` each, which a permanent error must not use.
- ``delta_transient_error``: the job's first attempt times out (its before-commit barrier waits for
  a file that never comes), the in-job retry succeeds; the failed attempt's files are deleted.
- ``delta_checkpoint_tables``: one checkpoint task over three tables, the middle one missing.
- ``delta_spark_jobs``: through spark-submit, Spark's log level at its default (WARN): an overwrite
  whose first attempt loses to a concurrent append and is retried in the job, then two tables
  checkpointed in one application.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import DAG, task

from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.operators.delta import DeltaCheckpointOperator, DeltaSparkJobOperator
from airflow_provider_delta.policies.conflicts import DeltaConflictRetryPolicy

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_delta.jobs.spec import JobSpec

ROOT = "{{ params.root }}"


class Recording:
    """Mixin: append the outcome of each try to ``<root>/outcomes.jsonl``."""

    root: str
    task_id: str

    def execute(self, context: Context) -> dict[str, Any]:
        record: dict[str, Any] = {
            "task_id": self.task_id,
            "try_number": context["ti"].try_number,
            "pid": os.getpid(),
        }
        try:
            result = super().execute(context)  # type: ignore[misc]
        except Exception as exc:
            record |= {"raised": type(exc).__name__, "message": str(exc)}
            raise
        else:
            record |= {"result": result}
        finally:
            with (Path(self.root) / "outcomes.jsonl").open("a") as out:
                out.write(json.dumps(record, default=str) + "\n")
        return result


class RecordingJob(Recording, DeltaSparkJobOperator):
    template_fields = (*DeltaSparkJobOperator.template_fields, "root", "test_hooks")

    def __init__(self, *, root: str = ROOT, test_hooks: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.root = root
        self.test_hooks = test_hooks or {}

    def build_spec(
        self, context: Context, location: str | list[str], storage_options: dict[str, str]
    ) -> JobSpec:
        from dataclasses import replace

        return replace(super().build_spec(context, location, storage_options), test_hooks=self.test_hooks)


class RecordingCheckpoint(Recording, DeltaCheckpointOperator):
    template_fields = (*DeltaCheckpointOperator.template_fields, "root")

    def __init__(self, *, root: str = ROOT, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.root = root


DEFAULTS = {"retries": 2, "retry_delay": timedelta(seconds=0)}

with DAG(
    dag_id="delta_permanent_errors",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"root": "/nonexistent"},
    default_args=DEFAULTS,
) as permanent_errors:
    RecordingJob(
        task_id="bad_predicate",
        job="write",
        engine="local",
        table=ROOT + "/t",
        job_options={"mode": "overwrite", "predicate": "id >", "rows": [{"id": 1, "part": "a"}]},
    )
    RecordingJob(
        task_id="unknown_column",
        job="write",
        engine="local",
        table=ROOT + "/t",
        job_options={"rows": [{"id": 1, "part": "a", "channel": "web"}]},
    )
    RecordingCheckpoint(task_id="missing_table", table=ROOT + "/missing")

with DAG(
    dag_id="delta_retry_policy",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"root": "/nonexistent"},
    default_args=DEFAULTS,
) as retry_policy_dag:
    # A task that commits in-process with Airflow's pluggable retry policy: a permanent error (a
    # predicate that does not parse) fails it at once although retries=2.
    @task(retry_policy=DeltaConflictRetryPolicy())
    def delete_in_process(params: dict[str, Any] | None = None) -> None:
        root = Path((params or {})["root"])
        with (root / "outcomes.jsonl").open("a") as out:
            out.write(json.dumps({"task_id": "delete_in_process", "try_number": 0}) + "\n")
        DeltaTable(str(root / "t")).delete("id >")

    delete_in_process()

with DAG(
    dag_id="delta_transient_error",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"root": "/nonexistent"},
    default_args=DEFAULTS,
) as transient_error:
    RecordingJob(
        task_id="append",
        job="write",
        engine="local",
        table=ROOT + "/t",
        job_options={"rows": [{"id": 9, "part": "b"}]},
        # Attempt 1 waits at its commit for a file that never appears: TimeoutError (transient).
        test_hooks={
            "before_commit": {"signal": ROOT + "/ready", "wait_for": ROOT + "/never", "timeout_s": 0.2}
        },
        conflict_policy={"base_backoff": 0.01, "max_backoff": 0.02},
    )

with DAG(
    dag_id="delta_checkpoint_tables",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"root": "/nonexistent"},
    default_args=DEFAULTS,
) as checkpoint_tables:
    RecordingCheckpoint(task_id="checkpoint", tables=[ROOT + "/a", ROOT + "/missing", ROOT + "/b"])
    RecordingCheckpoint(
        task_id="checkpoint_skip_missing", tables=ROOT + "/a," + ROOT + "/missing", skip_missing=True
    )

with DAG(
    dag_id="delta_spark_jobs",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"root": "/nonexistent"},
) as spark_jobs:
    # An overwrite of part 'a' read by Spark from Parquet; a concurrent append lands while it waits at
    # its commit, so attempt 1 conflicts and the default policy retries it in the job.
    overwrite = RecordingJob(
        task_id="overwrite",
        job="write",
        table=ROOT + "/w",
        job_options={
            "mode": "overwrite",
            "predicate": "part = 'a'",
            "source": {"path": ROOT + "/source.parquet"},
            "isolation_level": "Serializable",
        },
        test_hooks={
            "before_commit": {
                "signal": ROOT + "/job-ready",
                "wait_for": ROOT + "/writer-done",
                "timeout_s": 120,
            }
        },
        conflict_policy={"base_backoff": 0.01, "max_backoff": 0.02},
    )
    checkpoint = RecordingCheckpoint(task_id="checkpoint", tables=[ROOT + "/a", ROOT + "/b"], engine="spark")
    overwrite >> checkpoint

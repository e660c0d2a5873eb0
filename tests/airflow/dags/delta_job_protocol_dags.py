"""Test-only DAGs for the job protocol: conflicts provoked during a job, mapped per policy.

``delta_job_policy_matrix``: one write task per conflict action; each overwrites partition 'a' of
its own table (``{{ params.root }}/<case>/t``) while a concurrent writer appends there. The jobs run
in the task's process (``runner.main(... --engine local)``: the real job code, no JVM) so the four
cases cost no spark-submit.

``delta_job_spark_conflict``: the same conflict through a real spark-submit (``local[2]``), the data
read by Spark from a Parquet ``source``; policy ``fail``.

Both record what the operator raised or returned in ``{{ params.root }}/outcomes.jsonl``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import DAG

from airflow_provider_delta.jobs.runner import main as run_job_main
from airflow_provider_delta.operators.delta import DeltaSparkJobOperator

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_delta.hooks.delta import DeltaHook
    from airflow_provider_delta.jobs.spec import JobSpec

CASES = {
    "in_job_retry": {"base_backoff": 0.01, "max_backoff": 0.05},
    "fail": {"overrides": {"ConcurrentAppendException": "fail"}},
    "airflow_retry": {"overrides": {"ConcurrentAppendException": "airflow_retry"}},
    "skip": {"overrides": {"ConcurrentAppendException": "skip"}},
}


def _barrier(folder: Path) -> dict[str, Any]:
    return {
        "before_commit": {
            "signal": str(folder / "job-ready"),
            "wait_for": str(folder / "writer-done"),
            "timeout_s": 120,
        }
    }


class RecordingJobOperator(DeltaSparkJobOperator):
    """The real operator, plus: a before-commit barrier in the spec and a record of the outcome."""

    def build_spec(self, context: Context, location: str, storage_options: dict[str, str]) -> JobSpec:
        spec = super().build_spec(context, location, storage_options)
        return replace(spec, test_hooks=_barrier(Path(location).parent))

    def execute(self, context: Context) -> dict[str, Any]:
        record: dict[str, Any] = {"task_id": self.task_id, "try_number": context["ti"].try_number}
        try:
            result = super().execute(context)
        except Exception as exc:
            record |= {"raised": type(exc).__name__, "message": str(exc)}
            raise
        else:
            record |= {"result": result}
        finally:
            root = Path(self.table).parent.parent
            with (root / "outcomes.jsonl").open("a") as out:
                out.write(json.dumps(record) + "\n")
        return result


class InProcessJobOperator(RecordingJobOperator):
    """Runs the job's entry point in the task process instead of spark-submit (no JVM)."""

    def submit_job(self, delta: DeltaHook, spec_path: Path, result_path: Path) -> None:
        run_job_main(["--spec", str(spec_path), "--result", str(result_path), "--engine", "local"])


OVERWRITE_A = {
    "mode": "overwrite",
    "predicate": "part = 'a'",
    "rows": [{"id": 7, "part": "a"}],
    "isolation_level": "Serializable",
}

with DAG(
    dag_id="delta_job_policy_matrix",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"root": "/nonexistent"},
    default_args={"retries": 1, "retry_delay": timedelta(seconds=0)},
) as policy_matrix:
    for case, policy in CASES.items():
        InProcessJobOperator(
            task_id=case,
            job="write",
            table="{{ params.root }}/" + case + "/t",
            job_options=OVERWRITE_A,
            conflict_policy=policy,
        )

with DAG(
    dag_id="delta_job_spark_conflict",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"root": "/nonexistent"},
    default_args={"retries": 1, "retry_delay": timedelta(seconds=0)},
) as spark_conflict:
    RecordingJobOperator(
        task_id="fail",
        job="write",
        table="{{ params.root }}/fail/t",
        job_options={
            "mode": "overwrite",
            "predicate": "part = 'a'",
            "source": {"path": "{{ params.root }}/source.parquet", "format": "parquet"},
            "isolation_level": "Serializable",
        },
        conflict_policy={"overrides": {"ConcurrentAppendException": "fail"}},
    )

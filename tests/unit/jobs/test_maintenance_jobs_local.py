"""The ``vacuum``, ``optimize`` and ``reorg`` jobs with ``--engine local`` (no JVM): options, results, conflicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.jobs.runner import main
from airflow_provider_delta.jobs.spec import JobResult, JobSpec
from tests.interop import assert_delta_rs_reads_identically
from tests.maintenance_tables import disk_files, expired_files_table, small_files_table, with_deletion_vector
from tests.spark_jobs.helpers import ConcurrentWriter, barrier_hooks


def run_local(spec: JobSpec, tmp_path: Path) -> tuple[int, JobResult]:
    result_path = tmp_path / f"result-{len(list(tmp_path.glob('result-*')))}.json"
    code = main(["--spec", spec.to_json(), "--result", str(result_path), "--engine", "local"])
    return code, JobResult.read(result_path)


def test_vacuum_job_dry_run_caps_the_file_list_and_commits_nothing(tmp_path: Path) -> None:
    live, expired = expired_files_table(tmp_path / "t", 40)
    options = {"retention_hours": 0, "enforce_retention_duration": False, "dry_run": True, "max_files_in_result": 5}
    code, result = run_local(JobSpec(job="vacuum", table=str(tmp_path / "t"), options=options), tmp_path)
    assert code == 0, result.error
    assert result.committed is False and result.version == 2
    metrics = result.metrics
    assert metrics["numFiles"] == 20 and len(metrics["files"]) == 5 and metrics["filesTruncated"] is True
    assert set(metrics["files"]) <= set(expired)
    assert disk_files(tmp_path / "t") == set(live) | set(expired)


def test_vacuum_job_deletes_and_records_start_and_end(tmp_path: Path) -> None:
    live, _ = expired_files_table(tmp_path / "t", 40)
    code, result = run_local(JobSpec(job="vacuum", table=str(tmp_path / "t"),
                                     options={"retention_hours": 168}), tmp_path)
    assert code == 0, result.error
    assert result.committed is True and result.version == 4
    assert result.metrics["metrics"]["numDeletedFiles"] == 20
    assert (result.metrics["startVersion"], result.metrics["endVersion"]) == (3, 4)
    assert disk_files(tmp_path / "t") == set(live)
    assert_delta_rs_reads_identically(str(tmp_path / "t"))


@pytest.mark.parametrize(
    ("job", "options", "error", "match"),
    [
        ("vacuum", {"retention_hours": 1}, "RetentionPeriodError", "DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT"),
        ("vacuum", {"retention_hours": "one"}, "JobSpecError", "must be int or float, >= 0, found 'one' (a string"),
        ("vacuum", {"retention_hours": True}, "JobSpecError", "'retention_hours' must be int or float, found True"),
        ("optimize", {"where": "id > 1"}, "PredicateError", "DELTA_NON_PARTITION_COLUMN_REFERENCE"),
        ("optimize", {"zorder_by": ["p"]}, "SchemaError", "DELTA_ZORDERING_ON_PARTITION_COLUMN"),
        ("optimize", {"zorder_by": [1]}, "JobSpecError", "must list column names"),
        ("optimize", {"target_file_size": 0}, "JobSpecError", "must be >= 1"),
        ("reorg", {"where": "x = 1"}, "PredicateError", "non-partition column 'x'"),
    ],
)
def test_bad_options_fail_the_job_with_a_typed_error(
    tmp_path: Path, job: str, options: dict[str, Any], error: str, match: str
) -> None:
    t = small_files_table(tmp_path / "t", appends=2)
    code, result = run_local(JobSpec(job=job, table=t.location, options=options), tmp_path)
    assert code == 2 and result.error is not None
    assert result.error["type"] == error and match in result.error["message"]
    assert DeltaTable.latest_version(t.location) == t.version


@pytest.mark.parametrize("job", ["vacuum", "optimize", "reorg"])
def test_a_partition_folder_is_refused_in_deltas_words(tmp_path: Path, job: str) -> None:
    t = small_files_table(tmp_path / "t", appends=1)
    code, result = run_local(JobSpec(job=job, table=f"{t.location}/p=a"), tmp_path)
    assert code == 2 and result.error is not None
    assert result.error["type"] == "TableNotFoundError"
    assert f"{job.upper()} is only supported for Delta tables" in result.error["message"]


def test_optimize_job_compacts_and_a_second_run_commits_nothing(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=4)
    code, result = run_local(JobSpec(job="optimize", table=t.location, options={"zorder_by": "x,id"}), tmp_path)
    assert code == 0, result.error
    assert result.committed and result.version == 5 and result.metrics["numRemovedFiles"] == 8
    assert result.metrics["zOrderBy"] == ["x", "id"]
    code, result = run_local(JobSpec(job="optimize", table=t.location), tmp_path)
    assert code == 0 and result.committed is False and result.version == 5
    assert_delta_rs_reads_identically(t.location)


def test_reorg_job_purges_deletion_vectors(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=2, properties={"delta.enableDeletionVectors": "true"})
    with_deletion_vector(t, t.files()[0], [0, 1])
    code, result = run_local(JobSpec(job="reorg", table=t.location), tmp_path)
    assert code == 0, result.error
    assert result.committed and result.metrics["numDeletionVectorsRemoved"] == 1
    assert_delta_rs_reads_identically(t.location)


def test_optimize_job_retries_after_a_concurrent_delete_and_plans_again(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=4)
    writer = ConcurrentWriter(Path(t.location), tmp_path, lambda table: table.delete("id = 0"))
    writer.start()
    spec = JobSpec(job="optimize", table=t.location, test_hooks=barrier_hooks(tmp_path),
                   conflict_policy={"base_backoff": 0, "jitter": 0})
    code, result = run_local(spec, tmp_path)
    assert writer.join_checked() == t.version + 1
    assert code == 0, result.error
    assert result.attempts == 2 and result.version == t.version + 2
    assert result.metrics["numRemovedFiles"] == 8
    assert_delta_rs_reads_identically(t.location)


def test_optimize_job_conflict_fails_when_the_policy_says_so(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=4)
    writer = ConcurrentWriter(Path(t.location), tmp_path, lambda table: table.delete("id = 0"))
    writer.start()
    spec = JobSpec(job="optimize", table=t.location, test_hooks=barrier_hooks(tmp_path),
                   conflict_policy={"overrides": {"ConcurrentDeleteReadException": "fail"}})
    code, result = run_local(spec, tmp_path)
    writer.join_checked()
    assert code == 2 and result.error is not None
    assert result.error["type"] == "ConcurrentDeleteReadException" and result.error["action"] == "fail"
    assert DeltaTable.latest_version(t.location) == t.version + 1


def test_optimize_job_ignores_a_concurrent_blind_append(tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=4, properties={"delta.isolationLevel": "Serializable"})
    from tests.maintenance_tables import batch

    writer = ConcurrentWriter(Path(t.location), tmp_path, lambda table: table.append(batch(range(900, 905), "a")))
    writer.start()
    code, result = run_local(JobSpec(job="optimize", table=t.location, test_hooks=barrier_hooks(tmp_path)), tmp_path)
    writer.join_checked()
    assert code == 0 and result.attempts == 1 and result.version == t.version + 2
    assert_delta_rs_reads_identically(t.location)

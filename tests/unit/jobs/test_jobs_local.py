"""The jobs run in-process (``runner.main(... --engine local)``): same code as under spark-submit, no JVM.

Conflicts are real: a second writer commits through the engine while the job waits at its
``before_commit`` barrier, and the job's commit runs Delta's conflict checker against it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import deltalake
import pyarrow as pa
import pytest

from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.jobs.runner import main
from airflow_provider_delta.jobs.spec import JobResult, JobSpec
from tests.spark_jobs.helpers import (
    SCHEMA,
    ConcurrentWriter,
    append_to_part_a,
    barrier_hooks,
    make_table,
    orphan_files,
    overwrite_part_a_spec_options,
)

if TYPE_CHECKING:
    from pathlib import Path


def run_local(spec: JobSpec, tmp_path: Path) -> tuple[int, JobResult]:
    result_path = tmp_path / f"result-{len(list(tmp_path.glob('result-*')))}.json"
    code = main(["--spec", spec.to_json(), "--result", str(result_path), "--engine", "local"])
    return code, JobResult.read(result_path)


def test_checkpoint_job_writes_a_checkpoint_delta_rs_reads(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", commits=4)
    code, result = run_local(JobSpec(job="checkpoint", table=str(table)), tmp_path)
    assert code == 0, result
    assert result.status == "success"
    assert result.version == 4
    assert result.engine["name"] == "local"
    checkpoint = table / result.metrics["checkpointPath"]
    assert checkpoint.name == "00000000000000000004.checkpoint.parquet"
    assert checkpoint.is_file()
    assert json.loads((table / "_delta_log" / "_last_checkpoint").read_text())["version"] == 4
    assert result.metrics["numAddFiles"] == len(DeltaTable(str(table)).files()) == 4
    rs = deltalake.DeltaTable(str(table))
    assert rs.version() == 4
    assert sorted(rs.to_pyarrow_table()["id"].to_pylist()) == [0, 1, 2, 3]


def test_checkpoint_job_cleans_up_expired_log_files_when_asked(tmp_path: Path) -> None:
    table = DeltaTable.create(
        str(tmp_path / "t"), SCHEMA, properties={"delta.logRetentionDuration": "interval 0 seconds"}
    )
    for i in range(3):
        table.append(pa.table({"id": [i], "part": ["a"]}, schema=SCHEMA))
    first = JobSpec(job="checkpoint", table=table.location, options={"cleanup_log": False})
    _, kept = run_local(first, tmp_path)
    assert kept.metrics["numDeletedLogFiles"] == 0
    table.append(pa.table({"id": [9], "part": ["b"]}, schema=SCHEMA))
    _, cleaned = run_local(JobSpec(job="checkpoint", table=table.location), tmp_path)
    assert cleaned.version == 4
    assert cleaned.metrics["numDeletedLogFiles"] > 0
    assert not (tmp_path / "t" / "_delta_log" / "00000000000000000000.json").exists()
    assert deltalake.DeltaTable(table.location).version() == 4


def test_write_job_with_the_same_app_id_and_version_writes_once(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", commits=1)
    spec = JobSpec(
        job="write",
        table=str(table),
        options={"rows": [{"id": 42, "part": "b"}]},
        app_id="airflow:d:t:r1",
        app_version=0,
    )
    _, first = run_local(spec, tmp_path)
    _, retry = run_local(spec, tmp_path)
    assert (first.committed, first.version) == (True, 2)
    assert (retry.committed, retry.version) == (False, 2)
    assert retry.metrics["alreadyCommitted"] is True
    ids = sorted(deltalake.DeltaTable(str(table)).to_pyarrow_table()["id"].to_pylist())
    assert ids == [0, 42]
    _, next_run = run_local(JobSpec(**{**spec.__dict__, "app_id": "airflow:d:t:r2"}), tmp_path)
    assert next_run.committed is True


def test_write_job_replace_where_on_a_cdf_table_records_the_change_rows(tmp_path: Path) -> None:
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.enableChangeDataFeed": "true"})
    table.append(pa.table({"id": [1, 2, 3], "part": ["a", "a", "a"]}, schema=SCHEMA))
    spec = JobSpec(
        job="write",
        table=table.location,
        options={"mode": "overwrite", "predicate": "id >= 2", "rows": [{"id": 5, "part": "a"}]},
    )
    code, result = run_local(spec, tmp_path)
    assert code == 0, result
    changes = DeltaTable(table.location).changes(starting_version=result.version)
    got = sorted(zip(changes["id"].to_pylist(), changes["_change_type"].to_pylist(), strict=True))
    assert got == [(2, "delete"), (3, "delete"), (5, "insert")]
    rs = deltalake.DeltaTable(table.location).load_cdf(starting_version=result.version).read_all()
    assert sorted(zip(rs["id"].to_pylist(), rs["_change_type"].to_pylist(), strict=True)) == got


def conflicting_overwrite(
    tmp_path: Path, policy: dict[str, Any] | None
) -> tuple[JobResult, ConcurrentWriter]:
    table = make_table(tmp_path / "t")
    spec = JobSpec(
        job="write",
        table=str(table),
        options=overwrite_part_a_spec_options(),
        conflict_policy=policy,
        test_hooks=barrier_hooks(tmp_path),
    )
    writer = ConcurrentWriter(table, tmp_path, append_to_part_a)
    writer.start()
    _, result = run_local(spec, tmp_path)
    assert writer.join_checked() == 4
    return result, writer


def test_concurrent_append_into_the_overwritten_partition_is_retried_in_the_job_by_default(
    tmp_path: Path,
) -> None:
    result, _ = conflicting_overwrite(tmp_path, {"base_backoff": 0.01, "max_backoff": 0.05})
    assert result.status == "success", result.error
    assert result.attempts == 2
    assert result.version == 5
    # The retry started from version 4, so the concurrent row was replaced too.
    assert deltalake.DeltaTable(str(tmp_path / "t")).to_pyarrow_table()["id"].to_pylist() == [7]
    # The losing attempt's data file was deleted before the retry wrote its own.
    assert orphan_files(tmp_path / "t") == set()


@pytest.mark.parametrize("action", ["fail", "airflow_retry", "skip"])
def test_concurrent_append_is_reported_with_the_policy_action_and_leaves_the_winner(
    tmp_path: Path, action: str
) -> None:
    result, _ = conflicting_overwrite(tmp_path, {"overrides": {"ConcurrentAppendException": action}})
    assert result.status == "error"
    assert result.error is not None
    assert result.error["type"] == "ConcurrentAppendException"
    assert result.error["action"] == action
    assert result.error["attempts"] == 1
    rs = deltalake.DeltaTable(str(tmp_path / "t"))
    assert rs.version() == 4
    assert sorted(rs.to_pyarrow_table()["id"].to_pylist()) == [0, 1, 2, 100]
    assert orphan_files(tmp_path / "t") == set()  # the refused attempt's files are gone too


def test_exhausted_in_job_retries_report_every_attempt(tmp_path: Path) -> None:
    result, _ = conflicting_overwrite(tmp_path, {"max_attempts": 1})
    assert result.error is not None
    assert (result.error["type"], result.error["action"], result.error["attempts"]) == (
        "ConcurrentAppendException",
        "retry",
        1,
    )


def test_a_concurrent_writer_with_the_same_app_id_fails_fast(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t")
    app = {"app_id": "airflow:d:load:run1", "app_version": 0}
    spec = JobSpec(
        job="write",
        table=str(table),
        options={"rows": [{"id": 5, "part": "b"}]},
        test_hooks=barrier_hooks(tmp_path),
        **app,
    )

    def same_app(t: DeltaTable) -> int | None:
        return t.append(pa.table({"id": [6], "part": ["b"]}, schema=SCHEMA), **app)

    writer = ConcurrentWriter(table, tmp_path, same_app)
    writer.start()
    _, result = run_local(spec, tmp_path)
    assert writer.join_checked() == 4
    assert result.error is not None
    assert (result.error["type"], result.error["action"]) == ("ConcurrentTransactionException", "fail")
    assert sorted(deltalake.DeltaTable(str(table)).to_pyarrow_table()["id"].to_pylist()) == [0, 1, 2, 6]


def test_source_option_without_spark_fails_with_a_clear_message(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", commits=0)
    spec = JobSpec(job="write", table=str(table), options={"source": {"path": str(tmp_path)}})
    code, result = run_local(spec, tmp_path)
    assert code == 2
    assert result.error is not None
    assert result.error["action"] == "fail"
    assert "option 'source' needs engine 'spark'" in result.error["message"]

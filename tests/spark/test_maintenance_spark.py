"""VACUUM, OPTIMIZE/ZORDER and REORG with the Spark executor: the data work in Spark tasks.

The jobs run in-process (``run_spec(spec, spark)``, the code spark-submit runs) on ``local[2]`` and on
a real standalone cluster, where the rewrites and the deletes are shown to run in the executors'
Python workers on both workers. delta-rs reads every table afterwards with our rows.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_delta.core.commands.optimize import optimize
from airflow_provider_delta.core.commands.reorg import reorg
from airflow_provider_delta.core.commands.vacuum import vacuum
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.jobs.runner import run_spec
from airflow_provider_delta.jobs.spec import JobSpec
from airflow_provider_delta.spark import SparkExecutor
from airflow_provider_delta.spark.executor import DELETE_JOB_GROUP, REWRITE_JOB_GROUP, SPARK_DELETE_THRESHOLD
from tests.interop import assert_delta_rs_reads_identically
from tests.maintenance_tables import (
    disk_files,
    expired_files_table,
    rows_of,
    small_files_table,
    with_deletion_vector,
)
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]


def _jobs_in_group(spark: SparkSession, group: str) -> list[int]:
    return list(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def _tasks_of(spark: SparkSession, job_id: int) -> int:
    tracker = spark.sparkContext.statusTracker()
    info = tracker.getJobInfo(job_id)
    assert info is not None
    stages = [tracker.getStageInfo(s) for s in info.stageIds]
    return sum(stage.numTasks for stage in stages if stage is not None)


def test_optimize_and_zorder_rewrite_bins_in_spark_tasks(spark: SparkSession, tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=5, partitions=("a", "b", "c"))
    local = small_files_table(tmp_path / "local", appends=5, partitions=("a", "b", "c"))
    before = rows_of(t.to_arrow())
    jobs_before = len(_jobs_in_group(spark, REWRITE_JOB_GROUP))
    result = optimize(t.snapshot, executor=SparkExecutor(spark))
    assert result["numRemovedFiles"] == 15 and result["numAddedFiles"] == 3
    assert len(_jobs_in_group(spark, REWRITE_JOB_GROUP)) == jobs_before + 1
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None  # restored
    # The same files as the local executor writes (same rows per file), committed the same way.
    assert local.optimize()["numAddedFiles"] == 3
    assert rows_of(DeltaTable(t.location).to_arrow()) == before
    zordered = optimize(DeltaTable(t.location).snapshot, zorder_by=["x"], executor=SparkExecutor(spark))
    assert zordered["numRemovedFiles"] == 3
    assert rows_of(DeltaTable(t.location).to_arrow()) == before
    assert_delta_rs_reads_identically(t.location)


def test_reorg_purges_a_spark_written_dv_table_in_spark_tasks(
    spark: SparkSession, copy_table: Callable[[str], Path]
) -> None:
    location = str(copy_table("golden/dv-partitioned-with-checkpoint"))
    before = rows_of(DeltaTable(location).to_arrow())
    result = reorg(DeltaTable(location).snapshot, executor=SparkExecutor(spark))
    assert result["numDeletionVectorsRemoved"] > 0
    after = DeltaTable(location)
    assert not any(f.deletion_vector for f in after.files())
    assert rows_of(after.to_arrow()) == before
    assert_delta_rs_reads_identically(location)


def test_vacuum_job_spreads_a_long_delete_list_over_spark_tasks(spark: SparkSession, tmp_path: Path) -> None:
    n = 2 * SPARK_DELETE_THRESHOLD + 400
    live, expired = expired_files_table(tmp_path / "t", n)
    jobs_before = _jobs_in_group(spark, DELETE_JOB_GROUP)
    result = run_spec(
        JobSpec(job="vacuum", table=str(tmp_path / "t"), options={"retention_hours": 168}), spark
    )
    assert result.status == "success", result.error
    assert result.metrics["numFiles"] == len(expired) and len(result.metrics["files"]) == 1000
    new_jobs = [j for j in _jobs_in_group(spark, DELETE_JOB_GROUP) if j not in jobs_before]
    assert len(new_jobs) == 1 and _tasks_of(spark, new_jobs[0]) > 1
    assert disk_files(tmp_path / "t") == set(live)
    assert_delta_rs_reads_identically(str(tmp_path / "t"))


def test_a_short_delete_list_stays_in_the_driver(spark: SparkSession, tmp_path: Path) -> None:
    live, _ = expired_files_table(tmp_path / "t", 20)
    jobs_before = _jobs_in_group(spark, DELETE_JOB_GROUP)
    vacuum(DeltaTable(str(tmp_path / "t")).snapshot, 168, executor=SparkExecutor(spark))
    assert _jobs_in_group(spark, DELETE_JOB_GROUP) == jobs_before
    assert disk_files(tmp_path / "t") == set(live)


def test_optimize_job_under_spark_commits_once(spark: SparkSession, tmp_path: Path) -> None:
    t = small_files_table(tmp_path / "t", appends=3)
    result = run_spec(JobSpec(job="optimize", table=t.location, options={"zorder_by": ["id"]}), spark)
    assert result.status == "success", result.error
    assert result.engine["name"] == "spark" and result.committed and result.version == t.version + 1
    assert_delta_rs_reads_identically(t.location)


# ------------------------------------------------------------------------------------- a real cluster


@pytest.mark.cluster
def test_rewrites_and_deletes_run_on_both_workers_of_a_cluster(
    cluster_spark: SparkSession, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()

    def record(actions: Any) -> None:
        (marks / f"{os.getpid()}-{len(list(marks.iterdir()))}.json").write_text(
            json.dumps({"cwd": os.getcwd()})
        )

    def workers() -> set[str]:
        cwds = {json.loads(p.read_text())["cwd"] for p in marks.glob("*.json")}
        return {c.split("/work/")[1].split("/")[0] for c in cwds if "/work/worker-" in c}

    executor = SparkExecutor(cluster_spark, task_hook=record)
    t = small_files_table(
        tmp_path / "t",
        appends=4,
        partitions=("a", "b", "c", "d"),
        properties={"delta.enableDeletionVectors": "true"},
    )
    with_deletion_vector(t, t.files()[0], [0])
    before = rows_of(DeltaTable(t.location).to_arrow())
    assert optimize(DeltaTable(t.location).snapshot, executor=executor)["numAddedFiles"] == 4
    assert workers() == {"worker-1", "worker-2"}
    assert rows_of(DeltaTable(t.location).to_arrow()) == before
    assert_delta_rs_reads_identically(t.location)

    for p in marks.iterdir():
        p.unlink()
    live, _ = expired_files_table(tmp_path / "v", 2 * SPARK_DELETE_THRESHOLD + 200)
    result = vacuum(DeltaTable(str(tmp_path / "v")).snapshot, 168, executor=executor)
    assert result.metrics["numDeletedFiles"] == SPARK_DELETE_THRESHOLD + 100
    assert workers() == {"worker-1", "worker-2"}
    assert disk_files(tmp_path / "v") == set(live)

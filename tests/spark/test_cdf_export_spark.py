"""CDF exports on Spark (local[2]): executors write the same files as the local engine, and the Delta sink."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.commands.cdf_export import export_changes
from airflow_provider_delta.jobs.runner import run_spec
from airflow_provider_delta.jobs.spec import JobSpec
from airflow_provider_delta.spark.cdf_export import SparkExportEngine
from tests.unit.core.cdf_export.helpers import busy_table, read_file_sink, sorted_rows, tree

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(("fmt", "envelope"), [("parquet", "flat"), ("jsonl", "debezium")])
def test_spark_executors_write_the_same_bytes_as_the_local_engine(
    spark: SparkSession, tmp_path: Path, fmt: str, envelope: str
) -> None:
    t = busy_table(tmp_path / "src")
    keys = ["id"] if envelope == "debezium" else None
    local = export_changes(
        str(tmp_path / "src"), str(tmp_path / "local"), format=fmt, envelope=envelope, key_columns=keys
    )
    on_spark = export_changes(
        str(tmp_path / "src"),
        str(tmp_path / "spark"),
        format=fmt,
        envelope=envelope,
        key_columns=keys,
        engine=SparkExportEngine(spark),
    )
    assert on_spark.to_dict() | {"sink": ""} == local.to_dict() | {"sink": ""}
    assert tree(tmp_path / "spark") == tree(tmp_path / "local")
    if fmt == "parquet":
        assert read_file_sink(tmp_path / "spark").to_pylist() == t.changes(0).to_pylist()


def test_spark_writes_the_delta_sink_in_tasks_and_commits_once(spark: SparkSession, tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src")
    engine = SparkExportEngine(spark)
    first = export_changes(
        str(tmp_path / "src"), str(tmp_path / "sink"), format="delta", ending_version=2, engine=engine
    )
    second = export_changes(str(tmp_path / "src"), str(tmp_path / "sink"), format="delta", engine=engine)
    assert (first.sink_version, second.sink_version, second.start, second.end) == (0, 1, 3, 5)
    assert second.rows == t.changes(3).num_rows
    assert sorted_rows(DeltaTable(str(tmp_path / "sink")).to_arrow()) == sorted_rows(t.changes(0))


def test_the_cdf_export_job_resumes_and_reports_the_export_result(
    spark: SparkSession, tmp_path: Path
) -> None:
    t = busy_table(tmp_path / "src")
    spec = JobSpec(
        job="cdf_export",
        table=str(tmp_path / "src"),
        options={"sink": str(tmp_path / "out"), "max_versions": 4},
    )
    first = run_spec(spec, spark)
    second = run_spec(spec, spark)
    third = run_spec(spec, spark)
    assert first.status == "success", first.error
    ranges = [(r.metrics["start"], r.metrics["end"]) for r in (first, second)]
    assert ranges == [(0, 3), (4, 5)]
    assert (third.committed, third.metrics["skipped"]) == (False, True)
    assert first.engine["name"] == "spark"
    assert read_file_sink(tmp_path / "out").to_pylist() == t.changes(0).to_pylist()

"""OpenLineage of the Delta operators: the OperatorLineage their get_openlineage_facets_on_complete returns."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.jobs.runner import run_spec
from airflow_provider_delta.operators.cdf_export import DeltaCDFExportOperator
from airflow_provider_delta.operators.delta import DeltaCheckpointOperator, DeltaSparkJobOperator
from airflow_provider_delta.operators.lineage import dataset_naming
from tests.unit.core.cdf_export.helpers import busy_table

if TYPE_CHECKING:
    from pathlib import Path

pytest.importorskip("airflow.providers.openlineage")


def _run(op: DeltaSparkJobOperator, location: str) -> None:
    """The job the operator would submit, run in this process; the operator records its lineage."""
    spec = op.build_spec({"ti": None}, location, {})  # type: ignore[arg-type]
    result = run_spec(spec)
    assert result.status == "success", result.error
    op.delta_lineage = op.lineage(location, result.to_dict(), spec)


def test_a_cdf_export_reads_the_source_at_its_end_and_writes_the_sink_version(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src")
    op = DeltaCDFExportOperator(
        task_id="export",
        table=str(tmp_path / "src"),
        sink=str(tmp_path / "sink"),
        format="delta",
        engine="local",
    )
    _run(op, str(tmp_path / "src"))
    lineage = op.get_openlineage_facets_on_complete(None)
    [source], [sink] = lineage.inputs, lineage.outputs
    assert (source.namespace, source.name) == ("file", str(tmp_path / "src"))
    assert source.facets["version"].datasetVersion == str(t.version)
    assert [f.name for f in source.facets["schema"].fields] == ["id", "p", "v"]
    assert source.facets["schema"].fields[0].type == "long"
    assert source.inputFacets["inputStatistics"].rowCount == t.changes(0).num_rows
    assert (sink.name, sink.facets["version"].datasetVersion) == (str(tmp_path / "sink"), "0")
    assert [f.name for f in sink.facets["schema"].fields][-3:] == [
        "_change_type",
        "_commit_version",
        "_commit_timestamp",
    ]
    stats = sink.outputFacets["outputStatistics"]
    assert stats.rowCount == t.changes(0).num_rows and stats.size > 0 and stats.fileCount == 1


def test_a_write_job_reads_its_source_and_writes_the_table_with_commit_metrics(tmp_path: Path) -> None:
    busy_table(tmp_path / "t")
    pq.write_table(pa.table({"id": [9], "p": ["x"], "v": [9]}), tmp_path / "in.parquet")
    op = DeltaSparkJobOperator(
        task_id="load",
        job="write",
        table=str(tmp_path / "t"),
        job_options={"rows": [{"id": 9, "p": "x", "v": 9}]},
        idempotent=False,
    )
    _run(op, str(tmp_path / "t"))
    op.job_options = {"source": {"path": "s3a://landing/day=1/", "format": "parquet"}}
    spec = op.build_spec({"ti": None}, str(tmp_path / "t"), {})  # type: ignore[arg-type]
    lineage = op.get_openlineage_facets_on_complete(None)
    [table] = lineage.outputs
    assert table.facets["version"].datasetVersion == "6"
    assert table.outputFacets["outputStatistics"].rowCount == 1
    op.delta_lineage = op.lineage(str(tmp_path / "t"), {"version": 7, "committed": True, "metrics": {}}, spec)
    [source] = op.get_openlineage_facets_on_complete(None).inputs
    assert (source.namespace, source.name) == ("s3://landing", "day=1/")


def test_a_checkpoint_reads_the_table_at_the_checkpointed_version(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "t")
    op = DeltaCheckpointOperator(task_id="checkpoint", table=str(tmp_path / "t"))
    _run(op, str(tmp_path / "t"))
    lineage = op.get_openlineage_facets_on_complete(None)
    assert lineage.outputs == []
    assert lineage.inputs[0].facets["version"].datasetVersion == str(t.version)


def test_naming_follows_openlineage_conventions() -> None:
    assert dataset_naming("gs://b/x/y") == ("gs://b", "x/y")
    assert dataset_naming("file:///data/t") == ("file", "/data/t")

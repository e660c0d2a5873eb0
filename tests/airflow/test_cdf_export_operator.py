"""DeltaCDFExportOperator with a real Airflow (``dag.test()`` on SQLite): XCom, asset events, resume, errors."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from tests.airflow.helpers import xcom_value
from tests.airflow_support import TEST_DAGS_FOLDER
from tests.unit.core.cdf_export.helpers import SCHEMA, busy_table, read_file_sink, sorted_rows

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration


def _dags(root: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("DELTA_TEST_CDF_ROOT", str(root))
    path = TEST_DAGS_FOLDER / "delta_cdf_export_dags.py"
    spec = importlib.util.spec_from_file_location("delta_cdf_export_dags", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.pop("delta_cdf_export_dags", None)
    spec.loader.exec_module(module)
    return module


def _asset_events(uri: str) -> list[dict[str, Any]]:
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.execute(
            select(AssetEvent.extra)
            .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
            .where(AssetModel.uri == uri)
            .order_by(AssetEvent.id)
        ).all()
    return [dict(r[0] or {}) for r in rows]


@pytest.mark.usefixtures("airflow_db")
def test_the_operator_exports_resumes_and_puts_the_range_on_the_sink_asset(tmp_path: Path, monkeypatch):
    t = busy_table(tmp_path / "src")
    dag = _dags(tmp_path, monkeypatch).local_dag
    run = dag.test()
    assert str(run.state) == "success"
    first = xcom_value(dag.dag_id, run.run_id, "export")
    assert (first["start"], first["end"], first["versions"], first["skipped"]) == (0, 5, 6, False)
    assert first["rows"] == t.changes(0).num_rows
    job = xcom_value(dag.dag_id, run.run_id, "export", key="delta_job_result")
    assert job["job"] == "cdf_export" and job["engine"]["name"] == "local"
    t.append(pa.table({"id": [8], "p": ["z"], "v": [80]}, schema=SCHEMA))
    second = dag.test()
    assert xcom_value(dag.dag_id, second.run_id, "export")["start"] == 6
    third = dag.test()  # a duplicated trigger: nothing new, nothing written
    assert xcom_value(dag.dag_id, third.run_id, "export")["skipped"] is True
    assert (
        read_file_sink(tmp_path / "sink").to_pylist()
        == DeltaTable(str(tmp_path / "src")).changes(0).to_pylist()
    )
    events = _asset_events(f"file://{tmp_path}/sink")
    assert [(e["start"], e["end"], e["skipped"]) for e in events] == [
        (0, 5, False),
        (6, 6, False),
        (7, 6, True),
    ]


@pytest.mark.usefixtures("airflow_db")
def test_a_templated_range_exports_it_and_a_gap_fails_the_task(tmp_path: Path, monkeypatch):
    t = busy_table(tmp_path / "src")
    dag = _dags(tmp_path, monkeypatch).range_dag
    ok = dag.test(run_conf={"start": 0, "end": 2})
    assert str(ok.state) == "success"
    assert (
        xcom_value(dag.dag_id, ok.run_id, "export")["end"],
        DeltaTable(str(tmp_path / "range_sink")).version,
    ) == (2, 0)
    gap = dag.test(run_conf={"start": 4, "end": 5})
    assert str(gap.state) == "failed"
    error = xcom_value(dag.dag_id, gap.run_id, "export", key="delta_job_result")["error"]
    assert error["type"] == "ExportRangeError" and "gap" in error["message"]
    assert sorted_rows(DeltaTable(str(tmp_path / "range_sink")).to_arrow()) == sorted_rows(t.changes(0, 2))


@pytest.mark.spark
@pytest.mark.usefixtures("airflow_db")
def test_the_operator_runs_the_export_through_spark_submit(tmp_path: Path, monkeypatch):
    t = busy_table(tmp_path / "src")
    bin_dir = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    dag = _dags(tmp_path, monkeypatch).spark_dag
    run = dag.test()
    assert str(run.state) == "success"
    result = xcom_value(dag.dag_id, run.run_id, "export")
    assert (result["start"], result["end"], result["sink_version"]) == (0, 5, 0)
    assert xcom_value(dag.dag_id, run.run_id, "export", key="delta_job_result")["engine"]["name"] == "spark"
    assert sorted_rows(DeltaTable(str(tmp_path / "spark_sink")).to_arrow()) == sorted_rows(t.changes(0))

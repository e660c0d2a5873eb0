"""DeltaVacuumOperator, DeltaOptimizeOperator and DeltaReorgOperator with a real Airflow (``dag.test()``).

The jobs run in the task process (tests/airflow/dags/delta_maintenance_operator_dags.py); the example
DAG test (tests/system) runs the same operators through spark-submit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_delta.core.table import DeltaTable
from tests.airflow.helpers import xcom_value
from tests.interop import assert_delta_rs_reads_identically
from tests.maintenance_tables import disk_files, make_old, small_files_table, with_deletion_vector

pytestmark = pytest.mark.integration


def _table(root: Path) -> DeltaTable:
    t = small_files_table(root / "t", appends=3, properties={"delta.enableDeletionVectors": "true"})
    b_file = next(f for f in t.files() if f.partition_values["p"] == "b")
    with_deletion_vector(t, b_file, [0, 1])
    (root / "t" / "p=b" / "orphan.parquet").write_bytes(b"junk")
    make_old(root / "t")
    return t.refresh()


def test_maintenance_operators_optimize_purge_and_vacuum_a_table(airflow_db: Path, tmp_path: Path) -> None:
    from tests.airflow.dags.delta_maintenance_operator_dags import operators_dag

    t = _table(tmp_path)
    run = operators_dag.test(run_conf={"root": str(tmp_path), "part": "a"})
    assert str(run.state) == "success", {ti.task_id: ti.state for ti in run.get_task_instances()}
    results = {
        task: xcom_value(operators_dag.dag_id, run.run_id, task)
        for task in ("optimize", "reorg", "vacuum_dry_run", "vacuum")
    }

    optimize = results["optimize"]
    assert optimize["status"] == "success" and optimize["committed"] is True
    assert optimize["metrics"]["numRemovedFiles"] == 3 and optimize["metrics"]["zOrderBy"] == ["x"]
    assert optimize["metrics"]["totalConsideredFiles"] == 3  # the template picked partition 'a' only

    reorg = results["reorg"]
    assert reorg["committed"] is True and reorg["metrics"]["numDeletionVectorsRemoved"] == 1

    dry = results["vacuum_dry_run"]["metrics"]
    expected = 3 + 1 + 1 + 1  # p=a's compacted files, the purged file, its DV, the orphan
    assert dry["dryRun"] is True and dry["numFiles"] == expected
    assert len(dry["files"]) == 3 and dry["filesTruncated"] is True

    vacuum = results["vacuum"]["metrics"]
    assert vacuum["numFiles"] == expected and vacuum["metrics"]["numDeletedFiles"] == expected
    assert results["vacuum"]["version"] == vacuum["endVersion"]
    latest = DeltaTable(t.location)
    assert [h["operation"] for h in latest.history(4)] == ["VACUUM END", "VACUUM START", "REORG", "OPTIMIZE"]
    assert disk_files(Path(t.location)) == {f.path for f in latest.files()}
    assert_delta_rs_reads_identically(t.location)


def test_bad_input_fails_the_tasks_with_deltas_message_and_changes_nothing(
    airflow_db: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.airflow.dags.delta_maintenance_operator_dags import bad_input_dag

    t = _table(tmp_path)
    before = disk_files(Path(t.location))
    run = bad_input_dag.test(run_conf={"root": str(tmp_path)})
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states == {"vacuum_too_short": "failed", "optimize_data_column": "failed"}
    for task, message in (
        ("vacuum_too_short", "DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT"),
        ("optimize_data_column", "DELTA_NON_PARTITION_COLUMN_REFERENCE"),
    ):
        failed = xcom_value(bad_input_dag.dag_id, run.run_id, task, key="delta_job_result")
        assert failed["status"] == "error" and message in failed["error"]["message"]
    assert DeltaTable.latest_version(t.location) == t.version
    assert disk_files(Path(t.location)) == before


@pytest.mark.parametrize(
    ("operator", "kwargs", "match"),
    [
        ("DeltaVacuumOperator", {"retention_hours": -1}, "option 'retention_hours' must be >= 0, found -1"),
        ("DeltaVacuumOperator", {"retention_hours": True}, "option 'retention_hours' must be int or float"),
        ("DeltaVacuumOperator", {"retention_hours": "a week"}, r"found 'a week' \(a string that does not convert"),
        ("DeltaVacuumOperator", {"max_files_in_result": -5}, "option 'max_files_in_result' must be >= 0"),
        ("DeltaOptimizeOperator", {"zorder_by": 7}, "option 'zorder_by' must be list or str, found 7"),
        ("DeltaOptimizeOperator", {"target_file_size": 0}, "option 'target_file_size' must be >= 1, found 0"),
        ("DeltaOptimizeOperator", {"zorder": ["x"]}, r"unknown option 'zorder' \(did you mean 'zorder_by'\?\)"),
    ],
)
def test_bad_arguments_are_refused_when_the_dag_is_parsed(operator: str, kwargs: dict, match: str) -> None:
    from airflow_provider_delta.exceptions import JobSpecError
    from airflow_provider_delta.operators import maintenance

    with pytest.raises(JobSpecError, match=match) as info:
        getattr(maintenance, operator)(task_id="t", table="/data/t", **kwargs)
    assert str(info.value).startswith(f"Cannot create task 't' (job '{operator[5:-8].lower()}'): ")


def test_operators_submit_their_job_with_the_options_and_no_idempotency_key() -> None:
    from airflow_provider_delta.operators.maintenance import (
        DeltaOptimizeOperator,
        DeltaReorgOperator,
        DeltaVacuumOperator,
    )

    vacuum = DeltaVacuumOperator(task_id="v", table="/data/t", retention_hours=200, lite=True)
    assert (vacuum.job, vacuum.job_options) == ("vacuum", {
        "retention_hours": 200, "dry_run": False, "lite": True, "enforce_retention_duration": True,
        "max_files_in_result": 1000, "respect_exports": True,
    })
    optimize = DeltaOptimizeOperator(task_id="o", table="/data/t", zorder_by=["a", "b"], target_file_size=1 << 20)
    assert (optimize.job, optimize.job_options) == ("optimize", {"target_file_size": 1 << 20, "zorder_by": ["a", "b"]})
    reorg = DeltaReorgOperator(task_id="r", table="/data/t", where="d = '{{ ds }}'")
    assert (reorg.job, reorg.job_options) == ("reorg", {"where": "d = '{{ ds }}'"})
    assert not any(op.definition.app_transaction for op in (vacuum, optimize, reorg))
    assert vacuum.engine == optimize.engine == reorg.engine == "spark"  # the default
    assert "where" in reorg.template_fields and "job_options" not in reorg.template_fields
    assert "dry_run_" in vacuum.template_fields and callable(vacuum.dry_run)  # BaseOperator.dry_run stays


def test_a_list_of_tables_is_vacuumed_in_one_job_and_a_missing_table_hides_no_other(
    airflow_db: Path, tmp_path: Path
) -> None:
    from tests.airflow.dags.delta_maintenance_operator_dags import tables_dag

    for name in ("a", "b"):
        _table(tmp_path / name)
    run = tables_dag.test(run_conf={"root": str(tmp_path)})
    (ti,) = run.get_task_instances()
    assert ti.state == "failed"  # one table of three is missing
    result = xcom_value(tables_dag.dag_id, run.run_id, "vacuum_tables", key="delta_job_result")
    assert [(t["table"], t["status"]) for t in result["tables"]] == [
        (str(tmp_path / "a" / "t"), "success"), (str(tmp_path / "missing"), "error"),
        (str(tmp_path / "b" / "t"), "success"),
    ]
    for name in ("a", "b"):
        root = tmp_path / name / "t"
        latest = DeltaTable(str(root))
        assert [h["operation"] for h in latest.history(2)] == ["VACUUM END", "VACUUM START"]
        assert "p=b/orphan.parquet" not in disk_files(root)
        assert {f.path for f in latest.files()} <= disk_files(root)
    assert [t["metrics"]["files"] for t in result["tables"][::2]] == [["p=b/orphan.parquet"]] * 2
    assert result["tables"][1]["error"]["kind"] == "permanent"

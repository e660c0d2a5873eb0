"""How Delta operators end, with a real Airflow (dag.test() on SQLite) and real tables.

Permanent errors fail the task at once with the engine's message (no retries, never called a
conflict); transient ones are retried; a list of tables is one job with one result per table.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_delta.core.table import DeltaTable
from tests.airflow.helpers import xcom_value
from tests.spark_jobs.helpers import make_table

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration


def outcomes(root: Path) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for line in (root / "outcomes.jsonl").read_text().splitlines():
        record = json.loads(line)
        found.setdefault(record["task_id"], []).append(record)
    return found


def states(run: Any) -> dict[str, str]:
    return {ti.task_id: ti.state for ti in run.get_task_instances()}


def data_files(table: Path) -> set[str]:
    return {str(p.relative_to(table)) for p in table.rglob("*.parquet") if "_delta_log" not in p.parts}


def test_permanent_errors_fail_at_once_with_the_engines_message(airflow_db: Path, tmp_path: Path) -> None:
    from tests.airflow.dags.delta_operator_outcomes_dags import permanent_errors

    table = make_table(tmp_path / "t", commits=1)
    run = permanent_errors.test(run_conf={"root": str(tmp_path)})
    seen = outcomes(tmp_path)

    assert states(run) == {"bad_predicate": "failed", "unknown_column": "failed", "missing_table": "failed"}
    for task_id, error in [
        ("bad_predicate", "PredicateError"),
        ("unknown_column", "SchemaMismatchError"),
        ("missing_table", "TableNotFoundError"),
    ]:
        (only,) = seen[task_id]  # one try: retries=2 unused
        assert only["raised"] == "AirflowFailException", only
        message = only["message"]
        assert message.startswith(f"{error}: "), message
        assert "conflict" not in message.lower()
        assert "Cannot run Delta job" not in message and message.count("Cannot ") == 1, message
        assert only["pid"] == os.getpid()  # engine local: the job ran in the task's process, no JVM
    t = str(tmp_path / "t")
    assert seen["bad_predicate"][0]["message"] == (
        f"PredicateError: Cannot parse predicate 'id >': '>' at position 4 has no value on its right (table {t!r})"
    )
    assert seen["unknown_column"][0]["message"] == (
        f"SchemaMismatchError: Cannot write to table {t!r}: column 'channel' is not in the table schema"
    )
    assert DeltaTable(str(table)).version == 1


def test_a_transient_error_is_retried_in_the_job_and_leaves_no_orphan_files(airflow_db: Path, tmp_path: Path):
    from tests.airflow.dags.delta_operator_outcomes_dags import transient_error

    table = make_table(tmp_path / "t", commits=1)
    before = data_files(table)
    run = transient_error.test(run_conf={"root": str(tmp_path)})
    (only,) = outcomes(tmp_path)["append"]

    assert states(run) == {"append": "success"}
    assert only["result"]["attempts"] == 2
    assert only["result"]["version"] == 2
    # Attempt 1 wrote a data file, then timed out before committing; it was deleted before attempt 2.
    referenced = {a.path for a in DeltaTable(str(table)).files()}
    assert data_files(table) == referenced
    assert len(data_files(table) - before) == 1


def test_a_list_of_tables_is_one_job_with_a_result_per_table(airflow_db: Path, tmp_path: Path) -> None:
    from tests.airflow.dags.delta_operator_outcomes_dags import checkpoint_tables

    a, b = make_table(tmp_path / "a", commits=2), make_table(tmp_path / "b", commits=3)
    run = checkpoint_tables.test(run_conf={"root": str(tmp_path)})
    seen = outcomes(tmp_path)

    assert states(run) == {"checkpoint": "failed", "checkpoint_skip_missing": "success"}
    (failed,) = seen["checkpoint"]
    assert failed["raised"] == "AirflowFailException"
    assert failed["message"].startswith("1 of 3 tables failed: TableNotFoundError: ")
    assert str(tmp_path / "missing") in failed["message"]
    # The failure of the middle table did not stop or hide the others.
    assert (a / "_delta_log" / "00000000000000000002.checkpoint.parquet").is_file()
    assert (b / "_delta_log" / "00000000000000000003.checkpoint.parquet").is_file()
    result = xcom_value("delta_checkpoint_tables", run.run_id, "checkpoint", key="delta_job_result")
    assert [(t["table"], t["status"], t["version"]) for t in result["tables"]] == [
        (str(a), "success", 2),
        (str(tmp_path / "missing"), "error", None),
        (str(b), "success", 3),
    ]
    assert result["tables"][1]["error"]["kind"] == "permanent"
    assert result["engine"]["name"] == "local"

    (skipped,) = seen["checkpoint_skip_missing"]
    tables = skipped["result"]["tables"]
    assert [t["status"] for t in tables] == ["success", "success"]
    assert tables[1]["metrics"]["skipped"] is True and tables[1]["version"] is None


def test_the_retry_policy_fails_a_permanent_error_of_an_in_process_commit_at_once(
    airflow_db: Path, tmp_path: Path
):
    """DeltaConflictRetryPolicy used to retry PredicateError like a conflict."""
    from tests.airflow.dags.delta_operator_outcomes_dags import retry_policy_dag

    make_table(tmp_path / "t", commits=1)
    run = retry_policy_dag.test(run_conf={"root": str(tmp_path)})
    (ti,) = run.get_task_instances()
    assert ti.state == "failed"
    assert len(outcomes(tmp_path)["delete_in_process"]) == 1  # one try of three
    assert DeltaTable(str(tmp_path / "t")).version == 1

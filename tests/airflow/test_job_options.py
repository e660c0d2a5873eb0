"""Job options are checked when the DAG is parsed (real DagBag) and again after rendering (dag.test())."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

import pytest

from tests.spark_jobs.helpers import make_table

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration

TYPO_DAG = textwrap.dedent(
    """
    from datetime import datetime
    from airflow.sdk import DAG
    from airflow_provider_delta.operators.delta import DeltaSparkJobOperator

    with DAG(dag_id="typo_{name}", schedule=None, start_date=datetime(2026, 1, 1)):
        DeltaSparkJobOperator(task_id="t", job={job!r}, table="/data/t", job_options={options!r})
    """
)


def parse(folder: Path) -> dict[str, str]:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(folder), safe_mode=False)
    return {k.rsplit("/", 1)[-1]: v for k, v in bag.import_errors.items()}


def test_a_typo_in_job_options_is_an_import_error_with_a_suggestion(tmp_path: Path) -> None:
    (tmp_path / "checkpoint_typo.py").write_text(
        TYPO_DAG.format(name="checkpoint", job="checkpoint", options={"cleanup": False})
    )
    (tmp_path / "write_typo.py").write_text(
        TYPO_DAG.format(
            name="write",
            job="write",
            options={"partition_by": ["day"], "merge_schema": True, "sourc": {"path": "/landing"}},
        )
    )
    (tmp_path / "good.py").write_text(
        TYPO_DAG.format(name="good", job="write", options={"mode": "{{ params.mode }}", "rows": []})
    )
    errors = parse(tmp_path)
    assert set(errors) == {"checkpoint_typo.py", "write_typo.py"}
    assert "unknown option 'cleanup' (did you mean 'cleanup_log'?)" in errors["checkpoint_typo.py"]
    assert "'merge_schema' (did you mean 'schema_mode'?)" in errors["write_typo.py"]
    assert "'sourc' (did you mean 'source'?)" in errors["write_typo.py"]
    assert "Cannot create task 't' (job 'write')" in errors["write_typo.py"]


def test_a_rendered_option_of_the_wrong_type_fails_the_task_without_retries(airflow_db: Path, tmp_path: Path):
    from tests.airflow.dags.delta_job_options_dags import rendered_options

    table = make_table(tmp_path / "t", commits=2)
    log_before = sorted(p.name for p in (table / "_delta_log").iterdir())
    run = rendered_options.test(run_conf={"table": str(table)})
    (ti,) = run.get_task_instances()
    assert ti.state == "failed"
    assert ti.try_number == 1  # AirflowFailException: retries=2 not used
    assert sorted(p.name for p in (table / "_delta_log").iterdir()) == log_before

"""DeltaSparkJobOperator with a real Airflow (``dag.test()`` on SQLite): conflicts mapped per policy.

A real conflict is provoked during each job: a concurrent writer appends into the partition the
job's overwrite read, while the job waits at its before-commit barrier (tests/airflow/dags/
delta_job_protocol_dags.py). The policy matrix runs the job in the task process (no JVM); one
test does the same through a real spark-submit.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.spark_jobs.helpers import SCHEMA, ConcurrentWriter, append_to_part_a, make_table

if TYPE_CHECKING:
    from airflow.sdk import DAG

pytestmark = pytest.mark.integration


def outcomes(root: Path) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for line in (root / "outcomes.jsonl").read_text().splitlines():
        record = json.loads(line)
        found.setdefault(record["task_id"], []).append(record)
    return found


def run_with_writers(dag: DAG, root: Path, cases: list[str]) -> dict[str, str]:
    """Create one table per case, start one concurrent writer per case, run the DAG; task states."""
    writers = []
    for case in cases:
        table = make_table(root / case / "t")
        writer = ConcurrentWriter(table, root / case, append_to_part_a)
        writer.start()
        writers.append(writer)
    run = dag.test(run_conf={"root": str(root)})
    for writer in writers:
        assert writer.join_checked() == 4
    return {ti.task_id: ti.state for ti in run.get_task_instances()}


def part_a_ids(table: Path) -> list[int]:
    return sorted(deltalake.DeltaTable(str(table)).to_pyarrow_table()["id"].to_pylist())


def test_conflict_during_a_job_is_mapped_per_policy(airflow_db: Path, tmp_path: Path) -> None:
    from tests.airflow.dags.delta_job_protocol_dags import CASES, policy_matrix

    states = run_with_writers(policy_matrix, tmp_path, list(CASES))
    seen = outcomes(tmp_path)

    # retry in the job (the default for ConcurrentAppendException): one task try, two job attempts.
    (retried,) = seen["in_job_retry"]
    assert states["in_job_retry"] == "success"
    assert retried["result"]["attempts"] == 2
    assert part_a_ids(tmp_path / "in_job_retry" / "t") == [7]

    # fail: AirflowFailException, no Airflow retry although retries=1.
    (failed,) = seen["fail"]
    assert states["fail"] == "failed"
    assert failed["raised"] == "AirflowFailException"
    assert "ConcurrentAppendException" in failed["message"]
    assert part_a_ids(tmp_path / "fail" / "t") == [0, 1, 2, 100]

    # airflow_retry: an AirflowException on try 1, Airflow's retry succeeds on try 2.
    first, second = seen["airflow_retry"]
    assert (first["try_number"], first["raised"]) == (1, "DeltaConflictError")
    assert "ConcurrentAppendException" in first["message"]
    assert (second["try_number"], second["result"]["status"]) == (2, "success")
    assert states["airflow_retry"] == "success"
    assert part_a_ids(tmp_path / "airflow_retry" / "t") == [7]

    # skip: AirflowSkipException, the winner's commit stays.
    (skipped,) = seen["skip"]
    assert states["skip"] == "skipped"
    assert skipped["raised"] == "AirflowSkipException"
    assert part_a_ids(tmp_path / "skip" / "t") == [0, 1, 2, 100]


@pytest.mark.spark
def test_conflict_in_a_spark_submit_job_fails_the_task_per_policy(
    airflow_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.airflow.dags.delta_job_protocol_dags import spark_conflict

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    pq.write_table(pa.table({"id": [7, 8], "part": ["a", "a"]}, schema=SCHEMA), tmp_path / "source.parquet")

    states = run_with_writers(spark_conflict, tmp_path, ["fail"])
    (failed,) = outcomes(tmp_path)["fail"]

    assert states["fail"] == "failed"
    assert failed["raised"] == "AirflowFailException"
    assert "ConcurrentAppendException" in failed["message"]
    assert part_a_ids(tmp_path / "fail" / "t") == [0, 1, 2, 100]


@pytest.mark.spark
def test_on_kill_stops_the_application_before_it_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time
    from dataclasses import replace
    from types import SimpleNamespace

    import psutil

    from airflow_provider_delta.core.table import DeltaTable
    from airflow_provider_delta.operators.delta import DeltaSparkJobOperator
    from tests.spark_jobs.helpers import barrier_hooks

    class PausedWrite(DeltaSparkJobOperator):
        def build_spec(self, context, location, storage_options):  # type: ignore[no-untyped-def]
            return replace(
                super().build_spec(context, location, storage_options), test_hooks=barrier_hooks(tmp_path)
            )

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[1]"}))
    table = make_table(tmp_path / "t", commits=1)
    op = PausedWrite(
        task_id="w", job="write", table=str(table), job_options={"rows": [{"id": 9, "part": "b"}]}
    )
    ti = SimpleNamespace(dag_id="d", task_id="w", run_id="r", map_index=-1, xcom_push=lambda **kw: None)
    raised: list[BaseException] = []
    thread = threading.Thread(target=lambda: _capture(raised, op.execute, {"ti": ti}))
    thread.start()
    deadline = time.monotonic() + 180
    while not (tmp_path / "job-ready").exists():  # the job is at its commit, waiting
        assert time.monotonic() < deadline and thread.is_alive(), raised
        time.sleep(0.1)
    submit = psutil.Process(op._hook._submit_sp.pid)  # type: ignore[union-attr]
    family = [submit, *submit.children(recursive=True)]
    assert any("jobs/__main__.py" in " ".join(p.cmdline()) for p in family)

    op.on_kill()
    thread.join(60)
    # The JVM is killed; the Python driver (its child, blocked at the barrier) must stop by itself.
    _gone, alive = psutil.wait_procs(family, timeout=15)
    assert alive == []
    (tmp_path / "writer-done").touch()  # a surviving driver would commit now
    time.sleep(1)

    assert isinstance(raised[0], Exception)
    assert "wrote no result" in str(raised[0])
    assert DeltaTable(str(table)).version == 1


def _capture(sink: list[BaseException], fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except BaseException as err:  # noqa: BLE001 - the test inspects it
        sink.append(err)

"""Example DAG (2), ``example_delta_maintenance``, end to end: ``airflow dags test`` with real Spark.

The tables listed include one that does not exist yet (as in docker/, before the first write): it
is skipped, the others are checkpointed by one spark-submit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import deltalake
import pytest

from airflow_provider_delta.core.table import DeltaTable
from tests.spark_jobs.helpers import make_table

pytestmark = [pytest.mark.system, pytest.mark.spark]


def test_maintenance_dag_checkpoints_every_configured_table_and_skips_a_missing_one(
    airflow_db: Path, tmp_path: Path
) -> None:
    tables = [make_table(tmp_path / "events", commits=3), make_table(tmp_path / "orders", commits=2)]
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "DELTA_MAINTENANCE_TABLES": ",".join([*(str(t) for t in tables), str(tmp_path / "not_yet")]),
        "DELTA_MAINTENANCE_ENGINE": "spark",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
    }
    started = time.monotonic()
    proc = subprocess.run(
        [str(bin_dir / "airflow"), "dags", "test", "example_delta_maintenance"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    output = proc.stdout + proc.stderr
    assert output.count("starting on engine 'spark'") == 3  # three tables, one spark-submit
    assert f"Job 'checkpoint' on {str(tmp_path / 'not_yet')!r}: skipped: Cannot open table" in output
    for table, version in zip(tables, (3, 2)):
        last = json.loads((table / "_delta_log" / "_last_checkpoint").read_text())
        assert last["version"] == version
        assert (table / "_delta_log" / f"{version:020d}.checkpoint.parquet").is_file()
        assert DeltaTable(str(table)).version == version
        assert deltalake.DeltaTable(str(table)).version() == version
    print(f"airflow dags test example_delta_maintenance (2 tables): {elapsed:.1f}s")


def _airflow_dags_test(dag_id: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    bin_dir = Path(sys.executable).parent
    return subprocess.run(
        [str(bin_dir / "airflow"), "dags", "test", dag_id],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_nightly_optimize_and_weekly_purge_and_vacuum_run_through_spark_submit(
    airflow_db: Path, tmp_path: Path
) -> None:
    from tests.maintenance_tables import (
        assert_same_rows_as_delta_rs,
        disk_files,
        make_old,
        rows_of,
        small_files_table,
        with_deletion_vector,
    )

    t = small_files_table(tmp_path / "events", appends=3, properties={"delta.enableDeletionVectors": "true"})
    with_deletion_vector(t, t.files()[0], [0, 1])
    before = rows_of(DeltaTable(t.location).to_arrow())
    settings = [
        {
            "table": t.location,
            "optimize": {"zorder_by": ["x"]},
            # A demo table: everything may go at once (never do this on a table with running writers).
            "vacuum": {"retention_hours": 0, "enforce_retention_duration": False},
        }
    ]
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "DELTA_MAINTENANCE_TABLES": json.dumps(settings),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
    }
    started = time.monotonic()
    nightly = _airflow_dags_test("example_delta_maintenance_nightly", env)
    assert nightly.returncode == 0, nightly.stdout[-4000:] + nightly.stderr[-4000:]
    after_optimize = DeltaTable(t.location)
    info = after_optimize.history(1)[0]
    assert (info["operation"], info["operationParameters"]["zOrderBy"]) == ("OPTIMIZE", '["x"]')
    assert len(after_optimize.files()) == 2 and not any(f.deletion_vector for f in after_optimize.files())

    with_deletion_vector(after_optimize, after_optimize.files()[0], [3])  # new soft deletes for REORG
    make_old(Path(t.location))
    weekly = _airflow_dags_test("example_delta_maintenance_weekly", env)
    assert weekly.returncode == 0, weekly.stdout[-4000:] + weekly.stderr[-4000:]
    latest = DeltaTable(t.location)
    assert [h["operation"] for h in latest.history(3)] == ["VACUUM END", "VACUUM START", "REORG"]
    assert not any(f.deletion_vector for f in latest.files())
    assert disk_files(Path(t.location)) == {f.path for f in latest.files()}
    rows = assert_same_rows_as_delta_rs(t.location)
    assert len(rows) == len(before) - 1
    assert "VACUUM FULL of" in weekly.stdout + weekly.stderr  # the operator's summary in the task log
    print(f"nightly + weekly maintenance DAGs (1 table, 3 spark-submits): {time.monotonic() - started:.1f}s")

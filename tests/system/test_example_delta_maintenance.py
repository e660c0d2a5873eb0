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

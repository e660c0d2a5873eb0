"""The checkpoint job through a real spark-submit (``local[2]``); delta-rs reads the result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import deltalake
import pyspark
import pytest

from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.jobs.registry import runner_script
from airflow_provider_delta.jobs.spec import JobResult, JobSpec
from airflow_provider_delta.operators.delta import DEFAULT_SPARK_CONF
from tests.spark_jobs.helpers import make_table

pytestmark = pytest.mark.spark


def spark_submit(spec: JobSpec, result: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    conf = [arg for key, value in DEFAULT_SPARK_CONF.items() for arg in ("--conf", f"{key}={value}")]
    command = [str(bin_dir / "spark-submit"), "--master", "local[2]", *conf, runner_script()]
    command += ["--spec", spec.to_json(), "--result", str(result)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_checkpoint_job_under_spark_submit_writes_a_checkpoint_delta_rs_loads(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", commits=5)
    started = time.monotonic()
    proc = spark_submit(JobSpec(job="checkpoint", table=str(table)), tmp_path / "result.json")
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = JobResult.read(tmp_path / "result.json")

    assert result.status == "success"
    assert result.engine["name"] == "spark"
    assert result.engine["master"] == "local[2]"
    assert result.engine["spark_version"] == pyspark.__version__ == "4.3.0"
    assert result.version == 5
    checkpoint = table / "_delta_log" / "00000000000000000005.checkpoint.parquet"
    assert result.metrics["checkpointPath"] == "_delta_log/00000000000000000005.checkpoint.parquet"
    assert checkpoint.is_file()
    last = json.loads((table / "_delta_log" / "_last_checkpoint").read_text())
    assert last["version"] == 5
    assert last["size"] == result.metrics["checkpointSize"]

    rs = deltalake.DeltaTable(str(table))
    assert rs.version() == 5
    assert sorted(rs.to_pyarrow_table()["id"].to_pylist()) == [0, 1, 2, 3, 4]
    # The JSON commits before the checkpoint are no longer needed: our engine loads without them ...
    for commit in (table / "_delta_log").glob("0000000000000000000[0-4].json"):
        commit.unlink()
    assert DeltaTable(str(table)).version == 5
    # ... and so does delta-rs: the checkpoint alone reconstructs the table.
    assert sorted(deltalake.DeltaTable(str(table)).to_pyarrow_table()["id"].to_pylist()) == [0, 1, 2, 3, 4]
    print(f"spark-submit checkpoint job: {elapsed:.1f}s")

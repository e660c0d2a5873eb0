"""Jobs through a real spark-submit (``local[1]``) under dag.test(): what the task log shows.

Spark's own INFO lines are gone (``spark.log.level=WARN``); the job's progress is there: the plan,
each attempt and its conflict, what was written, the committed version and the metrics. The losing
attempt's data files are deleted; two tables are checkpointed by one application.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.spark_jobs.helpers import SCHEMA, ConcurrentWriter, append_to_part_a, make_table, orphan_files

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_spark_jobs_log_their_progress_not_sparks_info_lines(
    airflow_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from tests.airflow.dags.delta_operator_outcomes_dags import spark_jobs

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[1]"}))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    pq.write_table(pa.table({"id": [7], "part": ["a"]}, schema=SCHEMA), tmp_path / "source.parquet")
    w = make_table(tmp_path / "w", commits=3)
    a, b = make_table(tmp_path / "a", commits=2), make_table(tmp_path / "b", commits=1)
    writer = ConcurrentWriter(w, tmp_path, append_to_part_a)
    writer.start()

    run = spark_jobs.test(run_conf={"root": str(tmp_path)})
    assert writer.join_checked() == 4
    out = capfd.readouterr()
    log = out.out + out.err
    assert {ti.task_id: ti.state for ti in run.get_task_instances()} == {
        "overwrite": "success",
        "checkpoint": "success",
    }, log[-5000:]

    # Two applications; each logs the 3 SparkContext lines that precede the log level taking effect
    # (about 80 INFO lines each without spark.log.level=WARN).
    spark_info = [line for line in log.splitlines() if re.search(r"\d\d:\d\d:\d\d INFO \w+:", line)]
    assert 0 < len(spark_info) <= 6, spark_info
    w_name = repr(str(w))
    plan = (
        rf"Job 'write' on {re.escape(w_name)}: overwrite on version 3 \(3 files, \d+ bytes\) where part = 'a'"
    )
    assert re.search(plan, log)
    assert re.search(
        rf"Job 'write' on {re.escape(w_name)}: attempt 1 wrote 1 file\(s\), \d+ bytes; committing", log
    )
    assert f"Job 'write' on {w_name}: attempt 1 failed (ConcurrentAppendException, conflict): " in log
    assert f"Job 'write' on {w_name}: deleted the 1 file(s) the failed attempt 1 wrote" in log
    assert f"Job 'write' on {w_name}: committed version 5 in 2 attempt(s)" in log
    assert '"numRemovedFiles": 4' in log
    assert orphan_files(w) == set()
    for table, version in ((a, 2), (b, 1)):
        assert f"Job 'checkpoint' on {str(table)!r}: done at version {version}" in log
        assert (table / "_delta_log" / f"{version:020d}.checkpoint.parquet").is_file()

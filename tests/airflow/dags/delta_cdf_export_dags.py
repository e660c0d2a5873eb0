"""Test-only DAGs for DeltaCDFExportOperator; tables under ``$DELTA_TEST_CDF_ROOT`` (read when parsed).

``delta_cdf_export_local``: the export with ``engine="local"`` (no JVM), the sink a static path so its
asset is an outlet. ``delta_cdf_export_range``: an explicit, templated range from ``params``.
``delta_cdf_export_spark``: the same export through a real spark-submit.
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_delta.operators.cdf_export import DeltaCDFExportOperator

ROOT = os.environ.get("DELTA_TEST_CDF_ROOT", "/tmp/delta-test-cdf")

with DAG(
    "delta_cdf_export_local", schedule=None, start_date=datetime(2026, 1, 1), catchup=False
) as local_dag:
    DeltaCDFExportOperator(task_id="export", table=f"{ROOT}/src", sink=f"{ROOT}/sink", engine="local")

with DAG(
    "delta_cdf_export_range",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params={"start": 0, "end": 2},
) as range_dag:
    DeltaCDFExportOperator(
        task_id="export",
        table=f"{ROOT}/src",
        sink=f"{ROOT}/range_sink",
        format="delta",
        starting_version="{{ params.start }}",
        ending_version="{{ params.end }}",
        engine="local",
    )

with DAG(
    "delta_cdf_export_spark", schedule=None, start_date=datetime(2026, 1, 1), catchup=False
) as spark_dag:
    DeltaCDFExportOperator(
        task_id="export",
        table=f"{ROOT}/src",
        sink=f"{ROOT}/spark_sink",
        format="delta",
        spark_conf={"spark.default.parallelism": "2"},
    )

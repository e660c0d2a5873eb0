"""``file_rows_frame``: Spark's Parquet reader and the engine's reader give the same rows and positions.

MERGE on Spark joins these rows and its writing tasks re-read the files, trusting that a row's
``ROW_INDEX`` is its position in core's ``read_add_file``; both readers must agree with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core.read.scan import read_add_file
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.core.write.target import WriteTarget
from airflow_provider_delta.spark.file_rows import FILE_INDEX, ROW_INDEX, file_rows_frame
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]


@pytest.mark.parametrize("mapping", ["none", "name"])
def test_both_readers_give_core_s_rows_and_positions(
    spark: SparkSession, tmp_path: Path, mapping: str
) -> None:
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    schema = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("name", pa.string())])
    table = DeltaTable.create(
        str(tmp_path / "t"),
        schema,
        partition_by=["day"],
        properties={"delta.columnMapping.mode": mapping} if mapping != "none" else None,
    )
    table.append(
        pa.table(
            {"id": [3, 1, 2], "day": pa.array([19000, 19000, None], pa.date32()), "name": ["c", "a", None]}
        )
    )
    table.alter("ALTER TABLE t ADD COLUMNS (score DOUBLE)")  # older files lack it: null
    table.append(
        pa.table(
            {
                "id": [9, 8],
                "day": pa.array([19001, 19000], pa.date32()),
                "name": ["z", "y"],
                "score": [1.5, None],
            }
        )
    )
    snapshot = DeltaTable(table.location).snapshot
    files = snapshot.files()
    layout = WriteTarget.of(snapshot)
    expected = []
    for index, add in enumerate(files):
        rows = read_add_file(layout, add).to_pylist()
        expected += [
            {**{k: r[k] for k in ("id", "day", "score")}, FILE_INDEX: index, ROW_INDEX: i}
            for i, r in enumerate(rows)
        ]
    key = sorted(expected, key=lambda r: (r[FILE_INDEX], r[ROW_INDEX]))
    for spark_reader in (True, False):
        frame = file_rows_frame(spark, layout, files, ["score", "id", "day"], spark_reader=spark_reader)
        assert frame.columns == ["id", "day", "score", FILE_INDEX, ROW_INDEX]
        got = sorted(frame.toArrow().to_pylist(), key=lambda r: (r[FILE_INDEX], r[ROW_INDEX]))
        assert got == key, f"spark_reader={spark_reader}"
        plan = frame._jdf.queryExecution().executedPlan().toString()
        assert ("FileScan parquet" in plan) == spark_reader, plan

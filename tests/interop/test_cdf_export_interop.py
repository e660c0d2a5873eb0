"""CDF exports against delta-rs: the exported rows equal ``load_cdf`` of the same range (a second oracle).

``_commit_timestamp`` is left out: delta-rs takes it from commitInfo, Delta (and this engine) from the
in-commit timestamp or the commit file's time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.commands.cdf_export import export_changes
from tests.interop import canonical_rows, rs_table
from tests.unit.core.cdf_export.helpers import busy_table, read_file_sink

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.interop

COLUMNS = ["id", "p", "v", "_change_type", "_commit_version"]


@pytest.mark.parametrize("fmt", ["parquet", "delta"])
def test_export_equals_delta_rs_load_cdf_run_after_run(tmp_path: Path, fmt: str) -> None:
    src = str(tmp_path / "src")
    busy_table(tmp_path / "src")
    sink = tmp_path / "sink"
    export_changes(src, str(sink), format=fmt, ending_version=2)
    t = DeltaTable(src)
    t.update("p = 'b'", {"v": "v - 1"})
    t.delete("id = 7")
    export_changes(src, str(sink), format=fmt)
    got = read_file_sink(sink) if fmt == "parquet" else DeltaTable(str(sink)).to_arrow()
    theirs = pa.table(rs_table(src).load_cdf(starting_version=0).read_all())
    assert canonical_rows(got, COLUMNS) == canonical_rows(theirs, COLUMNS)


def test_delta_rs_written_table_exports_like_its_own_load_cdf(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    src = str(tmp_path / "src")
    data = pa.table({"id": [1, 2, 3], "p": ["a", "a", "b"], "v": [1, 2, 3]})
    deltalake.write_deltalake(src, data, configuration={"delta.enableChangeDataFeed": "true"})
    dt = deltalake.DeltaTable(src)
    dt.update(updates={"v": "v + 10"}, predicate="id = 2")
    dt.delete("id = 3")
    export_changes(src, str(tmp_path / "sink"))
    got = read_file_sink(tmp_path / "sink")
    theirs = pa.table(rs_table(src).load_cdf(starting_version=0).read_all())
    assert canonical_rows(got, COLUMNS) == canonical_rows(theirs, COLUMNS)

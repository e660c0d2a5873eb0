"""A column type the engine cannot read (unknown to it, or corrupted in the log): reads, DELETE and
UPDATE refuse it with an error naming the table, the version and the file the metaData came from."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import UnsupportedFeatureError

if TYPE_CHECKING:
    from pathlib import Path

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.struct([("i", pa.int32())]))])


def _table_with_type(tmp_path: Path, name: str) -> str:
    DeltaTable.create(str(tmp_path), SCHEMA).append(pa.table({"id": [1], "s": [{"i": 2}]}, schema=SCHEMA))
    commit = tmp_path / "_delta_log" / f"{0:020d}.json"
    commit.write_text(commit.read_text().replace('\\"type\\":\\"integer\\"', f'\\"type\\":\\"{name}\\"'))
    return str(tmp_path)


@pytest.mark.parametrize("name", ["intege{", "geography"])
def test_a_nested_column_of_an_unknown_type_is_refused_naming_table_version_and_file(
    tmp_path: Path, name: str
):
    location = _table_with_type(tmp_path, name)
    table = DeltaTable(location)
    assert table.version == 1  # the log itself loads: history and metadata stay readable
    for act in (table.to_arrow, lambda: table.delete("id = 1"), lambda: table.update("id = 1", {"id": "2"})):
        with pytest.raises(UnsupportedFeatureError, match=name.replace("{", r"\{")) as info:
            act()
        message = str(info.value)
        assert location in message and "version 1" in message
        assert "_delta_log/00000000000000000000.json" in message
    assert DeltaTable(location).version == 1

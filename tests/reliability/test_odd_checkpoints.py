"""Well-formed checkpoints in every shape the protocol allows: each table loads and reads its rows.

PROTOCOL.md "Checkpoint Schema": an ``add`` row may carry statistics as JSON (``stats``), as a struct
(``stats_parsed``), both or neither, and partition values also as a struct (``partitionValues_parsed``);
a multi-part checkpoint may have a part holding no row. delta-rs, the independent reader, must agree.
"""

from __future__ import annotations

import json
import shutil
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from tests.interop import assert_delta_rs_reads_identically
from tests.reliability.log_mutations import add_empty_checkpoint_part, checkpoints, restat_checkpoint

if TYPE_CHECKING:
    from pathlib import Path

# (table, partition columns and their Arrow types)
TABLES = {
    "golden/multi-part-checkpoint": {},
    "golden/dv-partitioned-with-checkpoint": {"part": pa.int32()},
    "extra/delta-rs/simple_table_with_checkpoint": {},
}
SHAPES = {  # (JSON stats, struct stats, struct partition values)
    "stats_parsed-only": (False, True, False),
    "partitionValues_parsed-only": (True, False, True),
    "both-parsed": (False, True, True),
    "all-three": (True, True, True),
    "neither": (False, False, False),
}


def _rows(table: DeltaTable) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_arrow().to_pylist())


@pytest.mark.parametrize("empty_part", [False, True], ids=["as-written", "with-an-empty-part"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("name", sorted(TABLES))
def test_a_checkpoint_of_any_allowed_shape_loads_and_reads_the_same_rows(
    conformance_dir: Path, tmp_path: Path, name: str, shape: str, empty_part: bool
) -> None:
    source = conformance_dir / "tables" / name
    expected = _rows(DeltaTable(str(source)))
    table = tmp_path / "t"
    shutil.copytree(source, table)
    if empty_part:
        add_empty_checkpoint_part(table)
    json_stats, parsed_stats, parsed_partitions = SHAPES[shape]
    parts = checkpoints(table)
    assert parts
    for part in parts:
        restat_checkpoint(part, json_stats=json_stats, parsed_stats=parsed_stats,
                          parsed_partitions=parsed_partitions, partition_types=TABLES[name])
    loaded = DeltaTable(str(table))
    assert _rows(loaded) == expected
    assert_delta_rs_reads_identically(str(table))

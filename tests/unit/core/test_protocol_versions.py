"""``SET TBLPROPERTIES ('delta.minReaderVersion' = r, 'delta.minWriterVersion' = w)`` as Delta Lake does it.

Delta merges the requested versions into the table's protocol and writes the result in its weakest form
(``Protocol.merge`` -> ``denormalizedNormalized``). The expected protocols below are what delta-spark 4.4.0
committed for the same statements (run on /work/oracle: CREATE TABLE with the properties, one INSERT, then
the ALTER): asking for reader 3 / writer 7 adds no feature, so a legacy table keeps its protocol and no
protocol action is written.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.properties import InvalidPropertyError
from tests.interop import assert_delta_rs_reads_identically

if TYPE_CHECKING:
    from pathlib import Path

SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.string())])

# (properties at CREATE, the ALTER's properties, the protocol delta-spark 4.4.0 has afterwards)
DELTA_SPARK = [
    ({"delta.minReaderVersion": "1", "delta.minWriterVersion": "2"},
     {"delta.minReaderVersion": "3", "delta.minWriterVersion": "7"}, (1, 2, None, None)),
    ({"delta.minReaderVersion": "1", "delta.minWriterVersion": "4", "delta.enableChangeDataFeed": "true"},
     {"delta.minReaderVersion": "3", "delta.minWriterVersion": "7"}, (1, 4, None, None)),
    ({"delta.minReaderVersion": "2", "delta.minWriterVersion": "5", "delta.columnMapping.mode": "name"},
     {"delta.minReaderVersion": "3", "delta.minWriterVersion": "7"}, (2, 5, None, None)),
    ({"delta.minReaderVersion": "1", "delta.minWriterVersion": "1"},
     {"delta.minReaderVersion": "3", "delta.minWriterVersion": "7"}, (1, 1, None, None)),
    ({"delta.minReaderVersion": "1", "delta.minWriterVersion": "3"},
     {"delta.minReaderVersion": "3", "delta.minWriterVersion": "7"}, (1, 3, None, None)),
    ({"delta.minReaderVersion": "1", "delta.minWriterVersion": "2"},
     {"delta.minWriterVersion": "7"}, (1, 2, None, None)),
]


def _protocol(t: DeltaTable) -> tuple[int, int, list[str] | None, list[str] | None]:
    p = t.protocol
    return (p.min_reader_version, p.min_writer_version,
            sorted(p.reader_features) if p.reader_features is not None else None,
            sorted(p.writer_features) if p.writer_features is not None else None)


def _protocol_actions(t: DeltaTable, version: int) -> list[dict[str, object]]:
    text = (t.storage.root.rstrip("/") + f"/_delta_log/{version:020d}.json")
    with open(text) as f:
        return [a["protocol"] for a in map(json.loads, f) if "protocol" in a]


def _alter_statement(props: dict[str, str]) -> str:
    return "ALTER TABLE t SET TBLPROPERTIES (" + ", ".join(f"'{k}' = '{v}'" for k, v in props.items()) + ")"


@pytest.mark.parametrize(("created", "requested", "expected"), DELTA_SPARK)
def test_version_numbers_are_merged_into_the_protocol_as_delta_spark_does(
    tmp_path: Path, created: dict[str, str], requested: dict[str, str], expected: tuple[object, ...]
) -> None:
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties=created)
    t.append(pa.table({"k": pa.array([1], pa.int32()), "v": ["a"]}))
    version = t.alter(_alter_statement(requested))
    assert version == 2
    assert _protocol(t) == expected
    assert _protocol_actions(t, 2) == []  # as delta-spark: the protocol is unchanged, so not written
    assert "delta.minReaderVersion" not in t.configuration
    assert_delta_rs_reads_identically(t.location)


def test_table_features_listed_by_name_survive_a_version_number_request(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.feature.deletionVectors": "supported"})
    before = _protocol(t)
    assert before[:2] == (3, 7)
    t.alter(_alter_statement({"delta.minReaderVersion": "3", "delta.minWriterVersion": "7"}))
    assert _protocol(t) == before
    assert_delta_rs_reads_identically(t.location)


def test_a_legacy_version_request_still_upgrades_to_the_features_it_implies(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    t.alter(_alter_statement({"delta.minReaderVersion": "2", "delta.minWriterVersion": "5"}))
    assert _protocol(t) == (2, 5, None, None)


def test_reader_three_without_writer_seven_is_refused_as_delta_does(tmp_path: Path) -> None:
    # delta-spark: DELTA_READ_FEATURE_PROTOCOL_REQUIRES_WRITE, table unchanged
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    with pytest.raises(InvalidPropertyError, match="writer version 7"):
        t.alter(_alter_statement({"delta.minReaderVersion": "3"}))
    assert DeltaTable(t.location).version == 0

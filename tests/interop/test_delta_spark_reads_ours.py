"""Every kind of table and commit this engine writes is read by Delta Lake on Spark, the reference, identically.

delta-spark (``delta_spark`` fixture, one JVM per session) reads each table the engine writes and must
see the same rows and schema at every version, the same history (operation, readVersion, isolation
level, blind append, parameters) and, for change data, the same ``table_changes``. Maintenance and
DDL the engine commits must leave a log delta-spark accepts: ``DESCRIBE HISTORY``, ``DESCRIBE DETAIL``
and a further write and read by delta-spark.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from decimal import Decimal
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from tests.interop import column_mapped_table
from tests.interop.delta_spark_support import (
    assert_delta_spark_reads_identically,
    assert_every_version_identical,
    assert_same_changes,
    assert_same_rows,
)
from tests.interop.test_write_interop import ALL_TYPES, SPECIAL_STRINGS, _all_types_rows

if TYPE_CHECKING:
    from pathlib import Path

    from tests.delta_spark import DeltaSpark

pytestmark = pytest.mark.interop

UTC = dt.timezone.utc

PARTITION_TYPES = pa.schema(
    [
        ("id", pa.int64()),
        ("p", pa.string()),
        ("by", pa.int8()),
        ("i", pa.int32()),
        ("f", pa.float64()),
        ("dec", pa.decimal128(10, 2)),
        ("b", pa.bool_()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
    ]
)


def _partition_rows() -> pa.Table:
    n = len(SPECIAL_STRINGS)
    return pa.Table.from_pydict(
        {
            "id": list(range(n)),
            "p": SPECIAL_STRINGS,
            "by": [None if i % 5 == 0 else i - 8 for i in range(n)],
            "i": [None if i % 3 == 0 else i % 2 for i in range(n)],
            "f": [None if i % 7 == 0 else i / 4 for i in range(n)],
            "dec": [None if i % 6 == 0 else Decimal(f"{i}.25") for i in range(n)],
            "b": [None if i % 4 == 1 else i % 2 == 0 for i in range(n)],
            "d": [None if i % 4 == 0 else dt.date(2024, 1, 1 + i) for i in range(n)],
            "ts": [
                None if i % 5 == 1 else dt.datetime(2024, 1, 1, i, 30, 15, 123456, tzinfo=UTC)
                for i in range(n)
            ],
            "ntz": [None if i % 5 == 2 else dt.datetime(1999, 12, 31, i, 0, 0, 5) for i in range(n)],
        },
        schema=PARTITION_TYPES,
    )


def test_table_partitioned_by_every_primitive_type_with_nulls_and_escapes_reads_identically(
    tmp_path: Path, delta_spark: DeltaSpark
) -> None:
    location = str(tmp_path / "t")
    t = DeltaTable.create(location, PARTITION_TYPES, partition_by=PARTITION_TYPES.names[1:])
    t.append(_partition_rows())
    t.update("p = 'x/y' OR p IS NULL", {"i": "i + 10"})
    t.delete("p = 'k=v' OR p = '100%'")
    t.update("id = 4", {"p": "'moved/to=here 100%'"})
    assert_every_version_identical(delta_spark, location)


def test_all_types_and_their_rewrites_read_identically(tmp_path: Path, delta_spark: DeltaSpark) -> None:
    location = str(tmp_path / "t")
    t = DeltaTable.create(location, pa.schema([("id", pa.int64()), *ALL_TYPES]))
    t.append(_all_types_rows().add_column(0, "id", pa.array([1, 2, 3], pa.int64())))
    t.update("id = 1", {"dec": "dec + 1", "str": "concat(str, '!')"})
    t.delete("id = 2")
    assert_every_version_identical(delta_spark, location)


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapped_table_reads_identically(tmp_path: Path, delta_spark: DeltaSpark, mode: str) -> None:
    location = str(tmp_path / "t")
    t = column_mapped_table(location, mode)
    t.alter("RENAME COLUMN `my col` TO `renamed col`")
    t.alter("ALTER TABLE t ADD COLUMNS (st.added STRING AFTER `a b`)")
    t.alter("DROP COLUMN m")
    assert_every_version_identical(delta_spark, location)


def test_checkpoints_the_engine_writes_are_read_by_delta_spark_alone(
    tmp_path: Path, delta_spark: DeltaSpark
) -> None:
    location = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.float64())])
    t = DeltaTable.create(
        location, schema, partition_by=["p"], properties={"delta.columnMapping.mode": "name"}
    )
    for i in range(1, 8):
        t.append(
            pa.Table.from_pydict({"id": [i], "p": [SPECIAL_STRINGS[i]], "v": [i / 2]}, schema=schema),
            app_id="loader",
            app_version=i,
        )
    t.delete("id = 2")  # 8: a remove, which the checkpoint keeps as a tombstone
    t.update("id = 3", {"v": "v * 100"})  # 9
    t.overwrite(pa.Table.from_pydict({"id": [10], "p": ["%"], "v": [None]}, schema=schema), "p = '%'")  # 10
    log = tmp_path / "t" / "_delta_log"
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 10
    t.append(pa.Table.from_pydict({"id": [11], "p": [None], "v": [1.0]}, schema=schema))  # 11
    assert_delta_spark_reads_identically(delta_spark, location)

    # delta-spark from the checkpoint alone: the commits it replaces are gone
    copy = tmp_path / "checkpoint-only"
    shutil.copytree(location, copy)
    for v in range(11):
        (copy / "_delta_log" / f"{v:020d}.json").unlink()
    assert_same_rows(DeltaTable(location).to_arrow(), delta_spark.read(str(copy)))


def test_schema_evolution_by_the_engine_reads_identically(tmp_path: Path, delta_spark: DeltaSpark) -> None:
    location = str(tmp_path / "t")
    base = pa.schema([("id", pa.int64()), ("st", pa.struct([("a", pa.int32())]))])
    t = DeltaTable.create(location, base)
    t.append(pa.Table.from_pylist([{"id": 1, "st": {"a": 1}}], schema=base))
    wider = pa.schema(
        [("id", pa.int64()), ("st", pa.struct([("a", pa.int32()), ("b", pa.string())])), ("x", pa.float64())]
    )
    t.append(
        pa.Table.from_pylist([{"id": 2, "st": {"a": 2, "b": "n"}, "x": 2.5}], schema=wider),
        schema_mode="merge",
    )
    t.alter("ADD COLUMNS (y DATE COMMENT 'added by DDL' FIRST)")
    t.alter("ALTER COLUMN x COMMENT 'a double'")
    t.update("id = 1", {"x": "-1.0"})
    replaced = pa.schema([("k", pa.string()), ("n", pa.int64())])
    t.overwrite(
        pa.table({"k": ["a", "b"], "n": [1, 2]}, schema=replaced), schema_mode="overwrite", partition_by=["k"]
    )
    assert_every_version_identical(delta_spark, location)


def test_change_data_feed_of_updates_deletes_and_merges_equals_table_changes(
    tmp_path: Path, delta_spark: DeltaSpark
) -> None:
    location = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
    t = DeltaTable.create(
        location, schema, partition_by=["p"], properties={"delta.enableChangeDataFeed": "true"}
    )
    t.append(
        pa.Table.from_pydict(
            {"id": [1, 2, 3, 4], "p": ["a", "a", "b", "b"], "v": [10, 20, 30, 40]}, schema=schema
        )
    )
    t.update("id = 2", {"v": "v * 10"})  # 2
    t.delete("v > 35")  # 3: a rewrite
    t.delete("p = 'a' AND id = 1")  # 4
    t.overwrite(pa.Table.from_pydict({"id": [8], "p": ["b"], "v": [80]}, schema=schema), "p = 'b'")  # 5
    source = pa.Table.from_pydict({"id": [2, 8, 9], "p": ["a", "b", "c"], "v": [0, 81, 90]}, schema=schema)
    (
        t.merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_delete(condition="s.v = 0")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )  # 6
    t.delete()  # 7: whole files
    assert_every_version_identical(delta_spark, location)
    for version in range(8):
        assert_same_changes(delta_spark, location, version, version)
    assert_same_changes(delta_spark, location, 0, 7)


def test_deletes_on_a_deletion_vector_table_read_identically(tmp_path: Path, delta_spark: DeltaSpark) -> None:
    location = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = DeltaTable.create(location, schema, properties={"delta.enableDeletionVectors": "true"})
    t.append(pa.table({"id": list(range(20)), "v": [f"v{i}" for i in range(20)]}, schema=schema))
    t.delete("id % 3 = 0")
    t.update("id = 4", {"v": "'four'"})
    assert_every_version_identical(delta_spark, location)


def test_maintenance_and_ddl_by_the_engine_leave_a_log_delta_spark_accepts_and_writes(
    tmp_path: Path, delta_spark: DeltaSpark
) -> None:
    location = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])
    t = DeltaTable.create(
        location, schema, partition_by=["p"], properties={"delta.columnMapping.mode": "name"}
    )
    for i in range(4):
        t.append(
            pa.Table.from_pydict({"id": [i, i + 10], "p": ["a", "b"], "v": [f"v{i}", None]}, schema=schema)
        )
    t.alter("ADD COLUMNS (extra INT)")
    t.alter("SET TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 30 days', 'owner' = 'team')")
    t.alter("DROP COLUMN v")
    t.optimize()
    t.reorg()  # purges the dropped column from the files
    t.optimize(zorder_by=["id"])
    assert_every_version_identical(delta_spark, location)
    t.vacuum(retention_hours=0, enforce_retention_duration=False)  # old versions lose their files
    assert_delta_spark_reads_identically(delta_spark, location)

    detail = delta_spark.detail(location)
    ours = DeltaTable(location)
    assert detail["numFiles"] == len(ours.files())
    assert detail["partitionColumns"] == ["p"]
    assert dict(detail["properties"]) == dict(ours.configuration)
    assert (detail["minReaderVersion"], detail["minWriterVersion"]) == (
        ours.protocol.min_reader_version,
        ours.protocol.min_writer_version,
    )

    version = ours.version
    delta_spark.sql(f"INSERT INTO delta.`{location}` (id, p, extra) VALUES (100, 'a', 1), (101, 'c', NULL)")
    delta_spark.sql(f"DELETE FROM delta.`{location}` WHERE id = 0")
    delta_spark.sql(f"UPDATE delta.`{location}` SET extra = 7 WHERE p = 'b'")
    assert DeltaTable.latest_version(location) == version + 3
    assert_delta_spark_reads_identically(delta_spark, location)

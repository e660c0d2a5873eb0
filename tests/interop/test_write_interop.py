"""Every kind of table and commit this engine writes is read by delta-rs with identical rows, schema and version.

delta-rs (``deltalake``) is the independent oracle: it shares no code with this engine. Each test
writes with this engine only, then compares everything delta-rs sees (version, protocol, metadata,
schema, active files, rows, history) with what this engine sees, at the latest version and, where
the test walks through several operations, at every version.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from decimal import Decimal
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core import DeltaTable
from tests.interop import (
    COLUMN_MAPPED_SCHEMA,
    assert_delta_rs_reads_identically,
    assert_same_rows,
    canonical_rows,
    column_mapped_table,
    rs_rows,
    rs_table,
)

deltalake = pytest.importorskip("deltalake")

pytestmark = pytest.mark.interop

UTC = dt.timezone.utc

SPECIAL_STRINGS = [
    "a b",
    "100%",
    "x/y",
    "k=v",
    "ünï©ødé 日本",
    "",
    None,
    "tab\there",
    "#{}[]:?*",
    "a\\b",
    " lead",
    "trail ",
    "quote'\"",
    "%2F",
    "__HIVE_DEFAULT_PARTITION__x",
    "plus+&amp;",
]


def _assert_every_version_identical(location: str) -> None:
    for version in range(DeltaTable.latest_version(location) + 1):
        assert_delta_rs_reads_identically(location, version)


# -- partitioning -------------------------------------------------------------------------------------


def test_partitioned_table_with_special_characters_and_nulls_reads_identically(tmp_path):
    location = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("q", pa.int32()), ("d", pa.date32())])
    t = DeltaTable.create(location, schema, partition_by=["p", "q", "d"])
    n = len(SPECIAL_STRINGS)
    t.append(
        pa.Table.from_pydict(
            {
                "id": list(range(n)),
                "p": SPECIAL_STRINGS,
                "q": [None if i % 3 == 0 else i % 2 for i in range(n)],
                "d": [None if i % 4 == 0 else dt.date(2024, 1, 1 + i) for i in range(n)],
            },
            schema=schema,
        )
    )
    ours = assert_delta_rs_reads_identically(location)
    # "" is stored as null in partition values (Delta and Spark treat an empty partition value as null)
    expected = [None if s == "" else s for s in SPECIAL_STRINGS]
    assert sorted(ours.to_arrow()["p"].to_pylist(), key=repr) == sorted(expected, key=repr)

    t.update("p = 'x/y' OR p IS NULL", {"q": "q + 10"})
    t.delete("p = 'k=v' OR p = '100%'")
    t.update("id = 4", {"p": "'moved/to=here 100%'"})
    _assert_every_version_identical(location)


@pytest.mark.parametrize(
    ("arrow_type", "values"),
    [
        pytest.param(pa.int8(), [-128, 0, 127, None], id="byte"),
        pytest.param(pa.int16(), [-32768, 7, 32767, None], id="short"),
        pytest.param(pa.int32(), [-(2**31), 0, 2**31 - 1, None], id="integer"),
        pytest.param(pa.int64(), [-(2**63), 42, 2**63 - 1, None], id="long"),
        pytest.param(pa.float32(), [-1.5, 0.25, 3.0, None], id="float"),
        pytest.param(pa.float64(), [-1e300, 0.1, 2.5, None], id="double"),
        pytest.param(
            pa.decimal128(10, 2),
            [Decimal("-12.34"), Decimal("0.00"), Decimal("99999999.99"), None],
            id="decimal",
        ),
        pytest.param(
            pa.decimal128(38, 18),
            [Decimal("-1.000000000000000001"), Decimal("12345678901234567890.5"), Decimal("0E-18"), None],
            id="decimal-38-18",
        ),
        pytest.param(pa.bool_(), [True, False, None], id="boolean"),
        pytest.param(
            pa.date32(), [dt.date(1, 1, 1), dt.date(1970, 1, 1), dt.date(2024, 2, 29), None], id="date"
        ),
        pytest.param(
            pa.timestamp("us", tz="UTC"),
            [
                dt.datetime(1970, 1, 1, tzinfo=UTC),
                dt.datetime(2024, 1, 1, 12, 30, 15, 123456, tzinfo=UTC),
                dt.datetime(1900, 6, 1, 0, 0, 0, 1, tzinfo=UTC),
                None,
            ],
            id="timestamp",
        ),
        pytest.param(
            pa.timestamp("us"),
            [dt.datetime(2024, 1, 1, 23, 59, 59), dt.datetime(1999, 12, 31, 0, 0, 0, 5), None],
            id="timestamp-ntz",
        ),
        pytest.param(pa.string(), ["2024-01-01", "a=b/c", "", None], id="string"),
    ],
)
def test_table_partitioned_by_each_primitive_type_reads_identically(tmp_path, arrow_type, values):
    location = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("part", arrow_type)])
    t = DeltaTable.create(location, schema, partition_by=["part"])
    t.append(pa.Table.from_pydict({"id": list(range(len(values))), "part": values}, schema=schema))
    assert_delta_rs_reads_identically(location)
    if values[0] is not None:
        t.delete("id = 0")
        assert_delta_rs_reads_identically(location)


# -- every type -------------------------------------------------------------------------------------------

ALL_TYPES = pa.schema(
    [
        ("b", pa.int8()),
        ("s", pa.int16()),
        ("i", pa.int32()),
        ("l", pa.int64()),
        ("f", pa.float32()),
        ("d", pa.float64()),
        ("dec", pa.decimal128(10, 2)),
        ("dec38", pa.decimal128(38, 18)),
        ("str", pa.string()),
        ("bin", pa.binary()),
        ("bool", pa.bool_()),
        ("date", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        (
            "st",
            pa.struct([("x", pa.int32()), ("y", pa.string()), ("inner", pa.struct([("z", pa.float64())]))]),
        ),
        ("arr", pa.list_(pa.int64())),
        ("arr_st", pa.list_(pa.struct([("k", pa.string()), ("v", pa.int64())]))),
        ("m", pa.map_(pa.string(), pa.int32())),
        ("m_arr", pa.map_(pa.int32(), pa.list_(pa.string()))),
    ]
)


def _all_types_rows() -> pa.Table:
    rows = [
        {
            "b": 127,
            "s": -32768,
            "i": 2**31 - 1,
            "l": -(2**63),
            "f": 1.5,
            "d": float("inf"),
            "dec": Decimal("-99999999.99"),
            "dec38": Decimal("99999999999999999999.999999999999999999"),
            "str": "ünï©ødé 日本 \n\t",
            "bin": b"\x00\x01\xff",
            "bool": True,
            "date": dt.date(1, 1, 1),
            "ts": dt.datetime(2024, 1, 1, 12, 0, 0, 123456, tzinfo=UTC),
            "ntz": dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
            "st": {"x": 1, "y": "a", "inner": {"z": -0.5}},
            "arr": [1, None, 3],
            "arr_st": [{"k": "a", "v": 1}, {"k": None, "v": None}],
            "m": [("k1", 1), ("k2", None)],
            "m_arr": [(1, ["x", None]), (2, [])],
        },
        {
            "b": -128,
            "s": 0,
            "i": 0,
            "l": 0,
            "f": float("nan"),
            "d": -0.0,
            "dec": Decimal("0.01"),
            "dec38": Decimal("-0.000000000000000001"),
            "str": "",
            "bin": b"",
            "bool": False,
            "date": dt.date(2024, 2, 29),
            "ts": dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            "ntz": dt.datetime(1970, 1, 1),
            "st": {"x": None, "y": None, "inner": None},
            "arr": [],
            "arr_st": [],
            "m": [],
            "m_arr": None,
        },
        dict.fromkeys(ALL_TYPES.names),
    ]
    return pa.Table.from_pylist(rows, schema=ALL_TYPES)


def test_all_types_round_trip_through_delta_rs(tmp_path):
    location = str(tmp_path / "t")
    t = DeltaTable.create(location, ALL_TYPES)
    assert (t.protocol.min_reader_version, t.protocol.min_writer_version) == (3, 7)
    t.append(_all_types_rows())
    ours = assert_delta_rs_reads_identically(location)
    assert canonical_rows(ours.to_arrow()) == canonical_rows(_all_types_rows())
    # the pyarrow dataset path of delta-rs agrees as well for an unmapped table
    assert canonical_rows(rs_table(location).to_pyarrow_table(), ALL_TYPES.names) == canonical_rows(
        _all_types_rows()
    )


def test_rewrites_of_all_types_keep_every_value(tmp_path):
    location = str(tmp_path / "t")
    t = DeltaTable.create(location, pa.schema([("id", pa.int64()), *ALL_TYPES]))
    data = _all_types_rows()
    t.append(data.add_column(0, "id", pa.array([1, 2, 3], pa.int64())))
    t.update("id = 1", {"dec": "dec + 1", "ts": "ts", "str": "concat(str, '!')"})
    t.delete("id = 2")
    _assert_every_version_identical(location)


# -- column mapping -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapped_table_reads_identically_through_delta_rs_datafusion(tmp_path, mode):
    location = str(tmp_path / "t")
    schema = COLUMN_MAPPED_SCHEMA
    t = column_mapped_table(location, mode)
    t.overwrite(
        pa.Table.from_pylist([{"id": 4, "my col": "w", "p": None, "st": None, "m": None}], schema=schema),
        "p IS NULL",
    )
    t.append(
        pa.Table.from_pylist(
            [{"id": 5, "my col": "v", "p": "new", "st": {"a b": 5, "c": None}, "m": None}], schema=schema
        )
    )
    _assert_every_version_identical(location)
    # data files carry physical names (and field ids), never the logical ones
    for f in DeltaTable(location).files():
        names = pq.read_schema(Path(location) / unquote(f.path)).names
        assert all(n.startswith("col-") for n in names), names
    assert DeltaTable(location).to_arrow(filter="`my col` = 'y'")["id"].to_pylist() == [1]


# -- checkpoints ---------------------------------------------------------------------------------------------


def test_automatic_checkpoint_at_version_ten_is_read_by_delta_rs(tmp_path):
    location = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.float64())])
    t = DeltaTable.create(location, schema, partition_by=["p"])
    for i in range(1, 8):
        t.append(
            pa.Table.from_pydict({"id": [i], "p": [SPECIAL_STRINGS[i]], "v": [i / 2]}, schema=schema),
            app_id="loader",
            app_version=i,
        )
    t.delete("id = 2")  # 8: a remove, which the checkpoint keeps as a tombstone
    t.update("id = 3", {"v": "v * 100"})  # 9
    t.overwrite(pa.Table.from_pydict({"id": [10], "p": ["%"], "v": [None]}, schema=schema), "p = '%'")  # 10
    log = Path(location) / "_delta_log"
    assert (log / "00000000000000000010.checkpoint.parquet").exists()
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 10
    t.append(pa.Table.from_pydict({"id": [11], "p": [None], "v": [1.0]}, schema=schema))  # 11

    assert_delta_rs_reads_identically(location)
    assert rs_table(location).transaction_version("loader") == 7

    # delta-rs from the checkpoint alone: the commits it replaces are gone
    copy = tmp_path / "checkpoint-only"
    shutil.copytree(location, copy)
    for v in range(11):
        (copy / "_delta_log" / f"{v:020d}.json").unlink()
    theirs = rs_table(str(copy))
    assert theirs.version() == 11
    assert_same_rows(DeltaTable(location).to_arrow(), rs_rows(theirs))
    assert theirs.transaction_version("loader") == 7
    assert json.loads(theirs.schema().to_json()) == json.loads(DeltaTable(location).schema.to_json())


def test_explicit_checkpoint_of_a_column_mapped_partitioned_table_is_read_by_delta_rs(tmp_path):
    location = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("p q", pa.string()), ("d", pa.date32())])
    t = DeltaTable.create(
        location, schema, partition_by=["p q", "d"], properties={"delta.columnMapping.mode": "name"}
    )
    t.append(
        pa.Table.from_pydict(
            {
                "id": [1, 2, 3],
                "p q": ["x y", None, "z"],
                "d": [dt.date(2024, 1, 1), None, dt.date(2024, 1, 2)],
            },
            schema=schema,
        )
    )
    t.delete("id = 3")
    assert t.checkpoint() == 2
    copy = tmp_path / "checkpoint-only"
    shutil.copytree(location, copy)
    for v in range(3):
        (copy / "_delta_log" / f"{v:020d}.json").unlink()
    assert_same_rows(DeltaTable(location).to_arrow(), rs_rows(rs_table(str(copy))))
    assert_delta_rs_reads_identically(location)


# -- deletes, updates, overwrite with predicate ---------------------------------------------------------------


def test_every_version_of_a_history_of_deletes_updates_and_overwrites_reads_identically(tmp_path):
    location = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64()), ("s", pa.string())])
    t = DeltaTable.create(location, schema, partition_by=["p"])
    t.append(
        pa.Table.from_pydict(
            {
                "id": list(range(12)),
                "p": ["a", "b", "c", None] * 3,
                "v": [None if i % 5 == 0 else i for i in range(12)],
                "s": [f"s{i}" for i in range(12)],
            },
            schema=schema,
        )
    )
    t.delete("p = 'c'")  # whole files
    t.delete("v > 8")  # rewrites
    t.update("v IS NULL", {"v": "-1", "s": "upper(s)"})
    t.update("p = 'a'", {"p": "'b'"})  # rows move partition
    t.overwrite(
        pa.Table.from_pydict({"id": [100], "p": ["b"], "v": [1], "s": ["new"]}, schema=schema), "p = 'b'"
    )
    t.overwrite(
        pa.Table.from_pydict({"id": [101], "p": [None], "v": [2], "s": ["n"]}, schema=schema),
        "p IS NULL AND v < 5",
    )
    t.delete()
    t.append(pa.Table.from_pydict({"id": [7], "p": ["z"], "v": [7], "s": ["z"]}, schema=schema))
    t.overwrite(pa.Table.from_pydict({"id": [8], "p": ["y"], "v": [8], "s": ["y"]}, schema=schema))
    assert DeltaTable.latest_version(location) == 10
    _assert_every_version_identical(location)
    history = rs_table(location).history()
    assert [h["operation"] for h in reversed(history)] == [
        "CREATE TABLE",
        "WRITE",
        "DELETE",
        "DELETE",
        "UPDATE",
        "UPDATE",
        "WRITE",
        "WRITE",
        "DELETE",
        "WRITE",
        "WRITE",
    ]


# -- table features -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "properties",
    [
        pytest.param({"delta.enableChangeDataFeed": "true"}, id="change-data-feed"),
        pytest.param({"delta.enableInCommitTimestamps": "true"}, id="in-commit-timestamps"),
        pytest.param({"delta.enableDeletionVectors": "true"}, id="deletion-vectors"),
        pytest.param({"delta.constraints.positive": "id > 0"}, id="check-constraint"),
        pytest.param({"delta.appendOnly": "true"}, id="append-only"),
        pytest.param(
            {
                "delta.checkpointInterval": "2",
                "delta.logRetentionDuration": "interval 7 days",
                "owner": "team-a",
            },
            id="plain-properties",
        ),
    ],
)
def test_tables_with_table_features_are_read_by_delta_rs(tmp_path, properties):
    location = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    t = DeltaTable.create(location, schema, partition_by=["p"], properties=properties)
    for i in range(1, 4):
        t.append(pa.Table.from_pydict({"id": [i, i + 10], "p": ["a", "b"]}, schema=schema))
    if "delta.appendOnly" not in properties:
        t.update("id = 1", {"id": "100"})
        t.delete("p = 'b'")
    _assert_every_version_identical(location)


def test_change_data_feed_of_appends_and_whole_file_deletes_is_read_by_delta_rs(tmp_path):
    location = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    t = DeltaTable.create(
        location, schema, partition_by=["p"], properties={"delta.enableChangeDataFeed": "true"}
    )
    t.append(pa.Table.from_pydict({"id": [1, 2], "p": ["a", "b"]}, schema=schema))
    t.overwrite(pa.Table.from_pydict({"id": [3], "p": ["b"]}, schema=schema), "p = 'b'")
    t.delete()
    changes = pa.table(rs_table(location).load_cdf(starting_version=1).read_all())
    got = sorted((r["id"], r["p"], r["_change_type"], r["_commit_version"]) for r in changes.to_pylist())
    assert got == [
        (1, "a", "delete", 3),
        (1, "a", "insert", 1),
        (2, "b", "delete", 2),
        (2, "b", "insert", 1),
        (3, "b", "delete", 3),
        (3, "b", "insert", 2),
    ]


def test_in_commit_timestamps_are_what_delta_rs_reports(tmp_path):
    location = str(tmp_path / "t")
    t = DeltaTable.create(
        location, pa.schema([("id", pa.int64())]), properties={"delta.enableInCommitTimestamps": "true"}
    )
    for i in range(3):
        t.append(pa.table({"id": pa.array([i], pa.int64())}))
    theirs = {h["version"]: h["inCommitTimestamp"] for h in rs_table(location).history()}
    ours = {h["version"]: h["inCommitTimestamp"] for h in DeltaTable(location).history()}
    assert theirs == ours
    assert sorted(theirs.values()) == [theirs[v] for v in sorted(theirs)]


def test_idempotent_writes_are_visible_to_delta_rs_as_app_transactions(tmp_path):
    location = str(tmp_path / "t")
    t = DeltaTable.create(location, pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": pa.array([1], pa.int64())}), app_id="dag.task", app_version=3)
    assert t.append(pa.table({"id": pa.array([1], pa.int64())}), app_id="dag.task", app_version=3) is None
    t.append(pa.table({"id": pa.array([2], pa.int64())}), app_id="other", app_version=1)
    theirs = rs_table(location)
    assert theirs.transaction_version("dag.task") == 3
    assert theirs.transaction_version("other") == 1
    assert theirs.version() == 2
    assert_delta_rs_reads_identically(location)


def test_delta_rs_can_append_to_and_update_a_table_this_engine_wrote(tmp_path):
    location = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    t = DeltaTable.create(location, schema, partition_by=["p"])
    t.append(pa.Table.from_pydict({"id": [1, 2], "p": ["a b", None]}, schema=schema))
    deltalake.write_deltalake(
        location, pa.Table.from_pydict({"id": [3], "p": ["a b"]}, schema=schema), mode="append"
    )
    rs_table(location).update(predicate="id = 1", updates={"id": "10"})
    rs_table(location).delete("p IS NULL")
    ours = assert_delta_rs_reads_identically(location)
    assert sorted(r["id"] for r in ours.to_arrow().to_pylist()) == [3, 10]

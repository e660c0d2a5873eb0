"""Writing data files: validation, partition folders and escaping, Parquet layout, column mapping.

Oracles: the layout Delta Lake on Spark writes (conformance corpus: Hive folders, ``add.path`` with
``%20``/``%25``, physical-name folders under column mapping), pyarrow's Parquet metadata, and delta-rs
reading tables whose log is built by hand from the actions this module returns.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core.schema.mapping import COLUMN_ID_KEY, PHYSICAL_NAME_KEY
from airflow_provider_delta.core.schema.types import (
    ArrayType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNtzType,
    TimestampType,
)
from airflow_provider_delta.core.storage import LocalStorage
from airflow_provider_delta.core.write.files import _uri_encode, conform_to_table, write_data_files
from airflow_provider_delta.exceptions import SchemaError, SchemaMismatchError

if TYPE_CHECKING:
    from airflow_provider_delta.core.actions import AddFile

UTC = dt.timezone.utc
SPECIAL = ["a b", "100%", "x/y", "k=v", "10:30", "ünï", "", None, "a b"]


def _write(
    root: Path, data: Any, schema: StructType, partitions: tuple[str, ...] = (), **kwargs: Any
) -> list[AddFile]:
    configuration = kwargs.pop("configuration", {})
    return write_data_files(
        data,
        storage=LocalStorage(str(root)),
        schema=schema,
        partition_columns=partitions,
        configuration=configuration,
        **kwargs,
    )


def _commit(
    root: Path, schema: StructType, partitions: tuple[str, ...], adds: list[AddFile], **conf: str
) -> None:
    """Write version 0 of a table by hand: protocol, metaData and the adds."""
    protocol: dict[str, Any] = {"minReaderVersion": 1, "minWriterVersion": 2}
    if "delta.columnMapping.mode" in conf:
        protocol = {"minReaderVersion": 2, "minWriterVersion": 5}
    if any(isinstance(f.type, TimestampNtzType) for _, f in schema.walk()):
        features = ["timestampNtz"]
        protocol = {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": features,
            "writerFeatures": features,
        }
    metadata = {
        "id": str(uuid.uuid4()),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": schema.to_json(),
        "partitionColumns": list(partitions),
        "configuration": conf,
        "createdTime": 1,
    }
    lines = [{"protocol": protocol}, {"metaData": metadata}, *({"add": a.to_dict()} for a in adds)]
    log = root / "_delta_log"
    log.mkdir(parents=True)
    (log / "00000000000000000000.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def _read_file(root: Path, add: AddFile) -> pa.Table:
    return pq.read_table(LocalStorage(str(root)).resolve(add.path))


def _sorted_rows(table: Any, key: str = "id") -> list[dict[str, Any]]:
    return sorted(pa.table(table).to_pylist(), key=lambda r: r[key])


PARTITIONED = StructType((StructField("id", LongType(), nullable=False), StructField("p", StringType())))


# -------------------------------------------------------------------------------- partition layout


def test_partition_values_with_special_characters_get_spark_folders_and_paths(tmp_path: Path) -> None:
    table = pa.table({"id": list(range(len(SPECIAL))), "p": SPECIAL})
    adds = _write(tmp_path, table, PARTITIONED, ("p",))
    by_value = {a.partition_values["p"]: a for a in adds}
    assert set(by_value) == {"a b", "100%", "x/y", "k=v", "10:30", "ünï", None}
    # Folder on disk: Hive escaping. add.path: that, URI-encoded (space -> %20, % -> %25).
    expected_paths = {
        "a b": "p=a%20b/",
        "100%": "p=100%2525/",
        "x/y": "p=x%252Fy/",
        "k=v": "p=k%253Dv/",
        "10:30": "p=10%253A30/",
        "ünï": "p=ünï/",
        None: "p=__HIVE_DEFAULT_PARTITION__/",
    }
    for value, prefix in expected_paths.items():
        assert by_value[value].path.startswith(prefix), (value, by_value[value].path)
    folders = sorted(p.parent.name for p in tmp_path.rglob("*.parquet"))
    assert folders == sorted(
        ["p=a b", "p=100%25", "p=x%2Fy", "p=k%3Dv", "p=10%3A30", "p=ünï", "p=__HIVE_DEFAULT_PARTITION__"]
    )


def test_each_file_holds_its_partition_rows_without_the_partition_column(tmp_path: Path) -> None:
    table = pa.table({"id": list(range(len(SPECIAL))), "p": SPECIAL})
    adds = _write(tmp_path, table, PARTITIONED, ("p",))
    for add in adds:
        data = _read_file(tmp_path, add)
        assert data.column_names == ["id"]
        expected = [i for i, v in enumerate(SPECIAL) if (v or None) == add.partition_values["p"]]
        assert data.column("id").to_pylist() == expected
        assert json.loads(add.stats or "")["numRecords"] == len(expected)


def test_empty_string_and_null_share_the_null_partition(tmp_path: Path) -> None:
    adds = _write(tmp_path, pa.table({"id": [1, 2], "p": ["", None]}), PARTITIONED, ("p",))
    assert len(adds) == 1
    assert adds[0].partition_values == {"p": None}
    assert adds[0].path.startswith("p=__HIVE_DEFAULT_PARTITION__/part-00000-")


def test_typed_partition_values_are_encoded_like_spark(tmp_path: Path) -> None:
    schema = StructType(
        (
            StructField("id", LongType()),
            StructField("d", DateType()),
            StructField("ts", TimestampType()),
            StructField("n", IntegerType()),
            StructField("x", DoubleType()),
            StructField("dec", DecimalType(5, 2)),
        )
    )
    table = pa.table(
        {
            "id": [1, 2],
            "d": [dt.date(2021, 9, 8), None],
            "ts": pa.array(
                [dt.datetime(2021, 9, 8, 11, 11, 11, tzinfo=UTC), None], pa.timestamp("us", tz="UTC")
            ),
            "n": pa.array([-7, None], pa.int32()),
            "x": [float("nan"), 1.5],
            "dec": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(5, 2)),
        }
    )
    adds = _write(tmp_path, table, schema, ("d", "ts", "n", "x", "dec"))
    values = sorted((a.partition_values for a in adds), key=lambda v: str(v["d"]))
    assert values == [
        {"d": "2021-09-08", "ts": "2021-09-08 11:11:11.000000", "n": "-7", "x": "NaN", "dec": "1.50"},
        {"d": None, "ts": None, "n": None, "x": "1.5", "dec": None},
    ]
    first = next(a for a in adds if a.partition_values["d"])
    assert first.path.startswith("d=2021-09-08/ts=2021-09-08%2011%253A11%253A11.000000/n=-7/x=NaN/dec=1.50/")


def test_partition_columns_are_matched_ignoring_case(tmp_path: Path) -> None:
    adds = _write(tmp_path, pa.table({"ID": [1], "P": ["v"]}), PARTITIONED, ("P",))
    assert adds[0].partition_values == {"p": "v"}
    assert adds[0].path.startswith("p=v/")


def test_rows_are_grouped_without_regard_to_input_order(tmp_path: Path) -> None:
    ids = list(range(200))
    table = pa.table({"id": ids, "p": [str(i % 7) for i in ids]})
    adds = _write(tmp_path, table, PARTITIONED, ("p",))
    assert len(adds) == 7
    for add in adds:
        rows = _read_file(tmp_path, add).column("id").to_pylist()
        assert rows == [i for i in ids if str(i % 7) == add.partition_values["p"]]  # input order kept


def test_unknown_or_nested_partition_column_raises(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="partition column 'nope' is not in the schema"):
        _write(tmp_path, pa.table({"id": [1]}), PARTITIONED, ("nope",))
    schema = StructType((StructField("a", ArrayType(LongType())),))
    with pytest.raises(SchemaError, match="cannot be a partition column"):
        _write(tmp_path, pa.table({"a": [[1]]}), schema, ("a",))


# ------------------------------------------------------------------------------------ file shape


def test_files_are_split_at_target_file_rows(tmp_path: Path) -> None:
    adds = _write(
        tmp_path, pa.table({"id": list(range(10)), "p": ["a"] * 10}), PARTITIONED, ("p",), target_file_rows=3
    )
    assert [json.loads(a.stats or "")["numRecords"] for a in adds] == [3, 3, 3, 1]
    read = [_read_file(tmp_path, a).column("id").to_pylist() for a in adds]
    assert read == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert [a.path.split("/")[1][:10] for a in adds] == [
        "part-00000",
        "part-00001",
        "part-00002",
        "part-00003",
    ]


def test_record_batch_reader_input_is_buffered_per_partition(tmp_path: Path) -> None:
    table = pa.table({"id": list(range(20)), "p": ["a", "b"] * 10})
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=3))
    adds = _write(tmp_path, reader, PARTITIONED, ("p",), target_file_rows=4)
    counts = sorted((a.partition_values["p"], json.loads(a.stats or "")["numRecords"]) for a in adds)
    assert counts == [("a", 2), ("a", 4), ("a", 4), ("b", 2), ("b", 4), ("b", 4)]
    rows = [r for a in adds for r in _read_file(tmp_path, a).column("id").to_pylist()]
    assert sorted(rows) == list(range(20))


def test_file_names_look_like_spark_and_name_the_codec(tmp_path: Path) -> None:
    schema = StructType((StructField("id", LongType()),))
    for codec, suffix in [("snappy", ".snappy.parquet"), ("zstd", ".zstd.parquet"), ("none", ".parquet")]:
        [add] = _write(tmp_path / codec, pa.table({"id": [1]}), schema, compression=codec, file_prefix="part")
        name = add.path
        assert name.startswith("part-00000-")
        assert name.endswith(f"-c000{suffix}")
        uuid.UUID(name[len("part-00000-") : -len(f"-c000{suffix}")])
        meta = pq.ParquetFile(LocalStorage(str(tmp_path / codec)).resolve(name)).metadata
        assert meta.row_group(0).column(0).compression == (
            "UNCOMPRESSED" if codec == "none" else codec.upper()
        )


def test_actions_carry_size_time_and_data_change(tmp_path: Path) -> None:
    schema = StructType((StructField("id", LongType()),))
    [add] = _write(tmp_path, pa.table({"id": [1, 2]}), schema, data_change=False)
    on_disk = Path(LocalStorage(str(tmp_path)).resolve(add.path))
    assert add.size == on_disk.stat().st_size
    assert add.modification_time == on_disk.stat().st_mtime_ns // 1_000_000
    assert add.data_change is False
    assert add.partition_values == {}
    assert add.stats == '{"numRecords":2,"minValues":{"id":1},"maxValues":{"id":2},"nullCount":{"id":0}}'


def test_timestamps_are_int64_microseconds_with_utc_flag_per_type(tmp_path: Path) -> None:
    schema = StructType((StructField("ts", TimestampType()), StructField("ntz", TimestampNtzType())))
    table = pa.table(
        {
            "ts": pa.array([1_000_000_000_123_456_789], pa.timestamp("ns", tz="UTC")),
            "ntz": pa.array([1_000_000_123_456], pa.timestamp("us")),
        }
    )
    [add] = _write(tmp_path, table, schema)
    parquet = pq.ParquetFile(LocalStorage(str(tmp_path)).resolve(add.path))
    ts, ntz = parquet.schema.column(0), parquet.schema.column(1)
    assert ts.physical_type == ntz.physical_type == "INT64"
    ts_type, ntz_type = json.loads(ts.logical_type.to_json()), json.loads(ntz.logical_type.to_json())
    assert (ts_type["Type"], ts_type["isAdjustedToUTC"], ts_type["timeUnit"]) == (
        "Timestamp",
        True,
        "microseconds",
    )
    assert (ntz_type["Type"], ntz_type["isAdjustedToUTC"], ntz_type["timeUnit"]) == (
        "Timestamp",
        False,
        "microseconds",
    )
    assert parquet.read().column("ts").to_pylist()[0] == dt.datetime(
        2001, 9, 9, 1, 46, 40, 123456, tzinfo=UTC
    )


def test_empty_input_writes_nothing(tmp_path: Path) -> None:
    table = pa.table({"id": pa.array([], pa.int64()), "p": pa.array([], pa.string())})
    assert _write(tmp_path, table, PARTITIONED, ("p",)) == []
    reader = pa.RecordBatchReader.from_batches(table.schema, [])
    assert _write(tmp_path, reader, PARTITIONED, ("p",)) == []
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"target_file_rows": 0}, "target_file_rows must be >= 1"),
        ({"file_prefix": "a/b"}, "invalid file_prefix"),
        ({"compression": "lzma"}, "unknown compression 'lzma'"),
    ],
)
def test_invalid_options_raise(tmp_path: Path, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _write(tmp_path, pa.table({"id": [1], "p": ["a"]}), PARTITIONED, ("p",), **kwargs)


# -------------------------------------------------------------------------------- column mapping


def _mapped(name: str, data_type: DataType, column_id: int, nullable: bool = True) -> StructField:
    meta = {COLUMN_ID_KEY: column_id, PHYSICAL_NAME_KEY: f"col-{column_id}-{name}"}
    return StructField(name, data_type, nullable, metadata=meta)


MAPPED = StructType(
    (
        _mapped("id", LongType(), 1, nullable=False),
        _mapped("info", StructType((_mapped("city", StringType(), 3), _mapped("zip", IntegerType(), 4))), 2),
        _mapped("tags", ArrayType(StringType()), 5),
        _mapped("part", StringType(), 6),
    )
)
MAPPED_DATA = pa.table(
    {
        "id": [1, 2, 3],
        "info": [{"city": "Paris", "zip": 75001}, None, {"city": "Lyon", "zip": None}],
        "tags": [["a"], [], None],
        "part": ["x y", "x y", None],
    }
)


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping_files_use_physical_names_and_field_ids(tmp_path: Path, mode: str) -> None:
    conf = {"delta.columnMapping.mode": mode}
    adds = _write(tmp_path, MAPPED_DATA, MAPPED, ("part",), configuration=conf)
    assert {tuple(a.partition_values.items()) for a in adds} == {
        (("col-6-part", "x y"),),
        (("col-6-part", None),),
    }
    add = next(a for a in adds if a.partition_values["col-6-part"])
    assert add.path.startswith("col-6-part=x%20y/part-00000-") or add.path.startswith(
        "col-6-part=x%20y/part-0000"
    )
    schema = pq.read_schema(LocalStorage(str(tmp_path)).resolve(add.path))
    assert schema.names == ["col-1-id", "col-2-info", "col-5-tags"]
    assert schema.field("col-1-id").metadata == {b"PARQUET:field_id": b"1"}
    info = schema.field("col-2-info")
    assert info.metadata == {b"PARQUET:field_id": b"2"}
    assert [info.type.field(i).name for i in range(2)] == ["col-3-city", "col-4-zip"]
    assert info.type.field(1).metadata == {b"PARQUET:field_id": b"4"}
    parquet_schema = pq.ParquetFile(LocalStorage(str(tmp_path)).resolve(add.path)).schema
    assert "field_id=3 col-3-city" in str(parquet_schema)
    stats = json.loads(add.stats or "")
    assert stats["minValues"] == {"col-1-id": 1, "col-2-info": {"col-3-city": "Paris", "col-4-zip": 75001}}


@pytest.mark.interop
def test_delta_rs_reads_a_column_mapped_table_written_here(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    conf = {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "6"}
    adds = _write(tmp_path, MAPPED_DATA, MAPPED, ("part",), configuration=conf)
    _commit(tmp_path, MAPPED, ("part",), adds, **conf)
    # delta-rs 1.6's to_pyarrow_table() returns nulls for column-mapped tables (the Spark-written golden
    # table-with-columnmapping-mode-name too); its DataFusion reader maps the columns.
    table = deltalake.DeltaTable(str(tmp_path))
    rows = deltalake.QueryBuilder().register("t", table).execute("SELECT * FROM t")
    assert _sorted_rows(rows) == _sorted_rows(MAPPED_DATA)


def test_our_reader_reads_a_column_mapped_table_written_here(tmp_path: Path) -> None:
    from airflow_provider_delta.core import DeltaTable

    conf = {"delta.columnMapping.mode": "id", "delta.columnMapping.maxColumnId": "6"}
    adds = _write(tmp_path, MAPPED_DATA, MAPPED, ("part",), configuration=conf)
    _commit(tmp_path, MAPPED, ("part",), adds, **conf)
    assert _sorted_rows(DeltaTable(str(tmp_path)).to_arrow()) == _sorted_rows(MAPPED_DATA)


# -------------------------------------------------------------------------------- input checks

TYPED = StructType(
    (
        StructField("id", LongType(), nullable=False),
        StructField("name", StringType()),
        StructField("ts", TimestampType()),
        StructField(
            "st",
            StructType((StructField("a", IntegerType(), nullable=False), StructField("b", StringType()))),
        ),
    )
)


def test_conform_casts_safely_and_fills_missing_nullable_columns() -> None:
    table = pa.table(
        {
            "ID": pa.array([1, 2], pa.int8()),
            "Name": pa.array(["x", None], pa.large_string()).dictionary_encode(),
            "ts": pa.array([dt.datetime(2021, 1, 1, 12, 0, 0, 1)] * 2, pa.timestamp("ns")),
        }
    )
    result = conform_to_table(table, TYPED)
    assert result.schema.names == ["id", "name", "ts", "st"]
    assert result.schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert result.to_pylist() == [
        {"id": 1, "name": "x", "ts": dt.datetime(2021, 1, 1, 12, 0, 0, 1, tzinfo=UTC), "st": None},
        {"id": 2, "name": None, "ts": dt.datetime(2021, 1, 1, 12, 0, 0, 1, tzinfo=UTC), "st": None},
    ]


def test_conform_keeps_instants_of_zoned_timestamps() -> None:
    ts = pa.array([dt.datetime(2021, 1, 1, 12, tzinfo=UTC)], pa.timestamp("ms", tz="America/New_York"))
    result = conform_to_table(pa.table({"id": [1], "ts": ts}), TYPED)
    assert result.column("ts").to_pylist() == [dt.datetime(2021, 1, 1, 12, tzinfo=UTC)]


def test_conform_fills_missing_nested_fields_and_matches_them_ignoring_case() -> None:
    st = pa.array([{"A": 1}], pa.struct([("A", pa.int16())]))
    result = conform_to_table(pa.table({"id": [1], "st": st}), TYPED)
    assert result.column("st").to_pylist() == [{"a": 1, "b": None}]


@pytest.mark.parametrize(
    ("table", "match"),
    [
        (pa.table({"id": ["1"]}), "column 'id' has type string, expected long"),
        (pa.table({"id": [1], "zz": [1]}), "column 'zz' is not in the table schema"),
        (pa.table({"name": ["a"]}), "column 'id' is missing and not nullable"),
        (pa.table({"id": pa.array([1, None])}), r"column 'id' is not nullable but has 1 null value\(s\)"),
        (
            pa.table({"id": [1], "ts": pa.array([1], pa.int64())}),
            "column 'ts' has type long, expected timestamp",
        ),
        (
            pa.table({"id": [1], "st": pa.array([{"a": 1, "c": 2}])}),
            "field 'st.c' is not in the table schema",
        ),
        (
            pa.table(
                {
                    "id": [1],
                    "st": pa.array(
                        [{"a": None, "b": "x"}], pa.struct([("a", pa.int32()), ("b", pa.string())])
                    ),
                }
            ),
            r"column 'st.a' is not nullable but has 1 null value\(s\)",
        ),
        (pa.table({"id": [1], "name": [2.5]}), "column 'name' has type double, expected string"),
        (pa.table({"id": [1], "Id": [2]}), "column 'Id' is not in the table schema"),
        (pa.table({"ID": [1], "Id": [2]}), "column 'id' is ambiguous: the data has 'ID', 'Id'"),
    ],
)
def test_bad_input_raises_schema_mismatch_naming_the_column(table: pa.Table, match: str) -> None:
    with pytest.raises(SchemaMismatchError, match=rf"^Cannot write to table(?: '[^']*')?: .*(?:{match})"):
        conform_to_table(table, TYPED)


def test_all_problems_are_reported_at_once() -> None:
    table = pa.table({"id": ["x"], "name": [1], "extra": [True]})
    with pytest.raises(SchemaMismatchError) as info:
        conform_to_table(table, TYPED)
    message = str(info.value)
    assert "column 'id' has type string, expected long" in message
    assert "column 'name' has type long, expected string" in message
    assert "column 'extra' is not in the table schema" in message


def test_not_null_field_inside_a_null_struct_is_accepted() -> None:
    st = pa.array([None, {"a": 1, "b": None}], pa.struct([("a", pa.int32()), ("b", pa.string())]))
    result = conform_to_table(pa.table({"id": [1, 2], "st": st}), TYPED)
    assert result.column("st").to_pylist() == [None, {"a": 1, "b": None}]


def test_narrowing_integers_is_checked_value_by_value() -> None:
    schema = StructType((StructField("n", IntegerType()),))
    assert conform_to_table(pa.table({"n": [1, 2]}), schema).column("n").type == pa.int32()
    with pytest.raises(SchemaMismatchError, match="column 'n' cannot be cast to integer"):
        conform_to_table(pa.table({"n": [2**40]}), schema)


def test_decimal_rescale_that_loses_digits_is_refused() -> None:
    schema = StructType((StructField("d", DecimalType(5, 1)),))
    ok = pa.array([decimal.Decimal("1.50")], pa.decimal128(5, 2))
    assert conform_to_table(pa.table({"d": ok}), schema).column("d").to_pylist() == [decimal.Decimal("1.5")]
    lossy = pa.array([decimal.Decimal("1.25")], pa.decimal128(5, 2))
    with pytest.raises(SchemaMismatchError, match="column 'd' cannot be cast to decimal"):
        conform_to_table(pa.table({"d": lossy}), schema)


def test_zoned_timestamp_into_timestamp_ntz_is_refused() -> None:
    schema = StructType((StructField("t", TimestampNtzType()),))
    zoned = pa.array([0], pa.timestamp("us", tz="UTC"))
    with pytest.raises(SchemaMismatchError, match="column 't' has type timestamp, expected timestamp_ntz"):
        conform_to_table(pa.table({"t": zoned}), schema)


def test_lists_and_maps_are_conformed_with_their_element_types() -> None:
    schema = StructType(
        (
            StructField("l", ArrayType(LongType(), contains_null=False)),
            StructField("m", MapType(StringType(), LongType(), value_contains_null=True)),
        )
    )
    table = pa.table(
        {
            "l": pa.array([[1, 2], None], pa.large_list(pa.int32())),
            "m": pa.array([[("k", 1)], None], pa.map_(pa.large_string(), pa.int8())),
        }
    )
    result = conform_to_table(table, schema)
    assert result.schema.field("l").type == pa.list_(pa.field("element", pa.int64(), nullable=False))
    assert result.to_pylist() == [{"l": [1, 2], "m": [("k", 1)]}, {"l": None, "m": None}]
    with pytest.raises(SchemaMismatchError, match="does not allow null elements"):
        conform_to_table(pa.table({"l": [[1, None]]}), schema)


def test_write_rejects_bad_input_before_writing_anything(tmp_path: Path) -> None:
    with pytest.raises(SchemaMismatchError, match="column 'id' has type string, expected long"):
        _write(tmp_path, pa.table({"id": ["1"], "p": ["a"]}), PARTITIONED, ("p",))
    assert not any(tmp_path.iterdir())


# -------------------------------------------------------------------------------- interop


INTEROP = StructType(
    (
        StructField("id", LongType(), nullable=False),
        StructField("p", StringType()),
        StructField("n", IntegerType()),
        StructField("price", DecimalType(10, 2)),
        StructField("ts", TimestampType()),
        StructField("ntz", TimestampNtzType()),
        StructField("name", StringType()),
        StructField("st", StructType((StructField("x", DoubleType()), StructField("d", DateType())))),
    )
)


def _interop_data() -> pa.Table:
    n = len(SPECIAL)
    return pa.table(
        {
            "id": list(range(n)),
            "p": SPECIAL,
            "n": pa.array([i * 3 if i % 4 else None for i in range(n)], pa.int32()),
            "price": pa.array([decimal.Decimal(f"{i}.25") for i in range(n)], pa.decimal128(10, 2)),
            "ts": pa.array(
                [dt.datetime(2024, 1, 1, 0, 0, i, 123456, tzinfo=UTC) for i in range(n)],
                pa.timestamp("us", tz="UTC"),
            ),
            "ntz": pa.array([dt.datetime(2024, 1, 1, 0, 0, i, 999) for i in range(n)], pa.timestamp("us")),
            "name": ["n" * 40 + str(i) for i in range(n)],
            "st": [{"x": i / 2, "d": dt.date(2024, 1, 1 + i)} for i in range(n)],
        }
    )


@pytest.fixture
def interop_table(tmp_path: Path) -> tuple[Path, list[AddFile]]:
    root = tmp_path / "t"
    adds = _write(root, _interop_data(), INTEROP, ("p",))
    _commit(root, INTEROP, ("p",), adds)
    return root, adds


@pytest.mark.interop
def test_delta_rs_reads_back_the_rows(interop_table: tuple[Path, list[AddFile]]) -> None:
    deltalake = pytest.importorskip("deltalake")
    root, _ = interop_table
    expected = _interop_data()
    expected = expected.set_column(1, "p", pa.array([v or None for v in SPECIAL]))
    assert _sorted_rows(deltalake.DeltaTable(str(root)).to_pyarrow_table()) == _sorted_rows(expected)


@pytest.mark.interop
def test_delta_rs_parses_the_stats(interop_table: tuple[Path, list[AddFile]]) -> None:
    deltalake = pytest.importorskip("deltalake")
    root, adds = interop_table
    actions = {
        r["path"]: r
        for r in pa.table(deltalake.DeltaTable(str(root)).get_add_actions(flatten=True)).to_pylist()
    }
    assert len(actions) == len(adds)
    add = next(a for a in adds if a.partition_values["p"] == "a b")  # rows 0 and 8
    row = actions[add.path]
    assert row["num_records"] == 2
    assert (row["min.id"], row["max.id"], row["null_count.id"]) == (0, 8, 0)
    assert (row["min.n"], row["max.n"], row["null_count.n"]) == (None, None, 2)  # rows 0 and 8 are null
    assert (row["min.price"], row["max.price"]) == (decimal.Decimal("0.25"), decimal.Decimal("8.25"))
    assert row["min.ts"] == dt.datetime(2024, 1, 1, 0, 0, 0, 123000, tzinfo=UTC)
    assert row["max.ts"] == dt.datetime(2024, 1, 1, 0, 0, 8, 123000, tzinfo=UTC)
    assert row["min.ntz"] == dt.datetime(2024, 1, 1, 0, 0, 0)
    assert row["min.name"] == "n" * 32
    assert row["max.name"] == "n" * 32 + "\ufffd"
    assert (row["min.st.x"], row["max.st.x"], row["null_count.st.d"]) == (0.0, 4.0, 0)
    assert row["max.st.d"] == dt.date(2024, 1, 9)
    assert row["partition.p"] == "a b"


def test_our_reader_reads_back_the_rows_and_skips_by_stats(interop_table: tuple[Path, list[AddFile]]) -> None:
    from airflow_provider_delta.core import DeltaTable

    root, _ = interop_table
    table = DeltaTable(str(root))
    expected = _interop_data().set_column(1, "p", pa.array([v or None for v in SPECIAL]))
    assert _sorted_rows(table.to_arrow()) == _sorted_rows(expected)
    pytest.importorskip("airflow_provider_delta.core.expressions")
    from airflow_provider_delta.core.read.scan import plan_scan

    assert [r["id"] for r in _sorted_rows(table.to_arrow(filter="id > 5"))] == [6, 7, 8]
    # Files whose id range is all <= 5 are skipped by their stats.
    plan = plan_scan(table.snapshot, filter="id > 5")
    assert plan.skipped_files == len(table.files()) - 2  # kept: 'a b' (ids 0, 8) and null (ids 6, 7)


# -------------------------------------------------------------------------------- paths


@pytest.mark.parametrize(
    ("raw", "encoded"),
    [
        ("p=a b/f.parquet", "p=a%20b/f.parquet"),
        ("p=100%25/f", "p=100%2525/f"),
        ("p=ü/f", "p=ü/f"),
        ('a<b>c|d`e{f}g"h', "a%3Cb%3Ec%7Cd%60e%7Bf%7Dg%22h"),
        ("keep-_.!~*'(),;:$&+=@/", "keep-_.!~*'(),;:$&+=@/"),
        ("nbsp\u00a0ctl\u0085", "nbsp%C2%A0ctl%C2%85"),
    ],
)
def test_add_paths_are_uri_encoded_like_hadoop(raw: str, encoded: str) -> None:
    assert _uri_encode(raw) == encoded

"""Arrow data as other libraries hand it over: every command takes it, crashes found by hand stay fixed.

The broad check is the property test ``tests/property/test_arrow_inputs.py``; these are the cases the
issue reported (MERGE on view columns, a map with NOT NULL values, a null struct with a NOT NULL
struct child), a stream appended, and arro3 objects through the Arrow C stream interface.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.exceptions import SchemaError
from tests.interop import rs_table

if TYPE_CHECKING:
    from pathlib import Path

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string()), ("b", pa.binary())])


def _views(keys: list[int], texts: list[str | None]) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int64()), "s": pa.array(texts, pa.string_view()),
                     "b": pa.array([None if t is None else t.encode() for t in texts], pa.binary_view())})


def _rows(location: str) -> list[dict[str, Any]]:
    ours = sorted(DeltaTable(location).to_arrow().to_pylist(), key=lambda r: r["k"])
    assert sorted(rs_table(location).to_pyarrow_table().to_pylist(), key=lambda r: r["k"]) == ours
    return ours


def _upsert(t: DeltaTable, source: Any) -> dict[str, Any]:
    return (t.merge(source, "t.k = s.k", source_alias="s", target_alias="t")
            .when_matched_update_all().when_not_matched_insert_all().execute())


def test_merge_takes_a_source_with_view_columns_as_polars_and_arro3_hand_over(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    t.append(_views([1, 2], ["a", "b"]))
    metrics = _upsert(t, _views([2, 3], ["B", None]))
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == (1, 1)
    assert [(r["k"], r["s"], r["b"]) for r in _rows(t.location)] == [(1, "a", b"a"), (2, "B", b"B"), (3, None, None)]


def test_arro3_tables_are_taken_through_the_c_stream_interface(tmp_path: Path) -> None:
    a3 = pytest.importorskip("arro3.core")
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    t.append(a3.Table.from_arrow(_views([1], ["a"])))
    _upsert(t, a3.Table.from_arrow(_views([1, 2], ["A", "b"])))
    assert [(r["k"], r["s"]) for r in _rows(t.location)] == [(1, "A"), (2, "b")]


def test_appending_a_record_batch_reader_writes_every_row(tmp_path: Path) -> None:
    # The schema check used to read the stream, so the write found it empty and committed no row.
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    t.append(_views([1, 2, 3], ["a", "b", "c"]).to_reader(max_chunksize=1))
    assert [r["k"] for r in _rows(t.location)] == [1, 2, 3]


def test_a_map_with_not_null_values_is_written(tmp_path: Path) -> None:
    m = pa.map_(pa.string(), pa.field("value", pa.int64(), nullable=False))
    schema = pa.schema([("k", pa.int64()), ("m", m)])
    t = DeltaTable.create(str(tmp_path / "t"), schema)
    t.append(pa.table({"k": [1, 2], "m": pa.array([[("a", 1)], None], m)}, schema=schema))
    assert [r["m"] for r in _rows(t.location)] == [[("a", 1)], None]


def test_a_null_struct_with_a_not_null_struct_child_is_written(tmp_path: Path) -> None:
    inner = pa.struct([pa.field("x", pa.int64())])
    outer = pa.struct([pa.field("c", inner, nullable=False)])
    schema = pa.schema([("k", pa.int64()), pa.field("s", outer)])
    values = pa.StructArray.from_arrays([pa.array([{"x": 1}, None], inner)], fields=[outer.field(0)],
                                        mask=pa.array([False, True]))
    t = DeltaTable.create(str(tmp_path / "t"), schema)
    t.append(pa.table({"k": [1, 2], "s": values}, schema=schema))
    assert [r["s"] for r in _rows(t.location)] == [{"c": {"x": 1}}, None]


@pytest.mark.parametrize("arrow_type", [pa.uint64(), pa.time64("us"), pa.duration("s")])
def test_types_without_a_delta_equivalent_are_refused_naming_the_column(tmp_path: Path, arrow_type: Any) -> None:
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("k", pa.int64())]))
    data = pa.table({"k": pa.array([1], pa.int64()), "odd": pa.array([1], arrow_type)})
    with pytest.raises(SchemaError, match="'odd'"):
        t.append(data, schema_mode="merge")
    with pytest.raises(SchemaError, match="'odd'"):
        _upsert(t, data)
    assert DeltaTable(t.location).version == 0


def test_target_files_holding_view_large_and_dictionary_types_are_merged_updated_and_deleted(tmp_path: Path) -> None:
    # delta-rs writes the Arrow types it is given into the files (and their ARROW:schema).
    import deltalake

    location = str(tmp_path / "t")
    views = pa.table({"k": pa.array([1, 2], pa.int64()), "s": pa.array(["a", "b"], pa.string_view()),
                      "l": pa.array([["x"], None], pa.large_list(pa.string_view())),
                      "d": pa.array(["u", "v"]).dictionary_encode()})
    deltalake.write_deltalake(location, views)
    t = DeltaTable(location)
    source = pa.table({"k": pa.array([2, 3], pa.int64()), "s": pa.array(["B", "c"], pa.large_string()),
                       "l": pa.array([["y"], ["z"]], pa.list_view(pa.string())),
                       "d": pa.array(["w", "w"]).dictionary_encode()})
    _upsert(t, source)
    t.update("k = 1", {"s": "'z'"})
    t.delete("k = 3")
    assert _rows(location) == [{"k": 1, "s": "z", "l": ["x"], "d": "u"}, {"k": 2, "s": "B", "l": ["y"], "d": "w"}]

"""Change data feed: what our writes record, and what ``DeltaTable.changes`` reads back.

Writes: UPDATE, DELETE with a data predicate and replaceWhere on data columns write ``_change_data``
files (``cdc`` actions); appends, partition-only deletes and delete-all write none and are read from
their add/remove actions. Reads: Delta's range rules (inclusive bounds, timestamps, out of range,
enablement, schema changes inside the range) and rate limits. Interop with delta-rs lives in
tests/interop/test_cdf_interop.py, the Spark-written corpus in tests/conformance/test_cdf_conformance.py.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.change_data import cdf_enabled
from airflow_provider_delta.core.schema.types import schema_from_json
from airflow_provider_delta.core.session import session_defaults
from airflow_provider_delta.core.write.changes import tag_changes, write_change_files
from airflow_provider_delta.exceptions import (
    ChangeDataNotRecordedError,
    ChangeDataSchemaError,
    DeltaError,
    SchemaError,
    SchemaMismatchError,
    VersionNotFoundError,
)

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
CDF = {"delta.enableChangeDataFeed": "true"}


def _data(ids: list[int], ps: list[str], vs: list[int]) -> pa.Table:
    return pa.Table.from_pydict({"id": ids, "p": ps, "v": vs}, schema=SCHEMA)


def _table(
    tmp_path: Path, *, partitioned: bool = True, properties: dict[str, str] | None = None
) -> DeltaTable:
    t = DeltaTable.create(
        str(tmp_path / "t"), SCHEMA, partition_by=["p"] if partitioned else [], properties=properties or CDF
    )
    t.append(_data([1, 2, 3, 4], ["a", "a", "b", "b"], [10, 20, 30, 40]))
    return t


def _changes(table: pa.Table) -> list[tuple[Any, ...]]:
    """(version, change type, id, p, v) sorted."""
    return sorted(
        (r["_commit_version"], r["_change_type"], r["id"], r["p"], r["v"]) for r in table.to_pylist()
    )


def _actions(location: str, version: int) -> list[dict[str, Any]]:
    text = (Path(location) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _cdc_actions(location: str, version: int) -> list[dict[str, Any]]:
    return [a["cdc"] for a in _actions(location, version) if "cdc" in a]


def _set_commit_times(location: str, times: dict[int, dt.datetime]) -> None:
    for version, when in times.items():
        stamp = when.replace(tzinfo=dt.timezone.utc).timestamp()
        os.utime(Path(location) / "_delta_log" / f"{version:020d}.json", (stamp, stamp))


# -- writes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_update_records_preimage_and_postimage_of_updated_rows_only(tmp_path, partitioned):
    t = _table(tmp_path, partitioned=partitioned)
    version = t.update("id = 2", {"v": "v + 1"})
    cdc = _cdc_actions(t.location, version)
    assert cdc and all(c["path"].startswith("_change_data/") and c["dataChange"] is False for c in cdc)
    if partitioned:
        assert [c["partitionValues"] for c in cdc] == [{"p": "a"}]
        assert cdc[0]["path"].startswith("_change_data/p=a/cdc-")
    assert _changes(t.changes(version, version)) == [
        (2, "update_postimage", 2, "a", 21),
        (2, "update_preimage", 2, "a", 20),
    ]


def test_change_data_files_hold_data_columns_and_change_type_like_spark(tmp_path):
    t = _table(tmp_path)
    version = t.update("id = 3", {"v": "0"})
    (cdc,) = _cdc_actions(t.location, version)
    assert cdc["path"].endswith(".c000.snappy.parquet")
    file = pq.read_table(Path(t.location) / cdc["path"])
    assert file.column_names == ["id", "v", "_change_type"]
    assert cdc["size"] == (Path(t.location) / cdc["path"]).stat().st_size


def test_update_of_a_partition_column_records_the_postimage_in_the_new_partition(tmp_path):
    t = _table(tmp_path)
    version = t.update("id = 1", {"p": "'b'"})
    assert sorted(c["partitionValues"]["p"] for c in _cdc_actions(t.location, version)) == ["a", "b"]
    assert _changes(t.changes(version)) == [
        (2, "update_postimage", 1, "b", 10),
        (2, "update_preimage", 1, "a", 10),
    ]


def test_delete_with_a_data_predicate_records_the_deleted_rows(tmp_path):
    t = _table(tmp_path)
    version = t.delete("v >= 20 AND v <= 30")
    assert _cdc_actions(t.location, version)
    assert _changes(t.changes(version)) == [(2, "delete", 2, "a", 20), (2, "delete", 3, "b", 30)]


def test_delete_of_every_row_of_a_file_by_data_predicate_still_writes_change_files(tmp_path):
    t = _table(tmp_path)
    version = t.delete("v > 0")
    assert _cdc_actions(t.location, version)
    assert [c[1:3] for c in _changes(t.changes(version))] == [("delete", i) for i in (1, 2, 3, 4)]


@pytest.mark.parametrize("predicate", ["p = 'a'", None], ids=["partition-only", "delete-all"])
def test_whole_file_deletes_write_no_change_files_and_read_as_deletes(tmp_path, predicate):
    t = _table(tmp_path)
    version = t.delete(predicate)
    assert _cdc_actions(t.location, version) == []
    assert not (Path(t.location) / "_change_data").exists()
    expected = [(2, "delete", 1, "a", 10), (2, "delete", 2, "a", 20)]
    if predicate is None:
        expected += [(2, "delete", 3, "b", 30), (2, "delete", 4, "b", 40)]
    assert _changes(t.changes(version)) == sorted(expected)


def test_appends_write_no_change_files_and_read_as_inserts(tmp_path):
    t = _table(tmp_path)
    assert _cdc_actions(t.location, 1) == []
    assert _changes(t.changes(0)) == [
        (1, "insert", 1, "a", 10),
        (1, "insert", 2, "a", 20),
        (1, "insert", 3, "b", 30),
        (1, "insert", 4, "b", 40),
    ]


def test_overwrite_with_a_data_predicate_records_deletes_and_inserts_in_change_files(tmp_path):
    t = _table(tmp_path)
    version = t.overwrite(_data([9], ["a"], [15]), "v < 25")
    assert len(_cdc_actions(t.location, version)) >= 1
    assert _changes(t.changes(version)) == [
        (2, "delete", 1, "a", 10),
        (2, "delete", 2, "a", 20),
        (2, "insert", 9, "a", 15),
    ]


def test_overwrite_with_a_data_predicate_matching_nothing_reads_inserts_from_add_actions(tmp_path):
    t = _table(tmp_path)
    version = t.overwrite(_data([9], ["a"], [99]), "v > 50")
    assert _cdc_actions(t.location, version) == []
    assert _changes(t.changes(version)) == [(2, "insert", 9, "a", 99)]


def test_overwrite_with_a_partition_predicate_reads_from_add_and_remove_actions(tmp_path):
    t = _table(tmp_path)
    version = t.overwrite(_data([7], ["b"], [70]), "p = 'b'")
    assert _cdc_actions(t.location, version) == []
    assert _changes(t.changes(version)) == [
        (2, "delete", 3, "b", 30),
        (2, "delete", 4, "b", 40),
        (2, "insert", 7, "b", 70),
    ]


def test_tables_without_change_data_feed_get_no_change_files(tmp_path):
    t = _table(tmp_path, properties={"delta.appendOnly": "false"})
    version = t.update("id = 1", {"v": "0"})
    assert _cdc_actions(t.location, version) == []
    assert not (Path(t.location) / "_change_data").exists()


def test_column_mapped_tables_write_physical_names_and_read_logical_ones(tmp_path):
    t = _table(tmp_path, properties={**CDF, "delta.columnMapping.mode": "name"})
    version = t.update("id = 4", {"v": "41"})
    (cdc,) = _cdc_actions(t.location, version)
    physical = {f.name: f.metadata["delta.columnMapping.physicalName"] for f in t.schema}
    assert cdc["partitionValues"] == {physical["p"]: "b"}
    file = pq.read_table(Path(t.location) / cdc["path"].replace("%3D", "="))
    assert file.column_names == [physical["id"], physical["v"], "_change_type"]
    assert _changes(t.changes(version)) == [
        (2, "update_postimage", 4, "b", 41),
        (2, "update_preimage", 4, "b", 40),
    ]


def test_write_change_files_refuses_rows_without_a_known_change_type(tmp_path):
    t = _table(tmp_path)
    with pytest.raises(SchemaMismatchError, match="_change_type"):
        write_change_files(t.snapshot, _data([1], ["a"], [1]))
    with pytest.raises(SchemaMismatchError, match="'upsert'"):
        write_change_files(
            t.snapshot, _data([1], ["a"], [1]).append_column("_change_type", pa.array(["upsert"]))
        )
    assert write_change_files(t.snapshot, tag_changes(_data([], [], []), "insert")) == []


# -- enablement ----------------------------------------------------------------------------------------


def _set_properties(t: DeltaTable, **changes: str | None) -> int:
    md = t.metadata
    conf = {k: v for k, v in {**md.configuration, **changes}.items() if v is not None}
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.update_metadata(dataclasses.replace(md, configuration=conf))
    return t.refresh().version


def test_enabling_change_data_feed_later_records_only_later_changes(tmp_path):
    t = _table(tmp_path, properties={"delta.appendOnly": "false"})
    t.update("id = 1", {"v": "11"})  # v2, not recorded
    enabled = _set_properties(t, **{"delta.enableChangeDataFeed": "true"})  # v3
    assert cdf_enabled(t.refresh().configuration)
    assert t.refresh().protocol.min_writer_version >= 4
    version = t.update("id = 2", {"v": "21"})  # v4
    assert _changes(t.changes(enabled)) == [
        (4, "update_postimage", 2, "a", 21),
        (4, "update_preimage", 2, "a", 20),
    ]
    with pytest.raises(ChangeDataNotRecordedError, match="not enabled at version 2") as err:
        t.changes(2, version)
    assert err.value.version == 2


def test_disabling_change_data_feed_inside_the_range_is_an_error(tmp_path):
    t = _table(tmp_path)
    disabled = _set_properties(t, **{"delta.enableChangeDataFeed": "false"})
    t.append(_data([5], ["a"], [50]))
    with pytest.raises(ChangeDataNotRecordedError, match=f"version {disabled}"):
        t.changes(0)
    assert len(t.changes(0, disabled - 1)) == 4


def test_enabling_change_data_feed_on_a_schema_with_reserved_names_is_refused(tmp_path):
    location = str(tmp_path / "t")
    t = DeltaTable.create(location, pa.schema([("id", pa.int64()), ("_change_type", pa.string())]))
    with pytest.raises(SchemaError, match="'_change_type'"):
        _set_properties(t, **{"delta.enableChangeDataFeed": "true"})
    assert DeltaTable.latest_version(location) == 0
    with pytest.raises(SchemaError, match="_commit_version"):
        DeltaTable.create(str(tmp_path / "u"), pa.schema([("_commit_version", pa.int64())]), properties=CDF)


def test_session_default_properties_enable_change_data_feed_on_new_tables_only(tmp_path):
    old = DeltaTable.create(str(tmp_path / "old"), SCHEMA)
    with session_defaults(table_properties=CDF):
        new = DeltaTable.create(str(tmp_path / "new"), SCHEMA)
        explicit = DeltaTable.create(
            str(tmp_path / "off"), SCHEMA, properties={"delta.enableChangeDataFeed": "false"}
        )
        old.append(_data([1], ["a"], [1]))
    assert cdf_enabled(new.snapshot.configuration)
    assert not cdf_enabled(explicit.snapshot.configuration)
    assert not cdf_enabled(old.refresh().configuration)


# -- ranges --------------------------------------------------------------------------------------------


def test_bounds_are_inclusive_and_rows_are_ordered_by_version(tmp_path):
    t = _table(tmp_path)
    t.update("id = 1", {"v": "11"})  # v2
    t.delete("id = 4")  # v3
    got = t.changes(2, 3)
    assert got.column("_commit_version").to_pylist() == [2, 2, 3]
    assert got.schema.names == ["id", "p", "v", "_change_type", "_commit_version", "_commit_timestamp"]
    assert got.schema.field("_commit_timestamp").type == pa.timestamp("us", tz="UTC")
    assert _changes(t.changes(3, 3)) == [(3, "delete", 4, "b", 40)]


def test_start_after_latest_version_is_an_error_or_empty_with_allow_out_of_range(tmp_path):
    t = _table(tmp_path)
    with pytest.raises(VersionNotFoundError, match="starting version 5 is after the latest version 1"):
        t.changes(5)
    empty = t.changes(5, allow_out_of_range=True)
    assert empty.num_rows == 0
    assert empty.schema.names[-3:] == ["_change_type", "_commit_version", "_commit_timestamp"]


def test_end_version_after_latest_is_clamped_and_end_before_start_is_an_error(tmp_path):
    t = _table(tmp_path)
    assert len(t.changes(1, 99)) == 4
    batch = t.changes_batch(1, 99)
    assert (batch.end_version, batch.requested_end_version, batch.is_complete) == (1, 1, True)
    with pytest.raises(VersionNotFoundError, match="ending version 0 is before starting version 1"):
        t.changes(1, 0)


def test_invalid_arguments_are_refused(tmp_path):
    t = _table(tmp_path)
    with pytest.raises(DeltaError, match="not both"):
        t.changes(0, starting_timestamp="2024-01-01")
    with pytest.raises(DeltaError, match="starting_version must be a version"):
        t.changes(-1)
    with pytest.raises(DeltaError, match="max_files must be an integer >= 1"):
        t.changes(0, max_files=0)


def test_timestamps_map_start_to_first_commit_at_or_after_and_end_to_last_at_or_before(tmp_path):
    t = _table(tmp_path)
    t.update("id = 1", {"v": "11"})  # v2
    t.delete("id = 4")  # v3
    _set_commit_times(t.location, {v: dt.datetime(2024, 1, 1 + v, 12) for v in range(4)})
    got = t.changes(starting_timestamp="2024-01-02 12:00:00.001", ending_timestamp="2024-01-04")
    assert sorted(set(got.column("_commit_version").to_pylist())) == [2]
    assert got.column("_commit_timestamp")[0].as_py() == dt.datetime(2024, 1, 3, 12, tzinfo=dt.timezone.utc)
    assert len(t.changes(starting_timestamp="2024-01-02 12:00:00")) == 4 + 2 + 1
    assert len(t.changes(starting_timestamp="2023-01-01", ending_timestamp="2024-01-02 11:59:59")) == 0


def test_timestamps_after_the_latest_commit_are_errors_unless_allow_out_of_range(tmp_path):
    t = _table(tmp_path)
    _set_commit_times(t.location, {0: dt.datetime(2024, 1, 1), 1: dt.datetime(2024, 1, 2)})
    with pytest.raises(VersionNotFoundError, match="starting timestamp .* is after the latest commit"):
        t.changes(starting_timestamp="2024-02-01")
    assert t.changes(starting_timestamp="2024-02-01", allow_out_of_range=True).num_rows == 0
    with pytest.raises(VersionNotFoundError, match="ending timestamp .* is after the latest commit"):
        t.changes(0, ending_timestamp="2024-02-01")
    assert len(t.changes(0, ending_timestamp="2024-02-01", allow_out_of_range=True)) == 4
    with pytest.raises(VersionNotFoundError, match="before the earliest"):
        t.changes(0, ending_timestamp="2023-01-01")


# -- schema changes inside the range -------------------------------------------------------------------


def _change_schema(t: DeltaTable, edit: Any) -> int:
    md = t.metadata
    fields = json.loads(md.schema_string)
    edit(fields["fields"])
    with t.transaction(operation="CHANGE COLUMN") as txn:
        txn.update_metadata(dataclasses.replace(md, schema_string=json.dumps(fields)))
    return t.refresh().version


def test_added_column_inside_the_range_is_read_with_nulls_for_older_rows(tmp_path):
    t = _table(tmp_path)
    _change_schema(
        t, lambda fs: fs.append({"name": "note", "type": "string", "nullable": True, "metadata": {}})
    )
    t.append(pa.table({"id": [5], "p": ["a"], "v": [50], "note": ["new"]}))
    got = t.changes(0)
    assert got.schema.names[:4] == ["id", "p", "v", "note"]
    assert sorted((r["id"], r["note"]) for r in got.to_pylist()) == [
        (1, None),
        (2, None),
        (3, None),
        (4, None),
        (5, "new"),
    ]


def test_range_crossing_a_renamed_column_fails_and_reads_on_each_side_work(tmp_path):
    t = _table(tmp_path, properties={**CDF, "delta.columnMapping.mode": "name"})
    t.update("id = 1", {"v": "11"})  # v2

    def rename(fs: list[dict[str, Any]]) -> None:
        fs[2]["name"] = "value"

    renamed = _change_schema(t, rename)  # v3
    t.update("id = 2", {"value": "21"})  # v4
    with pytest.raises(ChangeDataSchemaError, match="'v' was renamed to 'value'"):
        t.changes(0)
    before = t.changes(0, renamed - 1)
    assert "v" in before.column_names and len(before) == 6
    after = t.changes(renamed)
    assert [(r["id"], r["value"], r["_change_type"]) for r in after.to_pylist()] == [
        (2, 20, "update_preimage"),
        (2, 21, "update_postimage"),
    ]


@pytest.mark.parametrize(
    ("edit", "fault"),
    [
        pytest.param(lambda fs: fs.pop(2), "'v' was dropped", id="drop"),
        pytest.param(
            lambda fs: fs[2].update(type="string"), "'v' changed type from long to string", id="type"
        ),
    ],
)
def test_range_crossing_a_dropped_or_retyped_column_fails(tmp_path, edit, fault):
    t = _table(tmp_path)
    changed = _change_schema(t, edit)
    with pytest.raises(ChangeDataSchemaError, match=fault) as err:
        t.changes(0)
    assert err.value.version in (0, changed)
    assert t.changes(changed).num_rows == 0


# -- rate limits ---------------------------------------------------------------------------------------


def test_max_files_reads_whole_commits_and_tells_where_to_continue(tmp_path):
    t = _table(tmp_path)  # v1: 2 files
    t.append(_data([5], ["a"], [50]))  # v2: 1 file
    t.append(_data([6, 7], ["a", "b"], [60, 70]))  # v3: 2 files
    empty_first = t.changes_batch(0, max_files=1)
    assert (empty_first.end_version, empty_first.num_files, len(empty_first.changes)) == (0, 0, 0)
    first = t.changes_batch(empty_first.next_starting_version, max_files=1)
    assert (first.start_version, first.end_version, first.num_files, first.is_complete) == (1, 1, 2, False)
    assert len(first.changes) == 4  # commit 1 alone exceeds the limit: at least one commit is read
    second = t.changes_batch(first.next_starting_version, max_files=2)
    assert (second.end_version, second.num_files) == (2, 1)
    third = t.changes_batch(second.next_starting_version, max_bytes=1)
    assert (third.end_version, third.is_complete) == (3, True)
    pieces = [first.changes, second.changes, third.changes]
    assert _changes(pa.concat_tables(pieces)) == _changes(t.changes(0))


# -- deletion vectors ----------------------------------------------------------------------------------


def test_file_re_added_with_a_new_deletion_vector_reads_only_newly_deleted_rows(tmp_path):
    from airflow_provider_delta.core.read.deletion_vectors import inline_descriptor

    t = _table(tmp_path, partitioned=False, properties={**CDF, "delta.enableDeletionVectors": "true"})
    (add,) = t.files()
    with t.transaction(operation="DELETE") as txn:
        txn.remove(add)
        txn.add(add._replace(deletion_vector=inline_descriptor([1]).to_dict()))
    t = t.refresh()
    first = t.version
    (add,) = t.files()
    with t.transaction(operation="DELETE") as txn:
        txn.remove(add)
        txn.add(add._replace(deletion_vector=inline_descriptor([1, 3]).to_dict()))
    assert _changes(t.refresh().changes(first)) == [(2, "delete", 2, "a", 20), (3, "delete", 4, "b", 40)]
    assert sorted(r["id"] for r in t.refresh().to_arrow().to_pylist()) == [1, 3]


def test_changes_schema_is_the_latest_tables_columns_plus_metadata_columns(tmp_path):
    t = _table(tmp_path)
    expected = schema_from_json(t.metadata.schema_string).names
    assert t.changes(0).column_names == [*expected, "_change_type", "_commit_version", "_commit_timestamp"]

"""The Delta sink (txn per run), Debezium events, schema changes, the preflight and every bad input."""

from __future__ import annotations

import os
import shutil
import threading
from typing import TYPE_CHECKING

import orjson
import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.commands.cdf_export import LocalExportEngine, export_app_id, export_changes
from airflow_provider_delta.exceptions import (
    ChangeDataMissingError,
    ChangeDataNotRecordedError,
    ConcurrentTransactionException,
    ExportOptionError,
    ExportRangeError,
    ExportSchemaChangeError,
    ExportSinkError,
    VersionNotFoundError,
)
from tests.unit.core.cdf_export.helpers import (
    CDF,
    SCHEMA,
    busy_table,
    read_file_sink,
    rows,
    sorted_rows,
    tree,
)

if TYPE_CHECKING:
    from pathlib import Path


# --------------------------------------------------------------------------------------------- Delta sink


def test_delta_sink_holds_the_changes_and_records_txn_in_the_same_commit(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src")
    sink = str(tmp_path / "sink")
    r = export_changes(str(tmp_path / "src"), sink, format="delta", max_versions=3)
    assert (r.start, r.end, r.sink_version) == (0, 2, 0)
    r = export_changes(str(tmp_path / "src"), sink, format="delta")
    assert (r.start, r.end, r.sink_version) == (3, 5, 1)
    out = DeltaTable(sink)
    assert out.snapshot.app_transaction_version(export_app_id(t.metadata.id, "default")) == 5
    assert sorted_rows(out.to_arrow()) == sorted_rows(t.changes(0))
    log = (tmp_path / "sink" / "_delta_log" / f"{1:020d}.json").read_bytes().splitlines()
    actions = [orjson.loads(x) for x in log]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "WRITE" and orjson.loads(info["userMetadata"])["cdfExport"] == {
        "sourceTableId": t.metadata.id,
        "startVersion": 3,
        "endVersion": 5,
    }
    assert any("txn" in a and a["txn"]["version"] == 5 for a in actions)
    assert any("add" in a for a in actions)


def test_delta_sink_is_readable_by_delta_rs(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    t = busy_table(tmp_path / "src")
    export_changes(str(tmp_path / "src"), str(tmp_path / "sink"), format="delta")
    theirs = pa.table(deltalake.DeltaTable(str(tmp_path / "sink")).to_pyarrow_table())
    cols = ["id", "p", "v", "_change_type", "_commit_version"]
    assert sorted_rows(theirs, cols) == sorted_rows(t.changes(0), cols)


def test_a_retried_delta_run_after_its_commit_landed_writes_nothing(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    sink = str(tmp_path / "sink")
    export_changes(str(tmp_path / "src"), sink, format="delta", starting_version=0, ending_version=5)
    before = tree(tmp_path / "sink")
    retry = export_changes(str(tmp_path / "src"), sink, format="delta", starting_version=0, ending_version=5)
    assert retry.skipped and retry.sink_version is None
    assert tree(tmp_path / "sink") == before


@pytest.mark.parametrize("existing_sink", [False, True], ids=["new-sink", "existing-sink"])
def test_two_concurrent_runs_into_a_delta_sink_cannot_both_land(tmp_path: Path, existing_sink: bool) -> None:
    t = busy_table(tmp_path / "src")
    sink = str(tmp_path / "sink")
    if existing_sink:
        export_changes(str(tmp_path / "src"), sink, format="delta", ending_version=2)
    barrier = threading.Barrier(2, timeout=30)

    class Together(LocalExportEngine):
        def write_delta(self, target, work):
            barrier.wait()  # both runs planned from the same watermark before either commits
            return super().write_delta(target, work)

    results, errors = [], []

    def run() -> None:
        try:
            results.append(export_changes(str(tmp_path / "src"), sink, format="delta", engine=Together()))
        except Exception as err:  # noqa: BLE001 - checked below
            errors.append(err)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(results) == 1 and len(errors) == 1
    assert isinstance(errors[0], ConcurrentTransactionException)
    assert sorted_rows(DeltaTable(sink).to_arrow()) == sorted_rows(t.changes(0))


def test_delta_sink_gains_columns_the_source_adds(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path / "src"), SCHEMA, properties=CDF)
    t.append(rows([1], ["a"], [1]))
    t.alter("ALTER TABLE t ADD COLUMNS (note STRING)")
    t.append(pa.table({"id": [2], "p": ["b"], "v": [2], "note": ["new"]}))
    r = export_changes(str(tmp_path / "src"), str(tmp_path / "sink"), format="delta")
    assert r.versions == 4
    out = DeltaTable(str(tmp_path / "sink"))
    assert out.schema.names == (
        "id",
        "p",
        "v",
        "_change_type",
        "_commit_version",
        "_commit_timestamp",
        "note",
    )
    assert sorted_rows(out.to_arrow(), ["id", "note"]) == [(1, None), (2, "new")]


def test_a_file_sink_keeps_each_versions_schema_across_a_schema_change(tmp_path: Path) -> None:
    t = DeltaTable.create(
        str(tmp_path / "src"), SCHEMA, properties={**CDF, "delta.columnMapping.mode": "name"}
    )
    t.append(rows([1], ["a"], [1]))
    t.alter("ALTER TABLE t RENAME COLUMN v TO value")
    t.append(pa.table({"id": [2], "p": ["b"], "value": [2]}))
    r = export_changes(str(tmp_path / "src"), str(tmp_path / "out"))
    assert r.rows == 2
    got = read_file_sink(tmp_path / "out").to_pylist()
    assert [(x["id"], x.get("v"), x.get("value")) for x in got] == [(1, 1, None), (2, None, 2)]


def test_a_renamed_column_cannot_evolve_a_delta_sink_and_nothing_is_written(tmp_path: Path) -> None:
    t = DeltaTable.create(
        str(tmp_path / "src"), SCHEMA, properties={**CDF, "delta.columnMapping.mode": "name"}
    )
    t.append(rows([1], ["a"], [1]))
    sink = str(tmp_path / "sink")
    export_changes(str(tmp_path / "src"), sink, format="delta")
    t.alter("ALTER TABLE t RENAME COLUMN v TO value")  # version 2
    t.append(pa.table({"id": [2], "p": ["b"], "value": [2]}))
    before = tree(tmp_path / "sink")
    with pytest.raises(ExportSchemaChangeError, match="version 2 is not additive") as info:
        export_changes(str(tmp_path / "src"), sink, format="delta")
    assert info.value.version == 2
    assert tree(tmp_path / "sink") == before


# --------------------------------------------------------------------------------------------- Debezium


def test_debezium_pairs_update_images_by_key_and_codes_every_change(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path / "src"), SCHEMA, partition_by=["p"], properties=CDF)
    t.append(rows([1, 2, 3], ["a", "a", "b"], [1, 2, 3]))  # 1: c c c
    t.update("id = 2", {"v": "v + 10"})  # 2: u
    t.update("id = 3", {"id": "30"})  # 3: the key changed: d then c
    t.delete("id = 1")  # 4: d
    export_changes(
        str(tmp_path / "src"), str(tmp_path / "out"), format="jsonl", envelope="debezium", key_columns=["id"]
    )
    events = read_file_sink(tmp_path / "out", "jsonl").to_pylist()
    summary = [
        (e["source"]["commit_version"], e["op"], (e["before"] or {}).get("id"), (e["after"] or {}).get("id"))
        for e in events
    ]
    assert summary == [
        (1, "c", None, 1),
        (1, "c", None, 2),
        (1, "c", None, 3),
        (2, "u", 2, 2),
        (3, "d", 3, None),
        (3, "c", None, 30),
        (4, "d", 1, None),
    ]
    update = events[3]
    assert (update["before"]["v"], update["after"]["v"]) == (2, 12)
    assert update["source"]["table_id"] == t.metadata.id and update["source"]["snapshot"] == "false"
    assert update["ts_ms"] == update["source"]["ts_ms"]


def test_debezium_snapshot_rows_are_reads(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path / "src"), SCHEMA, properties=CDF)
    t.append(rows([1, 2], ["a", "b"], [1, 2]))
    r = export_changes(
        str(tmp_path / "src"),
        str(tmp_path / "out"),
        envelope="debezium",
        key_columns=["id"],
        initial_snapshot=True,
    )
    assert r.row_counts == {"r": 2}
    events = read_file_sink(tmp_path / "out").to_pylist()
    assert {(e["op"], e["after"]["id"], e["before"]) for e in events} == {("r", 1, None), ("r", 2, None)}


def test_debezium_into_a_delta_sink(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src")
    r = export_changes(
        str(tmp_path / "src"), str(tmp_path / "sink"), format="delta", envelope="debezium", key_columns=["id"]
    )
    out = DeltaTable(str(tmp_path / "sink"))
    assert out.schema.names[:5] == ("before", "after", "op", "source", "ts_ms")
    assert out.to_arrow().num_rows == r.rows
    assert r.row_counts["u"] == 1
    del t


def test_debezium_keys_that_do_not_identify_rows_are_refused(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path / "src"), SCHEMA, properties=CDF)
    t.append(rows([1, 2], ["a", "a"], [1, 2]))
    t.update("p = 'a'", {"v": "v + 1"})
    with pytest.raises(ExportOptionError, match="several update_preimage rows"):
        export_changes(
            str(tmp_path / "src"),
            str(tmp_path / "out"),
            envelope="debezium",
            key_columns=["p"],
            starting_version=2,
        )


# --------------------------------------------------------------------------------------------- bad input


def _refused(tmp_path: Path, sink: str, error: type[Exception], match: str, **kwargs: object) -> Exception:
    before = tree(tmp_path / sink)
    with pytest.raises(error, match=match) as info:
        export_changes(str(tmp_path / "src"), str(tmp_path / sink), **kwargs)  # type: ignore[arg-type]
    assert tree(tmp_path / sink) == before, "nothing may be written to the sink on error"
    return info.value


def test_a_sink_of_another_format_than_its_first_run_is_refused(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    export_changes(str(tmp_path / "src"), str(tmp_path / "out"), ending_version=2)
    _refused(tmp_path, "out", ExportSinkError, "its first run used format 'parquet'", format="jsonl")
    _refused(tmp_path, "out", ExportSinkError, "holds a parquet/jsonl export", format="delta")
    export_changes(str(tmp_path / "src"), str(tmp_path / "sink"), format="delta", ending_version=2)
    _refused(tmp_path, "sink", ExportSinkError, "it is a Delta table")


def test_a_sink_holding_another_tables_export_is_refused(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    busy_table(tmp_path / "other")
    export_changes(str(tmp_path / "other"), str(tmp_path / "out"))
    export_changes(str(tmp_path / "other"), str(tmp_path / "sink"), format="delta")
    _refused(tmp_path, "out", ExportSinkError, "export of another table")
    _refused(tmp_path, "sink", ExportSinkError, "export of another table", format="delta")
    _refused(tmp_path, "out", ExportSinkError, "export of another table", name="second")


def test_a_delta_table_no_export_created_is_not_a_sink(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    DeltaTable.create(str(tmp_path / "plain"), SCHEMA)
    _refused(tmp_path, "plain", ExportSinkError, "no change data export created", format="delta")


def test_bad_options_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    _refused(tmp_path, "out", ExportOptionError, "key column 'nope' is not a column", key_columns=["nope"])
    _refused(tmp_path, "out", ExportOptionError, "needs key_columns", envelope="debezium")
    _refused(tmp_path, "out", ExportOptionError, "format must be one of", format="csv")
    _refused(tmp_path, "out", ExportOptionError, "max_versions must be", max_versions=0)
    assert not (tmp_path / "out").exists()


def test_a_range_outside_the_log_is_refused(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    err = _refused(
        tmp_path,
        "out",
        VersionNotFoundError,
        "starting_version 9 is after the latest version 5",
        starting_version=9,
    )
    assert err.version == 9  # type: ignore[attr-defined]
    _refused(
        tmp_path,
        "out",
        ExportRangeError,
        "ending_version 1 is before the start 3",
        starting_version=3,
        ending_version=1,
    )


def test_gaps_and_overlaps_with_the_sink_are_refused(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    for fmt, sink in (("parquet", "out"), ("delta", "sink")):
        export_changes(str(tmp_path / "src"), str(tmp_path / sink), format=fmt, ending_version=2)
        gap = _refused(
            tmp_path,
            sink,
            ExportRangeError,
            "would leave a gap after the sink's last version 2",
            format=fmt,
            starting_version=4,
        )
        assert gap.watermark == 2  # type: ignore[attr-defined]
        _refused(tmp_path, sink, ExportRangeError, "overlaps the sink", format=fmt, starting_version=1)


def test_the_feed_disabled_inside_the_range_is_refused(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src")
    t.alter("ALTER TABLE t SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'false')")  # 6
    t.append(rows([9], ["a"], [9]))  # 7
    t.alter("ALTER TABLE t SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")  # 8
    err = _refused(tmp_path, "out", ChangeDataNotRecordedError, "not enabled at version 6")
    assert err.version == 6  # type: ignore[attr-defined]


def test_a_vacuumed_change_file_fails_the_preflight_naming_version_and_file(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    log = (tmp_path / "src" / "_delta_log" / f"{2:020d}.json").read_bytes().splitlines()
    cdc = tmp_path / "src" / next(orjson.loads(x)["cdc"]["path"] for x in log if b'"cdc"' in x)
    cdc.unlink()
    err = _refused(tmp_path, "out", ChangeDataMissingError, r"version 2 needs file .*cdc-")
    assert err.version == 2 and err.path.endswith(cdc.name)  # type: ignore[attr-defined]
    _refused(tmp_path, "sink", ChangeDataMissingError, "version 2 needs file", format="delta")


def test_a_removed_data_file_fails_the_preflight(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src", partitioned=False)
    live = sorted(f.path for f in t.files())  # what version 6 deletes whole: its delete rows read them
    t.delete()  # 6: whole-file deletes read the removed files
    gone = tmp_path / "src" / live[0]
    os.unlink(gone)
    err = _refused(tmp_path, "out", ChangeDataMissingError, "needs file")
    assert err.path.endswith(gone.name)  # type: ignore[attr-defined]


def test_a_cleaned_up_commit_fails_the_preflight(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    DeltaTable(str(tmp_path / "src")).checkpoint()
    os.unlink(tmp_path / "src" / "_delta_log" / f"{2:020d}.json")
    _refused(tmp_path, "out", ChangeDataMissingError, "commit file of version 2", starting_version=1)


def test_a_copied_table_has_another_identity_than_the_sink_expects(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    export_changes(str(tmp_path / "src"), str(tmp_path / "out"))
    shutil.rmtree(tmp_path / "src")
    busy_table(tmp_path / "src")  # recreated: a new table id
    _refused(tmp_path, "out", ExportSinkError, "export of another table")

"""Tables written by delta-rs are appended to and updated by this engine, then read back by delta-rs.

Both engines write the same table in turn (delta-rs, then this engine, then delta-rs again...). After
every step both must read exactly the rows a plain Python model of the table predicts, and agree
with each other on version, schema and files. Commits of delta-rs that land while one of our
transactions is open are checked by our conflict checker like any other winner.
"""

from __future__ import annotations

import datetime as dt
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core import (
    CommitError,
    ConcurrentAppendException,
    ConcurrentDeleteReadException,
    DeltaTable,
    SchemaMismatchError,
)
from airflow_provider_delta.core.commands.delete import delete as delete_op
from airflow_provider_delta.core.commands.update import update as update_op
from airflow_provider_delta.core.commands.write import append as append_op
from tests.interop import assert_delta_rs_reads_identically, canonical_rows, rs_rows, rs_table

deltalake = pytest.importorskip("deltalake")

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.float64())])


def _data(rows: list[tuple[int, str | None, float | None]]) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "p": p, "v": v} for i, p, v in rows], schema=SCHEMA)


class Model:
    """The rows the table should hold, keyed by id."""

    def __init__(self) -> None:
        self.rows: dict[int, tuple[int, str | None, float | None]] = {}

    def insert(
        self, rows: list[tuple[int, str | None, float | None]]
    ) -> list[tuple[int, str | None, float | None]]:
        for r in rows:
            self.rows[r[0]] = r
        return rows

    def where(self, keep: Any) -> None:
        self.rows = {k: r for k, r in self.rows.items() if keep(r)}

    def set_v(self, match: Any, value: Any) -> None:
        self.rows = {k: (r[0], r[1], value(r)) if match(r) else r for k, r in self.rows.items()}

    def expected(self) -> list[tuple[Any, ...]]:
        return canonical_rows(_data(list(self.rows.values())))


def _check(location: str, model: Model) -> None:
    ours = assert_delta_rs_reads_identically(location)
    assert canonical_rows(ours.to_arrow(), SCHEMA.names) == model.expected()
    assert canonical_rows(rs_rows(rs_table(location)), SCHEMA.names) == model.expected()


def test_partitioned_delta_rs_table_is_written_by_both_engines_in_turn(tmp_path):
    location = str(tmp_path / "t")
    model = Model()
    deltalake.write_deltalake(
        location,
        _data(model.insert([(1, "a b", 1.0), (2, None, 2.0), (3, "x%y", 3.0), (4, "k=v/ü", None)])),
        partition_by=["p"],
    )
    _check(location, model)

    ours = DeltaTable(location)
    assert ours.append(_data(model.insert([(5, "a b", 5.0), (6, "new", 6.0), (7, None, None)]))) == 1
    _check(location, model)

    deltalake.write_deltalake(
        location, _data(model.insert([(8, "x%y", 8.0), (9, "k=v/ü", 9.0)])), mode="append"
    )
    _check(location, model)

    ours = DeltaTable(location)
    ours.update("p = 'a b'", {"v": "v * 10"})
    model.set_v(lambda r: r[1] == "a b", lambda r: r[2] * 10)
    _check(location, model)

    rs_table(location).update(predicate="id = 8", updates={"v": "80.0"})
    model.set_v(lambda r: r[0] == 8, lambda r: 80.0)
    _check(location, model)

    DeltaTable(location).delete("p IS NULL")
    model.where(lambda r: r[1] is not None)
    _check(location, model)

    rs_table(location).delete("v > 50")
    model.where(lambda r: r[2] is None or r[2] <= 50)
    _check(location, model)

    DeltaTable(location).delete("v IS NULL")  # id 4 in partition 'k=v/ü', written by delta-rs
    model.where(lambda r: r[2] is not None)
    _check(location, model)

    DeltaTable(location).overwrite(_data([(20, "x%y", 20.0)]), "p = 'x%y'")
    model.where(lambda r: r[1] != "x%y")
    model.insert([(20, "x%y", 20.0)])
    _check(location, model)

    deltalake.write_deltalake(location, _data([(30, "x%y", 30.0)]), mode="overwrite", predicate="p = 'x%y'")
    model.where(lambda r: r[1] != "x%y")
    model.insert([(30, "x%y", 30.0)])
    _check(location, model)

    DeltaTable(location).update("id = 30", {"p": "'moved'"})
    model.rows[30] = (30, "moved", 30.0)
    _check(location, model)

    deltalake.write_deltalake(location, _data(model.insert([(40, "moved", 4.0)])), mode="append")
    DeltaTable(location).append(_data(model.insert([(41, "moved", 4.1)])))
    _check(location, model)
    history = DeltaTable(location).history()
    engines = [
        "delta-rs" if h.get("engineInfo", "").startswith("delta-rs") else "ours" for h in reversed(history)
    ]
    assert engines == [
        "delta-rs",
        "ours",
        "delta-rs",
        "ours",
        "delta-rs",
        "ours",
        "delta-rs",
        "ours",
        "ours",
        "delta-rs",
        "ours",
        "delta-rs",
        "ours",
    ]


ALL_TYPES = pa.schema(
    [
        ("id", pa.int64()),
        ("b", pa.int8()),
        ("s", pa.int16()),
        ("i", pa.int32()),
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
        ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
        ("arr", pa.list_(pa.int64())),
        ("m", pa.map_(pa.string(), pa.int32())),
    ]
)


def _typed(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "b": i % 100,
        "s": -i,
        "i": i * 1000,
        "f": i / 4,
        "d": -i / 3,
        "dec": Decimal(f"{i}.25"),
        "dec38": Decimal(f"-{i}.000000000000000001"),
        "str": f"ü{i}",
        "bin": bytes([i, 0, 255]),
        "bool": i % 2 == 0,
        "date": dt.date(2024, 1, i),
        "ts": dt.datetime(2024, 1, 1, i, tzinfo=dt.timezone.utc),
        "ntz": dt.datetime(2000, 1, 1, 0, 0, i),
        "st": {"x": i, "y": None},
        "arr": [i, None],
        "m": [("k", i)],
    }


def test_delta_rs_table_with_every_type_takes_our_appends_and_updates(tmp_path):
    location = str(tmp_path / "t")
    deltalake.write_deltalake(location, pa.Table.from_pylist([_typed(1), _typed(2)], schema=ALL_TYPES))
    t = DeltaTable(location)
    assert (t.protocol.min_reader_version, t.protocol.min_writer_version) == (3, 7)
    assert "timestampNtz" in (t.protocol.writer_features or ())
    t.append(
        pa.Table.from_pylist([_typed(3), dict.fromkeys(ALL_TYPES.names, None) | {"id": 4}], schema=ALL_TYPES)
    )
    t.update("id = 1", {"dec": "dec + 1", "ts": "TIMESTAMP '2024-01-02 01:00:00'", "str": "'changed'"})
    deltalake.write_deltalake(location, pa.Table.from_pylist([_typed(5)], schema=ALL_TYPES), mode="append")
    ours = assert_delta_rs_reads_identically(location)
    rows = {r["id"]: r for r in ours.to_arrow().to_pylist()}
    assert sorted(rows) == [1, 2, 3, 4, 5]
    assert rows[1]["dec"] == Decimal("2.25")
    assert rows[1]["ts"] == dt.datetime(2024, 1, 2, 1, tzinfo=dt.timezone.utc)
    assert rows[1]["str"] == "changed"
    assert rows[4]["m"] is None


def test_delta_rs_checkpoint_is_continued_by_our_automatic_checkpoint(tmp_path):
    location = str(tmp_path / "t")
    model = Model()
    deltalake.write_deltalake(location, _data(model.insert([(0, "a", 0.0)])), partition_by=["p"])
    for i in range(1, 5):
        deltalake.write_deltalake(
            location, _data(model.insert([(i, "a" if i % 2 else "b", float(i))])), mode="append"
        )
    rs_table(location).create_checkpoint()  # version 4, written by delta-rs
    for i in range(5, 11):
        DeltaTable(location).append(_data(model.insert([(i, None, float(i))])))
    log = Path(location) / "_delta_log"
    assert (log / "00000000000000000004.checkpoint.parquet").exists()
    assert (log / "00000000000000000010.checkpoint.parquet").exists(), "ours, at the default interval"
    _check(location, model)

    # each engine reads the other's checkpoint with the commits before it gone
    for checkpoint in (4, 10):
        copy = tmp_path / f"from-{checkpoint}"
        shutil.copytree(location, copy)
        for v in range(checkpoint + 1):
            (copy / "_delta_log" / f"{v:020d}.json").unlink()
        if checkpoint == 4:
            (copy / "_delta_log" / "00000000000000000010.checkpoint.parquet").unlink()
            (copy / "_delta_log" / "_last_checkpoint").unlink()
        assert canonical_rows(DeltaTable(str(copy)).to_arrow(), SCHEMA.names) == model.expected()
        assert canonical_rows(rs_rows(rs_table(str(copy))), SCHEMA.names) == model.expected()


def test_delta_rs_schema_evolution_is_followed_by_our_appends(tmp_path):
    location = str(tmp_path / "t")
    deltalake.write_deltalake(location, pa.table({"id": pa.array([1], pa.int64())}))
    deltalake.write_deltalake(
        location,
        pa.table({"id": pa.array([2], pa.int64()), "extra": ["x"]}),
        mode="append",
        schema_mode="merge",
    )
    t = DeltaTable(location)
    assert t.schema.names == ("id", "extra") or list(t.schema.names) == ["id", "extra"]
    t.append(pa.table({"id": pa.array([3], pa.int64()), "extra": ["y"]}))
    t.append(pa.table({"id": pa.array([4], pa.int64())}))
    with pytest.raises(SchemaMismatchError, match="'other'"):
        t.append(pa.table({"id": pa.array([5], pa.int64()), "other": [1]}))
    ours = assert_delta_rs_reads_identically(location)
    assert sorted((r["id"], r["extra"]) for r in ours.to_arrow().to_pylist()) == [
        (1, None),
        (2, "x"),
        (3, "y"),
        (4, None),
    ]


def test_delta_rs_overwrite_with_a_new_schema_is_followed_by_our_update(tmp_path):
    location = str(tmp_path / "t")
    deltalake.write_deltalake(location, pa.table({"id": pa.array([1], pa.int64())}))
    deltalake.write_deltalake(
        location,
        pa.table({"key": ["a", "b"], "n": pa.array([1, 2], pa.int32())}),
        mode="overwrite",
        schema_mode="overwrite",
    )
    t = DeltaTable(location)
    t.update("key = 'a'", {"n": "n + 41"})
    ours = assert_delta_rs_reads_identically(location)
    assert sorted(tuple(r.values()) for r in ours.to_arrow().to_pylist()) == [("a", 42), ("b", 2)]


def test_delta_rs_optimize_then_our_delete_and_delta_rs_vacuum(tmp_path):
    location = str(tmp_path / "t")
    model = Model()
    for i in range(4):
        deltalake.write_deltalake(
            location, _data(model.insert([(i, "a", float(i))])), partition_by=["p"], mode="append"
        )
    rs_table(location).optimize.compact()
    t = DeltaTable(location)
    assert len(t.files()) == 1
    t.delete("id = 2")
    model.where(lambda r: r[0] != 2)
    _check(location, model)
    rs_table(location).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    _check(location, model)


def test_delta_rs_append_only_table_refuses_our_deletes(tmp_path):
    location = str(tmp_path / "t")
    deltalake.write_deltalake(location, _data([(1, "a", 1.0)]), configuration={"delta.appendOnly": "true"})
    t = DeltaTable(location)
    with pytest.raises(CommitError, match="append-only"):
        t.delete("id = 1")
    assert t.append(_data([(2, "a", 2.0)])) == 1
    assert_delta_rs_reads_identically(location)


# -- our transactions racing delta-rs commits -------------------------------------------------------------


@pytest.fixture
def raced(tmp_path) -> str:
    location = str(tmp_path / "t")
    deltalake.write_deltalake(
        location, _data([(1, "a", 1.0), (2, "b", 2.0), (3, "a", 3.0)]), partition_by=["p"]
    )
    return location


def test_our_blind_append_is_rebased_over_a_delta_rs_append(raced):
    stale = DeltaTable(raced).snapshot
    deltalake.write_deltalake(raced, _data([(10, "a", 10.0)]), mode="append")
    assert append_op(stale, _data([(11, "a", 11.0)])) == 2
    ours = assert_delta_rs_reads_identically(raced)
    assert sorted(r["id"] for r in ours.to_arrow().to_pylist()) == [1, 2, 3, 10, 11]
    assert ours.history(limit=1)[0]["readVersion"] == 0


def test_our_update_of_a_partition_is_rebased_over_a_delta_rs_append_to_another(raced):
    stale = DeltaTable(raced).snapshot
    deltalake.write_deltalake(raced, _data([(10, "b", 10.0)]), mode="append")
    assert update_op(stale, "p = 'a'", {"v": "-v"}) == 2
    ours = assert_delta_rs_reads_identically(raced)
    assert sorted((r["id"], r["v"]) for r in ours.to_arrow().to_pylist()) == [
        (1, -1.0),
        (2, 2.0),
        (3, -3.0),
        (10, 10.0),
    ]


def test_our_update_conflicts_with_a_delta_rs_append_to_the_partition_it_read(raced):
    # delta-rs writes no isBlindAppend, so its append counts as a possible read dependency (as in Delta)
    stale = DeltaTable(raced).snapshot
    deltalake.write_deltalake(raced, _data([(10, "a", 10.0)]), mode="append")
    with pytest.raises(ConcurrentAppendException, match="transaction 1 \\(WRITE\\)"):
        update_op(stale, "p = 'a'", {"v": "-v"})
    assert DeltaTable.latest_version(raced) == 1


def test_our_delete_conflicts_with_a_delta_rs_delete_of_the_files_it_read(raced):
    stale = DeltaTable(raced).snapshot
    rs_table(raced).delete("p = 'a'")
    with pytest.raises(ConcurrentDeleteReadException) as info:
        delete_op(stale, "id = 1")
    assert info.value.winning_version == 1
    assert info.value.winning_operation == "DELETE"
    assert DeltaTable.latest_version(raced) == 1
    assert sorted(r["id"] for r in DeltaTable(raced).to_arrow().to_pylist()) == [2]

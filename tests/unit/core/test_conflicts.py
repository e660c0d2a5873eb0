"""Delta's write-conflict matrix, provoked by two real transactions on one table.

Each case opens a loser and a winner on the same version, commits the winner, then commits the
loser: it either lands (rebased) or raises the exception Delta Lake raises for that pair.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core import (
    AddFile,
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    DeltaConcurrentModificationException,
    DeltaTable,
    MetadataChangedException,
    ProtocolChangedException,
)
from airflow_provider_delta.core.actions import Metadata, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow_provider_delta.core import Transaction

SCHEMA = pa.schema([("id", pa.int64()), ("date", pa.string()), ("country", pa.string())])
PARTS = [("2024-01-01", "FR"), ("2024-01-01", "DE"), ("2024-01-02", "FR")]


def _file(date: str, country: str, *, data_change: bool = True) -> AddFile:
    name = f"date={date}/country={country}/part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    return AddFile(name, {"date": date, "country": country}, 100, 0, data_change, '{"numRecords":1}')


@pytest.fixture(params=["WriteSerializable", "Serializable"])
def isolation(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def table(tmp_path, isolation) -> DeltaTable:
    t = DeltaTable.create(
        str(tmp_path / "t"),
        SCHEMA,
        partition_by=["date", "country"],
        properties={"delta.isolationLevel": isolation},
    )
    with t.transaction(operation="WRITE") as txn:
        txn.add(*[_file(d, c) for d, c in PARTS])
    return DeltaTable(t.location)


# Operations, each staging what Delta's own command would: (name, predicate) -> stage function.
def insert(pred: str | None = None) -> Callable[[Transaction], None]:
    def run(txn: Transaction) -> None:
        txn.operation = "WRITE"
        txn.add(_file("2024-01-01", "FR"))

    return run


def rewrite(op: str, pred: str | None) -> Callable[[Transaction], None]:
    """UPDATE / DELETE / MERGE: read the files matching pred, rewrite them."""

    def run(txn: Transaction) -> None:
        txn.operation = op
        for f in txn.read_files(pred):
            txn.remove(f)
            txn.add(_file(f.partition_values["date"], f.partition_values["country"]))

    return run


def delete_partition(pred: str) -> Callable[[Transaction], None]:
    def run(txn: Transaction) -> None:
        txn.operation = "DELETE"
        txn.remove(*txn.read_files(pred))

    return run


def optimize(pred: str | None = None) -> Callable[[Transaction], None]:
    def run(txn: Transaction) -> None:
        txn.operation = "OPTIMIZE"
        files = txn.read_files(pred)
        txn.remove(*files, data_change=False)
        for f in files:
            txn.add(_file(f.partition_values["date"], f.partition_values["country"], data_change=False))

    return run


WHOLE = None
FR = "country = 'FR'"
DE = "country = 'DE'"
DAY2 = "date = '2024-01-02'"

# (winner, loser, expected under WriteSerializable, expected under Serializable)
MATRIX = [
    pytest.param(insert(), insert(), None, None, id="insert-vs-insert"),
    pytest.param(insert(), rewrite("UPDATE", FR), None, ConcurrentAppendException, id="insert-then-update"),
    pytest.param(insert(), rewrite("DELETE", FR), None, ConcurrentAppendException, id="insert-then-delete"),
    pytest.param(insert(), rewrite("MERGE", FR), None, ConcurrentAppendException, id="insert-then-merge"),
    pytest.param(rewrite("UPDATE", FR), insert(), None, None, id="update-then-insert"),
    pytest.param(
        rewrite("UPDATE", FR),
        rewrite("UPDATE", FR),
        ConcurrentAppendException,
        ConcurrentAppendException,
        id="update-vs-update",
    ),
    pytest.param(
        rewrite("MERGE", FR),
        rewrite("DELETE", FR),
        ConcurrentAppendException,
        ConcurrentAppendException,
        id="merge-vs-delete",
    ),
    pytest.param(
        delete_partition(FR),
        rewrite("UPDATE", FR),
        ConcurrentDeleteReadException,
        ConcurrentDeleteReadException,
        id="delete-then-update-same-files",
    ),
    pytest.param(rewrite("UPDATE", FR), rewrite("UPDATE", DE), None, None, id="update-disjoint-partitions"),
    pytest.param(
        rewrite("MERGE", DAY2),
        rewrite("MERGE", "date = '2024-01-01' AND country = 'FR'"),
        None,
        None,
        id="merge-disjoint-dates",
    ),
    pytest.param(optimize(), insert(), None, None, id="optimize-then-insert"),
    pytest.param(insert(), optimize(), None, None, id="insert-then-optimize"),
    pytest.param(
        optimize(FR),
        rewrite("UPDATE", FR),
        ConcurrentDeleteReadException,
        ConcurrentDeleteReadException,
        id="optimize-then-update",
    ),
    pytest.param(
        rewrite("UPDATE", FR),
        optimize(FR),
        ConcurrentDeleteReadException,
        ConcurrentDeleteReadException,
        id="update-then-optimize",
    ),
    pytest.param(
        optimize(FR),
        optimize(FR),
        ConcurrentDeleteReadException,
        ConcurrentDeleteReadException,
        id="optimize-vs-optimize",
    ),
    pytest.param(optimize(DE), optimize(FR), None, None, id="optimize-disjoint"),
]


@pytest.mark.parametrize(("winner", "loser", "ws_error", "ser_error"), MATRIX)
def test_conflict_matrix(table, isolation, winner, loser, ws_error, ser_error):
    expected = ws_error if isolation == "WriteSerializable" else ser_error
    loser_txn = table.transaction()
    winner_txn = table.transaction()
    loser(loser_txn)
    winner(winner_txn)
    winner_version = winner_txn.commit()
    if expected is None:
        assert loser_txn.commit() == winner_version + 1
        return
    with pytest.raises(expected) as info:
        loser_txn.commit()
    err = info.value
    assert isinstance(err, DeltaConcurrentModificationException)
    assert err.winning_version == winner_version
    assert err.read_version == table.version
    assert "Help:" in str(err)
    assert DeltaTable.latest_version(table.location) == winner_version


def test_data_predicate_on_unpartitioned_column_conflicts_with_any_write(tmp_path):
    # UPDATE ... WHERE date > x and DELETE ... WHERE date < x on a table NOT partitioned by date conflict:
    # data predicates cannot be checked against partition values, so any added file may match.
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["country"])
    with t.transaction() as txn:
        txn.add(AddFile("country=FR/a.parquet", {"country": "FR"}, 1, 0, True, '{"numRecords":1}'))
    t = DeltaTable(t.location)
    loser = t.transaction(operation="DELETE")
    loser.read_files("date < '2010-01-01'")
    loser.add(AddFile("country=FR/b.parquet", {"country": "FR"}, 1, 0))
    winner = t.transaction(operation="UPDATE")
    for f in winner.read_files("date > '2010-01-01'"):
        winner.remove(f)
    winner.add(AddFile("country=FR/c.parquet", {"country": "FR"}, 1, 0))
    winner.commit()
    with pytest.raises((ConcurrentAppendException, ConcurrentDeleteReadException)):
        loser.commit()


def test_metadata_change_by_winner_raises_metadata_changed(table):
    loser = table.transaction()
    rewrite("UPDATE", FR)(loser)
    winner = table.transaction(operation="SET TBLPROPERTIES")
    md = table.metadata
    winner.update_metadata(
        Metadata(md.id, md.schema_string, md.partition_columns, {**md.configuration, "k": "v"})
    )
    winner.commit()
    with pytest.raises(MetadataChangedException, match="changed the table metadata"):
        loser.commit()


def test_protocol_change_by_both_raises_protocol_changed(table):
    loser, winner = table.transaction(), table.transaction()
    loser.update_protocol(Protocol(1, 3))
    winner.update_protocol(Protocol(1, 4))
    winner.commit()
    with pytest.raises(ProtocolChangedException):
        loser.commit()


def test_same_app_id_raises_concurrent_transaction(table):
    loser, winner = table.transaction(), table.transaction()
    for txn, v in ((loser, 1), (winner, 1)):
        txn.set_app_transaction("airflow-dag-task", v)
        txn.add(_file("2024-01-01", "FR"))
    winner.commit()
    with pytest.raises(ConcurrentTransactionException, match="airflow-dag-task"):
        loser.commit()


def test_removing_the_same_file_without_reading_raises_delete_delete(table):
    target = next(f for f in table.files() if f.partition_values["country"] == "DE")
    loser, winner = table.transaction(operation="DELETE"), table.transaction(operation="DELETE")
    loser.remove(target)
    winner.remove(target)
    winner.commit()
    with pytest.raises(ConcurrentDeleteDeleteException, match="also deleted"):
        loser.commit()


def test_conflicting_commit_leaves_the_table_exactly_as_the_winner_left_it(table):
    loser, winner = table.transaction(), table.transaction()
    delete_partition(FR)(winner)
    rewrite("UPDATE", FR)(loser)
    v = winner.commit()
    before = sorted(f.path for f in DeltaTable(table.location).files())
    with pytest.raises(ConcurrentDeleteReadException):
        loser.commit()
    after = DeltaTable(table.location)
    assert after.version == v
    assert sorted(f.path for f in after.files()) == before


def test_non_conflicting_loser_is_rebased_and_commit_info_keeps_its_read_version(table):
    loser, winner = table.transaction(), table.transaction()
    rewrite("UPDATE", DE)(loser)
    rewrite("UPDATE", FR)(winner)
    winner.commit()
    v = loser.commit()
    entry = DeltaTable(table.location).history(limit=1)[0]
    assert entry["version"] == v
    assert entry["readVersion"] == table.version
    assert entry["operation"] == "UPDATE"
    assert entry["isBlindAppend"] is False

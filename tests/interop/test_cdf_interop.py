"""The change data feed against delta-rs, both ways.

Tables this engine writes (update, delete, replaceWhere, appends, partition deletes) give the same
change rows through delta-rs' ``load_cdf`` as through ``DeltaTable.changes``; tables delta-rs writes
with ``delta.enableChangeDataFeed`` (write, update, delete, merge) give the same rows through ours.
``_commit_timestamp`` is left out: the two readers take it from different sources and precisions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from tests.interop import canonical_rows, rs_table

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
CDF = {"delta.enableChangeDataFeed": "true"}


def _data(ids: list[int], ps: list[str], vs: list[int]) -> pa.Table:
    return pa.Table.from_pydict({"id": ids, "p": ps, "v": vs}, schema=SCHEMA)


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    columns = sorted(n for n in table.column_names if n != "_commit_timestamp")
    return canonical_rows(table, columns)


def _theirs(location: str, start: int, end: int | None = None) -> pa.Table:
    kwargs: dict[str, Any] = {"starting_version": start}
    if end is not None:
        kwargs["ending_version"] = end
    return pa.table(rs_table(location).load_cdf(**kwargs).read_all())


def _assert_same_feed(location: str, start: int) -> None:
    ours = DeltaTable(location)
    for s in range(start, ours.version + 1):
        for e in range(s, ours.version + 1):
            assert _rows(ours.changes(s, e)) == _rows(_theirs(location, s, e)), (s, e)


OUR_WRITES: list[Any] = [
    pytest.param(lambda t: t.update("id = 2", {"v": "v * 10"}), id="update"),
    pytest.param(lambda t: t.update("p = 'a'", {"p": "'c'"}), id="update-partition-column"),
    pytest.param(lambda t: t.delete("v > 15 AND v < 35"), id="delete-data-predicate"),
    pytest.param(lambda t: t.delete("p = 'b'"), id="delete-partition"),
    pytest.param(lambda t: t.delete(), id="delete-all"),
    pytest.param(lambda t: t.overwrite(_data([8], ["b"], [35]), "v > 25"), id="replace-where-data"),
    pytest.param(lambda t: t.overwrite(_data([8], ["b"], [80]), "p = 'b'"), id="replace-where-partition"),
    pytest.param(lambda t: t.append(_data([5], ["a"], [50])), id="append"),
]


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
@pytest.mark.parametrize("operation", OUR_WRITES)
def test_change_feed_of_our_commits_equals_delta_rs_load_cdf(
    tmp_path: Path, partitioned: bool, operation: Callable[[DeltaTable], Any]
) -> None:
    location = str(tmp_path / "t")
    t = DeltaTable.create(location, SCHEMA, partition_by=["p"] if partitioned else [], properties=CDF)
    t.append(_data([1, 2, 3, 4], ["a", "a", "b", "b"], [10, 20, 30, 40]))
    operation(t)
    t.update("id = 4", {"v": "v + 1"})
    _assert_same_feed(location, 0)


def test_change_feed_of_a_table_with_cdf_enabled_later_equals_delta_rs(tmp_path: Path) -> None:
    import dataclasses

    location = str(tmp_path / "t")
    t = DeltaTable.create(location, SCHEMA, partition_by=["p"])
    t.append(_data([1, 2, 3], ["a", "a", "b"], [10, 20, 30]))
    md = t.metadata
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.update_metadata(dataclasses.replace(md, configuration={**md.configuration, **CDF}))
    t = t.refresh()
    t.update("id = 3", {"v": "33"})
    t.delete("id = 1")
    _assert_same_feed(location, 2)


def _delta_rs_table(tmp_path: Path, partitioned: bool) -> str:
    from deltalake import write_deltalake

    location = str(tmp_path / "rs")
    write_deltalake(
        location,
        _data([1, 2, 3, 4, 5], ["a", "a", "b", "b", "c"], [10, 20, 30, 40, 50]),
        partition_by=["p"] if partitioned else None,
        configuration=CDF,
    )
    return location


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_change_feed_of_delta_rs_commits_equals_its_load_cdf(tmp_path: Path, partitioned: bool) -> None:
    from deltalake import DeltaTable as RsTable
    from deltalake import write_deltalake

    location = _delta_rs_table(tmp_path, partitioned)
    RsTable(location).update(predicate="id = 2", updates={"v": "v + 100"})
    RsTable(location).delete("v > 35 AND v < 45")
    RsTable(location).delete("p = 'c'")
    source = _data([1, 6, 3], ["a", "c", "b"], [111, 60, 333])
    (
        RsTable(location)
        .merge(source, "s.id = t.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    write_deltalake(location, _data([7], ["a"], [70]), mode="append")
    _assert_same_feed(location, 0)


def test_change_feed_of_a_delta_rs_merge_with_deletes_equals_its_load_cdf(tmp_path: Path) -> None:
    from deltalake import DeltaTable as RsTable

    location = _delta_rs_table(tmp_path, True)
    source = _data([1, 2, 9], ["a", "a", "a"], [0, 200, 90])
    (
        RsTable(location)
        .merge(source, "s.id = t.id", source_alias="s", target_alias="t")
        .when_matched_delete(predicate="s.v = 0")
        .when_matched_update(updates={"v": "s.v"})
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete(predicate="t.p = 'c'")
        .execute()
    )
    _assert_same_feed(location, 0)

"""The change data feed of the conformance corpus (Spark, Databricks and delta-rs written tables).

Every ``cdf`` range MANIFEST.json lists with expected rows is read with ``DeltaTable.changes`` and
compared with the oracle's rows (``_commit_timestamp`` left out: it comes from file times that did
not survive copying). Tables whose ranges have no oracle (delta-rs cannot read them) are checked
for consistency instead: replaying the feed onto the version before it gives the latest rows.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.exceptions import ChangeDataNotRecordedError
from tests.conformance import MISSING_MESSAGE, find_corpus, load_compare, manifest_entries

if TYPE_CHECKING:
    from pathlib import Path

_FOUND = find_corpus()
if _FOUND is None:
    pytest.skip(MISSING_MESSAGE, allow_module_level=True)
CORPUS: Path = _FOUND
ENTRIES = manifest_entries(CORPUS)
compare = load_compare(CORPUS)

# delta-rs serves ranges of tables that never enabled the change feed when no metaData action lies in
# the range; Delta Lake on Spark (and this engine) check the start version's metadata and refuse.
NEVER_ENABLED = {"extra/delta-rs/delta-0.8.0"}

RANGES = [
    pytest.param(e, r, id=f"{e['name']}@{key}")
    for e in ENTRIES
    for key, r in sorted((e.get("cdf") or {}).get("ranges", {}).items())
    if r.get("data") and e["name"] not in NEVER_ENABLED
]


@pytest.mark.parametrize(("entry", "spec"), RANGES)
def test_change_feed_matches_the_oracle_rows(entry: dict[str, Any], spec: dict[str, Any]) -> None:
    got = DeltaTable(str(CORPUS / entry["table"])).changes(spec["start"], spec["end"])
    expected = compare.read_expected(str(CORPUS / spec["data"]))
    ignore = entry["cdf"].get("ignore_columns") or ["_commit_timestamp"]
    compare.assert_same_rows(got, expected, ignore_columns=ignore)


@pytest.mark.parametrize("name", sorted(NEVER_ENABLED))
def test_change_feed_of_a_table_that_never_enabled_it_is_refused(name: str) -> None:
    entry = next(e for e in ENTRIES if e["name"] == name)
    with pytest.raises(ChangeDataNotRecordedError, match="not enabled at version 1"):
        DeltaTable(str(CORPUS / entry["table"])).changes(1, 1)


@pytest.mark.parametrize(
    "name",
    [
        "extra/kernel-rs/cdf-column-mapping-id-mode",
        "extra/kernel-rs/cdf-column-mapping-name-mode",
        "extra/kernel-rs/cdf-column-mapping-name-mode-3-7",
        "extra/kernel-rs/cdf-table-delete-conditional-two-rows",
        "extra/kernel-rs/cdf-table-delete-conditional-all-rows",
        "extra/kernel-rs/cdf-table-delete-unconditional",
        "extra/kernel-rs/cdf-table-partitioned",
    ],
)
def test_change_feed_without_oracle_replays_to_the_latest_rows(name: str) -> None:
    entry = next(e for e in ENTRIES if e["name"] == name)
    path = str(CORPUS / entry["table"])
    latest = DeltaTable(path)
    start = _first_cdf_version(latest)
    feed = latest.changes(start)
    columns = [n for n in feed.column_names if not n.startswith("_")]
    rows = (
        Counter(_key(r, columns) for r in DeltaTable(path, version=start - 1).to_arrow().to_pylist())
        if start
        else Counter()
    )
    for r in feed.to_pylist():
        if r["_change_type"] in ("insert", "update_postimage"):
            rows[_key(r, columns)] += 1
        else:
            rows[_key(r, columns)] -= 1
    assert +rows == Counter(_key(r, columns) for r in latest.to_arrow().to_pylist())
    assert all(n >= 0 for n in rows.values())


def _first_cdf_version(table: DeltaTable) -> int:
    version = table.version
    while version > 0:
        conf = DeltaTable(table.location, version=version - 1).configuration
        if conf.get("delta.enableChangeDataFeed", "false").lower() != "true":
            break
        version -= 1
    return version


def _key(row: dict[str, Any], columns: list[str]) -> tuple[Any, ...]:
    return tuple(repr(row[c]) for c in columns)

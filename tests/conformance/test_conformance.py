"""The engine against the shared Delta conformance corpus (see its README.md).

Every table is loaded at its latest version and at every version MANIFEST.json lists, and the rows
are compared with the independent readers' rows. The outcomes (``read``, ``read_or_unsupported``,
``load_only``, ``must_fail``, ``no_oracle``) and per-version expectations (``rows``, ``read_error``,
``load_error``, ``unchecked``) follow the corpus README's template exactly.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pytest

from airflow_provider_delta.core import (
    DeltaError,
    DeltaTable,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from tests.conformance import MISSING_MESSAGE, find_corpus, load_compare, manifest_entries

if TYPE_CHECKING:
    from pathlib import Path

_FOUND = find_corpus()
if _FOUND is None:
    pytest.skip(MISSING_MESSAGE, allow_module_level=True)
CORPUS: Path = _FOUND
ENTRIES = manifest_entries(CORPUS)
compare = load_compare(CORPUS)

ICT_TABLE = "extra/delta-rs/cdc_ict_table"


def _by_outcome(*outcomes: str) -> list[dict[str, Any]]:
    return [e for e in ENTRIES if e["expected_outcome"] in outcomes]


CASES = [pytest.param(e, None, id=e["name"]) for e in ENTRIES] + [
    pytest.param(e, int(v), id=f"{e['name']}@v{v}") for e in ENTRIES for v in e["versions"]
]


@pytest.mark.parametrize(("entry", "version"), CASES)
def test_conformance(entry: dict[str, Any], version: int | None) -> None:
    path, outcome = str(CORPUS / entry["table"]), entry["expected_outcome"]
    if outcome == "must_fail":
        with pytest.raises(DeltaError):
            DeltaTable(path).to_arrow()
        return
    spec = entry["latest"] if version is None else entry["versions"][str(version)]
    expect = spec.get("expect") or ("rows" if spec.get("data") else "unchecked")
    try:
        table = DeltaTable(path) if version is None else DeltaTable(path, version=version)
        if expect == "load_error":
            table.to_arrow()
            pytest.fail(f"v{version} must not load: {spec['why']}")
        if spec.get("version") is not None or version is not None:
            assert table.version == (version if version is not None else spec["version"])
        if expect == "read_error":
            with pytest.raises(DeltaError):
                table.to_arrow()
        elif expect == "rows":
            compare.assert_same_rows(
                table.to_arrow(),
                compare.read_expected(str(CORPUS / spec["data"])),
                ignore_columns=entry["ignore_columns"],
            )
    except DeltaError:
        if expect not in ("load_error", "unchecked") and outcome not in ("read_or_unsupported", "no_oracle"):
            raise


@pytest.mark.parametrize("entry", [pytest.param(e, id=e["name"]) for e in _by_outcome("must_fail")])
def test_must_fail_table_raises_a_specific_delta_error_naming_the_table(entry: dict[str, Any]) -> None:
    path = CORPUS / entry["table"]
    with pytest.raises(DeltaError) as info:
        DeltaTable(str(path)).to_arrow()
    # A subclass tells the caller what went wrong (LogCorruptedError, UnsupportedFeatureError, ...).
    assert type(info.value) is not DeltaError, f"{entry['outcome_reason']}: raised a bare DeltaError"
    assert path.name in str(info.value), f"the message does not name the table: {info.value}"


@pytest.mark.parametrize(
    ("entry", "version"),
    [pytest.param(e, None, id=e["name"]) for e in _by_outcome("read_or_unsupported")]
    + [
        pytest.param(e, int(v), id=f"{e['name']}@v{v}")
        for e in _by_outcome("read_or_unsupported")
        for v in e["versions"]
    ],
)
def test_read_or_unsupported_table_is_read_or_refused_as_unsupported(
    entry: dict[str, Any], version: int | None
) -> None:
    # Reading is fine; a refusal must be UnsupportedFeatureError (any other error fails the test).
    with contextlib.suppress(UnsupportedFeatureError):
        DeltaTable(str(CORPUS / entry["table"]), version=version).to_arrow()


def _metadata_cases() -> list[Any]:
    cases = []
    for entry in ENTRIES:
        expected = CORPUS / entry["expected"]
        files = [(None, expected / "metadata.json")]
        files += [(int(p.stem[1:]), p) for p in sorted((expected / "versions").glob("v*.json"))]
        for version, path in files:
            if not path.is_file():
                continue
            # Only snapshots delta-rs could describe: failed loads record just an error or a reason.
            if "num_active_files" in json.loads(path.read_text()):
                name = entry["name"] if version is None else f"{entry['name']}@v{version}"
                cases.append(pytest.param(entry, version, path, id=name))
    return cases


@pytest.mark.parametrize(("entry", "version", "metadata_path"), _metadata_cases())
def test_snapshot_matches_expected_metadata(
    entry: dict[str, Any], version: int | None, metadata_path: Path
) -> None:
    expected = json.loads(metadata_path.read_text())
    try:
        table = DeltaTable(str(CORPUS / entry["table"]), version=version)
    except UnsupportedFeatureError:
        if entry["expected_outcome"] == "read_or_unsupported":
            return  # refusing the table is allowed
        raise
    assert table.version == expected["version"]
    assert list(table.partition_columns) == expected["partition_columns"]
    protocol = expected["protocol"]
    assert table.protocol.min_reader_version == protocol["min_reader_version"]
    assert table.protocol.min_writer_version == protocol["min_writer_version"]
    assert set(table.protocol.reader_features or ()) == set(protocol["reader_features"] or ())
    assert set(table.protocol.writer_features or ()) == set(protocol["writer_features"] or ())
    assert dict(table.configuration) == expected["configuration"]
    assert table.schema.to_json_value() == json.loads(expected["schema_json"])
    files = table.files()
    assert len(files) == expected["num_active_files"]
    if "active_files" in expected:
        # Paths are URIs (PROTOCOL.md "Add File"); compare them decoded, as delta-rs reports them.
        assert sorted(unquote(f.path) for f in files) == sorted(
            unquote(f["path"]) for f in expected["active_files"]
        )


def _in_commit_timestamps(table: Path) -> dict[int, int]:
    """commitInfo.inCommitTimestamp of every commit file of ``table``, by version."""
    out: dict[int, int] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            if line.strip() and "commitInfo" in (action := json.loads(line)):
                out[int(commit.stem)] = int(action["commitInfo"]["inCommitTimestamp"])
    return out


def test_time_travel_by_in_commit_timestamp_loads_the_version_committed_then() -> None:
    table = CORPUS / "tables" / ICT_TABLE
    ict = _in_commit_timestamps(table)
    assert sorted(ict) == list(range(len(ict)))
    assert len(ict) >= 3
    # The fixture's timestamps are not monotonic (v1's is a year before v0's): only a version whose
    # timestamp is above every earlier one and below every later one has an unambiguous answer.
    clear = [
        v
        for v, ts in ict.items()
        if all(ict[u] < ts for u in ict if u < v) and all(ict[u] > ts for u in ict if u > v)
    ]
    assert len(clear) >= 2, ict
    for version in clear:
        assert DeltaTable(str(table), timestamp=ict[version]).version == version
        as_datetime = dt.datetime.fromtimestamp(ict[version] / 1000, tz=dt.timezone.utc)
        assert DeltaTable(str(table), timestamp=as_datetime).version == version
        if version + 1 in ict:  # between two commits: the earlier one
            assert DeltaTable(str(table), timestamp=ict[version + 1] - 1).version == version


def test_time_travel_outside_the_commit_range_raises_version_not_found() -> None:
    table = str(CORPUS / "tables" / ICT_TABLE)
    ict = _in_commit_timestamps(CORPUS / "tables" / ICT_TABLE)
    with pytest.raises(VersionNotFoundError, match="before"):
        DeltaTable(table, timestamp=min(ict.values()) - 1)
    with pytest.raises(VersionNotFoundError, match="after"):
        DeltaTable(table, timestamp=max(ict.values()) + 1)

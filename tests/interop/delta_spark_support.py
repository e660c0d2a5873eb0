"""Comparisons between this engine and Delta Lake on Spark (the ``delta_spark`` fixture) on one table.

What is compared, and how:
- rows: as multisets of canonical values (``tests.interop.canonical_rows``), every column;
- schema: Delta's schema JSON with field metadata left out (names, types, nullability, nesting), as
  delta-spark reads it (the DataFrame schema) against the engine's logical schema;
- history: per version, the operation, readVersion, isolationLevel, isBlindAppend and the
  operationParameters delta-spark's ``DESCRIBE HISTORY`` reports against the engine's ``history()``;
- change data: ``table_changes`` against ``DeltaTable.changes`` with every column, ``_commit_timestamp``
  included.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core import DeltaTable
from tests.interop import canonical_rows

if TYPE_CHECKING:
    import pyarrow as pa

    from tests.delta_spark import DeltaSpark

HISTORY_KEYS = ("operation", "readVersion", "isolationLevel", "isBlindAppend")


def schema_shape(node: Any) -> Any:
    """Delta/Spark schema JSON without ``metadata`` (column mapping ids, comments, generation expressions)."""
    if isinstance(node, dict):
        return {k: schema_shape(v) for k, v in node.items() if k != "metadata"}
    if isinstance(node, list):
        return [schema_shape(v) for v in node]
    return node


def our_schema(location: str, version: int | None = None) -> Any:
    return schema_shape(json.loads(DeltaTable(location, version=version).schema.to_json()))


def assert_same_rows(ours: pa.Table, theirs: pa.Table) -> None:
    assert sorted(ours.column_names) == sorted(theirs.column_names)
    names = ours.column_names
    left, right = canonical_rows(ours, names), canonical_rows(theirs, names)
    assert len(left) == len(right), f"{len(left)} rows in the engine, {len(right)} in delta-spark"
    assert left == right


def assert_same_history(oracle: DeltaSpark, location: str) -> None:
    theirs = {h["version"]: h for h in oracle.history(location)}
    ours = {h["version"]: h for h in DeltaTable(location).history()}
    assert sorted(theirs) == sorted(ours)
    for version, mine in ours.items():
        got = theirs[version]
        for key in HISTORY_KEYS:
            assert got.get(key) == mine.get(key), (version, key, got.get(key), mine.get(key))
        # DESCRIBE HISTORY shows every parameter as a string: a JSON value that is not one reads as its
        # JSON text (delta-spark's OPTIMIZE writes "auto": false).
        params = {
            k: None if v is None else v if isinstance(v, str) else json.dumps(v)
            for k, v in (mine.get("operationParameters") or {}).items()
        }
        theirs_params = dict(got.get("operationParameters") or [])
        assert theirs_params == params, (version, got.get("operation"), theirs_params, params)


def assert_delta_spark_reads_identically(
    oracle: DeltaSpark, location: str, version: int | None = None, *, history: bool = True
) -> DeltaTable:
    """delta-spark and the engine see the same rows and schema at ``version`` (and the same history)."""
    ours = DeltaTable(location, version=version)
    assert schema_shape(oracle.schema(location, version)) == our_schema(location, version)
    assert_same_rows(ours.to_arrow(), oracle.read(location, version))
    if history and version is None:
        assert_same_history(oracle, location)
    return ours


def assert_every_version_identical(oracle: DeltaSpark, location: str) -> None:
    for version in range(DeltaTable.latest_version(location) + 1):
        assert_delta_spark_reads_identically(oracle, location, version)
    assert_same_history(oracle, location)


def assert_same_changes(oracle: DeltaSpark, location: str, start: int, end: int | None = None) -> None:
    """``table_changes(start, end)`` of delta-spark equals the engine's ``changes(start, end)``, every column."""
    ours = DeltaTable(location).changes(start, end)
    theirs = oracle.changes(location, start, end)
    assert_same_rows(ours, theirs)

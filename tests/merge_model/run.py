"""Run a :class:`~tests.merge_model.case.MergeCase` on the engine and compare with the model.

:func:`make_target` writes the case's target table, :func:`outcome` reads what a MERGE left behind
(schema in the model's terms, rows, metrics, change data), :func:`check` compares it with
:func:`~tests.merge_model.model.expected`: the same schema (names, order, nesting, types), the same
rows (a multiset), the same row counters and change data; or, where Delta refuses, a typed error
naming the column at fault, and the table still at its version.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import MergeError, SchemaEvolutionError
from tests.merge_model.case import Array, Map, MergeCase, Struct, Type, arrow_type
from tests.merge_model.model import Expected, Refused, expected

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["arrow_table", "check", "make_target", "model_schema"]

_DELTA_TYPES = {"integer": "int", "long": "bigint", "string": "string", "void": "void"}


def arrow_table(schema: Struct, rows: tuple[dict[str, Any], ...]) -> pa.Table:
    """The rows as an Arrow table of the schema's Arrow types."""
    arrow = pa.schema([(n, arrow_type(t)) for n, t in schema.fields])
    return pa.Table.from_pylist(list(rows), schema=arrow)


def model_schema(delta: dict[str, Any] | str) -> Type:
    """A Delta schema (PROTOCOL.md "Schema Serialization Format") in the model's types."""
    if isinstance(delta, str):
        return _DELTA_TYPES.get(delta, delta)
    if delta["type"] == "struct":
        return Struct(tuple((f["name"], model_schema(f["type"])) for f in delta["fields"]))
    if delta["type"] == "array":
        return Array(model_schema(delta["elementType"]))
    return Map(model_schema(delta["keyType"]), model_schema(delta["valueType"]))


def make_target(case: MergeCase, location: str, *, change_data: bool = True) -> DeltaTable:
    """The case's target table at ``location`` (version 1: created, then its rows appended)."""
    data = arrow_table(case.target_schema, case.target_rows)
    properties = {"delta.enableChangeDataFeed": "true"} if change_data else {}
    table = DeltaTable.create(location, data.schema, properties=properties)
    table.append(data)
    return table


def _canonical(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=list) for r in rows)


def check(case: MergeCase, location: str, run: Callable[[], dict[str, Any]]) -> None:
    """Run the MERGE (``run``) on the table at ``location`` and compare with the model."""
    want = expected(case, changes=True)
    before = DeltaTable(location).version
    refusal: MergeError | SchemaEvolutionError | None = None
    try:
        metrics = run()
    except (MergeError, SchemaEvolutionError) as err:
        refusal = err
    if refusal is not None:
        assert isinstance(want, Refused), f"the engine refused ({refusal}); Delta gives {want}"
        named = str(refusal).lower()
        assert any(c.lower() in named for c in want.columns), (
            f"{refusal} does not name {sorted(want.columns)}"
        )
        assert DeltaTable(location).version == before
        return
    assert isinstance(want, Expected), f"Delta refuses ({want}); the engine ran"
    table = DeltaTable(location)
    got_schema = model_schema(json.loads(table.schema.to_json()))
    assert got_schema == want.schema
    assert _canonical(table.to_arrow().to_pylist()) == _canonical(want.rows)
    counts = {
        "numTargetRowsUpdated": metrics["numTargetRowsUpdated"],
        "numTargetRowsDeleted": metrics["numTargetRowsDeleted"],
        "numTargetRowsInserted": metrics["numTargetRowsInserted"],
    }
    assert counts == want.metrics
    if table.version > before:
        changes = table.changes(before + 1).drop_columns(["_commit_version", "_commit_timestamp"]).to_pylist()
        got = [(r.pop("_change_type"), r) for r in changes]
        assert sorted(json.dumps(c, sort_keys=True, default=list) for c in got) == sorted(
            json.dumps(c, sort_keys=True, default=list) for c in want.changes
        )

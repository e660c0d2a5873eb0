"""Differential MERGE against Delta Lake on Spark: one case, three executions, one comparison.

A :class:`OracleCase` is a :class:`~tests.merge_model.case.MergeCase` (target schema and rows, source
schema and rows, the MERGE as Spark SQL, evolution on or off) plus the target's table features (change
data feed, deletion vectors, column mapping). :func:`run_case` has the engine create the target table
once and copies it three times: delta-spark runs the statement with ``MERGE INTO`` on its copy (the
expected result: nothing of it comes from the engine), ``DeltaTable.merge_sql`` (the local executor)
and ``merge_delta_sql`` (the Spark executor, ``local[2]``) on theirs. :func:`differences` lists, for one
executor, every way it departs from delta-spark:

- refusal: where delta-spark raises, the engine raises a typed ``DeltaError`` and its table is unchanged;
  where delta-spark runs, the engine runs;
- whether a version was committed;
- schema: names, order, nesting, types and nullability (field metadata, e.g. column mapping ids, aside);
- rows: as a multiset, nested values exactly (map entries in any order);
- the operation metrics of the commitInfo: the row counters (``numTargetRows*``, ``numSourceRows``,
  ``numOutputRows``); with deletion vectors, ``numTargetRowsCopied`` and ``numOutputRows`` are left
  out (delta-spark marks rows deleted where the engine may rewrite the file);
- change data, when the feed is on: ``table_changes`` against the engine's ``changes`` (every column but
  ``_commit_timestamp``).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import DeltaError
from airflow_provider_delta.spark import merge_delta_sql
from tests.delta_spark import DeltaSparkError
from tests.interop import canonical_rows
from tests.interop.delta_spark_support import schema_shape
from tests.merge_model.run import arrow_table

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    import pyarrow as pa
    from pyspark.sql import SparkSession

    from tests.delta_spark import DeltaSpark
    from tests.merge_model.case import MergeCase

__all__ = ["FEATURES", "OracleCase", "Outcome", "differences", "run_case"]

FEATURES = {
    "cdf": {"delta.enableChangeDataFeed": "true"},
    "dv": {"delta.enableDeletionVectors": "true"},
    "cm": {"delta.columnMapping.mode": "name"},
}
ROW_METRICS = (
    "numSourceRows", "numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted",
    "numTargetRowsCopied", "numOutputRows", "numTargetRowsMatchedUpdated", "numTargetRowsMatchedDeleted",
    "numTargetRowsNotMatchedBySourceUpdated", "numTargetRowsNotMatchedBySourceDeleted",
)
LAYOUT_WITH_DVS = ("numTargetRowsCopied", "numOutputRows")
SOURCE_VIEW = "src"


@dataclass(frozen=True)
class OracleCase:
    """A MERGE case and the target's features (a subset of :data:`FEATURES`)."""

    case: MergeCase
    features: frozenset[str] = frozenset({"cdf"})

    @property
    def properties(self) -> dict[str, str]:
        return {k: v for f in sorted(self.features) for k, v in FEATURES[f].items()}


@dataclass
class Outcome:
    """What one executor left behind: its error, or the table's new state."""

    error: str | None = None
    typed: bool = True
    committed: bool = False
    schema: Any = None
    rows: list[Any] = field(default_factory=list)
    metrics: dict[str, int] = field(default_factory=dict)
    changes: list[Any] | None = None
    unchanged: bool = True


# ------------------------------------------------------------------------------------ the tables


def make_target(case: OracleCase, location: str) -> int:
    """The engine writes the target: created with the features, its rows in two files. Its version."""
    data = arrow_table(case.case.target_schema, case.case.target_rows)
    table = DeltaTable.create(location, data.schema, properties=case.properties)
    half = (data.num_rows + 1) // 2
    for part in (data.slice(0, half), data.slice(half)):
        if part.num_rows:
            table.append(part)
    return DeltaTable(location).version


def _changes(table: pa.Table) -> list[Any]:
    return canonical_rows(table.drop_columns(["_commit_timestamp"]))


def _metrics(operation_metrics: Any) -> dict[str, int]:
    pairs = operation_metrics.items() if isinstance(operation_metrics, dict) else (operation_metrics or [])
    return {k: int(v) for k, v in pairs if k in ROW_METRICS}


# ------------------------------------------------------------------------------------ the three runs


def run_oracle(oracle: DeltaSpark, case: OracleCase, location: str, before: int) -> Outcome:
    source = arrow_table(case.case.source_schema, case.case.source_rows)
    try:
        oracle.sql(case.case.statement(f"delta.`{location}`", SOURCE_VIEW), views={SOURCE_VIEW: source})
    except DeltaSparkError as err:
        history = oracle.history(location)
        return Outcome(error=f"{err.java_class or err.python_type}: {err.message.splitlines()[0][:300]}",
                       unchanged=history[0]["version"] == before)
    history = oracle.history(location)
    latest = history[0]
    outcome = Outcome(committed=latest["version"] > before)
    outcome.schema = schema_shape(oracle.schema(location))
    outcome.rows = canonical_rows(oracle.read(location))
    if outcome.committed:
        outcome.metrics = _metrics(latest.get("operationMetrics"))
        if "cdf" in case.features:
            outcome.changes = _changes(oracle.changes(location, before + 1))
    return outcome


def run_engine(run: Callable[[], Any], case: OracleCase, location: str, before: int) -> Outcome:
    try:
        run()
    except DeltaError as err:
        return Outcome(error=f"{type(err).__name__}: {err}", unchanged=DeltaTable(location).version == before)
    except Exception as err:  # noqa: BLE001 - an untyped crash is a finding, reported as such
        return Outcome(error=f"{type(err).__name__}: {err}", typed=False,
                       unchanged=DeltaTable(location).version == before)
    table = DeltaTable(location)
    outcome = Outcome(committed=table.version > before)
    outcome.schema = schema_shape(json.loads(table.schema.to_json()))
    outcome.rows = canonical_rows(table.to_arrow())
    if outcome.committed:
        outcome.metrics = _metrics(table.history(limit=1)[0].get("operationMetrics"))
        if "cdf" in case.features:
            outcome.changes = _changes(table.changes(before + 1))
    return outcome


def spark_source(spark: SparkSession, case: MergeCase) -> Any:
    from airflow_provider_delta.core.schema.arrow import from_arrow_schema
    from airflow_provider_delta.spark.types import to_spark_schema

    data = arrow_table(case.source_schema, case.source_rows)
    return spark.createDataFrame(data, schema=to_spark_schema(from_arrow_schema(data.schema)))


def run_case(oracle: DeltaSpark, spark: SparkSession, case: OracleCase, root: Path) -> dict[str, Outcome]:
    """The case on delta-spark, the local executor and the Spark executor, each on a copy of one table."""
    made = root / "made"
    before = make_target(case, str(made))
    paths = {name: root / name for name in ("delta-spark", "local", "spark")}
    for path in paths.values():
        shutil.copytree(made, path)
    source = arrow_table(case.case.source_schema, case.case.source_rows)
    local, on_spark = str(paths["local"]), str(paths["spark"])
    statement = case.case.statement
    return {
        "delta-spark": run_oracle(oracle, case, str(paths["delta-spark"]), before),
        "local": run_engine(lambda: DeltaTable(local).merge_sql(statement("target", SOURCE_VIEW), source),
                            case, local, before),
        "spark": run_engine(
            lambda: merge_delta_sql(spark, statement(f"delta.`{on_spark}`", SOURCE_VIEW),
                                    sources={SOURCE_VIEW: spark_source(spark, case.case)}),
            case, on_spark, before),
    }


# ------------------------------------------------------------------------------------ comparison


def differences(expected: Outcome, got: Outcome, case: OracleCase) -> list[str]:
    """Every way ``got`` departs from delta-spark's ``expected`` (empty when they agree)."""
    if not got.typed:
        return [f"untyped crash {got.error!r}" + (f" where delta-spark refuses ({expected.error})"
                                                   if expected.error else " where delta-spark runs")]
    if expected.error or got.error:
        out = []
        if expected.error and not got.error:
            out.append(f"runs where delta-spark refuses with {expected.error!r}")
        if got.error and not expected.error:
            out.append(f"refuses with {got.error!r} where delta-spark runs")
        if got.error and not got.unchanged:
            out.append("the failed MERGE changed the table")
        return out
    out = []
    if got.committed != expected.committed:
        out.append(f"committed a version: delta-spark {expected.committed}, engine {got.committed}")
    if got.schema != expected.schema:
        out.append(f"schema: delta-spark {json.dumps(expected.schema)}, engine {json.dumps(got.schema)}")
    if got.rows != expected.rows:
        out.append(f"rows: delta-spark {expected.rows}, engine {got.rows}")
    want, have = dict(expected.metrics), dict(got.metrics)
    if "dv" in case.features:
        for key in LAYOUT_WITH_DVS:
            want.pop(key, None)
            have.pop(key, None)
    wrong = {k: (v, have.get(k)) for k, v in want.items() if have.get(k) != v}
    if wrong:
        pairs = ", ".join(f"{k} {a} vs {b}" for k, (a, b) in sorted(wrong.items()))
        out.append(f"metrics (delta-spark, engine): {pairs}")
    if got.changes != expected.changes:
        out.append(f"change data: delta-spark {expected.changes}, engine {got.changes}")
    return out


def report(outcomes: dict[str, Outcome], case: OracleCase) -> dict[str, list[str]]:
    """Per executor, its departures from delta-spark (executors that agree left out)."""
    expected = outcomes["delta-spark"]
    found = {name: differences(expected, outcomes[name], case) for name in ("local", "spark")}
    return {name: diffs for name, diffs in found.items() if diffs}

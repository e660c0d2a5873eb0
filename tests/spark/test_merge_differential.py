"""Differential tests: generated MERGEs run by the local executor and by the Spark executor agree.

Hypothesis draws a target table (nulls in keys, partitioned or not, change data feed on or off,
column mapping on or off; or a copy of a Spark-written table with deletion vectors), a source (new
columns included), and clauses of every kind in any order, with or without schema evolution. The
MERGE runs once with ``DeltaTable.merge`` (local) and once with ``merge_delta`` (Spark) on copies of
the table: both fail with the same error type, or both end with the same rows, schema, metrics (times,
bytes and file counts aside) and change data. This is how the two executors stay one semantics.

The default run draws a few examples (one Spark session); ``-m slow`` draws many more.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import DeltaError
from airflow_provider_delta.spark import merge_delta
from airflow_provider_delta.spark.merge.execution import BROADCAST_KEYS_CONF
from tests.conformance import find_corpus
from tests.spark.merge_support import assert_same_merge
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]

DV_TABLE = "golden/dv-partitioned-with-checkpoint"

# ------------------------------------------------------------------------------------ table kinds

GENERATED = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.int32()), ("s", pa.string())])
DV_SCHEMA = pa.schema([("part", pa.int32()), ("col1", pa.int32()), ("col2", pa.string())])


@dataclass(frozen=True)
class Kind:
    """A family of targets: how to make one, its source columns, and clause templates over them."""

    name: str
    on: str
    matched_conditions: tuple[str | None, ...]
    matched_sets: tuple[dict[str, str], ...]
    insert_conditions: tuple[str | None, ...]
    insert_values: tuple[dict[str, str], ...]
    by_source_conditions: tuple[str | None, ...]
    by_source_sets: tuple[dict[str, str], ...]
    excepts: tuple[tuple[str, ...], ...] = ((),)
    properties: dict[str, str] = field(default_factory=dict)


GENERATED_KIND = Kind(
    name="generated",
    on="t.k = s.k",
    matched_conditions=(
        None,
        "s.v > t.v",
        "t.s IS NULL",
        "s.p = t.p",
        "s.v % 2 = 0",
        "t.v IS NOT NULL AND s.s IS NOT NULL",
    ),
    matched_sets=(
        {"v": "s.v + coalesce(t.v, 0)"},
        {"s": "concat(coalesce(t.s, ''), s.s)", "p": "s.p"},
        {"x": "s.x"},
        {"v": "length(s.s)"},
    ),
    insert_conditions=(None, "s.v IS NOT NULL", "s.p = 'a'", "s.k > 5"),
    insert_values=(
        {"k": "s.k", "v": "s.v * 2", "p": "s.p"},
        {"k": "s.k", "s": "upper(s.s)"},
        {"k": "s.k", "x": "s.x"},
    ),
    by_source_conditions=(None, "t.v < 5", "t.p = 'b'", "t.s IS NOT NULL"),
    by_source_sets=({"v": "t.v + 100"}, {"s": "lower(t.s)"}),
    excepts=((), ("s",), ("x",), ("v", "x")),
)
DV_KIND = Kind(
    name="deletion vectors",
    on="t.part = s.part AND t.col1 = s.col1",
    matched_conditions=(None, "s.col2 > t.col2", "s.col1 % 2 = 0"),
    matched_sets=({"col2": "concat(t.col2, s.col2)"}, {"x": "s.x"}),
    insert_conditions=(None, "s.col1 > 35"),
    insert_values=({"part": "s.part", "col1": "s.col1", "col2": "upper(s.col2)"},),
    by_source_conditions=(None, "t.col1 < 35", "t.part = 3"),
    by_source_sets=({"col2": "concat(t.col2, '~')"},),
    excepts=((), ("col2",), ("x",)),
)

# ------------------------------------------------------------------------------------ strategies

SMALL_TEXT = st.one_of(st.none(), st.text(alphabet="abAB", min_size=0, max_size=3))


@st.composite
def generated_target(draw: st.DrawFn) -> dict[str, Any]:
    rows = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "k": st.one_of(st.none(), st.integers(0, 9)),
                    "p": st.sampled_from(["a", "b", None]),
                    "v": st.one_of(st.none(), st.integers(-5, 20)),
                    "s": SMALL_TEXT,
                }
            ),
            max_size=12,
        )
    )
    properties = {}
    if draw(st.booleans()):
        properties["delta.enableChangeDataFeed"] = "true"
    if draw(st.booleans()):
        properties["delta.columnMapping.mode"] = "name"
    return {
        "rows": rows,
        "partitioned": draw(st.booleans()),
        "properties": properties,
        "files": draw(st.integers(1, 3)),
    }


def source_rows(kind: Kind, draw: st.DrawFn, with_x: bool) -> pa.Table:
    if kind is DV_KIND:
        spec = {"part": st.integers(0, 4), "col1": st.integers(28, 45), "col2": SMALL_TEXT}
        schema = pa.schema([("part", pa.int32()), ("col1", pa.int32()), ("col2", pa.string())])
    else:
        spec = {
            "k": st.one_of(st.none(), st.integers(0, 12)),
            "p": st.sampled_from(["a", "b", None]),
            "v": st.one_of(st.none(), st.integers(-5, 20)),
            "s": SMALL_TEXT,
        }
        schema = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.int64()), ("s", pa.string())])
    if with_x:
        spec["x"] = st.one_of(st.none(), st.floats(-10, 10, allow_nan=False))
        schema = schema.append(pa.field("x", pa.float64()))
    rows = draw(st.lists(st.fixed_dictionaries(spec), max_size=8))
    return pa.Table.from_pylist(rows, schema=schema)


@st.composite
def clauses(draw: st.DrawFn, kind: Kind) -> list[tuple[str, dict[str, Any]]]:
    """Clauses of every kind in a drawn order; within a kind only the last may lack a condition."""
    drawn: list[tuple[str, dict[str, Any]]] = []
    for _ in range(draw(st.integers(1, 4))):
        which = draw(st.sampled_from(["matched", "not_matched", "not_matched_by_source"]))
        if which == "matched":
            action = draw(st.sampled_from(["delete", "update_all", "update"]))
            args: dict[str, Any] = {"condition": draw(st.sampled_from(kind.matched_conditions))}
            if action == "update_all":
                args["except_"] = list(draw(st.sampled_from(kind.excepts)))
            elif action == "update":
                args["set"] = draw(st.sampled_from(kind.matched_sets))
            drawn.append((f"when_matched_{action}", args))
        elif which == "not_matched":
            action = draw(st.sampled_from(["insert_all", "insert"]))
            args = {"condition": draw(st.sampled_from(kind.insert_conditions))}
            if action == "insert_all":
                args["except_"] = list(draw(st.sampled_from(kind.excepts)))
            else:
                args["values"] = draw(st.sampled_from(kind.insert_values))
            drawn.append((f"when_not_matched_{action}", args))
        else:
            action = draw(st.sampled_from(["delete", "update"]))
            args = {"condition": draw(st.sampled_from(kind.by_source_conditions))}
            if action == "update":
                args["set"] = draw(st.sampled_from(kind.by_source_sets))
            drawn.append((f"when_not_matched_by_source_{action}", args))
    # Only the last clause of a kind may omit its condition: give earlier ones the first condition.
    conditions = {
        "matched": kind.matched_conditions,
        "not_matched": kind.insert_conditions,
        "not_matched_by_source": kind.by_source_conditions,
    }
    for i, (method, args) in enumerate(drawn):
        family = _family(method)
        later = any(_family(m) == family for m, _ in drawn[i + 1 :])
        if later and args["condition"] is None:
            args["condition"] = next(c for c in conditions[family] if c is not None)
    return drawn


def _family(method: str) -> str:
    if method.startswith("when_not_matched_by_source"):
        return "not_matched_by_source"
    return "not_matched" if method.startswith("when_not_matched") else "matched"


@st.composite
def merge_cases(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from([GENERATED_KIND, GENERATED_KIND, DV_KIND]))
    evolution = draw(st.booleans())
    case = {
        "kind": kind,
        "evolution": evolution,
        "source": source_rows(kind, draw, with_x=draw(st.booleans())),
        "clauses": draw(clauses(kind)),
        "broadcast_keys": draw(st.booleans()),
    }
    if kind is GENERATED_KIND:
        case["target"] = draw(generated_target())
    else:
        case["cdf"] = draw(st.booleans())
    return case


# ------------------------------------------------------------------------------------ running


def make_target(case: dict[str, Any], path: Path) -> int:
    """Create the case's target at ``path``; return its version."""
    if case["kind"] is DV_KIND:
        corpus = find_corpus()
        if corpus is None:
            pytest.skip("the conformance corpus is missing")
        shutil.copytree(corpus / "tables" / DV_TABLE, path)
        if case["cdf"]:
            DeltaTable(str(path)).alter(
                "ALTER TABLE t SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
            )
        return DeltaTable(str(path)).version
    target = case["target"]
    table = DeltaTable.create(
        str(path),
        GENERATED,
        partition_by=["p"] if target["partitioned"] else (),
        properties=target["properties"],
    )
    rows = pa.Table.from_pylist(target["rows"], schema=GENERATED)
    step = max(1, -(-rows.num_rows // target["files"]))
    for start in range(0, rows.num_rows, step):
        table.append(rows.slice(start, step))
    return DeltaTable(str(path)).version


def run(builder: Any, clause_list: list[tuple[str, dict[str, Any]]]) -> dict[str, Any] | str:
    """The merge's metrics, or the name of the ``DeltaError`` it raised."""
    try:
        for method, args in clause_list:
            builder = getattr(builder, method)(**{k: v for k, v in args.items() if v is not None})
        result: dict[str, Any] = builder.execute()
    except DeltaError as err:
        return type(err).__name__
    return result


def check_case(spark: SparkSession, case: dict[str, Any]) -> None:
    root = Path(tempfile.mkdtemp(prefix="merge-diff-"))
    try:
        local, spark_copy = root / "local", root / "spark"
        since = make_target(case, local)
        shutil.copytree(local, spark_copy)
        kind: Kind = case["kind"]
        options = {"source_alias": "s", "target_alias": "t", "schema_evolution": case["evolution"]}
        expected = run(DeltaTable(str(local)).merge(case["source"], kind.on, **options), case["clauses"])
        frame = spark.createDataFrame(case["source"], schema=_spark_schema(case["source"]))
        if not case.get("broadcast_keys", True):  # the shuffle join of the whole target, as for large sources
            spark.conf.set(BROADCAST_KEYS_CONF, "0")
        try:
            got = run(merge_delta(spark, str(spark_copy), frame, kind.on, **options), case["clauses"])
        finally:
            spark.conf.unset(BROADCAST_KEYS_CONF)
        if isinstance(expected, str) or isinstance(got, str):
            assert got == expected, f"local: {expected}, spark: {got}"
            assert DeltaTable(str(spark_copy)).version == since
            return
        assert_same_merge(local, spark_copy, since, expected, got)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _spark_schema(table: pa.Table) -> Any:
    from airflow_provider_delta.core.schema.arrow import from_arrow_schema
    from airflow_provider_delta.spark.types import to_spark_schema

    return to_spark_schema(from_arrow_schema(table.schema))


FEW = settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MANY = settings(
    max_examples=80,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def spark_utc(spark: SparkSession) -> SparkSession:
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark


@FEW
@given(case=merge_cases())
def test_local_and_spark_merges_agree(spark_utc: SparkSession, case: dict[str, Any]) -> None:
    check_case(spark_utc, case)


@pytest.mark.slow
@MANY
@given(case=merge_cases())
def test_local_and_spark_merges_agree_on_many_cases(spark_utc: SparkSession, case: dict[str, Any]) -> None:
    check_case(spark_utc, case)


def test_a_fixed_case_of_every_clause_kind_agrees(spark_utc: SparkSession) -> None:
    # One case drawn by hand that exercises all three kinds, evolution, CDF, column mapping and null keys.
    case = {
        "kind": GENERATED_KIND,
        "evolution": True,
        "source": pa.Table.from_pylist(
            [
                {"k": 1, "p": "a", "v": 5, "s": "x", "x": 1.5},
                {"k": None, "p": "b", "v": 2, "s": None, "x": None},
                {"k": 7, "p": "a", "v": 8, "s": "ab", "x": 2.0},
            ],
            schema=pa.schema(
                [
                    ("k", pa.int64()),
                    ("p", pa.string()),
                    ("v", pa.int64()),
                    ("s", pa.string()),
                    ("x", pa.float64()),
                ]
            ),
        ),
        "clauses": [
            ("when_not_matched_by_source_update", {"set": {"v": "t.v + 100"}, "condition": "t.v < 5"}),
            ("when_matched_update_all", {"except_": ["v"], "condition": "s.v > t.v"}),
            ("when_not_matched_insert", {"values": {"k": "s.k", "x": "s.x"}, "condition": None}),
            ("when_matched_delete", {"condition": None}),
            ("when_not_matched_by_source_delete", {"condition": None}),
        ],
        "target": {
            "rows": [
                {"k": 1, "p": "a", "v": 1, "s": None},
                {"k": 2, "p": "b", "v": 3, "s": "q"},
                {"k": None, "p": None, "v": 9, "s": "n"},
                {"k": 3, "p": "a", "v": 30, "s": None},
            ],
            "partitioned": True,
            "properties": {"delta.enableChangeDataFeed": "true", "delta.columnMapping.mode": "name"},
            "files": 2,
        },
    }
    check_case(spark_utc, case)


UPSERT_SOURCE = pa.Table.from_pylist(
    [
        {"k": 1, "p": "a", "v": 5, "s": "x"},
        {"k": None, "p": "b", "v": 2, "s": None},
        {"k": 8, "p": "a", "v": 8, "s": "ab"},
        {"k": 8, "p": "b", "v": 1, "s": "c"},
        {"k": 3, "p": None, "v": 0, "s": "d"},
    ],
    schema=pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.int64()), ("s", pa.string())]),
)
UPSERT_TARGET = {
    "rows": [
        {"k": 1, "p": "a", "v": 1, "s": None},
        {"k": 2, "p": "b", "v": 3, "s": "q"},
        {"k": None, "p": None, "v": 9, "s": "n"},
        {"k": 3, "p": "a", "v": 30, "s": None},
    ],
    "partitioned": False,
    "properties": {"delta.enableChangeDataFeed": "true"},
    "files": 2,
}


@pytest.mark.parametrize("broadcast_keys", [True, False], ids=["broadcast-keys", "shuffle-join"])
@pytest.mark.parametrize(
    "clause_list",
    [
        [
            ("when_matched_update_all", {"condition": "s.v > t.v"}),
            ("when_matched_delete", {"condition": None}),
            (
                "when_not_matched_insert",
                {"values": {"k": "s.k", "v": "s.v * 2", "s": "upper(s.s)"}, "condition": None},
            ),
        ],
        [("when_not_matched_insert_all", {"condition": "s.v < 8"})],
        [("when_matched_update", {"set": {"s": "concat(t.s, s.s)", "v": "s.v"}, "condition": None})],
        [
            ("when_matched_update_all", {"condition": None}),
            ("when_not_matched_insert_all", {"condition": None}),
            ("when_not_matched_by_source_update", {"set": {"v": "t.v + 100"}, "condition": "t.v < 5"}),
            ("when_not_matched_by_source_delete", {"condition": None}),
        ],
    ],
    ids=["upsert", "insert-only", "update-only", "not-matched-by-source"],
)
def test_a_fixed_upsert_agrees_with_and_without_broadcast_keys(
    spark_utc: SparkSession, clause_list: list[tuple[str, dict[str, Any]]], broadcast_keys: bool
) -> None:
    # Null keys on both sides, two source rows inserted with one key, a key only in the source.
    case = {
        "kind": GENERATED_KIND,
        "evolution": False,
        "source": UPSERT_SOURCE,
        "clauses": clause_list,
        "target": UPSERT_TARGET,
        "broadcast_keys": broadcast_keys,
    }
    check_case(spark_utc, case)

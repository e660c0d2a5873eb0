"""Differential MERGE against Delta Lake on Spark, the reference: delta-spark's ``MERGE INTO`` is the judge.

Each case (:mod:`tests.spark.merge_oracle_support`) runs on copies of one engine-written table through
delta-spark (``delta_spark`` fixture, one JVM per session), ``DeltaTable.merge_sql`` and
``merge_delta_sql`` (``local[2]``); both executors must end as delta-spark does (rows, schema, commitInfo
row metrics, change data) or, where delta-spark refuses, raise a typed ``DeltaError`` and leave the table
as it was. Expected results come from delta-spark at run time only.

The default run has a fixed sample: hand-picked cases (nested structs, arrays of structs, maps with
struct values, NULL structs at every level, every clause kind, evolution on and off, change data,
deletion vectors, column mapping) and cases hypothesis drew from :mod:`tests.merge_model.strategies`,
frozen here. A case where the engine departs from delta-spark is ``xfail(strict=True)`` with the
departure as its reason. ``-m slow`` searches generated cases.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.merge_model.case import Array, Clause, Condition, Map, MergeCase, Struct, Value
from tests.merge_model.strategies import merge_cases
from tests.spark.merge_oracle_seeded import SEEDED
from tests.spark.merge_oracle_support import FEATURES, OracleCase, Outcome, differences, report, run_case
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.delta_spark import DeltaSpark

pytestmark = [
    pytest.mark.spark,
    pytest.mark.interop,
    pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning"),
]

# ------------------------------------------------------------------------------------ building blocks

K = ("k", "bigint")
AB = Struct((("a", "int"), ("b", "int")))
ABC = Struct((("a", "int"), ("b", "int"), ("c", "int")))
AC = Struct((("a", "int"), ("c", "int")))
NESTED = Struct((("a", "int"), ("n", Struct((("c", "int"), ("d", "int"))))))  # a struct in a struct
NESTED_C = Struct((("a", "int"), ("n", Struct((("c", "int"),)))))
NESTED_E = Struct((("a", "int"), ("n", Struct((("c", "int"), ("d", "int"), ("e", "int"))))))


def schema(*fields: tuple[str, object]) -> Struct:
    return Struct((K, *fields))  # type: ignore[arg-type]


def s(*path: str) -> Value:
    return Value("s", path)


def t(*path: str) -> Value:
    return Value("t", path)


UPDATE_ALL = Clause("matched", "update")
INSERT_ALL = Clause("not_matched", "insert")
DELETE = Clause("matched", "delete")


def update(*pairs: tuple[str, Value], kind: str = "matched", when: Condition | None = None) -> Clause:
    return Clause(kind, "update", when, tuple((tuple(p.split(".")), v) for p, v in pairs))  # type: ignore[arg-type]


def insert(*pairs: tuple[str, Value], when: Condition | None = None) -> Clause:
    return Clause("not_matched", "insert", when, tuple((tuple(p.split(".")), v) for p, v in pairs))


def case(target: Struct, target_rows: list[dict], source: Struct, source_rows: list[dict],  # type: ignore[type-arg]
         *clauses: Clause, evolution: bool = False, features: tuple[str, ...] = ("cdf",)) -> OracleCase:
    return OracleCase(MergeCase(target, tuple(target_rows), source, tuple(source_rows), clauses, evolution),
                      frozenset(features))


# ------------------------------------------------------------------------------------ the fixed sample

NESTED_TARGET = [
    {"k": 1, "x": {"a": 1, "n": {"c": 10, "d": 100}}},
    {"k": 2, "x": {"a": 2, "n": None}},
    {"k": 3, "x": None},
    {"k": 4, "x": {"a": 4, "n": {"c": None, "d": 400}}},
]
ARRAY_TARGET = [{"k": 1, "arr": [{"a": 1, "b": 10, "c": 100}, None]}, {"k": 2, "arr": None}, {"k": 3, "arr": []}]
MAP_TARGET = [{"k": 1, "m": [("p", {"a": 1, "b": 10}), ("q", None)]}, {"k": 2, "m": None}]
FLAT = schema(("v", "int"), ("w", "int"))
FLAT_TARGET = [{"k": i, "v": i * 10, "w": i} for i in range(1, 7)]
FLAT_SOURCE = [{"k": i, "v": -i, "w": None} for i in (2, 4, 6, 8, 9)]

HAND_PICKED: dict[str, OracleCase] = {
    # issue 22 item 1: UPDATE SET * keeps the target's values of fields the source struct lacks
    "update-star-evolution-struct-missing-field": case(
        schema(("x", ABC)), [{"k": 1, "x": {"a": 1, "b": 10, "c": 100}}],
        schema(("x", AC)), [{"k": 1, "x": {"a": 0, "c": 0}}], UPDATE_ALL, evolution=True),
    # issue 22 item 2: a NULL source struct keeps the target's fields the source lacks
    "update-star-evolution-null-source-struct": case(
        schema(("x", ABC)), [{"k": 1, "x": {"a": 2, "b": 5, "c": 6}}, {"k": 2, "x": None}],
        schema(("x", Struct((("a", "int"), ("z", "int"))))), [{"k": 1, "x": None}, {"k": 2, "x": None}],
        UPDATE_ALL, evolution=True),
    # issue 22 item 3: without evolution a struct missing target fields is refused
    "update-star-no-evolution-struct-missing-field-refused": case(
        schema(("x", ABC)), [{"k": 1, "x": {"a": 1, "b": 10, "c": 100}}],
        schema(("x", AC)), [{"k": 1, "x": {"a": 0, "c": 0}}], UPDATE_ALL),
    # issue 22 item 4: a nested field in an INSERT column list is refused
    "insert-nested-column-refused": case(
        schema(("x", AB)), [{"k": 1, "x": {"a": 1, "b": 2}}],
        schema(("x", AB)), [{"k": 2, "x": {"a": 3, "b": 4}}], insert(("k", s("k")), ("x.b", s("x", "b")))),
    "struct-in-struct-update-star-insert-star-evolution": case(
        schema(("x", NESTED)), NESTED_TARGET,
        schema(("x", NESTED_E)),
        [{"k": 1, "x": {"a": -1, "n": None}}, {"k": 2, "x": {"a": -2, "n": {"c": -20, "d": None, "e": 7}}},
         {"k": 3, "x": {"a": None, "n": {"c": 1, "d": 2, "e": 3}}}, {"k": 5, "x": None},
         {"k": 6, "x": {"a": 6, "n": None}}],
        UPDATE_ALL, INSERT_ALL, evolution=True),
    "struct-in-struct-source-lacks-deep-field-evolution": case(
        schema(("x", NESTED)), NESTED_TARGET,
        schema(("x", NESTED_C)),
        [{"k": 1, "x": {"a": -1, "n": {"c": -10}}}, {"k": 2, "x": {"a": -2, "n": {"c": -20}}},
         {"k": 4, "x": {"a": -4, "n": None}}, {"k": 7, "x": {"a": 7, "n": {"c": 70}}}],
        UPDATE_ALL, INSERT_ALL, evolution=True),
    "struct-in-struct-same-schema-no-evolution-nulls-everywhere": case(
        schema(("x", NESTED)), NESTED_TARGET,
        schema(("x", NESTED)),
        [{"k": 1, "x": None}, {"k": 2, "x": {"a": None, "n": {"c": None, "d": None}}},
         {"k": 3, "x": {"a": 3, "n": None}}, {"k": 8, "x": {"a": None, "n": None}}],
        UPDATE_ALL, INSERT_ALL),
    "update-nested-field-explicit": case(
        schema(("x", NESTED)), NESTED_TARGET,
        schema(("x", NESTED)),
        [{"k": 1, "x": {"a": 9, "n": {"c": 90, "d": 900}}}, {"k": 2, "x": {"a": 8, "n": {"c": 80, "d": None}}},
         {"k": 3, "x": {"a": 7, "n": None}}],
        update(("x.n.c", s("x", "n", "c")), ("x.a", Value(literal=5)))),
    "update-nested-field-of-null-struct": case(
        schema(("x", AB)), [{"k": 1, "x": None}, {"k": 2, "x": {"a": 1, "b": 2}}],
        schema(("x", AB)), [{"k": 1, "x": {"a": 5, "b": 6}}, {"k": 2, "x": None}],
        update(("x.a", s("x", "a")))),
    "array-of-structs-update-star-evolution-missing-field": case(
        schema(("arr", Array(ABC))), ARRAY_TARGET,
        schema(("arr", Array(AC))),
        [{"k": 1, "arr": [{"a": 0, "c": 0}, None]}, {"k": 2, "arr": [{"a": 2, "c": None}]},
         {"k": 4, "arr": [None, {"a": 4, "c": 40}]}],
        UPDATE_ALL, INSERT_ALL, evolution=True),
    "array-of-structs-new-element-field-evolution": case(
        schema(("arr", Array(AB))), [{"k": 1, "arr": [{"a": 1, "b": 10}]}, {"k": 2, "arr": None}],
        schema(("arr", Array(ABC))),
        [{"k": 1, "arr": [{"a": 0, "b": None, "c": 5}, None]}, {"k": 3, "arr": [{"a": 3, "b": 3, "c": 3}]}],
        UPDATE_ALL, INSERT_ALL, evolution=True),
    "map-struct-values-update-star-evolution-missing-field": case(
        schema(("m", Map("string", AB))), MAP_TARGET,
        schema(("m", Map("string", Struct((("a", "int"),))))),
        [{"k": 1, "m": [("p", {"a": 0}), ("r", None)]}, {"k": 3, "m": [("q", {"a": 3})]}],
        UPDATE_ALL, INSERT_ALL, evolution=True),
    "map-struct-values-new-field-evolution": case(
        schema(("m", Map("string", AB))), MAP_TARGET,
        schema(("m", Map("string", ABC))),
        [{"k": 2, "m": [("p", {"a": 2, "b": 2, "c": 2})]}, {"k": 3, "m": [("q", None)]}],
        UPDATE_ALL, INSERT_ALL, evolution=True),
    "map-struct-values-missing-field-no-evolution-refused": case(
        schema(("m", Map("string", AB))), MAP_TARGET,
        schema(("m", Map("string", Struct((("a", "int"),))))), [{"k": 1, "m": [("p", {"a": 0})]}],
        UPDATE_ALL),
    "insert-columns-struct-with-extra-field-evolution": case(
        schema(("x", AB)), [{"k": 1, "x": {"a": 1, "b": 2}}],
        schema(("x", ABC)), [{"k": 1, "x": {"a": 5, "b": 6, "c": 7}}, {"k": 2, "x": {"a": 3, "b": None, "c": 4}}],
        insert(("k", s("k")), ("x", s("x"))), evolution=True),
    "insert-star-source-lacks-column-no-evolution-refused": case(
        FLAT, FLAT_TARGET, schema(("v", "int")), [{"k": 9, "v": 1}], INSERT_ALL),
    "new-column-assigned-from-other-value-evolution": case(
        FLAT, FLAT_TARGET, schema(("v", "int"), ("extra", "bigint")),
        [{"k": 2, "v": 5, "extra": 50}, {"k": 9, "v": 6, "extra": 60}],
        update(("extra", s("v"))), insert(("k", s("k")), ("extra", s("v"))), evolution=True),
    "assignment-to-unknown-column-refused": case(
        FLAT, FLAT_TARGET, FLAT, FLAT_SOURCE, update(("nope", s("v"))), evolution=True),
    "every-clause-kind-with-conditions": case(
        FLAT, FLAT_TARGET, FLAT, FLAT_SOURCE,
        Clause("matched", "delete", Condition("s", ">", 5)),
        update(("v", s("v")), when=Condition("s", "<", 3)),
        UPDATE_ALL,
        insert(("k", s("k")), ("w", Value(literal=1)), when=Condition("s", ">", 8)),
        INSERT_ALL,
        update(("w", Value(literal=3)), kind="not_matched_by_source", when=Condition("t", "<", 2)),
        Clause("not_matched_by_source", "delete", Condition("t", ">", 4))),
    "not-matched-by-source-nested-update-and-delete": case(
        schema(("x", NESTED)), NESTED_TARGET, schema(("x", NESTED)), [{"k": 4, "x": None}],
        update(("x.n.d", Value(literal=3)), kind="not_matched_by_source", when=Condition("t", "<", 2)),
        update(("x", Value()), kind="not_matched_by_source", when=Condition("t", "<", 3)),
        Clause("not_matched_by_source", "delete")),
    "int-source-into-bigint-and-bigint-into-int-nested": case(
        schema(("x", Struct((("a", "int"), ("b", "bigint"))))), [{"k": 1, "x": {"a": 1, "b": 2}}],
        schema(("x", Struct((("a", "bigint"), ("b", "int"))))), [{"k": 1, "x": {"a": 7, "b": 8}}, {"k": 2, "x": None}],
        UPDATE_ALL, INSERT_ALL, evolution=True),
    "case-differences-in-source-field-names": case(
        schema(("x", AB)), [{"k": 1, "x": {"a": 1, "b": 2}}],
        schema(("X", Struct((("A", "int"), ("b", "int"), ("C", "int"))))), [{"k": 1, "X": {"A": 3, "b": 4, "C": 5}}],
        UPDATE_ALL, INSERT_ALL, evolution=True),
    "new-top-level-struct-column-evolution": case(
        FLAT, FLAT_TARGET[:3], schema(("v", "int"), ("w", "int"), ("y", NESTED)),
        [{"k": 1, "v": 0, "w": 0, "y": {"a": 1, "n": None}}, {"k": 7, "v": 7, "w": 7, "y": None}],
        UPDATE_ALL, INSERT_ALL, evolution=True),
    "several-source-rows-match-one-target-row-refused": case(
        FLAT, FLAT_TARGET, FLAT, [{"k": 1, "v": 1, "w": 1}, {"k": 1, "v": 2, "w": 2}], UPDATE_ALL),
    "insert-only": case(FLAT, FLAT_TARGET, FLAT, FLAT_SOURCE, INSERT_ALL),
    "nothing-matches": case(FLAT, FLAT_TARGET, FLAT, [{"k": 20, "v": 1, "w": 1}], UPDATE_ALL, DELETE),
    "deletion-vectors-delete-update-and-not-matched-by-source": case(
        FLAT, FLAT_TARGET, FLAT, FLAT_SOURCE,
        Clause("matched", "delete", Condition("s", "<", 3)), UPDATE_ALL, INSERT_ALL,
        Clause("not_matched_by_source", "delete", Condition("t", "<", 2)), features=("cdf", "dv")),
    "deletion-vectors-nested-update-star-evolution": case(
        schema(("x", NESTED)), NESTED_TARGET, schema(("x", NESTED_E)),
        [{"k": 2, "x": {"a": 0, "n": {"c": 0, "d": 0, "e": 0}}}], UPDATE_ALL, evolution=True,
        features=("cdf", "dv")),
    "column-mapping-nested-evolution": case(
        schema(("x", NESTED)), NESTED_TARGET, schema(("x", NESTED_E), ("y", "int")),
        [{"k": 1, "x": {"a": 0, "n": {"c": 0, "d": 0, "e": 0}}, "y": 1}, {"k": 9, "x": None, "y": 9}],
        UPDATE_ALL, INSERT_ALL, evolution=True, features=("cdf", "cm")),
    "column-mapping-and-deletion-vectors-without-cdf": case(
        FLAT, FLAT_TARGET, FLAT, FLAT_SOURCE, DELETE, INSERT_ALL, features=("cm", "dv")),
}

# Known departures of the engine from delta-spark: case name -> the discrepancy.
#: Cases where the engine departs from delta-spark today (case name -> the departure), run as strict xfails.
DEPARTURES: dict[str, str] = {}


def _params(cases: dict[str, OracleCase]) -> list[object]:
    return [
        pytest.param(c, id=name, marks=[pytest.mark.xfail(strict=True, reason=DEPARTURES[name])]
                     if name in DEPARTURES else [])
        for name, c in cases.items()
    ]


def check(oracle: DeltaSpark, spark: SparkSession, oracle_case: OracleCase) -> None:
    root = Path(tempfile.mkdtemp(prefix="merge-oracle-"))
    try:
        outcomes = run_case(oracle, spark, oracle_case, root)
        found = report(outcomes, oracle_case)
        statement = oracle_case.case.statement("target", "src")
        assert not found, f"{statement}\nfeatures {sorted(oracle_case.features)}\n" + "\n".join(
            f"{name}: {d}" for name, diffs in found.items() for d in diffs)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("oracle_case", _params({**HAND_PICKED, **SEEDED}))
def test_merge_agrees_with_delta_spark(delta_spark: DeltaSpark, spark: SparkSession, oracle_case: OracleCase) -> None:
    check(delta_spark, spark, oracle_case)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(merge_case=merge_cases(), features=st.sets(st.sampled_from(sorted(FEATURES))))
def test_generated_merges_agree_with_delta_spark(
    delta_spark: DeltaSpark, spark: SparkSession, merge_case: MergeCase, features: set[str]
) -> None:
    check(delta_spark, spark, OracleCase(merge_case, frozenset(features)))


def test_the_comparison_names_each_departure() -> None:
    # The judge itself, without the oracle: each kind of departure is reported, agreement is not.
    same = Outcome(committed=True, schema={"a": 1}, rows=[(1,)], metrics={"numTargetRowsCopied": 2}, changes=[])
    flat = HAND_PICKED["insert-only"]
    assert differences(same, same, flat) == []
    wrong = Outcome(committed=True, schema={"a": 2}, rows=[(2,)], metrics={"numTargetRowsCopied": 3}, changes=[1])
    found = differences(same, wrong, flat)
    assert [d.split(":")[0] for d in found] == ["schema", "rows", "metrics (delta-spark, engine)", "change data"]
    with_dvs = OracleCase(flat.case, frozenset({"dv"}))
    assert not any(d.startswith("metrics") for d in differences(same, wrong, with_dvs))
    refused = Outcome(error="DeltaAnalysisException: no")
    assert differences(refused, same, flat) == ["runs where delta-spark refuses with 'DeltaAnalysisException: no'"]
    assert differences(refused, Outcome(error="MergeError: no", unchanged=False), flat) == [
        "the failed MERGE changed the table"]
    crash = Outcome(error="ArrowInvalid: x", typed=False)
    assert differences(refused, crash, flat)[0].startswith("untyped crash")

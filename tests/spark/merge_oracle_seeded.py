"""MERGE cases hypothesis drew from :func:`tests.merge_model.strategies.merge_cases` (seed 29), frozen.

Eight of the first 300 draws with at least two target and two source rows (six Delta runs, two it
refuses, by the model), each with a set of table features; the expected results come from delta-spark
when the test runs, never from here.
"""

from __future__ import annotations

from tests.merge_model.case import Array, Clause, Condition, Map, MergeCase, Struct, Value
from tests.spark.merge_oracle_support import OracleCase

__all__ = ["SEEDED"]

SEEDED: dict[str, OracleCase] = {
    "seeded-0": OracleCase(
        MergeCase(
            target_schema=Struct(fields=(("k", "bigint"), ("y", "bigint"))),
            target_rows=({"k": 4, "y": None}, {"k": 7, "y": 0}, {"k": 6, "y": None}, {"k": 1, "y": None}),
            source_schema=Struct(
                fields=(
                    ("k", "bigint"),
                    (
                        "z",
                        Map(
                            key="string",
                            value=Struct(
                                fields=(
                                    (
                                        "d",
                                        Array(
                                            element=Struct(
                                                fields=(("b", "int"), ("A", "bigint"), ("c", "bigint"))
                                            )
                                        ),
                                    ),
                                )
                            ),
                        ),
                    ),
                    ("Y", "bigint"),
                )
            ),
            source_rows=(
                {"k": 3, "z": [], "Y": 0},
                {"k": 0, "z": None, "Y": None},
                {"k": 5, "z": None, "Y": None},
                {"k": 6, "z": [("p", {"d": [None]}), ("q", None)], "Y": -1},
            ),
            clauses=(
                Clause(
                    kind="not_matched_by_source",
                    action="delete",
                    condition=Condition(alias="t", op="<", number=2),
                    assignments=None,
                ),
                Clause(
                    kind="not_matched_by_source",
                    action="update",
                    condition=Condition(alias="t", op=">", number=5),
                    assignments=((("y",), Value(alias="t", path=("y",), literal=None)),),
                ),
            ),
            evolution=False,
        ),
        frozenset(("cdf",)),
    ),
    "seeded-1": OracleCase(
        MergeCase(
            target_schema=Struct(
                fields=(
                    ("k", "bigint"),
                    (
                        "y",
                        Struct(
                            fields=(
                                ("c", Array(element=Struct(fields=(("a", "bigint"), ("d", "bigint"))))),
                                (
                                    "a",
                                    Map(key="string", value=Struct(fields=(("c", "bigint"), ("b", "int")))),
                                ),
                                ("d", Map(key="string", value="int")),
                            )
                        ),
                    ),
                )
            ),
            target_rows=({"k": 5, "y": None}, {"k": 1, "y": None}, {"k": 3, "y": None}, {"k": 6, "y": None}),
            source_schema=Struct(
                fields=(
                    ("k", "bigint"),
                    (
                        "y",
                        Struct(
                            fields=(
                                ("C", Array(element=Struct(fields=(("a", "bigint"), ("d", "int"))))),
                                ("d", Map(key="string", value="int")),
                            )
                        ),
                    ),
                )
            ),
            source_rows=({"k": 0, "y": None}, {"k": 2, "y": None}),
            clauses=(
                Clause(
                    kind="matched",
                    action="delete",
                    condition=Condition(alias="s", op="<", number=3),
                    assignments=None,
                ),
                Clause(
                    kind="matched",
                    action="update",
                    condition=Condition(alias="s", op="<", number=4),
                    assignments=None,
                ),
                Clause(
                    kind="not_matched",
                    action="insert",
                    condition=Condition(alias="s", op="<", number=3),
                    assignments=((("y",), Value(alias="s", path=("y",), literal=None)),),
                ),
                Clause(
                    kind="not_matched_by_source",
                    action="update",
                    condition=Condition(alias="t", op="<", number=4),
                    assignments=((("y", "d"), Value(alias=None, path=(), literal=None)),),
                ),
                Clause(
                    kind="not_matched_by_source",
                    action="delete",
                    condition=Condition(alias="t", op=">", number=6),
                    assignments=None,
                ),
            ),
            evolution=True,
        ),
        frozenset(("cdf", "cm")),
    ),
    "seeded-2": OracleCase(
        MergeCase(
            target_schema=Struct(fields=(("k", "bigint"), ("y", "int"))),
            target_rows=({"k": 0, "y": None}, {"k": 5, "y": None}, {"k": 4, "y": -1}, {"k": 2, "y": None}),
            source_schema=Struct(fields=(("k", "bigint"), ("y", "int"))),
            source_rows=({"k": 4, "y": 0}, {"k": 7, "y": None}, {"k": 2, "y": 2}, {"k": 6, "y": None}),
            clauses=(
                Clause(kind="matched", action="delete", condition=None, assignments=None),
                Clause(
                    kind="not_matched",
                    action="insert",
                    condition=Condition(alias="s", op="<", number=5),
                    assignments=None,
                ),
                Clause(
                    kind="not_matched",
                    action="insert",
                    condition=Condition(alias="s", op=">", number=0),
                    assignments=None,
                ),
                Clause(
                    kind="not_matched_by_source",
                    action="delete",
                    condition=Condition(alias="t", op="<", number=3),
                    assignments=None,
                ),
            ),
            evolution=False,
        ),
        frozenset(("cdf",)),
    ),
    "seeded-3": OracleCase(
        MergeCase(
            target_schema=Struct(fields=(("k", "bigint"), ("z", "int"))),
            target_rows=({"k": 4, "z": None}, {"k": 2, "z": None}, {"k": 7, "z": 1}, {"k": 5, "z": None}),
            source_schema=Struct(
                fields=(("k", "bigint"), ("Z", "int"), ("X", Array(element=Struct(fields=(("B", "int"),)))))
            ),
            source_rows=(
                {"k": 4, "Z": None, "X": []},
                {"k": 2, "Z": None, "X": None},
                {"k": 7, "Z": 4, "X": None},
                {"k": 5, "Z": -4, "X": None},
            ),
            clauses=(
                Clause(
                    kind="matched",
                    action="update",
                    condition=Condition(alias="s", op=">", number=2),
                    assignments=None,
                ),
            ),
            evolution=True,
        ),
        frozenset(("cdf", "dv")),
    ),
    "seeded-4": OracleCase(
        MergeCase(
            target_schema=Struct(fields=(("k", "bigint"),)),
            target_rows=({"k": 4}, {"k": 6}, {"k": 0}, {"k": 2}),
            source_schema=Struct(
                fields=(("k", "bigint"), ("z", Map(key="string", value="int")), ("Y", "bigint"))
            ),
            source_rows=(
                {"k": 1, "z": [("q", None), ("p", None)], "Y": 5},
                {"k": 5, "z": None, "Y": -5},
                {"k": 4, "z": [("q", 1), ("p", None)], "Y": None},
                {"k": 0, "z": [("p", None), ("q", None)], "Y": -5},
            ),
            clauses=(
                Clause(kind="matched", action="delete", condition=None, assignments=None),
                Clause(
                    kind="not_matched_by_source",
                    action="delete",
                    condition=Condition(alias="t", op="<", number=5),
                    assignments=None,
                ),
                Clause(
                    kind="not_matched_by_source",
                    action="delete",
                    condition=Condition(alias="t", op="<", number=4),
                    assignments=None,
                ),
            ),
            evolution=False,
        ),
        frozenset(("cdf",)),
    ),
    "seeded-5": OracleCase(
        MergeCase(
            target_schema=Struct(fields=(("k", "bigint"),)),
            target_rows=({"k": 1}, {"k": 2}, {"k": 7}, {"k": 4}),
            source_schema=Struct(fields=(("k", "bigint"), ("y", Map(key="string", value="bigint")))),
            source_rows=({"k": 4, "y": None}, {"k": 0, "y": [("p", None), ("q", None)]}),
            clauses=(
                Clause(
                    kind="matched",
                    action="delete",
                    condition=Condition(alias="s", op=">", number=3),
                    assignments=None,
                ),
            ),
            evolution=True,
        ),
        frozenset(("cdf", "cm", "dv")),
    ),
    "seeded-6": OracleCase(
        MergeCase(
            target_schema=Struct(fields=(("k", "bigint"), ("x", Map(key="string", value="int")))),
            target_rows=({"k": 5, "x": []}, {"k": 6, "x": None}, {"k": 4, "x": None}, {"k": 7, "x": None}),
            source_schema=Struct(fields=(("k", "bigint"),)),
            source_rows=({"k": 3}, {"k": 0}, {"k": 2}, {"k": 1}),
            clauses=(
                Clause(
                    kind="not_matched_by_source",
                    action="update",
                    condition=Condition(alias="t", op=">", number=1),
                    assignments=((("x",), Value(alias=None, path=(), literal=3)),),
                ),
            ),
            evolution=True,
        ),
        frozenset(("cdf",)),
    ),
    "seeded-7": OracleCase(
        MergeCase(
            target_schema=Struct(
                fields=(("k", "bigint"), ("z", "bigint"), ("y", Struct(fields=(("c", "bigint"),))))
            ),
            target_rows=(
                {"k": 0, "z": -2, "y": None},
                {"k": 6, "z": -3, "y": {"c": None}},
                {"k": 2, "z": 5, "y": {"c": 0}},
            ),
            source_schema=Struct(
                fields=(
                    ("k", "bigint"),
                    (
                        "x",
                        Array(
                            element=Struct(fields=(("d", Map(key="string", value="int")), ("a", "bigint")))
                        ),
                    ),
                    ("Y", Struct(fields=(("C", "bigint"),))),
                )
            ),
            source_rows=(
                {"k": 2, "x": [None, {"a": None, "d": [("q", 0), ("p", -4)]}], "Y": {"C": 3}},
                {"k": 1, "x": [{"d": None, "a": None}], "Y": None},
                {"k": 7, "x": [], "Y": None},
            ),
            clauses=(
                Clause(
                    kind="matched",
                    action="delete",
                    condition=Condition(alias="s", op="<", number=6),
                    assignments=None,
                ),
                Clause(
                    kind="matched",
                    action="delete",
                    condition=Condition(alias="s", op=">", number=2),
                    assignments=None,
                ),
                Clause(
                    kind="not_matched",
                    action="insert",
                    condition=Condition(alias="s", op=">", number=5),
                    assignments=((("Y",), Value(alias="s", path=("Y",), literal=None)),),
                ),
                Clause(
                    kind="not_matched",
                    action="insert",
                    condition=None,
                    assignments=(
                        (("x",), Value(alias="s", path=("x",), literal=None)),
                        (("y",), Value(alias="s", path=("Y", "C"), literal=None)),
                    ),
                ),
                Clause(kind="not_matched_by_source", action="delete", condition=None, assignments=None),
            ),
            evolution=False,
        ),
        frozenset(("cdf",)),
    ),
}

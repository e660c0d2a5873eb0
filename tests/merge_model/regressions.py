"""The cases of issue 22 items 1, 2, 3, 7 and 8, with what delta-spark 4.4.0 (pyspark 4.2.0) gave for
each, written here by hand from runs of its ``MERGE INTO`` (default configuration, 2026-11-29).

Each entry is ``(case, outcome)``: the schema (model types) and rows Delta left, or ``"refused"``
with the column its error named. The same cases run on the local executor
(``tests/unit/core/merge/test_merge_nested_delta.py``) and on the Spark executor
(``tests/spark/test_merge_nested_model_spark.py``), and the model must agree with every one of them
(``test_the_model_gives_delta_spark_results``).
"""

from __future__ import annotations

from typing import Any

from tests.merge_model.case import Array, Clause, Map, MergeCase, Struct, Value

__all__ = ["REGRESSIONS"]

INT, BIG = "int", "bigint"
UPDATE_ALL = (Clause("matched", "update"),)
INSERT_ALL = (Clause("not_matched", "insert"),)


def _s(*fields: tuple[str, Any]) -> Struct:
    return Struct(tuple(fields))


def _table(**columns: Any) -> Struct:
    return Struct((("k", BIG), *columns.items()))


ABC, AC = _s(("a", INT), ("b", INT), ("c", INT)), _s(("a", INT), ("c", INT))

REGRESSIONS: dict[str, tuple[MergeCase, Any]] = {
    # 1. UPDATE SET * with evolution, a struct the source only partly has: aligned by name, the fields the
    #    source lacks keep the target's values; inside arrays and map values they are NULL (Delta does not
    #    pair elements) and NULL elements stay NULL.
    "1 struct": (
        MergeCase(
            _table(x=ABC),
            ({"k": 1, "x": {"a": 1, "b": 10, "c": 100}},),
            _table(x=AC),
            ({"k": 1, "x": {"a": 0, "c": 0}},),
            UPDATE_ALL,
            evolution=True,
        ),
        (_table(x=ABC), [{"k": 1, "x": {"a": 0, "b": 10, "c": 0}}]),
    ),
    "1 array of structs": (
        MergeCase(
            _table(x=Array(ABC)),
            ({"k": 1, "x": [{"a": 1, "b": 10, "c": 100}]},),
            _table(x=Array(AC)),
            ({"k": 1, "x": [{"a": 0, "c": 0}, None]},),
            UPDATE_ALL,
            evolution=True,
        ),
        (_table(x=Array(ABC)), [{"k": 1, "x": [{"a": 0, "b": None, "c": 0}, None]}]),
    ),
    "1 map of structs": (
        MergeCase(
            _table(x=Map("string", ABC)),
            ({"k": 1, "x": [("p", {"a": 1, "b": 10, "c": 100})]},),
            _table(x=Map("string", AC)),
            ({"k": 1, "x": [("p", {"a": 0, "c": 0}), ("q", None)]},),
            UPDATE_ALL,
            evolution=True,
        ),
        (_table(x=Map("string", ABC)), [{"k": 1, "x": [("p", {"a": 0, "b": None, "c": 0}), ("q", None)]}]),
    ),
    "1 struct in struct": (
        MergeCase(
            _table(x=_s(("a", INT), ("n", _s(("p", INT), ("q", INT))), ("c", INT))),
            ({"k": 1, "x": {"a": 1, "n": {"p": 7, "q": 8}, "c": 100}},),
            _table(x=_s(("a", INT), ("n", _s(("q", INT), ("r", INT))))),
            ({"k": 1, "x": {"a": 0, "n": None}},),
            UPDATE_ALL,
            evolution=True,
        ),
        (
            _table(x=_s(("a", INT), ("n", _s(("p", INT), ("q", INT), ("r", INT))), ("c", INT))),
            [{"k": 1, "x": {"a": 0, "n": {"p": 7, "q": None, "r": None}, "c": 100}}],
        ),
    ),
    # 2. UPDATE SET * with evolution, a NULL source struct: the target's fields the source lacks are kept;
    #    a NULL target struct stays NULL.
    "2 null source struct": (
        MergeCase(
            _table(col=_s(("y", INT), ("z", INT), ("w", INT))),
            ({"k": 1, "col": {"y": 2, "z": 5, "w": 6}}, {"k": 2, "col": None}),
            _table(col=_s(("y", INT), ("x", INT))),
            ({"k": 1, "col": None}, {"k": 2, "col": None}),
            UPDATE_ALL,
            evolution=True,
        ),
        (
            _table(col=_s(("y", INT), ("z", INT), ("w", INT), ("x", INT))),
            [{"k": 1, "col": {"y": None, "z": 5, "w": 6, "x": None}}, {"k": 2, "col": None}],
        ),
    ),
    "2 null source struct with every target field": (
        MergeCase(
            _table(col=_s(("y", INT), ("z", INT))),
            ({"k": 1, "col": {"y": 2, "z": 5}},),
            _table(col=_s(("y", INT), ("z", INT), ("x", INT))),
            ({"k": 1, "col": None},),
            UPDATE_ALL,
            evolution=True,
        ),
        (_table(col=_s(("y", INT), ("z", INT), ("x", INT))), [{"k": 1, "col": None}]),
    ),
    "2 explicit assignment of a null struct": (
        MergeCase(
            _table(col=_s(("y", INT), ("z", INT), ("w", INT))),
            ({"k": 1, "col": {"y": 2, "z": 5, "w": 6}},),
            _table(col=_s(("y", INT), ("x", INT))),
            ({"k": 1, "col": None},),
            (Clause("matched", "update", assignments=((("col",), Value("s", ("col",))),)),),
            evolution=True,
        ),
        (_table(col=_s(("y", INT), ("z", INT), ("w", INT), ("x", INT))), [{"k": 1, "col": None}]),
    ),
    "2 explicit assignment of a partial struct": (
        MergeCase(
            _table(col=_s(("y", INT), ("z", INT), ("w", INT))),
            ({"k": 1, "col": {"y": 2, "z": 5, "w": 6}},),
            _table(col=_s(("y", INT), ("x", INT))),
            ({"k": 1, "col": {"y": 1, "x": 3}},),
            (Clause("matched", "update", assignments=((("col",), Value("s", ("col",))),)),),
            evolution=True,
        ),
        (
            _table(col=_s(("y", INT), ("z", INT), ("w", INT), ("x", INT))),
            [{"k": 1, "col": {"y": 1, "z": None, "w": None, "x": 3}}],
        ),
    ),
    # 3. Without evolution a struct value must have the column's fields (DELTA_UPDATE_SCHEMA_MISMATCH_EXPRESSION).
    "3 update without a field": (
        MergeCase(
            _table(x=ABC),
            ({"k": 1, "x": {"a": 1, "b": 10, "c": 100}},),
            _table(x=AC),
            ({"k": 1, "x": {"a": 0, "c": 0}},),
            UPDATE_ALL,
            evolution=False,
        ),
        ("refused", "x.b"),
    ),
    "3 insert without a field": (
        MergeCase(
            _table(x=ABC), (), _table(x=AC), ({"k": 1, "x": {"a": 0, "c": 0}},), INSERT_ALL, evolution=False
        ),
        ("refused", "x.b"),
    ),
    "3 update with an extra field": (
        MergeCase(
            _table(x=AC),
            ({"k": 1, "x": {"a": 1, "c": 100}},),
            _table(x=ABC),
            ({"k": 1, "x": {"a": 0, "b": 0, "c": 0}},),
            UPDATE_ALL,
            evolution=False,
        ),
        ("refused", "x.b"),
    ),
    "3 array element without a field": (
        MergeCase(
            _table(x=Array(_s(("a", INT), ("b", INT)))),
            ({"k": 1, "x": [{"a": 1, "b": 10}]},),
            _table(
                x=Array(
                    _s(
                        ("a", INT),
                    )
                )
            ),
            ({"k": 1, "x": [{"a": 0}]},),
            UPDATE_ALL,
            evolution=False,
        ),
        ("refused", "x.element.b"),
    ),
    "3 same fields in another order and case": (
        MergeCase(
            _table(x=_s(("a", INT), ("b", INT))),
            ({"k": 1, "x": {"a": 1, "b": 10}},),
            _table(x=_s(("B", BIG), ("a", INT))),
            ({"k": 1, "x": {"B": 5, "a": 0}},),
            UPDATE_ALL,
            evolution=False,
        ),
        (_table(x=_s(("a", INT), ("b", INT))), [{"k": 1, "x": {"a": 0, "b": 5}}]),
    ),
    # 7. With evolution an assignment to a column the source has adds it with the source column's type,
    #    whatever the value; a column the source lacks stays an error.
    "7 update from another column": (
        MergeCase(
            _table(v=INT),
            ({"k": 1, "v": 1},),
            _table(v=INT, extra=BIG),
            ({"k": 1, "v": 5, "extra": 9},),
            (Clause("matched", "update", assignments=((("extra",), Value("s", ("v",))),)),),
            evolution=True,
        ),
        (_table(v=INT, extra=BIG), [{"k": 1, "v": 1, "extra": 5}]),
    ),
    "7 insert from another column": (
        MergeCase(
            _table(v=INT),
            ({"k": 1, "v": 1},),
            _table(v=INT, extra=BIG),
            ({"k": 2, "v": 5, "extra": 9},),
            (
                Clause(
                    "not_matched",
                    "insert",
                    assignments=((("k",), Value("s", ("k",))), (("extra",), Value("s", ("v",)))),
                ),
            ),
            evolution=True,
        ),
        (_table(v=INT, extra=BIG), [{"k": 1, "v": 1, "extra": None}, {"k": 2, "v": None, "extra": 5}]),
    ),
    "7 nested field from another column": (
        MergeCase(
            _table(
                x=_s(
                    ("a", INT),
                )
            ),
            ({"k": 1, "x": {"a": 1}},),
            _table(v=INT, x=_s(("a", INT), ("n", BIG))),
            ({"k": 1, "v": 5, "x": {"a": 2, "n": 3}},),
            (Clause("matched", "update", assignments=((("x", "n"), Value("s", ("v",))),)),),
            evolution=True,
        ),
        (_table(x=_s(("a", INT), ("n", BIG))), [{"k": 1, "x": {"a": 1, "n": 5}}]),
    ),
    "7 a column the source lacks": (
        MergeCase(
            _table(v=INT),
            ({"k": 1, "v": 1},),
            _table(v=INT),
            ({"k": 1, "v": 5},),
            (Clause("matched", "update", assignments=((("extra",), Value("s", ("v",))),)),),
            evolution=True,
        ),
        ("refused", "extra"),
    ),
    "7 a new column without evolution": (
        MergeCase(
            _table(v=INT),
            ({"k": 1, "v": 1},),
            _table(v=INT, extra=BIG),
            ({"k": 1, "v": 5, "extra": 9},),
            (Clause("matched", "update", assignments=((("extra",), Value("s", ("v",))),)),),
            evolution=False,
        ),
        ("refused", "extra"),
    ),
    "7 void column takes the assigned type": (
        MergeCase(
            _table(v="void"),
            ({"k": 1, "v": None},),
            _table(v=INT),
            ({"k": 1, "v": 5}, {"k": 2, "v": 6}),
            (
                Clause("matched", "update", assignments=((("v",), Value("s", ("v",))),)),
                Clause("not_matched", "insert"),
            ),
            evolution=True,
        ),
        (_table(v=INT), [{"k": 1, "v": 5}, {"k": 2, "v": 6}]),
    ),
    "7 void column without evolution": (
        MergeCase(
            _table(v="void"),
            ({"k": 1, "v": None},),
            _table(v=INT),
            ({"k": 1, "v": 5},),
            (Clause("matched", "update", assignments=((("v",), Value("s", ("v",))),)),),
            evolution=False,
        ),
        ("refused", "v"),
    ),
    "1 array in a struct": (
        MergeCase(
            _table(x=_s(("a", INT), ("arr", Array(_s(("p", INT), ("q", INT)))), ("c", INT))),
            ({"k": 1, "x": {"a": 1, "arr": [{"p": 1, "q": 2}], "c": 100}},),
            _table(
                x=_s(
                    ("a", INT),
                    (
                        "arr",
                        Array(
                            _s(
                                ("q", INT),
                            )
                        ),
                    ),
                )
            ),
            ({"k": 1, "x": {"a": 0, "arr": [{"q": 5}]}},),
            UPDATE_ALL,
            evolution=True,
        ),
        (
            _table(x=_s(("a", INT), ("arr", Array(_s(("p", INT), ("q", INT)))), ("c", INT))),
            [{"k": 1, "x": {"a": 0, "arr": [{"p": None, "q": 5}], "c": 100}}],
        ),
    ),
    "2 null source struct, deeper target-only field": (
        MergeCase(
            _table(x=_s(("a", INT), ("n", _s(("p", INT), ("q", INT))))),
            ({"k": 1, "x": {"a": 1, "n": {"p": 7, "q": 8}}},),
            _table(
                x=_s(
                    ("a", INT),
                    (
                        "n",
                        _s(
                            ("p", INT),
                        ),
                    ),
                )
            ),
            ({"k": 1, "x": None},),
            UPDATE_ALL,
            evolution=True,
        ),
        (
            _table(x=_s(("a", INT), ("n", _s(("p", INT), ("q", INT))))),
            [{"k": 1, "x": {"a": None, "n": {"p": None, "q": 8}}}],
        ),
    ),
    "2 null target struct, partial source": (
        MergeCase(
            _table(x=_s(("a", INT), ("b", INT))),
            ({"k": 1, "x": None},),
            _table(
                x=_s(
                    ("a", INT),
                )
            ),
            ({"k": 1, "x": {"a": 3}},),
            UPDATE_ALL,
            evolution=True,
        ),
        (_table(x=_s(("a", INT), ("b", INT))), [{"k": 1, "x": {"a": 3, "b": None}}]),
    ),
    "7 assignment evolves the column from the source's same-named column": (
        MergeCase(
            _table(
                x=_s(
                    ("a", INT),
                )
            ),
            ({"k": 1, "x": {"a": 1}},),
            _table(
                x=_s(("a", INT), ("b", INT)),
                y=_s(
                    ("a", INT),
                ),
            ),
            ({"k": 1, "x": {"a": 2, "b": 3}, "y": {"a": 9}},),
            (Clause("matched", "update", assignments=((("x",), Value("s", ("y",))),)),),
            evolution=True,
        ),
        (_table(x=_s(("a", INT), ("b", INT))), [{"k": 1, "x": {"a": 9, "b": None}}]),
    ),
    "7 not matched by source cannot add a column": (
        MergeCase(
            _table(v=INT),
            ({"k": 1, "v": 1},),
            _table(v=INT, extra=INT),
            ({"k": 2, "v": 5, "extra": 1},),
            (Clause("not_matched_by_source", "update", assignments=((("extra",), Value(literal=1)),)),),
            evolution=True,
        ),
        ("refused", "extra"),
    ),
    "7 new nested field takes the source's spelling": (
        MergeCase(
            _table(
                x=_s(
                    ("a", INT),
                )
            ),
            ({"k": 1, "x": {"a": 1}},),
            _table(X=_s(("A", INT), ("Bb", INT))),
            ({"k": 1, "X": {"A": 2, "Bb": 3}},),
            (Clause("matched", "update", assignments=((("x", "bb"), Value("s", ("x", "bb"))),)),),
            evolution=True,
        ),
        (_table(x=_s(("a", INT), ("Bb", INT))), [{"k": 1, "x": {"a": 1, "Bb": 3}}]),
    ),
    # 8. NULL struct elements of source arrays and map values stay NULL when the element struct evolves.
    "8 null array element": (
        MergeCase(
            _table(x=Array(_s(("a", INT), ("c", INT)))),
            (),
            _table(x=Array(_s(("a", INT), ("b", INT)))),
            ({"k": 1, "x": [None, {"a": 1, "b": 2}]},),
            INSERT_ALL,
            evolution=True,
        ),
        (
            _table(x=Array(_s(("a", INT), ("c", INT), ("b", INT)))),
            [{"k": 1, "x": [None, {"a": 1, "c": None, "b": 2}]}],
        ),
    ),
    "8 null map value": (
        MergeCase(
            _table(
                x=Map(
                    "string",
                    _s(
                        ("a", INT),
                    ),
                )
            ),
            (),
            _table(x=Map("string", _s(("a", INT), ("b", INT)))),
            ({"k": 1, "x": [("p", None), ("q", {"a": 1, "b": 2})]},),
            INSERT_ALL,
            evolution=True,
        ),
        (
            _table(x=Map("string", _s(("a", INT), ("b", INT)))),
            [{"k": 1, "x": [("p", None), ("q", {"a": 1, "b": 2})]}],
        ),
    ),
}

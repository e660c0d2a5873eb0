"""The local engine's Spark SQL functions, a few cases per family with values Spark 4.3 gives.

The expected values were read from Spark itself (``spark.sql("SELECT ...")``, session time zone UTC,
ANSI mode); ``tests/spark/test_functions_differential.py`` compares every function with Spark over
edge values.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core.expressions import _type_of, bind, evaluate, parse_expression, to_sql
from airflow_provider_delta.core.expressions.functions import lookup, supported_functions
from airflow_provider_delta.exceptions import PredicateError

NAN = float("nan")
ROW = pa.table({"one": [1]})


def value(text: str, table: pa.Table = ROW) -> Any:
    bound = bind(parse_expression(text), table.schema)
    return evaluate(bound, table).to_pylist()[0]


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and type(a) is type(b)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("array_union(array(1, 2, 2, NULL), array(3, NULL, 1))", [1, 2, None, 3]),
        (
            "array_union(array(CAST('NaN' AS DOUBLE), 0.0D, -0.0D), array(CAST('NaN' AS DOUBLE), -0.0D))",
            [NAN, 0.0],
        ),
        ("array_intersect(array(1, 2, 2, NULL, 3), array(3, NULL, 2, 2))", [2, None, 3]),
        ("array_except(array(1, 2, 2, NULL, 3), array(3))", [1, 2, None]),
        ("array_except(array(1, NULL), array(NULL))", [1]),
        ("array_distinct(array(0.0D, -0.0D, CAST('NaN' AS DOUBLE), CAST('NaN' AS DOUBLE)))", [0.0, NAN]),
        ("array_remove(array(1, NULL, 2, 1), 1)", [None, 2]),
        ("array_remove(array(0.0D, -0.0D, CAST('NaN' AS DOUBLE)), 0.0D)", [NAN]),
        ("array_contains(array(1, NULL), 2)", None),
        ("array_contains(array(1, NULL), 1)", True),
        ("array_contains(array(-0.0D), 0.0D)", True),
        ("array_position(array(3, 2, 1, 2), 2)", 2),
        ("element_at(array(1, 2, 3), -1)", 3),
        ("slice(array(1, 2, 3, 4), -2, 5)", [3, 4]),
        ("slice(array(1, 2, 3, 4), 5, 1)", []),
        (
            "sort_array(array(CAST('NaN' AS DOUBLE), 1.0D, -0.0D, 0.0D, NULL, -1.0D))",
            [None, -1.0, -0.0, 0.0, 1.0, NAN],
        ),
        ("sort_array(array(3, NULL, 1), false)", [3, 1, None]),
        ("array_sort(array(3, NULL, 1))", [1, 3, None]),
        ("flatten(array(array(1, 2), NULL))", None),
        ("arrays_overlap(array(1, NULL), array(3))", None),
        ("arrays_overlap(array(), array(NULL))", False),
        ("array_join(array('a', NULL, 'b'), ',', 'x')", "a,x,b"),
        ("array_max(array(1.0D, CAST('NaN' AS DOUBLE)))", NAN),
        ("size(map(1, 2))", 1),
    ],
)
def test_array_functions_give_sparks_values(text: str, expected: Any) -> None:
    assert same(value(text), expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("map_keys(map(1, 'a', 2, 'b'))", [1, 2]),
        ("element_at(map(1, 'a'), 2)", None),
        ("map(1, 'a')[1]", "a"),
        ("map_contains_key(map(1, 'a'), 1)", True),
        ("map_concat(map(1, 'a'), map(2, 'b'))", [(1, "a"), (2, "b")]),
        ("named_struct('x', 1, 'y', 'b')", {"x": 1, "y": "b"}),
        ("struct(one, 'a')", {"one": 1, "col2": "a"}),
        ("upper('aBc')", "ABC"),
        ("initcap('hello wORLD  x-y')", "Hello World  X-y"),
        ("substring('hello', -3, 2)", "ll"),
        ("substring('hello', one + 1, 2)", "el"),
        ("concat_ws(',', 'a', NULL, 'b')", "a,b"),
        ("concat('a', NULL)", None),
        ("regexp_replace('abc', '(b)', '$1$1')", "abbc"),
        ("regexp_extract('a1b22', '([a-z])([0-9]+)', 2)", "1"),
        ("regexp_extract('xyz', '([0-9]+)', 1)", ""),
        ("split('a1b2', '[0-9]')", ["a", "b", ""]),
        ("split('a,b,c', ',', 2)", ["a", "b,c"]),
        ("lpad('ab', 5, 'xy')", "xyxab"),
        ("lpad('abcdef', 3, 'x')", "abc"),
        ("instr('hello', 'l')", 3),
        ("locate('l', 'hello', 4)", 4),
        ("left('abc', -1)", ""),
        ("format_number(1234567.891, 2)", "1,234,567.89"),
        ("format_number(2.5D, 0)", "2"),
        ("md5('abc')", "900150983cd24fb0d6963f7d28e17f72"),
        ("crc32('abc')", 891568578),
        ("sha2('abc', 1)", None),
    ],
)
def test_map_struct_string_and_hash_functions_give_sparks_values(text: str, expected: Any) -> None:
    assert value(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("add_months(DATE'2020-01-31', 1)", dt.date(2020, 2, 29)),
        ("add_months(DATE'2020-02-29', 12)", dt.date(2021, 2, 28)),
        ("date_sub(DATE'2020-03-01', 1)", dt.date(2020, 2, 29)),
        ("datediff(TIMESTAMP'2020-03-01 23:00:00', '2020-02-01')", 29),
        ("to_date('02/01/2020', 'dd/MM/yyyy')", dt.date(2020, 1, 2)),
        ("date_format(TIMESTAMP'2020-01-02 13:04:05', 'hh a EEE MMM MMMM E')", "01 PM Thu Jan January Thu"),
        (
            "date_format(TIMESTAMP'2020-01-02 03:04:05.678', 'yyyy-MM-dd HH:mm:ss.SSS')",
            "2020-01-02 03:04:05.678",
        ),
        (
            "date_trunc('week', TIMESTAMP'2020-05-17 10:11:12')",
            dt.datetime(2020, 5, 11, tzinfo=dt.timezone.utc),
        ),
        ("date_trunc('bogus', TIMESTAMP'2020-05-17 10:11:12')", None),
        ("trunc(DATE'2020-05-17', 'Q')", None),
        ("unix_timestamp('2020-01-01', 'yyyy-MM-dd')", 1577836800),
        ("from_unixtime(86400, 'yyyy-MM-dd')", "1970-01-02"),
        ("months_between(TIMESTAMP'1997-02-28 10:30:00', TIMESTAMP'1996-10-30 00:00:00')", 3.94959677),
        ("hour(DATE'2020-01-02')", 0),
        ("if(NULL, 1, 2)", 2),
        ("CASE 3 WHEN 1 THEN 'x' ELSE 'y' END", "y"),
        ("nullif(1, 1)", None),
        ("nvl2(0, 1, 2)", 1),
        ("greatest(1.0D, CAST('NaN' AS DOUBLE))", NAN),
        ("least(1, NULL, 3)", 1),
        ("round(2.5D)", 3.0),
        ("round(-2.5D)", -3.0),
        ("round(1.005D, 2)", 1.01),
        ("bround(2.5D)", 2.0),
        ("round(-125, -1)", -130),
        ("round(CAST(1.23456 AS DECIMAL(10,4)), 2)", decimal.Decimal("1.23")),
        ("ceil(-1.2D)", -1),
        ("pmod(-7, 3)", 2),
        ("pmod(7, -3)", 1),
        ("ln(0)", None),
        ("log(2, 8)", 3.0),
        ("sign(-0.0D)", -0.0),
    ],
)
def test_datetime_conditional_and_math_functions_give_sparks_values(text: str, expected: Any) -> None:
    assert same(value(text), expected)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("round(CAST(1.23456 AS DECIMAL(10,4)), 2)", pa.decimal128(9, 2)),
        ("round(CAST(155 AS DECIMAL(5,0)), -1)", pa.decimal128(6, 0)),
        ("ceil(1.2D)", pa.int64()),
        ("array_position(array(1), 1)", pa.int64()),
        ("greatest(1, 2.5)", pa.decimal128(11, 1)),
        ("if(true, 1, 2L)", pa.int64()),
        ("concat(array(1), array(2L))", pa.list_(pa.int64())),
        ("coalesce('1', 2)", pa.int64()),
        ("coalesce('1', 2.5)", pa.float64()),
        ("coalesce(DATE'2020-01-01', '2020-01-02')", pa.date32()),
        ("array(1, '2')", pa.list_(pa.int64())),
    ],
)
def test_result_types_are_sparks(text: str, kind: pa.DataType) -> None:
    assert _type_of(bind(parse_expression(text), ROW.schema)) == kind


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("element_at(array(1, 2, 3), 5)", "INVALID_ARRAY_INDEX_IN_ELEMENT_AT"),
        ("element_at(array(1, 2, 3), 0)", "INVALID_INDEX_OF_ZERO"),
        ("split('a b', ' ')[one + 2]", "INVALID_ARRAY_INDEX"),
        ("array(1, 2, 3)[1]", "unsupported SQL"),  # sqlglot drops arguments there: refused, never wrong
        ("slice(array(1), 0, 1)", "INVALID_PARAMETER_VALUE.START"),
        ("map(1, 'a', 1, 'b')", "DUPLICATED_MAP_KEY"),
        ("make_date(2021, 2, 29)", "DATETIME_FIELD_OUT_OF_BOUNDS"),
        ("pmod(7, one - 1)", "REMAINDER_BY_ZERO"),
        ("to_date('xx', 'yyyy-MM-dd')", "CANNOT_PARSE_TIMESTAMP"),
    ],
)
def test_functions_fail_where_sparks_ansi_mode_fails(text: str, fragment: str) -> None:
    with pytest.raises(PredicateError, match=fragment.replace(".", r"\.")):
        value(text)


def test_case_computes_a_branch_only_on_the_rows_that_take_it() -> None:
    table = pa.table({"x": [0, 5, None]})
    text = "CASE WHEN x <> 0 THEN element_at(array(10, 20), x - 4) ELSE -1 END"
    assert evaluate(bind(parse_expression(text), table.schema), table).to_pylist() == [-1, 10, -1]


def test_an_unknown_function_is_refused_naming_it_and_the_spark_executor() -> None:
    with pytest.raises(
        PredicateError, match=r"'soundex' is not supported by the local engine.*Spark executor"
    ):
        parse_expression("soundex(name)")


@pytest.mark.parametrize(
    "text",
    [
        "CASE WHEN one > 0 THEN array(one) ELSE array() END",
        "map('a', one)['a']",
        "named_struct('x', one, 'y', array_union(array(one), array(2)))",
        "date_format(add_months(DATE'2020-01-31', one), 'yyyy')",
    ],
)
def test_bound_functions_render_as_spark_sql_that_parses_back(text: str) -> None:
    bound = bind(parse_expression(text), ROW.schema)
    again = bind(parse_expression(to_sql(bound)), ROW.schema)
    assert evaluate(again, ROW).to_pylist() == evaluate(bound, ROW).to_pylist()


def test_the_function_list_covers_every_family_and_resolves_aliases() -> None:
    families = supported_functions()
    assert {"array", "map", "struct", "string", "datetime", "conditional", "math", "hash"} <= set(families)
    assert all(lookup(name) is not None for names in families.values() for name in names)


def test_a_local_merge_runs_clauses_with_array_set_functions(tmp_path: Any) -> None:
    from airflow_provider_delta.core.table import DeltaTable

    tags = pa.list_(pa.string())
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("tags", tags)]))
    table.append(
        pa.table({"id": pa.array([1, 2], pa.int64()), "tags": pa.array([["a", "b", "a"], None], tags)})
    )
    source = pa.table(
        {"id": pa.array([1, 2, 3], pa.int64()), "add": pa.array([["c", "a"], ["x"], ["y", "y"]], tags)}
    )
    metrics = (
        table.merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update(
            set={
                "tags": "array_except(array_union(array_distinct(coalesce(t.tags, array())), s.add), array('b'))"
            },
            condition="NOT array_contains(coalesce(t.tags, array()), 'x')",
        )
        .when_not_matched_insert(
            values={"id": "s.id", "tags": "array_remove(array_intersect(s.add, array('y')), 'z')"}
        )
        .execute()
    )
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == (2, 1)
    rows = sorted(DeltaTable(str(tmp_path / "t")).to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "tags": ["a", "c"]}, {"id": 2, "tags": ["x"]}, {"id": 3, "tags": ["y"]}]

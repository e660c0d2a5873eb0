"""Predicates and expressions: parsing (sqlglot, Spark dialect), DNF filters, binding, Arrow evaluation
with SQL null semantics, and data skipping from partition values and per-file statistics."""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_delta.core.expressions import (
    And,
    Arithmetic,
    Between,
    Cast,
    Column,
    Comparison,
    ComparisonOp,
    Expr,
    Function,
    In,
    IsNotNull,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    bind,
    col,
    conjuncts,
    evaluate,
    file_may_match,
    is_partition_only,
    lit,
    parse_expression,
    parse_filter,
    parse_predicate,
    referenced_columns,
    to_arrow_expression,
    to_sql,
)
from airflow_provider_delta.exceptions import PredicateError

UTC = dt.timezone.utc


def a(name: str, *path: str) -> Column:
    return Column(None, (name, *path))


# ------------------------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = 1", Comparison("=", a("a"), Literal(1, pa.int32()))),
        ("a <> 'x'", Comparison("!=", a("a"), Literal("x", pa.string()))),
        ("a != 1", Comparison("!=", a("a"), lit(1))),
        ("1 < a", Comparison("<", lit(1), a("a"))),
        ("a >= 3000000000", Comparison(">=", a("a"), Literal(3000000000, pa.int64()))),
        ("a <= 1.50", Comparison("<=", a("a"), Literal(Decimal("1.50"), pa.decimal128(3, 2)))),
        ("a > 1.5e3", Comparison(">", a("a"), Literal(1500.0, pa.float64()))),
        ("a = -2", Comparison("=", a("a"), lit(-2))),
        ("a = 1.5D", Comparison("=", a("a"), Literal(1.5, pa.float64()))),
        ("a = 5L", Comparison("=", a("a"), Literal(5, pa.int64()))),
        ("a <=> NULL", Comparison("<=>", a("a"), Literal(None, pa.null()))),
        ("a IS DISTINCT FROM b", Not(Comparison("<=>", a("a"), a("b")))),
        ("a IS TRUE", Comparison("<=>", a("a"), lit(True))),
        (
            "a = 1 AND b = 2 OR c",
            Or(And(Comparison("=", a("a"), lit(1)), Comparison("=", a("b"), lit(2))), a("c")),
        ),
        ("NOT (a = 1)", Not(Comparison("=", a("a"), lit(1)))),
        ("a IS NULL", IsNull(a("a"))),
        ("a IS NOT NULL", IsNotNull(a("a"))),
        ("NOT a IS NULL", IsNotNull(a("a"))),
        ("a IN (1, 2, NULL)", In(a("a"), (lit(1), lit(2), lit(None)))),
        ("a NOT IN ('x')", Not(In(a("a"), (lit("x"),)))),
        ("a BETWEEN 1 AND 5", Between(a("a"), lit(1), lit(5))),
        ("a NOT BETWEEN 1 AND 5", Not(Between(a("a"), lit(1), lit(5)))),
        ("s LIKE 'a%'", Like(a("s"), lit("a%"))),
        ("s NOT LIKE 'a_'", Not(Like(a("s"), lit("a_")))),
        ("s ILIKE 'A%'", Like(a("s"), lit("A%"), case_insensitive=True)),
        ("`my col`.`x.y` = 1", Comparison("=", Column(None, ("my col", "x.y")), lit(1))),
        ("a.b.c.d.e = 1", Comparison("=", Column(None, ("a", "b", "c", "d", "e")), lit(1))),
        ("d = DATE '2020-01-01'", Comparison("=", a("d"), Literal(dt.date(2020, 1, 1), pa.date32()))),
        (
            "t > TIMESTAMP '2020-01-01 01:00:00+01:00'",
            Comparison(
                ">", a("t"), Literal(dt.datetime(2020, 1, 1, tzinfo=UTC), pa.timestamp("us", tz="UTC"))
            ),
        ),
        (
            "t > TIMESTAMP_NTZ '2020-01-01 00:00:00'",
            Comparison(">", a("t"), Literal(dt.datetime(2020, 1, 1), pa.timestamp("us"))),
        ),
        ("CAST(a AS DECIMAL(10,2)) = 1", Comparison("=", Cast(a("a"), pa.decimal128(10, 2)), lit(1))),
        ("CAST(a AS STRING) = '1'", Comparison("=", Cast(a("a"), pa.string()), lit("1"))),
        ("CAST('7' AS BIGINT) = a", Comparison("=", Literal(7, pa.int64()), a("a"))),
        ("a + 1 * b > 0", Comparison(">", Arithmetic("+", a("a"), Arithmetic("*", lit(1), a("b"))), lit(0))),
        ("a % 2 = 0", Comparison("=", Arithmetic("%", a("a"), lit(2)), lit(0))),
        ("-a < 0", Comparison("<", Function("negative", (a("a"),)), lit(0))),
        (
            "coalesce(a, ifnull(b, 0)) = 1",
            Comparison("=", Function("coalesce", (a("a"), Function("coalesce", (a("b"), lit(0))))), lit(1)),
        ),
        ("lower(s) = upper(s)", Comparison("=", Function("lower", (a("s"),)), Function("upper", (a("s"),)))),
        (
            "concat(s, 'x') = s || 'y'",
            Comparison("=", Function("concat", (a("s"), lit("x"))), Function("concat", (a("s"), lit("y")))),
        ),
        ("abs(a) = length(s)", Comparison("=", Function("abs", (a("a"),)), Function("length", (a("s"),)))),
        (
            "substring(s, 2, 3) = substr(s, 1)",
            Comparison(
                "=", Function("substring", (a("s"), lit(2), lit(3))), Function("substring", (a("s"), lit(1)))
            ),
        ),
        (
            "trim(s) = ltrim(rtrim(s))",
            Comparison("=", Function("trim", (a("s"),)), Function("ltrim", (Function("rtrim", (a("s"),)),))),
        ),
        ("d < current_date()", Comparison("<", a("d"), Function("current_date"))),
        ("t < current_timestamp", Comparison("<", a("t"), Function("current_timestamp"))),
        ("x = 'it''s'", Comparison("=", a("x"), lit("its"))),
        ("x = X'0aFF'", Comparison("=", a("x"), lit(b"\x0a\xff"))),
        ("TRUE", lit(True)),
        ("flag", a("flag")),
    ],
)
def test_parse_predicate_builds_the_ast(text: str, expected: Expr) -> None:
    assert parse_predicate(text) == expected


def test_parse_keeps_known_qualifiers_and_treats_other_dots_as_nested_fields() -> None:
    expr = parse_predicate("t.id = s.id AND T.info.x > 1 AND info.x > 2", qualifiers=["t", "s"])
    assert conjuncts(expr) == [
        Comparison("=", Column("t", ("id",)), Column("s", ("id",))),
        Comparison(">", Column("t", ("info", "x")), lit(1)),
        Comparison(">", Column(None, ("info", "x")), lit(2)),
    ]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a = ", "Cannot parse predicate 'a = '"),
        ("(a = 1", "Cannot parse predicate '(a = 1'"),
        ("", "empty text"),
        ("SELECT 1", "unsupported SQL 'SELECT 1'"),
        ("a = 1; b = 2", "unsupported SQL"),
        ("my_udf(a) = 1", "the function 'my_udf' is not supported by the local engine"),
        ("a IN (SELECT b FROM t)", "subqueries are unsupported"),
        ("transform(a, x -> x + 1) = 1", "with a lambda function is not supported"),
        ("s LIKE 'a!%' ESCAPE '!'", "unsupported SQL"),
        ("a DIV 2 = 1", "unsupported SQL 'a DIV 2'"),
        ("EXTRACT(YEAR FROM s) = 1", "unsupported SQL"),
        ("CAST(a AS INTERVAL DAY) = 1", "unsupported type"),
        ("CAST('x' AS INT) = a", "cannot convert"),
        ("a + 1", "'a + 1' is not a condition"),
        ("'text'", "is not a condition"),
    ],
)
def test_parse_predicate_rejects_unparsable_or_unsupported_sql(text: str, fragment: str) -> None:
    with pytest.raises(PredicateError, match=re.escape(fragment)):
        parse_predicate(text)


def test_parse_expression_accepts_value_expressions() -> None:
    assert parse_expression("a + 1") == Arithmetic("+", a("a"), lit(1))
    assert parse_expression("'x'") == lit("x")


@pytest.mark.parametrize(
    "text",
    [
        "a = 1 AND (b = 2 OR c = 3)",
        "`weird name` IN ('a', 'b') OR x.y IS NOT NULL",
        "NOT (a < 1.50) AND b BETWEEN DATE '2020-01-01' AND DATE '2021-01-01'",
        "t >= TIMESTAMP '2020-01-01 00:00:00.123456Z' AND u < TIMESTAMP_NTZ '1999-12-31 23:59:59.000000'",
        "s NOT LIKE 'a\\\\%' AND lower(s) ILIKE 'x_'",
        "CAST(a AS DECIMAL(12,3)) > 5L AND f = 1.5D AND b <=> NULL",
        "(a + 1) * 2 % 3 = -a",
        "concat(s, '\\'') = substring(s, -2, 5) AND coalesce(a, 0) = abs(b)",
        "x = X'00FF' AND d < current_date",
    ],
)
def test_to_sql_round_trips_through_the_parser(text: str) -> None:
    expr = parse_predicate(text)
    assert parse_predicate(to_sql(expr)) == expr
    assert str(expr) == to_sql(expr)


def test_to_sql_round_trips_coerced_literals() -> None:
    schema = pa.schema(
        [("d", pa.decimal128(10, 2)), ("i", pa.int8()), ("f", pa.float32()), ("s", pa.string())]
    )
    expr = bind(parse_predicate("d = 1 AND i = 2 AND f = 1.5 AND s IN ('a', NULL)"), schema)
    assert bind(parse_predicate(to_sql(expr)), schema) == expr


# ----------------------------------------------------------------------------------------------- DNF


def test_parse_filter_reads_a_list_of_tuples_as_and() -> None:
    expr = parse_filter([("a", "=", 1), ("b", "in", [1, 2]), ("c", "not in", ("x",)), ("d", ">=", 2.5)])
    assert expr == And(
        And(And(Comparison("=", a("a"), lit(1)), In(a("b"), (lit(1), lit(2)))), Not(In(a("c"), (lit("x"),)))),
        Comparison(">=", a("d"), lit(2.5)),
    )


def test_parse_filter_reads_a_list_of_lists_as_or_of_ands() -> None:
    expr = parse_filter([[("a", "==", 1), ("b", "<>", "x")], [("c", "<", 0)]])
    assert to_sql(expr) == "a = 1 AND b != 'x' OR c < 0"


def test_parse_filter_maps_none_to_null_tests_and_dots_to_nested_fields() -> None:
    assert parse_filter([("a", "=", None), ("s.x", "!=", None)]) == And(
        IsNull(a("a")), IsNotNull(a("s", "x"))
    )
    assert parse_filter([(("a.b",), "=", 1)]) == Comparison("=", Column(None, ("a.b",)), lit(1))


def test_parse_filter_passes_text_and_expressions_through() -> None:
    assert parse_filter("a = 1") == Comparison("=", a("a"), lit(1))
    expr = IsNull(a("x"))
    assert parse_filter(expr) is expr
    assert parse_filter([]) == lit(True)


@pytest.mark.parametrize(
    ("dnf", "fragment"),
    [
        ([("a", "~", 1)], "unknown operator '~'"),
        ([("a", "in", 1)], "'in' needs a non-empty list"),
        ([("a", "in", [])], "'in' needs a non-empty list"),
        ([("a", "=", 1), ("b", "=")], "is not a \\(column, op, value\\) tuple"),
        ([[("a", "=", 1)], "b = 1"], "expected a list of \\(column, op, value\\)"),
        ([(1, "=", 1)], "column 1 must be a name or tuple"),
        ([("a", "=", object())], "unsupported Python type object"),
        (42, "expected SQL text, an Expr or DNF tuples"),
    ],
)
def test_parse_filter_rejects_malformed_dnf(dnf: Any, fragment: str) -> None:
    with pytest.raises(PredicateError, match=fragment):
        parse_filter(dnf)


def test_dnf_string_values_are_coerced_like_delta_rs_partition_filters() -> None:
    schema = pa.schema([("year", pa.int32()), ("day", pa.date32())])
    expr = bind(parse_filter([("year", "=", "2021"), ("day", "in", ["2021-01-01", "2021-01-02"])]), schema)
    table = pa.table(
        {
            "year": pa.array([2021, 2021, 2020], pa.int32()),
            "day": pa.array([18628, 18700, 18628], pa.date32()),
        }
    )
    assert evaluate(expr, table).to_pylist() == [True, False, False]


# ---------------------------------------------------------------------------------------------- bind

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("small", pa.int8()),
        ("Name", pa.string()),
        ("price", pa.decimal128(10, 2)),
        ("ratio", pa.float64()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("flag", pa.bool_()),
        ("blob", pa.binary()),
        ("info", pa.struct([("city", pa.string()), ("geo", pa.struct([("lat", pa.float64())]))])),
        ("a.b", pa.int32()),
    ]
)


def test_bind_resolves_names_case_insensitively_to_the_schema_spelling() -> None:
    bound = bind(parse_predicate("NAME = 'x' AND Info.City = 'y' AND INFO.GEO.LAT > 1"), SCHEMA)
    assert [c.left for c in conjuncts(bound) if isinstance(c, Comparison)] == [
        Column(None, ("Name",), pa.string()),
        Column(None, ("info", "city"), pa.string()),
        Column(None, ("info", "geo", "lat"), pa.float64()),
    ]


def test_bind_case_sensitive_refuses_other_spellings() -> None:
    with pytest.raises(PredicateError, match="Cannot resolve column 'name'"):
        bind(parse_predicate("name = 'x'"), SCHEMA, case_sensitive=True)


def test_bind_resolves_dotted_top_level_names() -> None:
    bound = bind(parse_predicate("`a.b` = 1 AND a.b = 2"), SCHEMA)
    assert {c.left for c in conjuncts(bound) if isinstance(c, Comparison)} == {
        Column(None, ("a.b",), pa.int32())
    }


def test_unknown_column_error_names_column_predicate_and_available_columns() -> None:
    with pytest.raises(PredicateError) as info:
        bind(
            parse_predicate("nope > 1"),
            pa.schema([("a", pa.int32()), ("b", pa.string()), ("c", pa.date32())]),
        )
    assert (
        str(info.value) == "Cannot resolve column 'nope' in predicate 'nope > 1': available columns a, b, c"
    )


def test_unknown_nested_field_lists_nested_paths() -> None:
    with pytest.raises(PredicateError, match=r"Cannot resolve column 'info.zip' .* info\.city, info\.geo"):
        bind(parse_predicate("info.zip = 1"), SCHEMA)


def test_ambiguous_case_insensitive_name_is_an_error() -> None:
    schema = pa.schema([("x", pa.int32()), ("X", pa.int32())])
    with pytest.raises(PredicateError, match="column name 'Xx' is ambiguous: xX, XX"):
        bind(parse_predicate("Xx = 1"), pa.schema([("xX", pa.int32()), ("XX", pa.int32())]))
    assert bind(parse_predicate("X = 1"), schema) == Comparison(
        "=", Column(None, ("X",), pa.int32()), lit(1, pa.int32())
    )


@pytest.mark.parametrize(
    ("text", "expected_literal"),
    [
        ("day = '2010-01-01'", Literal(dt.date(2010, 1, 1), pa.date32())),
        ("day < '2010-01-01 23:00:00'", Literal(dt.date(2010, 1, 1), pa.date32())),
        (
            "ts >= '2021-06-01 12:30:15'",
            Literal(dt.datetime(2021, 6, 1, 12, 30, 15, tzinfo=UTC), pa.timestamp("us", tz="UTC")),
        ),
        (
            "ts >= '2021-06-01T12:30:15+02:00'",
            Literal(dt.datetime(2021, 6, 1, 10, 30, 15, tzinfo=UTC), pa.timestamp("us", tz="UTC")),
        ),
        (
            "ts = DATE '2021-06-01'",
            Literal(dt.datetime(2021, 6, 1, tzinfo=UTC), pa.timestamp("us", tz="UTC")),
        ),
        (
            "ntz >= '2021-06-01 12:30:15.5'",
            Literal(dt.datetime(2021, 6, 1, 12, 30, 15, 500000), pa.timestamp("us")),
        ),
        (
            "ntz = TIMESTAMP '2021-06-01 12:30:15Z'",
            Literal(dt.datetime(2021, 6, 1, 12, 30, 15), pa.timestamp("us")),
        ),
        ("price = 1", Literal(Decimal("1.00"), pa.decimal128(10, 2))),
        ("price = 1.5", Literal(Decimal("1.50"), pa.decimal128(10, 2))),
        ("price > '2.25'", Literal(Decimal("2.25"), pa.decimal128(10, 2))),
        ("price > 1.234", Literal(Decimal("1.234"), pa.decimal128(4, 3))),
        ("price > 123456789012", Literal(123456789012, pa.int64())),
        ("id = 1", Literal(1, pa.int64())),
        ("id = '42'", Literal(42, pa.int64())),
        ("small = 1000", Literal(1000, pa.int64())),
        ("small = 2.0", Literal(2, pa.int8())),
        ("id > 2.5", Literal(Decimal("2.5"), pa.decimal128(2, 1))),
        ("id > 2.5D", Literal(2.5, pa.float64())),
        ("ratio > 1", Literal(1.0, pa.float64())),
        ("ratio > 'NaN'", Literal(math.inf * 0, pa.float64())),
        ("flag = 'TRUE'", Literal(True, pa.bool_())),
        ("blob = 'ab'", Literal(b"ab", pa.binary())),
        ("Name = NULL", Literal(None, pa.string())),
    ],
)
def test_bind_coerces_literals_to_the_column_type(text: str, expected_literal: Literal) -> None:
    bound = bind(parse_predicate(text), SCHEMA)
    assert isinstance(bound, Comparison)
    if isinstance(expected_literal.value, float) and math.isnan(expected_literal.value):
        assert isinstance(bound.right, Literal)
        assert math.isnan(bound.right.value)
        assert bound.right.dtype == expected_literal.dtype
    else:
        assert bound.right == expected_literal


def test_bind_casts_the_column_when_spark_would() -> None:
    assert bind(parse_predicate("Name = 1"), SCHEMA) == Comparison(
        "=", Cast(Column(None, ("Name",), pa.string()), pa.int32()), lit(1)
    )
    bound = bind(parse_predicate("day < TIMESTAMP '2020-01-01 12:00:00'"), SCHEMA)
    assert isinstance(bound, Comparison)
    assert bound.left == Cast(Column(None, ("day",), pa.date32()), pa.timestamp("us", tz="UTC"))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("id = 'abc'", "cannot compare 'id' of type int64 with 'abc'"),
        ("day = 'someday'", "cannot compare 'day' of type date32\\[day\\] with 'someday'"),
        ("ts = 'now'", "cannot compare 'ts'"),
        ("flag = 1", "cannot compare 'flag' of type bool with 1"),
        ("Name LIKE Name", "LIKE needs a string literal pattern"),
        ("upper(Name, id) = 'x'", "upper takes 1 argument, found 2"),
    ],
)
def test_bind_rejects_literals_that_cannot_be_compared(text: str, fragment: str) -> None:
    with pytest.raises(PredicateError, match=fragment):
        bind(parse_predicate(text), SCHEMA)


def test_bind_resolves_qualified_columns_in_their_scope() -> None:
    target = pa.schema([("id", pa.int64()), ("v", pa.string())])
    source = pa.schema([("ID", pa.int32()), ("v", pa.string()), ("d", pa.date32())])
    expr = parse_predicate("t.id = s.id AND s.d > '2020-01-01' AND v IS NULL")
    bound = bind(expr, target, qualifiers={"t": target, "s": source})
    assert conjuncts(bound) == [
        Comparison("=", Column("t", ("id",), pa.int64()), Column("s", ("ID",), pa.int32())),
        Comparison(">", Column("s", ("d",), pa.date32()), Literal(dt.date(2020, 1, 1), pa.date32())),
        IsNull(Column(None, ("v",), pa.string())),
    ]
    with pytest.raises(PredicateError, match=r"Cannot resolve column 's\.nope'"):
        bind(parse_predicate("s.nope = 1", qualifiers=["s"]), target, qualifiers={"s": source})


def test_qualified_columns_read_struct_columns_named_after_the_alias() -> None:
    rows = pa.table({"t": [{"id": 1}, {"id": 2}], "s": [{"id": 1}, {"id": 3}]})
    expr = bind(parse_predicate("t.id = s.id", qualifiers=["t", "s"]), rows.schema)
    assert expr == Comparison("=", Column("t", ("id",), pa.int64()), Column("s", ("id",), pa.int64()))
    assert evaluate(expr, rows).to_pylist() == [True, False]


# ------------------------------------------------------------------------------------------ evaluate

TABLE = pa.table(
    {
        "id": pa.array([1, 2, 3, None], pa.int64()),
        "small": pa.array([1, -1, None, 127], pa.int8()),
        "Name": pa.array(["apple", "Banana", None, "cherry pie"]),
        "price": pa.array([Decimal("1.50"), None, Decimal("2.25"), Decimal("-3.00")], pa.decimal128(10, 2)),
        "ratio": pa.array([0.5, math.nan, None, -1.0]),
        "day": pa.array([dt.date(2020, 1, 1), dt.date(2020, 1, 2), None, dt.date(2021, 1, 1)], pa.date32()),
        "ts": pa.array(
            [
                dt.datetime(2021, 6, 1, 12, tzinfo=UTC),
                None,
                dt.datetime(2021, 6, 2, tzinfo=UTC),
                dt.datetime(1969, 1, 1, tzinfo=UTC),
            ],
            pa.timestamp("us", tz="UTC"),
        ),
        "ntz": pa.array(
            [dt.datetime(2021, 6, 1, 12), dt.datetime(2000, 1, 1), None, None], pa.timestamp("us")
        ),
        "flag": pa.array([True, False, None, True]),
        "blob": pa.array([b"ab", b"", None, b"\x00"]),
        "info": pa.array(
            [
                {"city": "Oslo", "geo": {"lat": 59.9}},
                {"city": None, "geo": None},
                None,
                {"city": "Rome", "geo": {"lat": 41.9}},
            ],
            pa.struct([("city", pa.string()), ("geo", pa.struct([("lat", pa.float64())]))]),
        ),
        "a.b": pa.array([1, 2, 3, 4], pa.int32()),
    }
)


def run(text: str) -> list[Any]:
    return evaluate(bind(parse_expression(text), TABLE.schema), TABLE).to_pylist()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id > 1", [False, True, True, None]),
        ("id = 2 OR id IS NULL", [False, True, False, True]),
        ("small < 0", [False, True, None, False]),
        ("small = 1000", [False, False, None, False]),
        ("Name = 'apple'", [True, False, None, False]),
        ("Name >= 'b'", [False, False, None, True]),
        ("Name LIKE '%e%'", [True, False, None, True]),
        ("Name ILIKE 'b%'", [False, True, None, False]),
        ("Name NOT LIKE 'a%'", [False, True, None, True]),
        ("price = 1.5", [True, None, False, False]),
        ("price > 2", [False, None, True, False]),
        ("price < 0", [False, None, False, True]),
        ("ratio > 0", [True, False, None, False]),
        ("ratio != 0.5", [False, True, None, True]),
        ("day = '2020-01-02'", [False, True, None, False]),
        ("day BETWEEN '2020-01-01' AND '2020-12-31'", [True, True, None, False]),
        ("ts > '2021-06-01 00:00:00'", [True, None, True, False]),
        ("ts < TIMESTAMP '1970-01-01 00:00:00'", [False, None, False, True]),
        ("ntz = '2000-01-01 00:00:00'", [False, True, None, None]),
        ("flag", [True, False, None, True]),
        ("NOT flag", [False, True, None, False]),
        ("blob = X'00'", [False, False, None, True]),
        ("length(blob)", [2, 0, None, 1]),
        ("info.city = 'Oslo'", [True, None, None, False]),
        ("info.geo.lat > 50", [True, None, None, False]),
        ("`a.b` IN (2, 4)", [False, True, False, True]),
    ],
)
def test_evaluate_compares_values_of_every_type(text: str, expected: list[Any]) -> None:
    assert run(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id = NULL", [None, None, None, None]),
        ("id <=> NULL", [False, False, False, True]),
        ("id <=> 1", [True, False, False, False]),
        ("id IS DISTINCT FROM 1", [False, True, True, True]),
        ("id IN (1, NULL)", [True, None, None, None]),
        ("id NOT IN (1, NULL)", [False, None, None, None]),
        ("id NOT IN (1, 2)", [False, False, True, None]),
        ("NULL IN (1)", [None, None, None, None]),
        ("id > 1 AND flag", [False, False, None, None]),
        ("id > 1 OR flag", [True, True, True, True]),
        ("NOT (id > 1)", [True, False, False, None]),
        ("id IS NULL AND Name IS NOT NULL", [False, False, False, True]),
        ("flag IS TRUE", [True, False, False, True]),
        ("flag IS NOT TRUE", [False, True, True, False]),
        ("coalesce(id, 0) = 0", [False, False, False, True]),
    ],
)
def test_evaluate_follows_sql_three_valued_logic(text: str, expected: list[Any]) -> None:
    assert run(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id + 1", [2, 3, 4, None]),
        ("id * 2 - small", [1, 5, None, None]),
        ("id / 2", [0.5, 1.0, 1.5, None]),
        ("-id % 2", [-1, 0, -1, None]),
        ("price + 1", [Decimal("2.50"), None, Decimal("3.25"), Decimal("-2.00")]),
        ("abs(price)", [Decimal("1.50"), None, Decimal("2.25"), Decimal("3.00")]),
        ("lower(Name)", ["apple", "banana", None, "cherry pie"]),
        ("upper(info.city)", ["OSLO", None, None, "ROME"]),
        ("concat(Name, '#', id)", ["apple#1", "Banana#2", None, None]),
        ("Name || '!'", ["apple!", "Banana!", None, "cherry pie!"]),
        ("length(Name)", [5, 6, None, 10]),
        ("substring(Name, 2, 3)", ["ppl", "ana", None, "her"]),
        ("substring(Name, -3)", ["ple", "ana", None, "pie"]),
        ("substring(Name, -8, 3)", ["", "B", None, "err"]),  # Spark clips the window at the start
        ("substring(Name, 0, 2)", ["ap", "Ba", None, "ch"]),
        ("trim(concat('  ', Name, ' '))", ["apple", "Banana", None, "cherry pie"]),
        ("ltrim(concat('  ', Name))", ["apple", "Banana", None, "cherry pie"]),
        ("coalesce(Name, 'none')", ["apple", "Banana", "none", "cherry pie"]),
        ("CAST(small AS STRING)", ["1", "-1", None, "127"]),
        ("CAST(id AS DOUBLE) / 4", [0.25, 0.5, 0.75, None]),
        ("42", [42, 42, 42, 42]),
    ],
)
def test_evaluate_computes_value_expressions(text: str, expected: list[Any]) -> None:
    assert run(text) == expected


def test_evaluate_current_date_and_timestamp_are_today_in_utc() -> None:
    before = dt.datetime.now(UTC)
    values = run("current_timestamp")
    assert before <= values[0].astimezone(UTC) <= dt.datetime.now(UTC)
    assert run("current_date")[0] in {before.date(), dt.datetime.now(UTC).date()}


def test_evaluate_on_an_empty_and_a_chunked_table_keeps_length_and_order() -> None:
    empty = TABLE.slice(0, 0)
    assert evaluate(bind(parse_predicate("id > 1"), empty.schema), empty).to_pylist() == []
    chunked = pa.concat_tables([TABLE.select(["id"])] * 200)
    result = evaluate(bind(parse_expression("id * 10"), chunked.schema), chunked)
    assert result.to_pylist() == [10, 20, 30, None] * 200


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("Name = 1", "Cannot evaluate expression 'CAST\\(Name AS INT\\) = 1'"),
        ("small + 127 > 0", "overflow"),
        ("id % 0 = 1", "divide by zero"),
    ],
)
def test_evaluate_reports_arrow_failures_as_predicate_errors(text: str, fragment: str) -> None:
    with pytest.raises(PredicateError, match=fragment):
        run(text)


def test_evaluate_of_an_unbound_expression_on_a_missing_column_is_a_predicate_error() -> None:
    with pytest.raises(PredicateError, match="Cannot evaluate expression 'nope = 1'"):
        evaluate(parse_predicate("nope = 1"), TABLE)


@pytest.mark.parametrize(
    "text",
    [
        "id > 1 AND Name IS NOT NULL",
        "info.geo.lat > 42 OR id IN (1, NULL)",
        "day >= '2020-01-02' AND NOT flag",
        "ts BETWEEN '2021-01-01' AND '2022-01-01' OR price <=> NULL",
        "lower(Name) LIKE '%an%' OR ratio != ratio",
    ],
)
def test_to_arrow_expression_filters_datasets_like_evaluate(text: str) -> None:
    expr = bind(parse_predicate(text), TABLE.schema)
    # Column "a.b" numbers the rows; compare which rows each way keeps (NaN rows make equals() unusable).
    by_dataset = ds.dataset(TABLE).to_table(filter=to_arrow_expression(expr)).column("a.b").to_pylist()
    by_evaluate = TABLE.filter(evaluate(expr, TABLE)).column("a.b").to_pylist()
    assert by_dataset == by_evaluate
    assert TABLE.filter(to_arrow_expression(expr)).column("a.b").to_pylist() == by_evaluate


def test_to_arrow_expression_uses_nested_field_refs() -> None:
    expr = to_arrow_expression(bind(parse_predicate("info.geo.lat > 1"), TABLE.schema))
    assert expr.equals(pc.field("info", "geo", "lat") > pc.scalar(1.0))


# ------------------------------------------------------------------------------- columns and helpers


def test_referenced_columns_and_partition_only() -> None:
    expr = parse_predicate("Date = '2020-01-01' AND (info.city = 'x' OR t.id > 1)", qualifiers=["t"])
    assert referenced_columns(expr) == {("Date",), ("info", "city"), ("id",)}
    assert not is_partition_only(expr, ["date", "info"])
    assert is_partition_only(parse_predicate("DATE = '2020-01-01' OR region IN ('eu')"), ["date", "region"])
    assert is_partition_only(parse_predicate("1 = 1"), [])


def test_col_and_lit_helpers() -> None:
    assert col("a", "b", qualifier="t").name == "t.a.b"
    assert lit(dt.datetime(2020, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))) == Literal(
        dt.datetime(2020, 1, 1, tzinfo=UTC), pa.timestamp("us", tz="UTC")
    )
    assert lit(2**40).dtype == pa.int64()
    assert lit(10**30).dtype == pa.decimal128(38, 0)
    assert lit(Decimal("0.001")).dtype == pa.decimal128(3, 3)
    with pytest.raises(PredicateError, match="unsupported Python type"):
        lit(object())


# ------------------------------------------------------------------------------------ file skipping

SKIP_SCHEMA = pa.schema(
    [
        ("p", pa.string()),
        ("pd", pa.date32()),
        ("x", pa.int64()),
        ("s", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("dec", pa.decimal128(10, 2)),
        ("big", pa.decimal128(30, 2)),
        ("f", pa.float64()),
        ("d", pa.date32()),
        ("b", pa.bool_()),
        ("nested", pa.struct([("y", pa.int32())])),
        ("allnull", pa.int32()),
    ]
)
PARTITIONS = {"p": "a", "pd": dt.date(2020, 1, 1)}
STATS = {
    "numRecords": 10,
    "minValues": {
        "x": 1,
        "s": "apple",
        "ts": "2021-01-01T00:00:00.000Z",
        "ntz": "2021-01-01T00:00:00.000",
        "dec": 1.1,
        "big": 1.1,
        "f": 0.5,
        "d": "2020-01-01",
        "b": False,
        "nested": {"y": 5},
    },
    "maxValues": {
        "x": 10,
        "s": "banana",
        "ts": "2021-01-01T10:00:00.123+00:00",
        "ntz": "2021-01-01T10:00:00.123",
        "dec": 2.2,
        "big": 2.2,
        "f": 1.5,
        "d": "2020-12-31",
        "b": False,
        "nested": {"y": 7},
    },
    "nullCount": {
        "x": 0,
        "s": 2,
        "ts": 0,
        "dec": 0,
        "f": 0,
        "d": 0,
        "b": 0,
        "nested": {"y": 0},
        "allnull": 10,
    },
}


def may(text: str, *, partitions: dict[str, Any] | None = None, stats: dict[str, Any] | None = STATS) -> bool:
    expr = bind(parse_predicate(text), SKIP_SCHEMA)
    return file_may_match(
        expr, partition_values=PARTITIONS if partitions is None else partitions, stats=stats
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # integers: min 1, max 10, no nulls
        ("x = 5", True),
        ("x = 11", False),
        ("x = 0", False),
        ("x > 10", False),
        ("x >= 10", True),
        ("x < 1", False),
        ("x <= 1", True),
        ("10 < x", False),
        ("x != 5", True),
        ("x IN (0, 11, 12)", False),
        ("x IN (0, 10)", True),
        ("x NOT IN (1, 2)", True),
        ("x BETWEEN 11 AND 20", False),
        ("x BETWEEN 0 AND 1", True),
        ("x IS NULL", False),
        ("x IS NOT NULL", True),
        ("x = NULL", False),
        ("x <=> NULL", False),
        ("x <=> 5", True),
        ("x <=> 50", False),
        # NOT pushed down
        ("NOT (x > 0)", False),
        ("NOT (x >= 1 AND x <= 10)", False),
        ("NOT (x < 5)", True),
        ("NOT (x BETWEEN 0 AND 20)", False),
        ("NOT (x IS NOT NULL)", False),
        ("NOT NOT (x > 10)", False),
        ("NOT (x IN (1, NULL))", False),
        # strings: min 'apple', max 'banana', 2 nulls
        ("s = 'b'", True),
        ("s = 'c'", False),
        ("s > 'banana'", False),
        ("s >= 'banana'", True),
        ("s < 'apple'", False),
        ("s IS NULL", True),
        ("s LIKE 'zzz%'", True),
        # timestamps: max written truncated to ms, so it is widened by 1 ms
        ("ts > '2021-01-01 10:00:00.123'", True),
        ("ts > '2021-01-01 10:00:00.123999'", True),
        ("ts > '2021-01-01 10:00:00.124'", False),
        ("ts < '2021-01-01 00:00:00'", False),
        ("ts = '2021-01-01 05:00:00'", True),
        ("ntz >= '2021-01-01 10:00:00.1235'", True),
        ("ntz > '2021-01-01 10:00:01'", False),
        # decimals from JSON floats (precision 10 is exact, precision 30 is widened by an ulp)
        ("dec = 2.2", True),
        ("dec > 2.2", False),
        ("dec < 1.1", False),
        ("big > 2.21", False),
        ("big > 2.2", True),
        # floats, dates, booleans, nested fields
        ("f > 1.5", False),
        ("f < 0.5", False),
        ("f = 1.0", True),
        ("d = '2021-01-01'", False),
        ("d = '2020-06-01'", True),
        ("b", False),
        ("NOT b", True),
        ("b = FALSE", True),
        ("nested.y = 6", True),
        ("nested.y > 7", False),
        ("nested.y IS NULL", False),
        # all-null column: comparisons cannot match, IS NULL can
        ("allnull = 5", False),
        ("allnull IS NULL", True),
        ("allnull IS NOT NULL", False),
        ("allnull NOT IN (1)", False),
        # partition columns are exact
        ("p = 'a'", True),
        ("p = 'b'", False),
        ("p != 'a'", False),
        ("p IN ('x', 'a')", True),
        ("p NOT IN ('a')", False),
        ("p IS NULL", False),
        ("lower(p) = 'a' AND length(p) = 1", True),
        ("upper(p) = 'a'", False),
        ("p LIKE 'a%'", True),
        ("p LIKE 'b%'", False),
        ("pd = '2020-01-01'", True),
        ("pd > '2020-01-01'", False),
        ("p = 'b' OR x = 5", True),
        ("p = 'b' OR x = 50", False),
        ("p = 'a' AND x = 50", False),
        ("NOT (p = 'a' AND x > 100)", True),
        ("1 = 0", False),
        ("1 = 1", True),
    ],
)
def test_file_may_match_truth_table(text: str, expected: bool) -> None:
    assert may(text) is expected


@pytest.mark.parametrize(
    "text",
    [
        "x + 1 = 100",  # expressions over data columns
        "abs(x) > 100",
        "CAST(x AS STRING) = 'z'",
        "x = nested.y",  # column against column
        "f != 1.0",  # float stats never claim exact bounds (NaN rows may be left out)
        "f = 'NaN'",
        "current_date() < d",
        "p = s",  # a partition column against a data column
        "missing_stat = 1",
    ],
)
def test_file_may_match_is_conservative_when_unsure(text: str) -> None:
    schema = pa.schema([*SKIP_SCHEMA, pa.field("missing_stat", pa.int32())])
    expr = bind(parse_predicate(text), schema)
    assert file_may_match(expr, partition_values=PARTITIONS, stats=STATS) is True


def test_file_may_match_without_stats_only_uses_partition_values() -> None:
    assert may("x = 50", stats=None) is True
    assert may("p = 'b' AND x = 50", stats=None) is False
    assert may("x = 50", stats={"numRecords": 10}) is True
    assert may("x = 50", stats={"numRecords": 10, "minValues": {"x": 1}}) is True
    assert may("x = 0", stats={"numRecords": 10, "minValues": {"x": 1}}) is False


def test_file_may_match_skips_files_without_records() -> None:
    assert may("x IS NULL", stats={"numRecords": 0}) is False


def test_null_partition_value_matches_only_null_tests() -> None:
    parts = {"p": None, "pd": None}
    assert may("p IS NULL", partitions=parts) is True
    assert may("p = 'a'", partitions=parts) is False
    assert may("p != 'a'", partitions=parts) is False
    assert may("p <=> NULL", partitions=parts) is True
    assert may("coalesce(p, 'z') = 'z'", partitions=parts) is True
    assert may("NOT (p = 'a')", partitions=parts) is False


def test_nan_in_float_stats_is_ignored() -> None:
    stats = {"numRecords": 3, "minValues": {"f": "NaN"}, "maxValues": {"f": "NaN"}, "nullCount": {"f": 0}}
    assert may("f > 100", stats=stats) is True
    assert may("f < -100", stats=stats) is True
    infinite = {
        "numRecords": 3,
        "minValues": {"f": "-Infinity"},
        "maxValues": {"f": 1.0},
        "nullCount": {"f": 0},
    }
    assert may("f > 1", stats=infinite) is False


def test_truncated_string_max_is_treated_as_a_prefix() -> None:
    prefix = "m" * 32
    stats = {
        "numRecords": 5,
        "minValues": {"s": "a"},
        "maxValues": {"s": prefix + "\ufffd"},
        "nullCount": {"s": 0},
    }
    assert may(f"s = '{prefix}zzzz'", stats=stats) is True  # longer than the prefix: may be in the file
    assert may(f"s > '{prefix}\U0010ffff'", stats=stats) is True
    assert may(f"s >= '{prefix}'", stats=stats) is True
    assert may(f"s > '{'m' * 31}n'", stats=stats) is False  # beyond every string starting with the prefix
    assert may(f"s != '{prefix}'", stats={**stats, "minValues": {"s": prefix}}) is True
    # shorter maxima are exact
    short = {"numRecords": 5, "minValues": {"s": "a"}, "maxValues": {"s": "mm"}, "nullCount": {"s": 0}}
    assert may("s > 'mm'", stats=short) is False
    assert may("s != 'a'", stats={**short, "maxValues": {"s": "a"}}) is False


def test_string_prefix_length_follows_the_table_property() -> None:
    expr = bind(parse_predicate("s > 'abd'"), SKIP_SCHEMA)
    stats = {"numRecords": 5, "minValues": {"s": "a"}, "maxValues": {"s": "abc"}}
    assert file_may_match(expr, partition_values={}, stats=stats) is False
    # with a 2-character prefix length, "abc" is a truncated "ab..." and may exceed "abd"
    assert file_may_match(expr, partition_values={}, stats=stats, string_prefix_length=2) is True
    expr = bind(parse_predicate("s > 'abcz'"), SKIP_SCHEMA)
    assert file_may_match(expr, partition_values={}, stats=stats) is False
    assert file_may_match(expr, partition_values={}, stats=stats, string_prefix_length=3) is True


def test_stats_lookup_falls_back_to_case_insensitive_keys() -> None:
    stats = {
        "numRecords": 5,
        "minValues": {"X": 1, "Nested": {"Y": 5}},
        "maxValues": {"X": 3, "Nested": {"Y": 5}},
    }
    assert may("x > 3", stats=stats) is False
    assert may("nested.y = 6", stats=stats) is False


def test_unbound_predicates_only_use_numeric_stats() -> None:
    stats = {"numRecords": 5, "minValues": {"x": 1, "s": "b"}, "maxValues": {"x": 3, "s": "c"}}
    assert file_may_match(parse_predicate("x > 3"), partition_values={}, stats=stats) is False
    assert file_may_match(parse_predicate("s = 'a'"), partition_values={}, stats=stats) is True
    assert file_may_match(parse_predicate("p = 'a'"), partition_values={"p": "b"}, stats=stats) is False


def test_stats_of_the_wrong_json_type_are_ignored() -> None:
    stats = {
        "numRecords": 5,
        "minValues": {"x": "1", "d": 5, "ts": 17},
        "maxValues": {"x": {"y": 1}, "d": None},
    }
    assert may("x > 100", stats=stats) is True
    assert may("d = '1999-01-01'", stats=stats) is True
    assert may("ts < '1999-01-01'", stats=stats) is True


# --------------------------------------------------------------------- property: skipping is sound

PREFIX = 3  # a short string prefix length makes truncated string stats common in generated files


@st.composite
def _tables(draw: st.DrawFn) -> pa.Table:
    size = draw(st.integers(1, 8))
    ints = draw(st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=size, max_size=size))
    strings = draw(st.lists(st.one_of(st.none(), st.text("abc", max_size=5)), min_size=size, max_size=size))
    micros = draw(st.lists(st.one_of(st.none(), st.integers(0, 3000)), min_size=size, max_size=size))
    cents = draw(st.lists(st.one_of(st.none(), st.integers(-300, 300)), min_size=size, max_size=size))
    return pa.table(
        {
            "i": pa.array(ints, pa.int64()),
            "s": pa.array(strings, pa.string()),
            "t": pa.array(micros, pa.timestamp("us", tz="UTC")),
            "d": pa.array(
                [None if c is None else Decimal(c).scaleb(-2) for c in cents], pa.decimal128(20, 2)
            ),
        }
    )


def _stats(table: pa.Table) -> dict[str, Any]:
    """Stats the way Delta writers record them: strings truncated, timestamps truncated to ms, decimals as
    JSON floats."""
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for name in table.column_names:
        values = [v for v in table.column(name).to_pylist() if v is not None]
        nulls[name] = table.num_rows - len(values)
        if not values:
            continue
        lo, hi = min(values), max(values)
        if name == "s":
            mins[name] = lo[:PREFIX]
            maxs[name] = hi if len(hi) <= PREFIX else hi[:PREFIX] + "\ufffd"
        elif name == "t":
            mins[name] = (
                lo.replace(microsecond=lo.microsecond // 1000 * 1000).isoformat().replace("+00:00", "Z")
            )
            maxs[name] = hi.replace(microsecond=hi.microsecond // 1000 * 1000).isoformat()
        elif name == "d":
            mins[name], maxs[name] = float(lo), float(hi)
        else:
            mins[name], maxs[name] = lo, hi
    return {"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}


def _literals(name: str) -> st.SearchStrategy[Any]:
    if name == "i":
        return st.one_of(st.none(), st.integers(-6, 6))
    if name == "s":
        return st.one_of(st.none(), st.text("abc", max_size=5))
    if name == "d":
        return st.one_of(st.none(), st.integers(-310, 310).map(lambda c: Decimal(c).scaleb(-2)))
    return st.one_of(
        st.none(),
        st.integers(-10, 3010).map(
            lambda us: dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=us)
        ),
    )


_OPS: tuple[ComparisonOp, ...] = ("=", "!=", "<", "<=", ">", ">=", "<=>")


@st.composite
def _leaves(draw: st.DrawFn) -> Expr:
    name = draw(st.sampled_from(["i", "s", "t", "d"]))
    column = Column(None, (name,))
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "in", "null", "notnull", "between"]))
    if kind == "cmp":
        op = draw(st.sampled_from(_OPS))
        literal = Literal(draw(_literals(name)))
        return Comparison(op, literal, column) if draw(st.booleans()) else Comparison(op, column, literal)
    if kind == "in":
        return In(column, tuple(Literal(v) for v in draw(st.lists(_literals(name), min_size=1, max_size=3))))
    if kind == "between":
        return Between(column, Literal(draw(_literals(name))), Literal(draw(_literals(name))))
    return IsNull(column) if kind == "null" else IsNotNull(column)


_predicates = st.recursive(
    _leaves(),
    lambda inner: st.one_of(st.builds(Not, inner), st.builds(And, inner, inner), st.builds(Or, inner, inner)),
    max_leaves=4,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=_tables(), predicate=_predicates)
def test_file_skipping_never_skips_a_file_with_matching_rows(table: pa.Table, predicate: Expr) -> None:
    bound = bind(predicate, table.schema)
    keeps_a_row = any(v is True for v in evaluate(bound, table).to_pylist())
    may_match = file_may_match(bound, partition_values={}, stats=_stats(table), string_prefix_length=PREFIX)
    if keeps_a_row:
        assert may_match, f"{to_sql(bound)} skipped a file whose rows match; stats {_stats(table)}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=_tables(), predicate=_predicates)
def test_partition_values_are_evaluated_exactly(table: pa.Table, predicate: Expr) -> None:
    row = table.slice(0, 1)
    bound = bind(predicate, row.schema)
    keeps = evaluate(bound, row).to_pylist() == [True]
    values = {name: row.column(name)[0].as_py() for name in row.column_names}
    assert file_may_match(bound, partition_values=values, stats=None) is keeps


def test_file_skipping_skips_something_on_generated_data() -> None:
    table = pa.table({"i": pa.array([1, 2, 3], pa.int64())})
    assert (
        file_may_match(bind(parse_predicate("i > 3"), table.schema), partition_values={}, stats=_stats(table))
        is False
    )

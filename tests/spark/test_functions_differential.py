"""Differential test of the local engine's Spark SQL functions: Spark is the oracle.

Every expression is evaluated by Spark (``selectExpr`` over a DataFrame made from the same Arrow
table, session time zone UTC, ANSI mode as Spark 4 defaults) and by the engine
(``evaluate(bind(parse_expression(...)))``) over the same rows: nulls, empty arrays, NaN, -0.0,
infinities, Unicode, edge dates. Both give the same values and the same result type, or both fail.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core.expressions import _type_of, bind, evaluate, parse_expression
from airflow_provider_delta.exceptions import PredicateError
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]

NAN, INF = float("nan"), float("inf")
UTC = dt.timezone.utc

DATA = pa.table(
    {
        "i": pa.array([1, -7, 0, None, 2147483647, 3, 12, -125], pa.int32()),
        "l": pa.array([10, None, -3, 0, 7, 2, 5, 1], pa.int64()),
        "d": pa.array([2.5, -2.5, NAN, -0.0, None, 1.005, INF, 0.0], pa.float64()),
        "dec": pa.array(
            [
                decimal.Decimal(x) if x else None
                for x in ["1.235", "-2.5", None, "0.000", "12345.678", "-0.005", "9.995", "100"]
            ],
            pa.decimal128(10, 3),
        ),
        "s": pa.array(["hello world", "  Spaced  ", "", None, "héllo wORLD", "a,b,,c", "x-y z", "ABC123def"]),
        "p": pa.array(["l", "o", "", "x", None, ",", "-", "[0-9]+"]),
        "dt": pa.array(
            [
                dt.date(2020, 1, 31),
                dt.date(2020, 2, 29),
                None,
                dt.date(1969, 12, 31),
                dt.date(2021, 3, 31),
                dt.date(2000, 1, 1),
                dt.date(2024, 12, 31),
                dt.date(1999, 6, 15),
            ]
        ),
        "ts": pa.array(
            [
                dt.datetime(2020, 1, 31, 10, 11, 12, 345678, tzinfo=UTC),
                None,
                dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC),
                dt.datetime(2020, 2, 29, 0, 0, tzinfo=UTC),
                dt.datetime(2021, 3, 31, 12, 0, 1, tzinfo=UTC),
                dt.datetime(2000, 1, 1, 13, 4, 5, 678000, tzinfo=UTC),
                dt.datetime(2024, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
                dt.datetime(1999, 6, 15, 7, 30, tzinfo=UTC),
            ],
            pa.timestamp("us", tz="UTC"),
        ),
        "a": pa.array(
            [[1, 2, 2, None], [], None, [3, None, 1], [5], [None, None], [2, 1, 3], [7, 7]],
            pa.list_(pa.int32()),
        ),
        "b": pa.array([[3, None, 1], [1], [2], None, [], [None], [3, 3, 9], [7]], pa.list_(pa.int32())),
        "da": pa.array(
            [[NAN, 0.0, -0.0, NAN], [1.0, None, -1.0], [], None, [-0.0, 0.0], [INF, NAN], [0.5], [None]],
            pa.list_(pa.float64()),
        ),
        "sa": pa.array(
            [["b", None, "a"], [], None, ["x"], ["", "é"], [None], ["a", "b", "a"], ["z", "y"]],
            pa.list_(pa.string()),
        ),
        "m": pa.array(
            [[("a", 1), ("b", 2)], [], None, [("x", None)], [("a", 5)], [("l", 3)], [("o", 4)], [("z", 0)]],
            pa.map_(pa.string(), pa.int32()),
        ),
        "st": pa.array(
            [
                {"x": 1, "y": "a"},
                None,
                {"x": None, "y": None},
                {"x": 4, "y": "d"},
                {"x": 5, "y": "e"},
                {"x": 6, "y": "f"},
                {"x": 7, "y": "g"},
                {"x": 8, "y": "h"},
            ],
            pa.struct([("x", pa.int32()), ("y", pa.string())]),
        ),
        "f": pa.array([True, False, None, True, False, True, None, False]),
    }
)

ARRAYS = [
    "array(i, l)",
    "array(i, 2.5)",
    "array(s, p)",
    "size(array())",
    "array_contains(a, 1)",
    "array_contains(a, i)",
    "array_contains(da, 0.0D)",
    "array_contains(da, CAST('NaN' AS DOUBLE))",
    "array_distinct(a)",
    "array_distinct(da)",
    "array_distinct(sa)",
    "array_union(a, b)",
    "array_union(da, array(-0.0D, 1.0D))",
    "array_intersect(a, b)",
    "array_except(a, b)",
    "array_except(b, a)",
    "array_remove(a, 2)",
    "array_remove(da, 0.0D)",
    "array_remove(a, i)",
    "array_position(a, 2)",
    "array_position(da, CAST('NaN' AS DOUBLE))",
    "array_join(sa, ',')",
    "array_join(sa, '-', 'NULL')",
    "array_join(a, '/')",
    "array_max(a)",
    "array_min(a)",
    "array_max(da)",
    "array_min(da)",
    "array_max(sa)",
    "element_at(array(1, 2, 3), -1)",
    "size(a)",
    "cardinality(m)",
    "slice(a, 1, 2)",
    "slice(a, -2, 5)",
    "slice(a, 2, 0)",
    "sort_array(a)",
    "sort_array(a, false)",
    "sort_array(da)",
    "sort_array(da, false)",
    "array_sort(a)",
    "array_sort(sa)",
    "flatten(array(a, b))",
    "arrays_overlap(a, b)",
    "concat(a, b)",
    "concat(a, array(l))",
    "reverse(a)",
    "split(s, ' ')[0]",
    "element_at(split(s, ','), -1)",
]
MAPS_STRUCTS = [
    "map(coalesce(s, 'none'), i)",
    "map('k', d)",
    "map_keys(m)",
    "map_values(m)",
    "map_contains_key(m, 'a')",
    "map_contains_key(m, p)",
    "element_at(m, 'a')",
    "element_at(m, p)",
    "m['b']",
    "map_concat(m, map('new', 1))",
    "struct(i, s)",
    "struct(l + 1, s)",
    "named_struct('k', i, 'v', sa)",
    "st.x",
    "size(map())",
]
STRINGS = [
    "concat(s, p)",
    "concat(s, i)",
    "s || '!'",
    "concat_ws(',', s, p)",
    "concat_ws('|', sa, s)",
    "upper(s)",
    "lower(s)",
    "initcap(s)",
    "trim(s)",
    "ltrim(s)",
    "rtrim(s)",
    "substring(s, 2, 3)",
    "substring(s, -3)",
    "substr(s, 0, 2)",
    "substring(s, i, 2)",
    "length(s)",
    "replace(s, 'l', 'L')",
    "replace(s, p)",
    "regexp_replace(s, '[a-z]+', '#')",
    "regexp_replace(s, '(l+)', '<$1>')",
    "regexp_extract(s, '([a-z]+) ([a-z]+)', 2)",
    "regexp_extract(s, '[0-9]+', 0)",
    "split(s, ',')",
    "split(s, ' ', 2)",
    "split(s, '[ ,]')",
    "lpad(s, 8, '*')",
    "rpad(s, 3, 'xy')",
    "lpad(s, 14)",
    "instr(s, 'l')",
    "instr(s, p)",
    "locate('o', s)",
    "locate('o', s, 6)",
    "startswith(s, 'he')",
    "endswith(s, p)",
    "contains(s, 'o')",
    "left(s, 3)",
    "right(s, 4)",
    "left(s, -1)",
    "repeat(s, 2)",
    "reverse(s)",
    "format_number(d, 2)",
    "format_number(dec, 1)",
    "format_number(i, 0)",
    "s RLIKE '^h'",
    "s LIKE '%o%'",
]
DATES = [
    "date_add(dt, 1)",
    "date_add(dt, CAST(l AS INT))",
    "date_sub(dt, 30)",
    "datediff(dt, DATE'2020-01-01')",
    "datediff(ts, dt)",
    "add_months(dt, 1)",
    "add_months(dt, -13)",
    "to_date(ts)",
    "to_date('2020-07-04')",
    "to_date(s2, 'dd/MM/yyyy')",
    "to_timestamp('2020-01-02 03:04:05')",
    "to_timestamp(s3, 'yyyy-MM-dd HH:mm')",
    "to_timestamp(dt)",
    "date_format(ts, 'yyyy-MM-dd HH:mm:ss.SSS')",
    "date_format(dt, 'dd/MM/yy')",
    "date_format(ts, 'hh a EEE MMM MMMM E')",
    "year(dt)",
    "month(ts)",
    "day(dt)",
    "dayofmonth(ts)",
    "hour(ts)",
    "minute(ts)",
    "second(ts)",
    "quarter(dt)",
    "dayofweek(dt)",
    "dayofyear(dt)",
    "weekofyear(dt)",
    "last_day(dt)",
    "date_trunc('month', ts)",
    "date_trunc('week', ts)",
    "date_trunc('quarter', dt)",
    "date_trunc('hour', ts)",
    "date_trunc('bogus', ts)",
    "trunc(dt, 'year')",
    "trunc(ts, 'MM')",
    "trunc(dt, 'week')",
    "trunc(dt, 'day')",
    "unix_timestamp(ts)",
    "unix_timestamp(dt)",
    "unix_timestamp('2020-01-01 00:00:01')",
    "from_unixtime(l * 86400)",
    "from_unixtime(l, 'yyyy-MM-dd')",
    "months_between(ts, dt)",
    "months_between(dt, DATE'2020-02-29', false)",
    "make_date(2020, 2, abs(l) % 28 + 1)",
    "make_date(1999 + l, 12, 31)",
]
CONDITIONAL = [
    "if(f, s, p)",
    "if(i > 0, i, l)",
    "CASE WHEN i > 2 THEN 'big' WHEN i < 0 THEN 'neg' END",
    "CASE i WHEN 1 THEN 'one' WHEN 3 THEN 'three' ELSE 'other' END",
    "CASE WHEN f THEN d ELSE i END",
    "coalesce(i, l, 0)",
    "nvl(s, 'none')",
    "ifnull(dt, DATE'1970-01-01')",
    "nullif(i, 3)",
    "nvl2(s, 1, 2)",
    "greatest(i, l)",
    "least(i, l, 0)",
    "greatest(d, 1.0D)",
    "least(d, 1.0D)",
    "greatest(dt, DATE'2020-02-01')",
    "least(s, p)",
    "coalesce(dt, '2020-01-01')",
    "if(f, i, '5')",
    "isnull(s)",
    "isnotnull(a)",
    "CASE WHEN i <> 0 THEN 100 / i ELSE 0 END",
]
MATH = [
    "abs(i)",
    "abs(d)",
    "abs(dec)",
    "round(d)",
    "round(d, 2)",
    "round(dec, 2)",
    "round(dec, -1)",
    "round(l * 5, -1)",
    "round(l, -1)",
    "bround(d)",
    "bround(dec, 2)",
    "bround(l * 5, -1)",
    "ceil(nullif(d, CAST('Infinity' AS DOUBLE)))",
    "floor(nullif(d, CAST('Infinity' AS DOUBLE)))",
    "ceil(dec)",
    "floor(dec)",
    "ceil(i)",
    "pow(d, 2)",
    "power(i, 0.5)",
    "sqrt(d)",
    "exp(d)",
    "ln(d)",
    "log(d)",
    "log(2, d)",
    "log10(d)",
    "log2(d)",
    "i % 5",
    "mod(i, -5)",
    "pmod(i, 5)",
    "pmod(i, -5)",
    "pmod(d, 2)",
    "sign(d)",
    "signum(i)",
    "-d",
    "positive(i)",
    "e()",
    "pi()",
    "CAST(i AS STRING)",
    "i::bigint",
    "CAST(a AS ARRAY<BIGINT>)",
]
HASHES = [
    "md5(s)",
    "sha1(s)",
    "sha2(s, 256)",
    "sha2(s, 512)",
    "sha2(s, 1)",
    "crc32(s)",
    "md5(CAST(s AS BINARY))",
]

#: Each of these fails in Spark (ANSI mode, or its analyzer refuses the types) and must fail in the engine too.
FAILURES = [
    "element_at(a, 1)",
    "element_at(da, -1)",
    "element_at(b, -1)",
    "date_add(dt, l)",
    "array_contains(a, NULL)",
    "array_union(a, sa)",
    "upper(a)",
    "element_at(array(1, 2, 3), 5)",
    "a[0]",
    "split(s, ' ')[5]",
    "map(s, i)",
    "struct(i + 1, s)",
    "make_date(2020, 2, i % 30 + 1)",
    "round(i, -1)",
    "bround(i, -1)",
    "ceil(d)",
    "element_at(array(1, 2, 3), 0)",
    "array(1, 2, 3)[3]",
    "slice(a, 0, 1)",
    "slice(a, 1, -1)",
    "map(1, 'a', 1, 'b')",
    "map_concat(map(1, 'a'), map(1, 'b'))",
    "make_date(2021, 2, 29)",
    "pmod(i, 0)",
    "to_date('2020-13-45')",
    "to_date('xx', 'yyyy-MM-dd')",
    "unix_timestamp('garbage')",
    "abs(i - 2147483647 - 1)",
]

EXTRA = pa.table(
    {
        "s2": pa.array(
            [
                "02/01/2020",
                "31/12/1999",
                None,
                "29/02/2024",
                "01/01/1970",
                "15/06/2021",
                "30/04/2020",
                "01/10/2010",
            ]
        ),
        "s3": pa.array(
            [
                "2020-01-02 03:04",
                None,
                "1999-12-31 23:59",
                "2024-02-29 00:00",
                "1970-01-01 00:00",
                "2021-06-15 12:30",
                "2020-04-30 18:45",
                "2010-10-01 06:07",
            ]
        ),
    }
)
ROWS = pa.Table.from_arrays(DATA.columns + EXTRA.columns, names=DATA.column_names + EXTRA.column_names)


_FRAMES: dict[int, DataFrame] = {}


@pytest.fixture
def frame(spark: SparkSession) -> DataFrame:
    """The rows as a DataFrame of the session (made once per session), in UTC."""
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    key = id(spark.sparkContext)
    if key not in _FRAMES:
        _FRAMES.clear()
        _FRAMES[key] = spark.createDataFrame(ROWS).cache()
    return _FRAMES[key]


def _plain(value: Any) -> Any:
    """Python values compared exactly, floats by value within 1e-12 (NaN equal, the sign of zero kept)."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return (
            "float",
            round(value, 9 - math.floor(math.log10(abs(value))))
            if value and math.isfinite(value)
            else value,
            math.copysign(1, value),
        )
    if isinstance(value, dt.datetime):
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _type_name(t: pa.DataType) -> str:
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"array<{_type_name(t.value_type)}>"
    if pa.types.is_map(t):
        return f"map<{_type_name(t.key_type)},{_type_name(t.item_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ",".join(f"{f.name}:{_type_name(f.type)}" for f in t) + ">"
    return str(t)


def _spark(frame: DataFrame, text: str) -> tuple[pa.DataType, list[Any]]:
    result = frame.selectExpr(f"{text} AS r").toArrow()
    return result.schema.field("r").type, result.column("r").to_pylist()


def _engine(text: str) -> tuple[pa.DataType, list[Any]]:
    bound = bind(parse_expression(text), ROWS.schema)
    return _type_of(bound), evaluate(bound, ROWS).to_pylist()


@pytest.mark.parametrize("text", ARRAYS + MAPS_STRUCTS + STRINGS + DATES + CONDITIONAL + MATH + HASHES)
def test_function_gives_sparks_values_and_type(frame: DataFrame, text: str) -> None:
    spark_type, spark_values = _spark(frame, text)
    engine_type, engine_values = _engine(text)
    assert [_plain(v) for v in engine_values] == [_plain(v) for v in spark_values]
    if not pa.types.is_null(spark_type):
        assert _type_name(engine_type) == _type_name(spark_type)


@pytest.mark.parametrize("text", FAILURES)
def test_function_fails_where_spark_fails(frame: DataFrame, text: str) -> None:
    with pytest.raises(Exception):  # noqa: B017 - Spark's errors are Java exceptions of many kinds
        frame.selectExpr(f"{text} AS r").toArrow()
    with pytest.raises(PredicateError):
        _engine(text)

"""Differential test of the store-assignment cast against Spark's own ANSI cast (the oracle).

For each (value type, column type) pair, generated values go once through Spark (``try_cast`` under
ANSI, session time zone UTC: the cast Delta's ``castIfNeeded`` builds, with NULL where it fails) and
once through :func:`airflow_provider_delta.core.schema.store_assignment.store_assign`, value by value:
where Spark gives a value the module gives the same value, where Spark fails the module raises
``CastError``. The planning rule (:func:`can_cast`) is compared with Spark's ``Cast.canAnsiCast`` over
every pair of atomic types.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_delta.core.schema.ddl import parse_data_type_sql
from airflow_provider_delta.core.schema.store_assignment import can_cast, store_assign
from airflow_provider_delta.exceptions import CastError
from tests.spark_cluster import PANDAS_3_WARNING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(f"ignore:{PANDAS_3_WARNING}:FutureWarning")]

ATOMIC = ["tinyint", "smallint", "int", "bigint", "float", "double", "decimal(10,2)", "string", "binary",
          "boolean", "date", "timestamp", "timestamp_ntz", "void"]

_SPACE = st.sampled_from(["", " ", "  ", "\t", "\n"])
_SIGN = st.sampled_from(["", "-", "+"])
_DIGITS = st.text("0123456789", min_size=0, max_size=21)


@st.composite
def _numeric_text(draw: st.DrawFn) -> str:
    body = draw(_SIGN) + draw(_DIGITS)
    if draw(st.booleans()):
        body += "." + draw(_DIGITS)
    if draw(st.integers(0, 4)) == 0:
        body += draw(st.sampled_from(["e", "E"])) + draw(_SIGN) + draw(st.text("0123456789", min_size=1, max_size=3))
    if draw(st.integers(0, 6)) == 0:
        body += draw(st.sampled_from(["d", "f", "x", "L"]))
    return draw(_SPACE) + body + draw(_SPACE)


@st.composite
def _datetime_text(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(["", "-", "+"])) + str(draw(st.integers(0, 12000))).zfill(draw(st.integers(1, 5)))
    for sep, high in (("-", 14), ("-", 32)):
        if draw(st.integers(0, 5)) == 0:
            return text
        text += sep + str(draw(st.integers(0, high))).zfill(draw(st.integers(1, 2)))
    if draw(st.booleans()):
        text += draw(st.sampled_from([" ", "T"]))
        parts = draw(st.integers(1, 3))
        text += ":".join(str(draw(st.integers(0, 61))).zfill(draw(st.integers(1, 2))) for _ in range(parts))
        if draw(st.booleans()):
            text += "." + draw(st.text("0123456789", min_size=0, max_size=10))
        text += draw(st.sampled_from(["", "Z", "+02:00", "-0530", " UTC", "UTC+1", " GMT-03:00", " Europe/Paris", "x"]))
    return draw(_SPACE) + text + draw(_SPACE)


_WORDS = st.sampled_from(["t", "true", "TRUE", "yes", "Y", "1", "0", "no", "f", "False", "on", "2", ""])
_TEXT = st.one_of(_numeric_text(), _datetime_text(), _WORDS.map(lambda w: w + " "), st.sampled_from(
    ["inf", "-Infinity", "NaN", "nan", "1e400", "0x10", "\uff11\uff12"]))

_FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64) | st.sampled_from(
    [0.5, 1.5, 2.5, -2.5, 2.675, 0.125, 1e7, 1e-3, 9.99e-4, 123456789.0, 2.0**63, 2.0**31, -(2.0**31) - 0.5])

PAIRS: list[tuple[pa.DataType, str, Any]] = [
    (pa.string(), "bigint", _TEXT),
    (pa.string(), "int", _TEXT),
    (pa.string(), "tinyint", _TEXT),
    (pa.string(), "double", _TEXT),
    (pa.string(), "decimal(10,2)", _TEXT),
    (pa.string(), "boolean", _TEXT),
    (pa.string(), "date", _TEXT),
    (pa.string(), "timestamp", _TEXT),
    (pa.string(), "timestamp_ntz", _TEXT),
    (pa.float64(), "int", _FLOATS),
    (pa.float64(), "bigint", _FLOATS),
    (pa.float64(), "decimal(6,2)", _FLOATS),
    (pa.float64(), "string", _FLOATS),
    (pa.float32(), "string", st.floats(width=32)),
    (pa.float64(), "boolean", _FLOATS),
    (pa.int64(), "tinyint", st.integers(-(2**63), 2**63 - 1) | st.integers(-200, 200)),
    (pa.int64(), "decimal(4,1)", st.integers(-20000, 20000)),
    (pa.int64(), "timestamp", st.integers(-(2**63), 2**63 - 1) | st.integers(-(10**10), 10**10)),
    (pa.decimal128(12, 3), "decimal(5,1)", st.decimals(min_value=-10**6, max_value=10**6, places=3)),
    (pa.decimal128(12, 3), "int", st.decimals(min_value=-10**8, max_value=10**8, places=3)),
    (pa.decimal128(20, 8), "string", st.decimals(min_value=-10**6, max_value=10**6, places=8)),
    (pa.timestamp("us", tz="UTC"), "date", st.datetimes(timezones=st.just(__import__("datetime").UTC))),
    (pa.timestamp("us", tz="UTC"), "bigint", st.datetimes(timezones=st.just(__import__("datetime").UTC))),
    (pa.timestamp("us", tz="UTC"), "string", st.datetimes(timezones=st.just(__import__("datetime").UTC))),
    (pa.date32(), "timestamp", st.dates()),
    (pa.date32(), "string", st.dates()),
    (pa.bool_(), "int", st.booleans()),
    (pa.list_(pa.string()), "array<int>", st.lists(st.none() | _numeric_text(), max_size=3)),
    (pa.map_(pa.string(), pa.string()), "map<string,int>",
     st.dictionaries(st.text("abc", min_size=1, max_size=2), st.none() | _numeric_text(), max_size=3).map(list)),
    (pa.list_(pa.int64()), "string", st.lists(st.none() | st.integers(-5, 5), max_size=3)),
    (pa.struct([("a", pa.int64()), ("b", pa.string())]), "string",
     st.fixed_dictionaries({"a": st.none() | st.integers(-5, 5), "b": st.none() | st.text("xy", max_size=2)})),
]


def _same(ours: Any, spark: Any) -> bool:
    if isinstance(ours, float) and isinstance(spark, float) and math.isnan(ours):
        return math.isnan(spark)
    return bool(ours == spark)


def _spark_casts(spark: SparkSession, values: pa.Array, to: str) -> list[Any]:
    frame = spark.createDataFrame(pa.table({"x": values}))
    return frame.selectExpr(f"try_cast(x AS {to}) AS y").toArrow().column("y").to_pylist()


@pytest.fixture
def spark_ansi(spark: SparkSession) -> SparkSession:
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    return spark


@pytest.mark.parametrize(("source", "to", "values"), PAIRS, ids=[f"{s}->{t}" for s, t, _ in PAIRS])
def test_store_assign_agrees_with_spark_ansi_cast(
    spark_ansi: SparkSession, source: pa.DataType, to: str, values: Any
) -> None:
    target = parse_data_type_sql(to)

    @settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(st.lists(values, min_size=40, max_size=60))
    def check(drawn: list[Any]) -> None:
        array = pa.array(drawn, source)
        expected = _spark_casts(spark_ansi, array, to)
        for i, want in enumerate(expected):
            value = array.slice(i, 1)
            if want is None and value[0].is_valid:
                with pytest.raises(CastError):
                    store_assign(value, target, column="c")
                continue
            got = store_assign(value, target, column="c").to_pylist()[0]
            assert _same(got, want), f"{value[0].as_py()!r} AS {to}: Spark {want!r}, ours {got!r}"

    check()


def test_the_planning_rule_is_sparks_can_ansi_cast(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    cast = jvm.org.apache.spark.sql.catalyst.expressions.Cast
    parse = jvm.org.apache.spark.sql.types.DataType.fromDDL
    differences = []
    for source in ATOMIC:
        for to in ATOMIC[:-1]:
            ours = can_cast(parse_data_type_sql(source), parse_data_type_sql(to))
            if ours != cast.canAnsiCast(parse(source), parse(to)):
                differences.append((source, to, ours))
    assert differences == []

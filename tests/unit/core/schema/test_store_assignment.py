"""The store-assignment cast against a hand-written table of Spark's answers.

Every expected value below is what Spark printed for ``SELECT CAST(<value> AS <type>)`` with ANSI on and
the session time zone UTC (Spark 4.2.0 under delta-spark 4.4.0, /work/oracle, 2026-11-29), which is the
cast Delta's ``castIfNeeded`` builds for MERGE and UPDATE; ``ERROR`` marks a value Spark refused at run
time (``CAST_INVALID_INPUT``, ``CAST_OVERFLOW``, ``NUMERIC_VALUE_OUT_OF_RANGE``). The planning rule is
checked against Spark's ``Cast.canAnsiCast`` matrix printed the same day. ``tests/spark/
test_store_assignment_spark.py`` compares the module with Spark's cast on generated values.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core.schema.ddl import parse_data_type_sql
from airflow_provider_delta.core.schema.store_assignment import assignment_problem, can_cast, store_assign
from airflow_provider_delta.exceptions import CastError

ERROR = object()
UTC = dt.UTC


def ts(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


# (value, Arrow type of the value, column type, what Spark gave)
CASES: list[tuple[Any, pa.DataType, str, Any]] = [
    # string -> integral: trimmed, sign, digits only
    (" 12 ", pa.string(), "int", 12),
    ("+7", pa.string(), "int", 7),
    ("\t5\n", pa.string(), "int", 5),
    ("1.9", pa.string(), "int", ERROR),
    ("1e2", pa.string(), "int", ERROR),
    ("abc", pa.string(), "bigint", ERROR),
    ("", pa.string(), "int", ERROR),
    ("2147483648", pa.string(), "int", ERROR),
    ("300", pa.string(), "tinyint", ERROR),
    ("9223372036854775807", pa.string(), "bigint", 9223372036854775807),
    ("9223372036854775808", pa.string(), "bigint", ERROR),
    ("0x10", pa.string(), "int", ERROR),
    ("12.", pa.string(), "bigint", ERROR),
    (".5", pa.string(), "bigint", ERROR),
    ("1_000", pa.string(), "int", ERROR),
    ("\uff11\uff12", pa.string(), "int", ERROR),
    # fractional -> integral: truncation toward zero, out of range is an error
    (1.9, pa.float64(), "int", 1),
    (-1.9, pa.float64(), "int", -1),
    (1e10, pa.float64(), "int", ERROR),
    (float("nan"), pa.float64(), "int", ERROR),
    (127.9, pa.float64(), "tinyint", 127),
    (128.0, pa.float64(), "tinyint", ERROR),
    (Decimal("-1.99"), pa.decimal128(3, 2), "int", -1),
    (300, pa.int64(), "tinyint", ERROR),
    (True, pa.bool_(), "int", 1),
    # decimals: HALF_UP, overflow is an error; a double is read as its shortest text
    ("1.255", pa.string(), "decimal(4,2)", Decimal("1.26")),
    ("-1.255", pa.string(), "decimal(4,2)", Decimal("-1.26")),
    ("1.254", pa.string(), "decimal(4,2)", Decimal("1.25")),
    ("123.45", pa.string(), "decimal(4,2)", ERROR),
    (" 1.5 ", pa.string(), "decimal(4,2)", Decimal("1.50")),
    ("1e2", pa.string(), "decimal(5,2)", Decimal("100.00")),
    ("abc", pa.string(), "decimal(4,2)", ERROR),
    (2.675, pa.float64(), "decimal(4,2)", Decimal("2.68")),
    (0.125, pa.float64(), "decimal(4,2)", Decimal("0.13")),
    (float("nan"), pa.float64(), "decimal(4,2)", None),  # Spark: NULL, not an error
    (1e10, pa.float64(), "decimal(4,2)", ERROR),
    (Decimal("99.995"), pa.decimal128(5, 3), "decimal(4,2)", ERROR),
    (Decimal("1.255"), pa.decimal128(4, 3), "decimal(4,2)", Decimal("1.26")),
    (12345, pa.int64(), "decimal(4,2)", ERROR),
    (True, pa.bool_(), "decimal(3,1)", Decimal("1.0")),
    # string -> floating point
    (" 1.5 ", pa.string(), "double", 1.5),
    ("-Infinity", pa.string(), "double", float("-inf")),
    ("inf", pa.string(), "double", float("inf")),
    ("1d", pa.string(), "double", 1.0),
    ("1f", pa.string(), "double", 1.0),
    ("0x1p3", pa.string(), "double", 8.0),
    ("NaN", pa.string(), "double", float("nan")),
    ("1e400", pa.string(), "double", float("inf")),
    ("1,5", pa.string(), "double", ERROR),
    # booleans
    ("t", pa.string(), "boolean", True),
    ("yes", pa.string(), "boolean", True),
    (" Y ", pa.string(), "boolean", True),
    ("1", pa.string(), "boolean", True),
    ("no", pa.string(), "boolean", False),
    ("0", pa.string(), "boolean", False),
    ("2", pa.string(), "boolean", ERROR),
    ("on", pa.string(), "boolean", ERROR),
    (2, pa.int64(), "boolean", True),
    (0.0, pa.float64(), "boolean", False),
    (float("nan"), pa.float64(), "boolean", True),
    (Decimal("0.1"), pa.decimal128(2, 1), "boolean", True),
    # dates
    ("2024-01-02", pa.string(), "date", dt.date(2024, 1, 2)),
    (" 2024-1-2 ", pa.string(), "date", dt.date(2024, 1, 2)),
    ("2024", pa.string(), "date", dt.date(2024, 1, 1)),
    ("2024-01", pa.string(), "date", dt.date(2024, 1, 1)),
    ("2024-01-02T10:00", pa.string(), "date", dt.date(2024, 1, 2)),
    ("2024-01-02 10:00:00", pa.string(), "date", dt.date(2024, 1, 2)),
    ("2024-01-02xyz", pa.string(), "date", ERROR),
    ("2024-13-01", pa.string(), "date", ERROR),
    ("2024-02-30", pa.string(), "date", ERROR),
    ("24-01-02", pa.string(), "date", ERROR),
    ("2024/01/02", pa.string(), "date", ERROR),
    ("+2024-01-02", pa.string(), "date", dt.date(2024, 1, 2)),
    (ts("2024-01-02T23:04:05"), pa.timestamp("us", tz="UTC"), "date", dt.date(2024, 1, 2)),
    # timestamps (session time zone UTC)
    ("2024-01-02 03:04:05", pa.string(), "timestamp", ts("2024-01-02T03:04:05")),
    ("2024-01-02T03:04:05.123456789", pa.string(), "timestamp", ts("2024-01-02T03:04:05.123456")),
    ("2024-01-02 03:04:05+02:00", pa.string(), "timestamp", ts("2024-01-02T01:04:05")),
    ("2024-01-02 03:04:05Z", pa.string(), "timestamp", ts("2024-01-02T03:04:05")),
    ("2024-01-02 03:04:05 UTC", pa.string(), "timestamp", ts("2024-01-02T03:04:05")),
    ("2024-01-02 03:04:05 America/New_York", pa.string(), "timestamp", ts("2024-01-02T08:04:05")),
    ("2024-01-02", pa.string(), "timestamp", ts("2024-01-02T00:00:00")),
    ("2024-01-02 03:04", pa.string(), "timestamp", ts("2024-01-02T03:04:00")),
    ("2024-01-02 3:4:5", pa.string(), "timestamp", ts("2024-01-02T03:04:05")),
    ("abc", pa.string(), "timestamp", ERROR),
    ("2024-01-02 03", pa.string(), "timestamp", ts("2024-01-02T03:00:00")),
    ("2024-01-02T", pa.string(), "timestamp", ERROR),
    ("2024-01-02 03:04:05 +0200", pa.string(), "timestamp", ts("2024-01-02T01:04:05")),
    ("2024-01-02 03:04:05GMT+1", pa.string(), "timestamp", ts("2024-01-02T02:04:05")),
    ("2024-01-02 03:04:05+02:00", pa.string(), "timestamp_ntz", dt.datetime(2024, 1, 2, 3, 4, 5)),
    (ts("2024-01-02T03:04:05.5"), pa.timestamp("us", tz="UTC"), "int", 1704164645),
    (ts("2024-01-02T03:04:05.5"), pa.timestamp("us", tz="UTC"), "decimal(20,6)", Decimal("1704164645.500000")),
    (dt.datetime(2024, 1, 2, 23, 4, 5), pa.timestamp("us"), "timestamp", ts("2024-01-02T23:04:05")),
    (ts("2024-01-02T23:04:05"), pa.timestamp("us", tz="UTC"), "timestamp_ntz", dt.datetime(2024, 1, 2, 23, 4, 5)),
    (1700000000, pa.int64(), "timestamp", ts("2023-11-14T22:13:20")),
    (1.5, pa.float64(), "timestamp", ts("1970-01-01T00:00:01.500000")),
    (dt.date(2024, 1, 2), pa.date32(), "timestamp", ts("2024-01-02T00:00:00")),
    (ts("2024-01-02T03:04:05.5"), pa.timestamp("us", tz="UTC"), "bigint", 1704164645),
    (ts("1969-12-31T23:59:59.5"), pa.timestamp("us", tz="UTC"), "bigint", -1),
    (ts("2024-01-02T03:04:05.5"), pa.timestamp("us", tz="UTC"), "double", 1704164645.5),
    # values as text
    (1e10, pa.float64(), "string", "1.0E10"),
    (1.0, pa.float64(), "string", "1.0"),
    (0.001, pa.float64(), "string", "0.001"),
    (1e-4, pa.float64(), "string", "1.0E-4"),
    (1e40, pa.float64(), "float", float("inf")),
    (16777217, pa.int64(), "float", 16777216.0),
    (1e7, pa.float64(), "string", "1.0E7"),
    (1234567.0, pa.float64(), "string", "1234567.0"),
    (12345678.9, pa.float64(), "string", "1.23456789E7"),
    (1e10, pa.float32(), "string", "1.0E10"),
    (Decimal("1E-7"), pa.decimal128(10, 8), "string", "0.00000010"),
    (10**20, pa.decimal128(38, 0), "string", "100000000000000000000"),
    (float("nan"), pa.float64(), "string", "NaN"),
    (float("-inf"), pa.float64(), "string", "-Infinity"),
    (-0.0, pa.float64(), "string", "-0.0"),
    (1.1, pa.float32(), "string", "1.1"),
    (Decimal("1.50"), pa.decimal128(3, 2), "string", "1.50"),
    (True, pa.bool_(), "string", "true"),
    (dt.date(2024, 1, 2), pa.date32(), "string", "2024-01-02"),
    (ts("2024-01-02T03:04:05.120"), pa.timestamp("us", tz="UTC"), "string", "2024-01-02 03:04:05.12"),
    (ts("2024-01-02T03:04:05"), pa.timestamp("us", tz="UTC"), "string", "2024-01-02 03:04:05"),
    (b"AB", pa.binary(), "string", "AB"),
    (b"A\xff", pa.binary(), "string", "A\ufffd"),
    ([{"a": 1}], pa.list_(pa.struct([("a", pa.int64())])), "string", "[{1}]"),
    ({"a": None}, pa.struct([("a", pa.int64())]), "string", "{null}"),
    ("héllo", pa.string(), "binary", "héllo".encode()),
    ([1, None], pa.list_(pa.int64()), "string", "[1, null]"),
    ([("k", None)], pa.map_(pa.string(), pa.int64()), "string", "{k -> null}"),
    ({"a": 1, "b": "x"}, pa.struct([("a", pa.int64()), ("b", pa.string())]), "string", "{1, x}"),
    # nested: elements, map values, struct fields by name
    (["1", "2"], pa.list_(pa.string()), "array<int>", [1, 2]),
    (["x"], pa.list_(pa.string()), "array<int>", ERROR),
    ([("a", "5")], pa.map_(pa.string(), pa.string()), "map<string,int>", [("a", 5)]),
    ({"y": 5, "x": "7"}, pa.struct([("y", pa.int64()), ("x", pa.string())]), "struct<x:int,y:string>",
     {"x": 7, "y": "5"}),
]


@pytest.mark.parametrize(("value", "arrow", "to", "expected"), CASES, ids=[f"{c[0]!r}->{c[2]}" for c in CASES])
def test_store_assign_gives_what_spark_gave(value: Any, arrow: pa.DataType, to: str, expected: Any) -> None:
    values = pa.array([value, None], arrow)
    column = parse_data_type_sql(to)
    if expected is ERROR:
        with pytest.raises(CastError, match="'c") as info:
            store_assign(values, column, column="c")
        assert (info.value.column or "").startswith("c")
        return
    got = store_assign(values, column, column="c")
    assert got.type == store_assign(pa.nulls(0, arrow), column, column="c").type
    out = got.to_pylist()
    assert out[1] is None
    if isinstance(expected, float) and expected != expected:
        assert out[0] != out[0]
    else:
        assert out[0] == expected


# Spark's Cast.canAnsiCast for atomic types (rows: from; Y = allowed), printed from Spark 4.2.0's JVM.
_TYPES = ["tinyint", "smallint", "int", "bigint", "float", "double", "decimal(10,2)", "string", "binary",
          "boolean", "date", "timestamp", "timestamp_ntz"]
_MATRIX = {
    "tinyint":       "YYYYYYYY-Y-Y-",
    "smallint":      "YYYYYYYY-Y-Y-",
    "int":           "YYYYYYYY-Y-Y-",
    "bigint":        "YYYYYYYY-Y-Y-",
    "float":         "YYYYYYYY-Y-Y-",
    "double":        "YYYYYYYY-Y-Y-",
    "decimal(10,2)": "YYYYYYYY-Y-Y-",
    "string":        "YYYYYYYYYYYYY",
    "binary":        "-------YY----",
    "boolean":       "YYYYYYYY-Y---",
    "date":          "-------Y--YYY",
    "timestamp":     "YYYYYYYY--YYY",
    "timestamp_ntz": "-------Y--YYY",
}


@pytest.mark.parametrize("source", _TYPES)
def test_the_planning_rule_is_sparks_ansi_cast_matrix(source: str) -> None:
    got = "".join("Y" if can_cast(parse_data_type_sql(source), parse_data_type_sql(t)) else "-" for t in _TYPES)
    assert got == _MATRIX[source]


def test_a_struct_value_is_matched_by_name_and_may_lack_fields_only_with_evolution() -> None:
    column = parse_data_type_sql("struct<a:int,b:string>")
    partial = pa.struct([("B", pa.string())])
    assert assignment_problem(partial, column, "s", missing_fields=True) is None
    assert "lacks field(s) 's.a'" in (assignment_problem(partial, column, "s", missing_fields=False) or "")
    extra = pa.struct([("a", pa.int32()), ("c", pa.int32())])
    assert "'s.c'" in (assignment_problem(extra, column, "s") or "")
    assert store_assign(pa.array([{"B": "x"}, None], partial), column, column="s").to_pylist() == [
        {"a": None, "b": "x"}, None]


def test_a_date_into_a_number_column_is_refused_at_planning() -> None:
    assert assignment_problem(pa.date32(), parse_data_type_sql("bigint"), "n") == (
        "'n' has type bigint, the value has type date")
    assert assignment_problem(pa.null(), parse_data_type_sql("date"), "n") is None

"""The ALTER TABLE parser: every statement form of Delta's docs, types, and errors with positions."""

from __future__ import annotations

import pytest

from airflow_provider_delta.core.schema.ddl import (
    AddColumns,
    AlterColumn,
    ColumnSpec,
    DropColumns,
    RenameColumn,
    ReplaceColumns,
    SetProperties,
    UnsetProperties,
    parse_alter,
    parse_data_type_sql,
)
from airflow_provider_delta.core.schema.types import (
    ArrayType,
    DecimalType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNtzType,
)
from airflow_provider_delta.exceptions import DDLParseError, SchemaEvolutionError


def test_add_columns_with_nested_path_position_and_comment():
    stmt = parse_alter(
        "ALTER TABLE boxes ADD COLUMNS (colB.nested STRING AFTER field1, id BIGINT COMMENT 'the key' FIRST)"
    )
    assert stmt == AddColumns(
        (
            ColumnSpec(("colB", "nested"), StringType(), after="field1"),
            ColumnSpec(("id",), LongType(), comment="the key", first=True),
        )
    )


def test_add_column_without_parentheses_and_not_null():
    assert parse_alter("alter table delta.`/data/t` add column x INT NOT NULL;") == AddColumns(
        (ColumnSpec(("x",), IntegerType(), nullable=False),)
    )


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("ALTER TABLE t ALTER COLUMN colB.field2 FIRST", AlterColumn(("colB", "field2"), first=True)),
        ("ALTER TABLE t ALTER colA AFTER colB", AlterColumn(("colA",), after="colB")),
        ("ALTER TABLE t CHANGE COLUMN colA COMMENT 'it''s A'", AlterColumn(("colA",), comment="it's A")),
        ("ALTER TABLE t ALTER COLUMN x DROP NOT NULL", AlterColumn(("x",), drop_not_null=True)),
        ("ALTER TABLE t RENAME COLUMN colB.field1 TO field001", RenameColumn(("colB", "field1"), "field001")),
        ("ALTER TABLE t RENAME COLUMN `a b` TO `c.d`", RenameColumn(("a b",), "c.d")),
        ("ALTER TABLE t DROP COLUMN c", DropColumns((("c",),))),
        ("ALTER TABLE t DROP COLUMNS (a, b.c)", DropColumns((("a",), ("b", "c")))),
        ("ALTER TABLE t DROP COLUMN IF EXISTS a", DropColumns((("a",),), if_exists=True)),
        (
            "ALTER TABLE t SET TBLPROPERTIES ('delta.enableChangeDataFeed' = true, delta.appendOnly = 'false', "
            "'n' = 5)",
            SetProperties({"delta.enableChangeDataFeed": "true", "delta.appendOnly": "false", "n": "5"}),
        ),
        (
            "ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('a', b.c)",
            UnsetProperties(("a", "b.c"), if_exists=True),
        ),
        ("RENAME COLUMN a TO b", RenameColumn(("a",), "b")),
    ],
)
def test_statements_parse(sql, expected):
    assert parse_alter(sql) == expected


def test_replace_columns_parses_the_docs_example_exactly():
    stmt = parse_alter(
        "ALTER TABLE boxes REPLACE COLUMNS (colC STRING, colB STRUCT<field2:STRING, "
        "nested:STRING, field1:STRING>, colA STRING)"
    )
    assert isinstance(stmt, ReplaceColumns)
    colb = StructType(tuple(StructField(n, StringType()) for n in ("field2", "nested", "field1")))
    assert stmt.schema == StructType(
        (StructField("colC", StringType()), StructField("colB", colb), StructField("colA", StringType()))
    )


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("DECIMAL(10,2)", DecimalType(10, 2)),
        ("decimal", DecimalType(10, 0)),
        ("TIMESTAMP_NTZ", TimestampNtzType()),
        ("ARRAY<MAP<STRING, ARRAY<INT>>>", ArrayType(MapType(StringType(), ArrayType(IntegerType())))),
        (
            "STRUCT<a:STRING, b INT NOT NULL COMMENT 'bee'>",
            StructType(
                (StructField("a", StringType()), StructField("b", IntegerType(), False, {"comment": "bee"}))
            ),
        ),
    ],
)
def test_types_parse(sql, expected):
    assert parse_data_type_sql(sql) == expected


@pytest.mark.parametrize(
    ("sql", "position", "match"),
    [
        ("ALTER TABLE t ADD COLUMNS (x)", 28, r"expected a data type at position 28, found '\)'"),
        ("ALTER TABLE t ADD COLUMNS (x FOO)", 29, "unknown data type 'FOO' at position 29"),
        ("ALTER TABLE t FROB x", 14, "expected ADD or ALTER"),
        ("ALTER TABLE t ADD COLUMNS (x INT", 32, r"expected '\)' at position 32, found end of statement"),
        ("ALTER TABLE t ALTER COLUMN x TYPE BIGINT", 29, "TYPE at position 29 is not supported"),
        ("ALTER TABLE t RENAME COLUMN a TO", 32, "expected a column name at position 32"),
        ("ALTER TABLE t ADD COLUMNS (x DECIMAL(40, 2))", 29, "precision must be between 1 and 38"),
        ("ALTER TABLE t ADD COLUMNS (x INT) extra", 34, "expected end of statement"),
        ("ALTER TABLE t ADD COLUMNS (x INT DEFAULT 1)", 33, "DEFAULT at position 33 is not supported"),
        ("ALTER TABLE t SET TBLPROPERTIES ('a' = )", 39, "expected a property value"),
        ("ALTER TABLE t ADD COLUMNS (x STRUCT<a:INT, a:INT>)", 49, "duplicate field name 'a'"),
        ("ALTER TABLE t ADD COLUMNS (x INT) # ", 34, r"unexpected character '#' at position 34"),
    ],
)
def test_parse_errors_name_the_statement_and_position(sql, position, match):
    with pytest.raises(DDLParseError, match=match) as info:
        parse_alter(sql)
    assert info.value.statement == sql
    assert info.value.position == position
    assert repr(sql) in str(info.value)
    assert isinstance(info.value, SchemaEvolutionError)

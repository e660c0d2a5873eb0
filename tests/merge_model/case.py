"""A MERGE case in plain Python: schemas, rows, clauses, and how it reads as Spark SQL.

Types are ``"int"``, ``"bigint"``, ``"string"`` or ``"void"`` (a column that holds only NULLs),
:class:`Struct`, :class:`Array` and :class:`Map`; every field is nullable. Rows are dicts (structs
are dicts too, arrays lists, maps lists of ``(key, value)`` pairs, as pyarrow's ``to_pylist`` gives
them). Every table has a top-level ``k`` (``bigint``, never NULL) and the statement joins on
``t.k = s.k``; source keys are distinct.

:meth:`MergeCase.statement` is the MERGE as Spark SQL, so the same case runs through the engine
(``DeltaTable.merge_sql``, ``merge_delta_sql``) and through delta-spark's ``MERGE INTO``;
:func:`ddl` gives the schemas as Spark DDL and :func:`arrow_type` as Arrow types.

Example:
    >>> case = MergeCase(
    ...     Struct((("k", "bigint"), ("x", Struct((("a", "int"),))))), ({"k": 1, "x": {"a": 1}},),
    ...     Struct((("k", "bigint"), ("x", Struct((("a", "int"), ("b", "int")))))), ({"k": 1, "x": None},),
    ...     (Clause("matched", "update"),), evolution=True,
    ... )
    >>> case.statement("tbl", "src")
    'MERGE WITH SCHEMA EVOLUTION INTO tbl t USING src s ON t.k = s.k WHEN MATCHED THEN UPDATE SET *'
    >>> ddl(case.source_schema)
    '`k` BIGINT, `x` STRUCT<`a`: INT, `b`: INT>'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa

__all__ = [
    "Array",
    "Clause",
    "Condition",
    "Map",
    "MergeCase",
    "Struct",
    "Type",
    "Value",
    "arrow_type",
    "ddl",
    "field_of",
    "spark_rows",
    "type_sql",
]


@dataclass(frozen=True)
class Struct:
    fields: tuple[tuple[str, Type], ...]

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.fields]


@dataclass(frozen=True)
class Array:
    element: Type


@dataclass(frozen=True)
class Map:
    key: Type
    value: Type


Type = str | Struct | Array | Map


def field_of(struct: Struct, name: str) -> tuple[str, Type] | None:
    """The field named ``name`` ignoring case (Delta resolves names case-insensitively)."""
    for n, t in struct.fields:
        if n.lower() == name.lower():
            return n, t
    return None


# --------------------------------------------------------------------------------------- clauses


@dataclass(frozen=True)
class Value:
    """An assigned value: a column of an alias (``("s", ("x", "a"))``), NULL, or an integer literal."""

    alias: str | None = None
    path: tuple[str, ...] = ()
    literal: int | None = None

    def sql(self) -> str:
        if self.alias is not None:
            return ".".join([self.alias, *(_quote(p) for p in self.path)])
        return "NULL" if self.literal is None else str(self.literal)


@dataclass(frozen=True)
class Condition:
    """``<alias>.k <op> <number>``."""

    alias: str
    op: Literal[">", "<"]
    number: int

    def sql(self) -> str:
        return f"{self.alias}.k {self.op} {self.number}"

    def holds(self, key: int) -> bool:
        return key > self.number if self.op == ">" else key < self.number


@dataclass(frozen=True)
class Clause:
    """One WHEN clause; ``assignments`` None is ``UPDATE SET *`` / ``INSERT *``."""

    kind: Literal["matched", "not_matched", "not_matched_by_source"]
    action: Literal["update", "delete", "insert"]
    condition: Condition | None = None
    assignments: tuple[tuple[tuple[str, ...], Value], ...] | None = None

    @property
    def is_star(self) -> bool:
        return self.action != "delete" and self.assignments is None

    def sql(self) -> str:
        head = {
            "matched": "WHEN MATCHED",
            "not_matched": "WHEN NOT MATCHED",
            "not_matched_by_source": "WHEN NOT MATCHED BY SOURCE",
        }[self.kind]
        if self.condition is not None:
            head += f" AND {self.condition.sql()}"
        if self.action == "delete":
            return f"{head} THEN DELETE"
        if self.assignments is None:
            return f"{head} THEN {'UPDATE SET *' if self.action == 'update' else 'INSERT *'}"
        targets = [".".join(_quote(p) for p in path) for path, _ in self.assignments]
        values = [v.sql() for _, v in self.assignments]
        if self.action == "update":
            return f"{head} THEN UPDATE SET " + ", ".join(f"{t} = {v}" for t, v in zip(targets, values))
        return f"{head} THEN INSERT ({', '.join(targets)}) VALUES ({', '.join(values)})"


@dataclass(frozen=True)
class MergeCase:
    """Target schema and rows, source schema and rows, the clauses, and whether the schema may evolve."""

    target_schema: Struct
    target_rows: tuple[dict[str, Any], ...]
    source_schema: Struct
    source_rows: tuple[dict[str, Any], ...]
    clauses: tuple[Clause, ...]
    evolution: bool

    def statement(self, target: str = "target", source: str = "source") -> str:
        """The MERGE as Spark SQL (target alias ``t``, source alias ``s``)."""
        head = "MERGE WITH SCHEMA EVOLUTION INTO" if self.evolution else "MERGE INTO"
        clauses = " ".join(c.sql() for c in self.clauses)
        return f"{head} {target} t USING {source} s ON t.k = s.k {clauses}"


# ------------------------------------------------------------------------------------- renderings


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def type_sql(t: Type) -> str:
    """The type as Spark SQL DDL."""
    if isinstance(t, Struct):
        return "STRUCT<" + ", ".join(f"{_quote(n)}: {type_sql(ft)}" for n, ft in t.fields) + ">"
    if isinstance(t, Array):
        return f"ARRAY<{type_sql(t.element)}>"
    if isinstance(t, Map):
        return f"MAP<{type_sql(t.key)}, {type_sql(t.value)}>"
    return t.upper()


def ddl(schema: Struct) -> str:
    """A table schema as Spark DDL (``CREATE TABLE``'s column list, ``createDataFrame``'s schema)."""
    return ", ".join(f"{_quote(n)} {type_sql(t)}" for n, t in schema.fields)


_ARROW = {"int": pa.int32(), "bigint": pa.int64(), "string": pa.string(), "void": pa.null()}


def arrow_type(t: Type) -> pa.DataType:
    """The type as Arrow (what the engine's Delta types map to)."""
    if isinstance(t, Struct):
        return pa.struct([(n, arrow_type(ft)) for n, ft in t.fields])
    if isinstance(t, Array):
        return pa.list_(arrow_type(t.element))
    if isinstance(t, Map):
        return pa.map_(arrow_type(t.key), arrow_type(t.value))
    return _ARROW[t]


def _spark_value(value: Any, t: Type) -> Any:
    if value is None:
        return None
    if isinstance(t, Struct):
        return {n: _spark_value(value.get(n), ft) for n, ft in t.fields}
    if isinstance(t, Array):
        return [_spark_value(v, t.element) for v in value]
    if isinstance(t, Map):
        return {k: _spark_value(v, t.value) for k, v in value}
    return value


def spark_rows(schema: Struct, rows: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """The rows as PySpark's ``createDataFrame(rows, ddl(schema))`` takes them (maps as dicts).

    How the cases ran on delta-spark (the values of :mod:`.regressions`)::

        spark.createDataFrame(spark_rows(case.target_schema, case.target_rows), ddl(case.target_schema)) \
            .write.format("delta").save(path)
        spark.createDataFrame(spark_rows(case.source_schema, case.source_rows), ddl(case.source_schema)) \
            .createOrReplaceTempView("source")
        spark.sql(case.statement(f"delta.`{path}`", "source"))
    """
    return [_spark_value(r, schema) for r in rows]

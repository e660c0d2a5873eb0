"""How MERGE resolves the column names its assignments write to, as Spark's analyzer does for Delta.

A name ``a.b.c`` is read against a relation known by an alias the way Spark's ``LogicalPlan.resolve``
reads it: first as ``alias.column[.field...]`` when ``a`` is the alias and the relation has a column
``b``; otherwise as ``column.field...`` starting at ``a``. Case is ignored. So with target alias ``t`` and
a struct column also named ``t``, ``SET t.b = ...`` writes the struct field ``t.b`` unless the table
has a column ``b``.

The left side of an assignment is resolved against the target; when that fails and schema evolution
is on (and the clause is not NOT MATCHED BY SOURCE), against the source (Delta's
``DeltaMergeActionResolver``), which is how ``SET s.new = s.new`` or ``SET new = s.new`` names a
column to add. An INSERT column list names top-level columns only
(``DELTA_UNSUPPORTED_NESTED_FIELD_IN_OPERATION``); a name listed twice exactly is an error
(``DELTA_DUPLICATE_COLUMNS_ON_INSERT``), while names that differ only in case all resolve and the first
of them gives the column its value (Delta's alignment takes the first match).

Example:
    >>> from airflow_provider_delta.core.schema.types import IntegerType, StructField, StructType
    >>> target = StructType((StructField("t", StructType((StructField("b", IntegerType()),))),))
    >>> resolve_name(target, ("t", "b"), "t")
    ('t', 'b')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_delta.core.expressions import Column, parse_expression
from airflow_provider_delta.core.schema.types import StructType
from airflow_provider_delta.exceptions import MergeError, PredicateError, SchemaError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_delta.core.schema.types import DataType

__all__ = ["find_path", "insert_columns", "name_parts", "resolve_name"]


def name_parts(column: str, where: str) -> tuple[str, ...]:
    """The parts of a (possibly qualified, nested or back-quoted) column name as written.

    Raises:
        MergeError: ``column`` is not a column name.
    """
    try:
        expr = parse_expression(column, qualifiers=())
    except PredicateError:
        return (column,)
    if not isinstance(expr, Column):
        raise MergeError(f"Cannot resolve {column!r} in {where}: it is not a column name", clause=where, column=column)
    return expr.path


def find_path(struct: StructType, parts: Sequence[str]) -> tuple[str, ...] | None:
    """``parts`` in the schema's spelling (names ignore case), or None when some step is missing."""
    out: list[str] = []
    current: DataType = struct
    for name in parts:
        if not isinstance(current, StructType):
            return None
        try:
            f = current.get(name, case_sensitive=False)
        except SchemaError:
            return None
        if f is None:
            return None
        out.append(f.name)
        current = f.type
    return tuple(out)


def _has_column(schema: StructType, name: str) -> bool:
    try:
        return schema.get(name, case_sensitive=False) is not None
    except SchemaError:
        return True  # ambiguous names resolve (and fail) as columns


def resolve_name(schema: StructType, parts: Sequence[str], alias: str) -> tuple[str, ...] | None:
    """``parts`` as a path in ``schema`` (its spelling), read as Spark reads a name against a relation
    called ``alias``; None when it does not resolve.

    Spark commits to the first reading whose top-level column exists: ``alias.column...`` first, then
    ``column...``; a nested field missing under that column leaves the name unresolved.
    """
    if len(parts) >= 2 and parts[0].lower() == alias.lower() and _has_column(schema, parts[1]):
        return find_path(schema, parts[1:])
    if _has_column(schema, parts[0]):
        return find_path(schema, parts)
    return None


def insert_columns(paths: Sequence[tuple[str, ...]], written: Sequence[str], where: str) -> list[bool]:
    """Check an INSERT column list (``paths`` resolved, ``written`` as the user spelt them) and return,
    per column, whether it gives the column its value (False: a later, case-different duplicate).

    Raises:
        MergeError: a nested field is listed, or a name is listed twice.
    """
    for path, text in zip(paths, written, strict=True):
        if len(path) > 1:
            field = ".".join(f"`{p}`" for p in path)
            raise MergeError(
                f"Cannot insert into {field} in {where}: Nested field is not supported in the INSERT clause "
                f"of MERGE operation (DELTA_UNSUPPORTED_NESTED_FIELD_IN_OPERATION). Help: insert the whole "
                f"struct, e.g. INSERT ({path[0]}) VALUES (named_struct(...))",
                clause=where,
                column=text,
            )
    spelt = [name_parts(text, where)[-1] for text in written]
    if len(set(spelt)) < len(spelt):
        twice = next(n for n in spelt if spelt.count(n) > 1)
        raise MergeError(
            f"Cannot merge: duplicate column names in the INSERT clause of {where}: {twice!r} is listed "
            "twice (DELTA_DUPLICATE_COLUMNS_ON_INSERT)",
            clause=where,
            column=twice,
        )
    seen: set[str] = set()
    first: list[bool] = []
    for path in paths:
        key = path[0].lower()
        first.append(key not in seen)
        seen.add(key)
    return first

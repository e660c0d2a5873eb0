"""Pure schema transforms for schema evolution: merge (Delta's ``mergeSchema``), add, move, comment,
rename, drop and replace columns. No I/O: every function takes a :class:`StructType` and returns a
new one, or raises :class:`~airflow_provider_delta.exceptions.SchemaEvolutionError` naming the
column and the reason.

Column paths are tuples of field names (``("colB", "nested")``) or dotted strings
(``"colB.nested"``; back-quote a name that contains a dot: ```a.b`.c``). Existing names are matched
ignoring case, as Delta does; new names keep their case.

    >>> from airflow_provider_delta.core.schema.types import LongType, StringType, StructField, StructType
    >>> table = StructType((StructField("id", LongType()),))
    >>> data = StructType((StructField("ID", LongType()), StructField("Name", StringType())))
    >>> merge_schemas(table, data).names
    ('id', 'Name')
    >>> add_column(table, "note", StringType(), first=True).names
    ('note', 'id')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.schema.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNtzType,
    TimestampType,
)
from airflow_provider_delta.exceptions import SchemaError, SchemaEvolutionError

if TYPE_CHECKING:
    from collections.abc import Iterable

ColumnPath = tuple[str, ...]
PathLike = str | Sequence[str]

COMMENT_KEY = "comment"

# Parquet stores byte, short and int alike, so Delta's mergeSchema widens among them (and only them)
# without the typeWidening feature (SchemaMergingUtils.mergeSchemas).
_SMALL_INTEGERS: dict[type[DataType], int] = {ByteType: 1, ShortType: 2, IntegerType: 3}
_NUMERIC = (ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, DecimalType)


# --- merge (mergeSchema) --------------------------------------------------------------------------


def merge_schemas(
    current: StructType,
    incoming: StructType,
    *,
    case_sensitive: bool = False,
    allow_implicit_conversions: bool = False,
    keep_existing_type: bool = False,
) -> StructType:
    """Merge ``incoming`` (the data's schema) into ``current`` (the table's) as Delta's mergeSchema does.

    Rules (Delta's ``SchemaMergingUtils.mergeSchemas``):

    - existing fields keep their position, name, nullability and metadata; names match ignoring case;
    - fields only in ``incoming`` are appended at the end of their struct (top level or nested,
      including structs inside array elements and map keys/values), with their case and nullability;
    - a ``NullType`` arriving for an existing field keeps the existing type; an existing
      ``NullType`` field takes the incoming type;
    - ``byte``, ``short`` and ``int`` merge to the wider of the two; decimals must be equal;
    - any other type difference is an error, unless ``keep_existing_type`` (keep the table's type)
      or ``allow_implicit_conversions`` (keep the table's type when Spark would cast the incoming
      type to it implicitly, as MERGE does).

    Callers writing data pass the data's schema made nullable, as Delta does.

    Args:
        current: the table's schema.
        incoming: the schema to merge in.
        case_sensitive: match names exactly instead of ignoring case.
        allow_implicit_conversions: accept types that implicitly cast to the table's type.
        keep_existing_type: keep the table's type for every existing primitive field.

    Returns:
        The merged schema (``current`` itself when nothing changes).

    Raises:
        SchemaEvolutionError: duplicate names in ``incoming`` or incompatible types, naming the column.

    Example:
        >>> from airflow_provider_delta.core.schema.types import IntegerType, LongType, StructField, StructType
        >>> merge_schemas(StructType((StructField("a", IntegerType()),)),
        ...               StructType((StructField("A", IntegerType()), StructField("b", LongType())))).names
        ('a', 'b')
    """
    _check_duplicates(incoming, (), case_sensitive)
    merger = _Merger(case_sensitive, allow_implicit_conversions, keep_existing_type)
    merged = merger.merge(current, incoming, ())
    assert isinstance(merged, StructType)
    return current if merged == current else merged


def _check_duplicates(dt: DataType, path: ColumnPath, case_sensitive: bool) -> None:
    if isinstance(dt, StructType):
        seen: dict[str, str] = {}
        for f in dt.fields:
            key = f.name if case_sensitive else f.name.casefold()
            if key in seen:
                raise SchemaEvolutionError(
                    f"Cannot merge schema: column {_dotted((*path, f.name))!r} appears twice in the data "
                    f"(as {seen[key]!r} and {f.name!r})"
                )
            seen[key] = f.name
            _check_duplicates(f.type, (*path, f.name), case_sensitive)
    elif isinstance(dt, ArrayType):
        _check_duplicates(dt.element_type, (*path, "element"), case_sensitive)
    elif isinstance(dt, MapType):
        _check_duplicates(dt.key_type, (*path, "key"), case_sensitive)
        _check_duplicates(dt.value_type, (*path, "value"), case_sensitive)


class _Merger:
    def __init__(self, case_sensitive: bool, implicit: bool, keep_existing: bool) -> None:
        self.case_sensitive = case_sensitive
        self.implicit = implicit
        self.keep_existing = keep_existing

    def merge(self, current: DataType, update: DataType, path: ColumnPath) -> DataType:
        if isinstance(current, StructType) and isinstance(update, StructType):
            return self._merge_struct(current, update, path)
        if isinstance(current, ArrayType) and isinstance(update, ArrayType):
            element = self.merge(current.element_type, update.element_type, (*path, "element"))
            return ArrayType(element, current.contains_null)
        if isinstance(current, MapType) and isinstance(update, MapType):
            key = self.merge(current.key_type, update.key_type, (*path, "key"))
            value = self.merge(current.value_type, update.value_type, (*path, "value"))
            return MapType(key, value, current.value_contains_null)
        return self._merge_leaf(current, update, path)

    def _merge_struct(self, current: StructType, update: StructType, path: ColumnPath) -> StructType:
        fields = []
        matched: set[int] = set()
        for f in current.fields:
            i = _find(update, f.name, self.case_sensitive)
            if i is None:
                fields.append(f)
                continue
            matched.add(i)
            merged = self.merge(f.type, update.fields[i].type, (*path, f.name))
            fields.append(f if merged == f.type else f.with_type(merged))
        fields += [u for i, u in enumerate(update.fields) if i not in matched]
        return StructType(tuple(fields))

    def _merge_leaf(self, current: DataType, update: DataType, path: ColumnPath) -> DataType:
        if current == update or isinstance(update, NullType):
            return current
        if isinstance(current, NullType):
            return update
        nested = (StructType, ArrayType, MapType)
        if self.keep_existing and not isinstance(current, nested) and not isinstance(update, nested):
            return current
        if self.implicit and implicitly_castable(update, current):
            return current
        if isinstance(current, DecimalType) and isinstance(update, DecimalType):
            raise SchemaEvolutionError(
                f"Cannot merge column {_dotted(path)!r}: decimal types with different precision or scale "
                f"are incompatible (table {current.simple_string()}, data {update.simple_string()})"
            )
        rank_current, rank_update = _SMALL_INTEGERS.get(type(current)), _SMALL_INTEGERS.get(type(update))
        if rank_current is not None and rank_update is not None:
            return current if rank_current >= rank_update else update
        raise SchemaEvolutionError(
            f"Cannot merge column {_dotted(path)!r}: incompatible types, table has "
            f"{current.simple_string()} and the data has {update.simple_string()}. Help: cast the data to "
            f"{current.simple_string()}, or change the column's type with schema_mode='overwrite'."
        )


def implicitly_castable(source: DataType, target: DataType) -> bool:
    """Whether Spark casts ``source`` to ``target`` implicitly (``TypeCoercion.implicitCast``).

    Example:
        >>> implicitly_castable(IntegerType(), LongType()), implicitly_castable(BinaryType(), DateType())
        (True, False)
    """
    if source == target:
        return True
    if isinstance(source, _NUMERIC) and isinstance(target, _NUMERIC):
        return True
    if isinstance(target, StringType):
        return isinstance(source, (*_NUMERIC, BooleanType, DateType, TimestampType, TimestampNtzType, BinaryType))
    if isinstance(source, StringType):
        return isinstance(target, (*_NUMERIC, DateType, TimestampType, TimestampNtzType, BinaryType))
    temporal = (DateType, TimestampType, TimestampNtzType)
    return isinstance(source, temporal) and isinstance(target, temporal)


def as_nullable(dt: DataType) -> DataType:
    """Return ``dt`` with every field, array element and map value nullable (Spark's ``asNullable``)."""
    if isinstance(dt, StructType):
        return StructType(tuple(StructField(f.name, as_nullable(f.type), True, f.metadata) for f in dt.fields))
    if isinstance(dt, ArrayType):
        return ArrayType(as_nullable(dt.element_type), True)
    if isinstance(dt, MapType):
        return MapType(as_nullable(dt.key_type), as_nullable(dt.value_type), True)
    return dt


# --- paths ----------------------------------------------------------------------------------------


def parse_column_path(path: PathLike) -> ColumnPath:
    """Split ``"a.b"`` into ``("a", "b")``; back-quoted parts may contain dots (```a.b`.c``).

    Raises:
        SchemaEvolutionError: an empty part or an unclosed back quote.

    Example:
        >>> parse_column_path("colB.`x.y`")
        ('colB', 'x.y')
    """
    if not isinstance(path, str):
        parts = tuple(str(p) for p in path)
        if not parts or not all(parts):
            raise SchemaEvolutionError(f"Cannot use column path {list(path)!r}: empty name")
        return parts
    out: list[str] = []
    i, n = 0, len(path)
    while i <= n:
        if i < n and path[i] == "`":
            name, i = _quoted(path, i)
        else:
            j = path.find(".", i)
            j = n if j < 0 else j
            name, i = path[i:j].strip(), j
        if not name:
            raise SchemaEvolutionError(f"Cannot use column path {path!r}: empty name")
        out.append(name)
        if i < n and path[i] != ".":
            raise SchemaEvolutionError(f"Cannot use column path {path!r}: expected '.' at position {i}")
        i += 1
    return tuple(out)


def _quoted(text: str, start: int) -> tuple[str, int]:
    parts, i = [], start + 1
    while True:
        j = text.find("`", i)
        if j < 0:
            raise SchemaEvolutionError(f"Cannot use column path {text!r}: unclosed back quote at {start}")
        parts.append(text[i:j])
        if j + 1 < len(text) and text[j + 1] == "`":  # `` is an escaped back quote
            parts.append("`")
            i = j + 2
            continue
        return "".join(parts), j + 1


def _dotted(path: Iterable[str]) -> str:
    return ".".join(f"`{p}`" if "." in p else p for p in path)


def _find(struct: StructType, name: str, case_sensitive: bool = False) -> int | None:
    try:
        return struct._find(name, case_sensitive=case_sensitive)
    except SchemaError as err:
        raise SchemaEvolutionError(f"Cannot resolve column {name!r}: {err}") from err


def resolve_column(schema: StructType, path: PathLike, *, action: str = "find") -> tuple[ColumnPath, StructField]:
    """Resolve a (nested) column ignoring case; return its path with the schema's spelling and the field.

    Raises:
        SchemaEvolutionError: no such column, or a step is not a struct (arrays and maps are named).
    """
    parts = parse_column_path(path)
    resolved: list[str] = []
    struct: DataType = schema
    found: StructField | None = None
    for depth, name in enumerate(parts):
        if not isinstance(struct, StructType):
            raise _not_struct(action, parts, resolved, struct)
        i = _find(struct, name)
        if i is None:
            where = "the table" if depth == 0 else repr(_dotted(resolved))
            raise SchemaEvolutionError(
                f"Cannot {action} column {_dotted(parts)!r}: no column {name!r} in {where} "
                f"(columns: {', '.join(struct.names)})"
            )
        found = struct.fields[i]
        resolved.append(found.name)
        struct = found.type
    assert found is not None
    return tuple(resolved), found


def _not_struct(action: str, parts: ColumnPath, resolved: Sequence[str], dt: DataType) -> SchemaEvolutionError:
    kind = "an array" if isinstance(dt, ArrayType) else "a map" if isinstance(dt, MapType) else dt.simple_string()
    return SchemaEvolutionError(
        f"Cannot {action} column {_dotted(parts)!r}: {_dotted(resolved)!r} is {kind}, not a struct; nested "
        "columns can be changed only inside structs"
    )


def _update_struct(
    schema: StructType, parent: ColumnPath, action: str, change: Callable[[StructType], StructType]
) -> StructType:
    """Apply ``change`` to the struct at ``parent`` (the top level when empty)."""
    if not parent:
        return change(schema)
    i = _find(schema, parent[0])
    assert i is not None
    f = schema.fields[i]
    if not isinstance(f.type, StructType):
        raise _not_struct(action, parent, parent[:1], f.type)
    new_type = _update_struct(f.type, parent[1:], action, change)
    return _replace_field(schema, i, f.with_type(new_type))


def _replace_field(struct: StructType, index: int, new: StructField) -> StructType:
    fields = list(struct.fields)
    fields[index] = new
    return StructType(tuple(fields))


def _parent_struct(schema: StructType, path: ColumnPath, action: str) -> tuple[ColumnPath, StructType]:
    if len(path) == 1:
        return (), schema
    parent, field = resolve_column(schema, path[:-1], action=action)
    if not isinstance(field.type, StructType):
        raise _not_struct(action, path, parent, field.type)
    return parent, field.type


def _with_comment(f: StructField, comment: str | None) -> StructField:
    metadata: dict[str, Any] = dict(f.metadata)
    if comment is None:
        metadata.pop(COMMENT_KEY, None)
    else:
        metadata[COMMENT_KEY] = comment
    return f.with_metadata(metadata)


def _position(struct: StructType, fields: list[StructField], first: bool, after: str | None,
              path: ColumnPath, action: str) -> int:
    if first and after is not None:
        raise SchemaEvolutionError(f"Cannot {action} column {_dotted(path)!r}: give FIRST or AFTER, not both")
    if first:
        return 0
    if after is None:
        return len(fields)
    after_name = parse_column_path(after)[-1]
    for i, f in enumerate(fields):
        if f.name.casefold() == after_name.casefold():
            return i + 1
    raise SchemaEvolutionError(
        f"Cannot {action} column {_dotted(path)!r} AFTER {after!r}: no such column in "
        f"{_dotted(path[:-1]) or 'the table'!r} (columns: {', '.join(struct.names)})"
    )


# --- explicit changes -----------------------------------------------------------------------------


def add_column(
    schema: StructType,
    path: PathLike,
    data_type: DataType,
    *,
    nullable: bool = True,
    comment: str | None = None,
    first: bool = False,
    after: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> StructType:
    """Add a column at the top level or inside a struct (``"colB.nested"``), at the end by default.

    Args:
        schema: the schema to change.
        path: the new column's path; every step but the last must name an existing struct.
        data_type: its type.
        nullable: whether it may be null (default True, as ``ADD COLUMNS``).
        comment: its comment.
        first: put it first in its struct.
        after: put it after this sibling (a name in the same struct, or its full path).
        metadata: extra column metadata.

    Raises:
        SchemaEvolutionError: the name exists, the parent is missing or is an array/map, or the
            position names no sibling.

    Example:
        >>> from airflow_provider_delta.core.schema.types import StringType, StructField, StructType
        >>> s = StructType((StructField("b", StructType((StructField("f1", StringType()),
        ...     StructField("f2", StringType())))),))
        >>> add_column(s, "b.n", StringType(), after="f1")["b"].type.names
        ('f1', 'n', 'f2')
    """
    parts = parse_column_path(path)
    parent, struct = _parent_struct(schema, parts, "add")
    name = parts[-1]
    if _find(struct, name) is not None:
        raise SchemaEvolutionError(f"Cannot add column {_dotted(parts)!r}: a column with that name already exists")
    meta = dict(metadata or {})
    if comment is not None:
        meta[COMMENT_KEY] = comment
    new = StructField(name, data_type, nullable, meta)

    def change(s: StructType) -> StructType:
        fields = list(s.fields)
        fields.insert(_position(s, fields, first, after, parts, "add"), new)
        return StructType(tuple(fields))

    return _update_struct(schema, parent, "add", change)


def update_column(
    schema: StructType,
    path: PathLike,
    *,
    comment: str | None = None,
    clear_comment: bool = False,
    first: bool = False,
    after: str | None = None,
) -> StructType:
    """Change a column's comment and/or position (``ALTER COLUMN c COMMENT 'x' | FIRST | AFTER a``).

    Raises:
        SchemaEvolutionError: no such column, or the position names no sibling.

    Example:
        >>> from airflow_provider_delta.core.schema.types import StringType, StructField, StructType
        >>> s = StructType((StructField("a", StringType()), StructField("b", StringType())))
        >>> update_column(s, "B", first=True).names
        ('b', 'a')
    """
    parts, field = resolve_column(schema, path, action="alter")
    if comment is not None or clear_comment:
        field = _with_comment(field, comment)
    new = field

    def change(s: StructType) -> StructType:
        fields = [f for f in s.fields if f.name != parts[-1]]
        moving = first or after is not None
        index = _position(s, fields, first, after, parts, "move") if moving else s.names.index(parts[-1])
        if after is not None and parse_column_path(after)[-1].casefold() == parts[-1].casefold():
            raise SchemaEvolutionError(f"Cannot move column {_dotted(parts)!r} AFTER itself")
        fields.insert(index, new)
        return StructType(tuple(fields))

    return _update_struct(schema, parts[:-1], "alter", change)


def rename_column(schema: StructType, path: PathLike, new_name: str) -> StructType:
    """Rename a (nested) column; it keeps its place, type, metadata and physical name.

    Raises:
        SchemaEvolutionError: no such column, or a sibling already has ``new_name``.

    Example:
        >>> from airflow_provider_delta.core.schema.types import StringType, StructField, StructType
        >>> rename_column(StructType((StructField("a", StringType()),)), "a", "b").names
        ('b',)
    """
    parts, field = resolve_column(schema, path, action="rename")
    if not new_name:
        raise SchemaEvolutionError(f"Cannot rename column {_dotted(parts)!r}: the new name is empty")

    def change(s: StructType) -> StructType:
        clash = _find(s, new_name)
        if clash is not None and s.fields[clash].name != parts[-1]:
            raise SchemaEvolutionError(
                f"Cannot rename column {_dotted(parts)!r} to {new_name!r}: a column with that name already exists"
            )
        return _replace_field(s, s.names.index(parts[-1]), field.with_name(new_name))

    return _update_struct(schema, parts[:-1], "rename", change)


def drop_columns(schema: StructType, paths: Iterable[PathLike]) -> StructType:
    """Drop (nested) columns.

    Raises:
        SchemaEvolutionError: no such column, or the drop would leave a struct (or the table) empty.

    Example:
        >>> from airflow_provider_delta.core.schema.types import StringType, StructField, StructType
        >>> drop_columns(StructType((StructField("a", StringType()), StructField("b", StringType()))), ["A"]).names
        ('b',)
    """
    for path in paths:
        parts, _ = resolve_column(schema, path, action="drop")

        def change(s: StructType, parts: ColumnPath = parts) -> StructType:
            fields = tuple(f for f in s.fields if f.name != parts[-1])
            if not fields:
                where = f"struct {_dotted(parts[:-1])!r}" if len(parts) > 1 else "the table"
                raise SchemaEvolutionError(
                    f"Cannot drop column {_dotted(parts)!r}: it is the only column of {where}"
                )
            return StructType(fields)

        schema = _update_struct(schema, parts[:-1], "drop", change)
    return schema


def replace_columns(schema: StructType, columns: StructType) -> StructType:
    """Replace the columns with ``columns`` (``REPLACE COLUMNS``), keeping what Delta keeps.

    Delta's rules (``AlterTableReplaceColumns``): every existing column (nested too) must still be
    there, matched ignoring case, with the same type; order, names' case, nullability (only
    NOT NULL -> nullable) and comments may change, and new columns may be added anywhere. Existing
    columns keep their other metadata (column mapping ids and physical names).

    Raises:
        SchemaEvolutionError: a column would be dropped, change type, or become NOT NULL.

    Example:
        >>> from airflow_provider_delta.core.schema.types import StringType, StructField, StructType
        >>> s = StructType((StructField("a", StringType()),))
        >>> replace_columns(s, StructType((StructField("c", StringType()), StructField("A", StringType())))).names
        ('c', 'A')
    """
    _check_duplicates(columns, (), False)
    result = _replace(schema, columns, ())
    assert isinstance(result, StructType)
    return result


def _replace(current: DataType, new: DataType, path: ColumnPath) -> DataType:
    if isinstance(current, StructType) and isinstance(new, StructType):
        for f in current.fields:
            if _find(new, f.name) is None:
                raise SchemaEvolutionError(
                    f"Cannot replace columns: column {_dotted((*path, f.name))!r} would be dropped. Help: "
                    "REPLACE COLUMNS cannot drop columns; use DROP COLUMN (needs column mapping)."
                )
        fields = []
        for nf in new.fields:
            i = _find(current, nf.name)
            if i is None:
                fields.append(nf)
                continue
            old = current.fields[i]
            if old.nullable and not nf.nullable:
                raise SchemaEvolutionError(
                    f"Cannot replace columns: column {_dotted((*path, old.name))!r} is nullable and cannot "
                    "become NOT NULL"
                )
            merged = old if COMMENT_KEY not in nf.metadata else _with_comment(old, nf.metadata[COMMENT_KEY])
            data_type = _replace(old.type, nf.type, (*path, old.name))
            fields.append(StructField(nf.name, data_type, nf.nullable, merged.metadata))
        return StructType(tuple(fields))
    if isinstance(current, ArrayType) and isinstance(new, ArrayType):
        return ArrayType(_replace(current.element_type, new.element_type, (*path, "element")), new.contains_null)
    if isinstance(current, MapType) and isinstance(new, MapType):
        return MapType(
            _replace(current.key_type, new.key_type, (*path, "key")),
            _replace(current.value_type, new.value_type, (*path, "value")),
            new.value_contains_null,
        )
    if current != new:
        raise SchemaEvolutionError(
            f"Cannot replace columns: column {_dotted(path)!r} would change type from {current.simple_string()} "
            f"to {new.simple_string()}. Help: change types by rewriting the table with schema_mode='overwrite'."
        )
    return current


__all__ = [
    "COMMENT_KEY",
    "ColumnPath",
    "add_column",
    "as_nullable",
    "drop_columns",
    "implicitly_castable",
    "merge_schemas",
    "parse_column_path",
    "rename_column",
    "replace_columns",
    "resolve_column",
    "update_column",
]

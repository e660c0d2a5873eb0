"""Parse the ``ALTER TABLE`` statements users copy from Delta Lake's docs into schema changes.

A small hand-written tokenizer and recursive-descent parser for exactly this grammar (no I/O)::

    ALTER TABLE t ADD COLUMN[S] [(] path type [NOT NULL] [COMMENT 'c'] [FIRST | AFTER col], ... [)]
    ALTER TABLE t {ALTER | CHANGE} [COLUMN] path {COMMENT 'c' | FIRST | AFTER col | DROP NOT NULL}
    ALTER TABLE t REPLACE COLUMNS (name type [NOT NULL] [COMMENT 'c'], ...)
    ALTER TABLE t RENAME COLUMN path TO name
    ALTER TABLE t DROP COLUMN[S] [IF EXISTS] [(] path, ... [)]
    ALTER TABLE t SET TBLPROPERTIES ('key' = 'value', ...)
    ALTER TABLE t UNSET TBLPROPERTIES [IF EXISTS] ('key', ...)

The ``ALTER TABLE t`` prefix is optional (the table is the one the statement is run on). Types:
``BOOLEAN``, ``TINYINT``/``BYTE``, ``SMALLINT``/``SHORT``, ``INT``/``INTEGER``, ``BIGINT``/``LONG``,
``FLOAT``/``REAL``, ``DOUBLE``, ``DECIMAL[(p[,s])]``, ``STRING``, ``BINARY``, ``DATE``,
``TIMESTAMP``, ``TIMESTAMP_NTZ``, ``VOID``, ``ARRAY<t>``, ``MAP<k, v>``,
``STRUCT<name[:] type [NOT NULL] [COMMENT 'c'], ...>``.

    >>> parse_alter("ALTER TABLE t RENAME COLUMN colB.field1 TO field001")
    RenameColumn(path=('colB', 'field1'), new_name='field001')
    >>> parse_data_type_sql("MAP<STRING, STRUCT<a: INT>>").simple_string()
    'map<string,struct<a:integer>>'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

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
from airflow_provider_delta.exceptions import DDLParseError, SchemaError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

T = TypeVar("T")
ColumnPath = tuple[str, ...]


# --- the parsed statements ------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnSpec:
    """One column of ``ADD COLUMNS``: path, type, nullability, comment and position."""

    path: ColumnPath
    data_type: DataType
    nullable: bool = True
    comment: str | None = None
    first: bool = False
    after: str | None = None


@dataclass(frozen=True)
class AddColumns:
    """``ADD COLUMNS (...)``."""

    columns: tuple[ColumnSpec, ...]


@dataclass(frozen=True)
class AlterColumn:
    """``ALTER COLUMN path COMMENT 'c' | FIRST | AFTER col | DROP NOT NULL``."""

    path: ColumnPath
    comment: str | None = None
    first: bool = False
    after: str | None = None
    drop_not_null: bool = False


@dataclass(frozen=True)
class ReplaceColumns:
    """``REPLACE COLUMNS (...)``."""

    schema: StructType


@dataclass(frozen=True)
class RenameColumn:
    """``RENAME COLUMN path TO name``."""

    path: ColumnPath
    new_name: str


@dataclass(frozen=True)
class DropColumns:
    """``DROP COLUMN[S] [IF EXISTS] ...``."""

    paths: tuple[ColumnPath, ...]
    if_exists: bool = False


@dataclass(frozen=True)
class SetProperties:
    """``SET TBLPROPERTIES (...)``."""

    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class UnsetProperties:
    """``UNSET TBLPROPERTIES [IF EXISTS] (...)``."""

    keys: tuple[str, ...]
    if_exists: bool = False


AlterStatement = (
    AddColumns | AlterColumn | ReplaceColumns | RenameColumn | DropColumns | SetProperties | UnsetProperties
)


# --- tokens -------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|--[^\n]*)
  | (?P<quoted>`(?:[^`]|``)*`)
  | (?P<string>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
  | (?P<number>[+-]?\d+(?:\.\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<punct>[(),.<>:=;])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class _Token:
    kind: str  # ident, quoted, string, number, punct, end
    text: str
    value: str
    pos: int


def _unescape(body: str, quote: str) -> str:
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(nxt, nxt))
            i += 2
        elif c == quote and i + 1 < len(body) and body[i + 1] == quote:
            out.append(quote)
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _tokenize(text: str) -> list[_Token]:
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise DDLParseError(
                f"Cannot parse statement {text!r}: unexpected character {text[pos]!r} at position {pos}",
                statement=text, position=pos,
            )
        kind = m.lastgroup or ""
        raw = m.group()
        if kind == "quoted":
            tokens.append(_Token("quoted", raw, raw[1:-1].replace("``", "`"), pos))
        elif kind == "string":
            tokens.append(_Token("string", raw, _unescape(raw[1:-1], raw[0]), pos))
        elif kind != "ws":
            tokens.append(_Token(kind, raw, raw, pos))
        pos = m.end()
    tokens.append(_Token("end", "", "", len(text)))
    return tokens


# --- parser -------------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    # helpers
    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def error(self, expected: str, tok: _Token | None = None) -> DDLParseError:
        tok = tok or self.tok
        found = "end of statement" if tok.kind == "end" else repr(tok.text)
        return DDLParseError(
            f"Cannot parse statement {self.text!r}: expected {expected} at position {tok.pos}, found {found}",
            statement=self.text, position=tok.pos,
        )

    def is_kw(self, *words: str) -> bool:
        return self.tok.kind == "ident" and self.tok.text.upper() in words

    def accept_kw(self, *words: str) -> str | None:
        if self.is_kw(*words):
            word = self.tok.text.upper()
            self.i += 1
            return word
        return None

    def expect_kw(self, *words: str) -> str:
        word = self.accept_kw(*words)
        if word is None:
            raise self.error(" or ".join(words))
        return word

    def accept(self, punct: str) -> bool:
        if self.tok.kind == "punct" and self.tok.text == punct:
            self.i += 1
            return True
        return False

    def expect(self, punct: str) -> None:
        if not self.accept(punct):
            raise self.error(repr(punct))

    def identifier(self, what: str = "a column name") -> str:
        tok = self.tok
        if tok.kind in ("ident", "quoted"):
            self.i += 1
            return tok.value
        raise self.error(what)

    def path(self) -> ColumnPath:
        parts = [self.identifier()]
        while self.accept("."):
            parts.append(self.identifier())
        return tuple(parts)

    def string(self, what: str = "a string literal") -> str:
        tok = self.tok
        if tok.kind != "string":
            raise self.error(what)
        self.i += 1
        return tok.value

    def integer(self) -> int:
        tok = self.tok
        if tok.kind != "number" or not tok.text.lstrip("+-").isdigit():
            raise self.error("an integer")
        self.i += 1
        return int(tok.text)

    def finish(self) -> None:
        self.accept(";")
        if self.tok.kind != "end":
            raise self.error("end of statement")

    # statement
    def statement(self) -> AlterStatement:
        if self.accept_kw("ALTER") and self.is_kw("TABLE"):
            self.i += 1
            self.path()  # the table name: ignored, the statement runs on the table it is given to
        elif self.i:
            self.i = 0  # a bare "ALTER COLUMN ..." without "ALTER TABLE t"
        word = self.expect_kw("ADD", "ALTER", "CHANGE", "REPLACE", "RENAME", "DROP", "SET", "UNSET")
        result = getattr(self, f"_{word.lower()}")()
        self.finish()
        return result

    def _add(self) -> AddColumns:
        self.expect_kw("COLUMN", "COLUMNS")
        columns = self._list(self._column_spec)
        return AddColumns(tuple(columns))

    def _list(self, item: Callable[[], T]) -> list[T]:
        parenthesised = self.accept("(")
        items = [item()]
        while self.accept(","):
            items.append(item())
        if parenthesised:
            self.expect(")")
        return items

    def _column_spec(self) -> ColumnSpec:
        path = self.path()
        data_type = self.data_type()
        nullable, comment = self._column_options()
        first, after = False, None
        if self.accept_kw("FIRST"):
            first = True
        elif self.accept_kw("AFTER"):
            after = ".".join(self.path())
        return ColumnSpec(path, data_type, nullable, comment, first, after)

    def _column_options(self) -> tuple[bool, str | None]:
        nullable, comment = True, None
        while True:
            if self.accept_kw("NOT"):
                self.expect_kw("NULL")
                nullable = False
            elif self.accept_kw("COMMENT"):
                comment = self.string("a comment string")
            elif self.is_kw("DEFAULT", "GENERATED"):
                raise DDLParseError(
                    f"Cannot parse statement {self.text!r}: {self.tok.text.upper()} at position {self.tok.pos} "
                    "is not supported (default and generated columns)",
                    statement=self.text, position=self.tok.pos,
                )
            else:
                return nullable, comment

    def _alter(self) -> AlterColumn:
        self.accept_kw("COLUMN")
        path = self.path()
        if self.accept_kw("COMMENT"):
            return AlterColumn(path, comment=self.string("a comment string"))
        if self.accept_kw("FIRST"):
            return AlterColumn(path, first=True)
        if self.accept_kw("AFTER"):
            return AlterColumn(path, after=".".join(self.path()))
        if self.accept_kw("DROP"):
            self.expect_kw("NOT")
            self.expect_kw("NULL")
            return AlterColumn(path, drop_not_null=True)
        if self.is_kw("TYPE", "SET"):
            raise DDLParseError(
                f"Cannot parse statement {self.text!r}: ALTER COLUMN ... {self.tok.text.upper()} at position "
                f"{self.tok.pos} is not supported. Help: change types by rewriting the table with "
                "overwrite(..., schema_mode='overwrite').",
                statement=self.text, position=self.tok.pos,
            )
        raise self.error("COMMENT, FIRST, AFTER or DROP NOT NULL")

    _change = _alter

    def _replace(self) -> ReplaceColumns:
        self.expect_kw("COLUMNS")
        self.expect("(")
        fields = [self._field(colon=False)]
        while self.accept(","):
            fields.append(self._field(colon=False))
        self.expect(")")
        return ReplaceColumns(self._struct(fields))

    def _struct(self, fields: list[StructField]) -> StructType:
        try:
            return StructType(tuple(fields))
        except SchemaError as err:
            raise DDLParseError(f"Cannot parse statement {self.text!r}: {err}", statement=self.text,
                                position=self.tok.pos) from err

    def _rename(self) -> RenameColumn:
        self.expect_kw("COLUMN")
        path = self.path()
        self.expect_kw("TO")
        new = self.path()
        if len(new) > 1 and [p.casefold() for p in new[:-1]] != [p.casefold() for p in path[:-1]]:
            raise self.error(f"a name in the same struct as {'.'.join(path)!r}")
        return RenameColumn(path, new[-1])

    def _drop(self) -> DropColumns:
        self.expect_kw("COLUMN", "COLUMNS")
        if_exists = self._if_exists()
        return DropColumns(tuple(self._list(self.path)), if_exists)

    def _if_exists(self) -> bool:
        if self.accept_kw("IF"):
            self.expect_kw("EXISTS")
            return True
        return False

    def _set(self) -> SetProperties:
        self.expect_kw("TBLPROPERTIES")
        self.expect("(")
        props = {}
        while True:
            key = self._property_key()
            self.accept("=")
            props[key] = self._property_value()
            if not self.accept(","):
                break
        self.expect(")")
        return SetProperties(props)

    def _unset(self) -> UnsetProperties:
        self.expect_kw("TBLPROPERTIES")
        if_exists = self._if_exists()
        self.expect("(")
        keys = [self._property_key()]
        while self.accept(","):
            keys.append(self._property_key())
        self.expect(")")
        return UnsetProperties(tuple(keys), if_exists)

    def _property_key(self) -> str:
        if self.tok.kind == "string":
            return self.string()
        return ".".join(self.path())

    def _property_value(self) -> str:
        tok = self.tok
        if tok.kind in ("string", "number") or (tok.kind == "ident" and tok.text.upper() in ("TRUE", "FALSE")):
            self.i += 1
            return tok.value.lower() if tok.kind == "ident" else tok.value
        raise self.error("a property value (string, number, true or false)")

    # types
    def data_type(self) -> DataType:
        tok = self.tok
        if tok.kind != "ident":
            raise self.error("a data type")
        name = tok.text.upper()
        self.i += 1
        if name == "ARRAY":
            self.expect("<")
            element = self.data_type()
            self.expect(">")
            return ArrayType(element, True)
        if name == "MAP":
            self.expect("<")
            key = self.data_type()
            self.expect(",")
            value = self.data_type()
            self.expect(">")
            return MapType(key, value, True)
        if name == "STRUCT":
            return self._struct_type()
        if name in ("DECIMAL", "DEC", "NUMERIC"):
            return self._decimal(tok)
        primitive = _PRIMITIVES.get(name)
        if primitive is None:
            raise DDLParseError(
                f"Cannot parse statement {self.text!r}: unknown data type {tok.text!r} at position {tok.pos} "
                f"(known: {', '.join(sorted({*_PRIMITIVES, 'ARRAY', 'MAP', 'STRUCT', 'DECIMAL'}))})",
                statement=self.text, position=tok.pos,
            )
        return primitive

    def _decimal(self, tok: _Token) -> DecimalType:
        precision, scale = 10, 0
        if self.accept("("):
            precision = self.integer()
            if self.accept(","):
                scale = self.integer()
            self.expect(")")
        try:
            return DecimalType(precision, scale)
        except SchemaError as err:
            raise DDLParseError(f"Cannot parse statement {self.text!r}: {err} at position {tok.pos}",
                                statement=self.text, position=tok.pos) from err

    def _struct_type(self) -> StructType:
        self.expect("<")
        fields: list[StructField] = []
        if not self.accept(">"):
            fields.append(self._field(colon=True))
            while self.accept(","):
                fields.append(self._field(colon=True))
            self.expect(">")
        return self._struct(fields)

    def _field(self, *, colon: bool) -> StructField:
        name = self.identifier("a field name")
        if colon:
            self.accept(":")
        data_type = self.data_type()
        nullable, comment = self._column_options()
        return StructField(name, data_type, nullable, {"comment": comment} if comment is not None else {})


_PRIMITIVES: dict[str, DataType] = {
    "BOOLEAN": BooleanType(), "BOOL": BooleanType(),
    "TINYINT": ByteType(), "BYTE": ByteType(),
    "SMALLINT": ShortType(), "SHORT": ShortType(),
    "INT": IntegerType(), "INTEGER": IntegerType(),
    "BIGINT": LongType(), "LONG": LongType(),
    "FLOAT": FloatType(), "REAL": FloatType(),
    "DOUBLE": DoubleType(),
    "STRING": StringType(),
    "BINARY": BinaryType(),
    "DATE": DateType(),
    "TIMESTAMP": TimestampType(), "TIMESTAMP_LTZ": TimestampType(),
    "TIMESTAMP_NTZ": TimestampNtzType(),
    "VOID": NullType(),
}


def parse_alter(statement: str) -> AlterStatement:
    """Parse one ``ALTER TABLE`` statement (see the module docstring for the grammar).

    Raises:
        DDLParseError: the statement does not parse; the message names it and the position.

    Example:
        >>> parse_alter("ALTER TABLE t DROP COLUMNS (a, b)")
        DropColumns(paths=(('a',), ('b',)), if_exists=False)
    """
    if not isinstance(statement, str) or not statement.strip():
        raise DDLParseError(f"Cannot parse statement {statement!r}: empty statement", statement=str(statement),
                            position=0)
    return _Parser(statement).statement()


def parse_data_type_sql(text: str) -> DataType:
    """Parse a SQL type such as ``STRUCT<a:STRING, b:INT>`` or ``DECIMAL(10,2)``.

    Raises:
        DDLParseError: the text is not a type.
    """
    parser = _Parser(text)
    data_type = parser.data_type()
    parser.finish()
    return data_type


__all__ = [
    "AddColumns",
    "AlterColumn",
    "AlterStatement",
    "ColumnSpec",
    "DropColumns",
    "RenameColumn",
    "ReplaceColumns",
    "SetProperties",
    "UnsetProperties",
    "parse_alter",
    "parse_data_type_sql",
]

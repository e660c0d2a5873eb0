"""Delta schema types and their JSON form (PROTOCOL.md "Schema Serialization Format").

A table's schema lives in ``metaData.schemaString`` as the JSON Spark writes. This module parses it
into immutable, hashable dataclasses and writes it back byte-compatible with Spark's output::

    >>> schema = schema_from_json('{"type":"struct","fields":[{"name":"id","type":"long",'
    ...                           '"nullable":false,"metadata":{}}]}')
    >>> schema.field("id").type
    LongType()
    >>> schema_from_json(schema.to_json()) == schema
    True

Type names this engine does not know (``variant``, ``geometry(OGC:CRS84)``, ...) parse into
:class:`UnsupportedType` so that a log can always be read; the protocol layer refuses such tables.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

from airflow_provider_delta.exceptions import SchemaError

_EMPTY_METADATA: Mapping[str, Any] = MappingProxyType({})

# Spark's DataType.fromJson: "decimal(p,s)" with optional blanks; bare "decimal" is decimal(10,0).
_DECIMAL_RE = re.compile(r"^decimal\s*\(\s*(-?\d+)\s*,\s*(-?\d+)\s*\)$")
MAX_DECIMAL_PRECISION = 38


class DataType:
    """Base of every Delta data type.

    Subclasses are frozen dataclasses, so types compare and hash by value.
    """

    type_name: ClassVar[str] = ""

    def to_json_value(self) -> str | dict[str, Any]:
        """Return the JSON value of this type as Spark writes it (a string or a nested object)."""
        return self.type_name

    def simple_string(self) -> str:
        """Return a short, human readable form such as ``array<long>``, for error messages."""
        return self.type_name

    def __str__(self) -> str:
        return self.simple_string()


class PrimitiveType(DataType):
    """Base of the types without parameters."""


@dataclass(frozen=True)
class StringType(PrimitiveType):
    """UTF-8 string."""

    type_name: ClassVar[str] = "string"


@dataclass(frozen=True)
class LongType(PrimitiveType):
    """Signed 64-bit integer."""

    type_name: ClassVar[str] = "long"


@dataclass(frozen=True)
class IntegerType(PrimitiveType):
    """Signed 32-bit integer."""

    type_name: ClassVar[str] = "integer"


@dataclass(frozen=True)
class ShortType(PrimitiveType):
    """Signed 16-bit integer."""

    type_name: ClassVar[str] = "short"


@dataclass(frozen=True)
class ByteType(PrimitiveType):
    """Signed 8-bit integer."""

    type_name: ClassVar[str] = "byte"


@dataclass(frozen=True)
class FloatType(PrimitiveType):
    """IEEE 754 single precision."""

    type_name: ClassVar[str] = "float"


@dataclass(frozen=True)
class DoubleType(PrimitiveType):
    """IEEE 754 double precision."""

    type_name: ClassVar[str] = "double"


@dataclass(frozen=True)
class BooleanType(PrimitiveType):
    """True or false."""

    type_name: ClassVar[str] = "boolean"


@dataclass(frozen=True)
class BinaryType(PrimitiveType):
    """Arbitrary bytes."""

    type_name: ClassVar[str] = "binary"


@dataclass(frozen=True)
class DateType(PrimitiveType):
    """Calendar date without time zone."""

    type_name: ClassVar[str] = "date"


@dataclass(frozen=True)
class TimestampType(PrimitiveType):
    """Microsecond instant, adjusted to UTC."""

    type_name: ClassVar[str] = "timestamp"


@dataclass(frozen=True)
class TimestampNtzType(PrimitiveType):
    """Microsecond wall-clock timestamp without time zone (table feature ``timestampNtz``)."""

    type_name: ClassVar[str] = "timestamp_ntz"


@dataclass(frozen=True)
class NullType(PrimitiveType):
    """Spark's ``void``: a column that is always null. Old logs may spell it ``null``."""

    type_name: ClassVar[str] = "void"


@dataclass(frozen=True)
class DecimalType(DataType):
    """Fixed-point decimal ``decimal(precision, scale)``.

    Args:
        precision: total number of digits, 1 to 38.
        scale: digits after the decimal point, at most ``precision``.

    Raises:
        SchemaError: if precision or scale is out of range.
    """

    precision: int = 10
    scale: int = 0

    type_name: ClassVar[str] = "decimal"

    def __post_init__(self) -> None:
        if not 1 <= self.precision <= MAX_DECIMAL_PRECISION:
            raise SchemaError(
                f"Cannot create decimal({self.precision},{self.scale}): "
                f"precision must be between 1 and {MAX_DECIMAL_PRECISION}, found {self.precision!r}"
            )
        if self.scale > self.precision:
            raise SchemaError(
                f"Cannot create decimal({self.precision},{self.scale}): "
                f"scale {self.scale!r} exceeds precision {self.precision!r}"
            )

    def to_json_value(self) -> str:
        """Return ``decimal(p,s)``."""
        return f"decimal({self.precision},{self.scale})"

    def simple_string(self) -> str:
        """Return ``decimal(p,s)``."""
        return self.to_json_value()


@dataclass(frozen=True)
class ArrayType(DataType):
    """A list of elements of one type.

    Args:
        element_type: type of the elements.
        contains_null: whether elements may be null.
    """

    element_type: DataType
    contains_null: bool = True

    type_name: ClassVar[str] = "array"

    def to_json_value(self) -> dict[str, Any]:
        """Return ``{"type":"array","elementType":..,"containsNull":..}``."""
        return {
            "type": "array",
            "elementType": self.element_type.to_json_value(),
            "containsNull": self.contains_null,
        }

    def simple_string(self) -> str:
        """Return ``array<element>``."""
        return f"array<{self.element_type.simple_string()}>"


@dataclass(frozen=True)
class MapType(DataType):
    """A map from keys of one type to values of another. Keys are never null.

    Args:
        key_type: type of the keys.
        value_type: type of the values.
        value_contains_null: whether values may be null.
    """

    key_type: DataType
    value_type: DataType
    value_contains_null: bool = True

    type_name: ClassVar[str] = "map"

    def to_json_value(self) -> dict[str, Any]:
        """Return ``{"type":"map","keyType":..,"valueType":..,"valueContainsNull":..}``."""
        return {
            "type": "map",
            "keyType": self.key_type.to_json_value(),
            "valueType": self.value_type.to_json_value(),
            "valueContainsNull": self.value_contains_null,
        }

    def simple_string(self) -> str:
        """Return ``map<key,value>``."""
        return f"map<{self.key_type.simple_string()},{self.value_type.simple_string()}>"


@dataclass(frozen=True)
class UnsupportedType(DataType):
    """A type this engine cannot read (``variant``, ``geometry(...)``, ``interval``, ...).

    Parsing never fails on such a type so that the log stays readable; converting it to Arrow raises
    :class:`~airflow_provider_delta.exceptions.UnsupportedFeatureError`.

    Args:
        name: the type name as found in the schema JSON.
        raw_json: for a type written as a JSON object, that object as JSON text (kept to write it
            back unchanged); ``None`` when the type was a plain string.
    """

    name: str
    raw_json: str | None = None

    type_name: ClassVar[str] = "unsupported"

    def to_json_value(self) -> str | dict[str, Any]:
        """Return the JSON value exactly as it was parsed."""
        if self.raw_json is None:
            return self.name
        value: dict[str, Any] = json.loads(self.raw_json)
        return value

    def simple_string(self) -> str:
        """Return the original type name."""
        return self.name


def _canonical_json(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise SchemaError(f"Cannot use field metadata {value!r}: not JSON serializable ({err})") from err


@dataclass(frozen=True)
class StructField:
    """A named field of a struct.

    ``metadata`` is kept exactly as read (insertion order, nested dicts and lists) and is part of
    equality and hashing through its canonical JSON form. Treat it as read-only.

    Args:
        name: the logical (display) name.
        type: the field's data type.
        nullable: whether the field may be null.
        metadata: column metadata: column mapping id and physical name, ``comment``,
            ``delta.generationExpression``, ``delta.identity.*``, ``delta.typeChanges`` ...

    Example:
        >>> StructField("id", LongType(), nullable=False, metadata={"comment": "key"}).metadata["comment"]
        'key'
    """

    name: str
    type: DataType
    nullable: bool = True
    metadata: Mapping[str, Any] = dataclasses.field(
        default_factory=lambda: _EMPTY_METADATA, compare=False, hash=False
    )
    _metadata_key: str = dataclasses.field(init=False, repr=False, compare=True, hash=True)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise SchemaError(f"Cannot create field {self.name!r}: name must be a string")
        if not isinstance(self.type, DataType):
            raise SchemaError(f"Cannot create field {self.name!r}: type {self.type!r} is not a DataType")
        if not isinstance(self.metadata, Mapping):
            raise SchemaError(f"Cannot create field {self.name!r}: metadata must be a mapping")
        # A private read-only copy: the canonical key below must stay in step with the mapping.
        metadata = MappingProxyType(dict(self.metadata)) if self.metadata else _EMPTY_METADATA
        object.__setattr__(self, "metadata", metadata)
        object.__setattr__(self, "_metadata_key", _canonical_json(dict(metadata)) if metadata else "")

    @property
    def data_type(self) -> DataType:
        """The field's type (alias of ``type``)."""
        return self.type

    def with_name(self, name: str) -> StructField:
        """Return a copy with another name."""
        return StructField(name, self.type, self.nullable, self.metadata)

    def with_type(self, data_type: DataType) -> StructField:
        """Return a copy with another type."""
        return StructField(self.name, data_type, self.nullable, self.metadata)

    def with_metadata(self, metadata: Mapping[str, Any]) -> StructField:
        """Return a copy with other metadata."""
        return StructField(self.name, self.type, self.nullable, metadata)

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON object Spark writes for this field."""
        return {
            "name": self.name,
            "type": self.type.to_json_value(),
            "nullable": self.nullable,
            "metadata": _thaw(self.metadata),
        }


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thaw(v) for v in value]
    return value


@dataclass(frozen=True)
class StructType(DataType):
    """An ordered collection of uniquely named fields; also the type of a table's schema.

    Args:
        fields: the fields, in order. Names must be unique.

    Raises:
        SchemaError: if two fields share a name.

    Example:
        >>> s = StructType((StructField("a", LongType()), StructField("B", StringType())))
        >>> s.names, s.index("B"), s.get("b", case_sensitive=False).name
        (('a', 'B'), 1, 'B')
    """

    fields: tuple[StructField, ...] = ()
    _by_name: dict[str, int] = dataclasses.field(init=False, repr=False, compare=False, hash=False)

    type_name: ClassVar[str] = "struct"

    def __post_init__(self) -> None:
        fields = tuple(self.fields)
        object.__setattr__(self, "fields", fields)
        by_name: dict[str, int] = {}
        for i, f in enumerate(fields):
            if not isinstance(f, StructField):
                raise SchemaError(f"Cannot create struct: {f!r} is not a StructField")
            if f.name in by_name:
                raise SchemaError(f"Cannot create struct: duplicate field name {f.name!r}")
            by_name[f.name] = i
        object.__setattr__(self, "_by_name", by_name)

    def __iter__(self) -> Iterator[StructField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, key: int | str) -> StructField:
        if isinstance(key, int):
            return self.fields[key]
        return self.field(key)

    @property
    def names(self) -> tuple[str, ...]:
        """The field names, in order."""
        return tuple(f.name for f in self.fields)

    def get(self, name: str, *, case_sensitive: bool = True) -> StructField | None:
        """Return the field called ``name``, or ``None``.

        Args:
            name: the field name.
            case_sensitive: when ``False`` and no exact match exists, match ignoring case.

        Raises:
            SchemaError: if a case-insensitive lookup matches several fields.
        """
        i = self._find(name, case_sensitive=case_sensitive)
        return None if i is None else self.fields[i]

    def field(self, name: str, *, case_sensitive: bool = True) -> StructField:
        """Return the field called ``name``.

        Raises:
            SchemaError: if there is no such field.
        """
        return self.fields[self.index(name, case_sensitive=case_sensitive)]

    def index(self, name: str, *, case_sensitive: bool = True) -> int:
        """Return the position of the field called ``name``.

        Raises:
            SchemaError: if there is no such field.
        """
        i = self._find(name, case_sensitive=case_sensitive)
        if i is None:
            raise SchemaError(f"Cannot find field {name!r}: no such field (fields: {', '.join(self.names)})")
        return i

    def _find(self, name: str, *, case_sensitive: bool) -> int | None:
        i = self._by_name.get(name)
        if i is not None or case_sensitive:
            return i
        folded = name.casefold()
        matches = [j for j, f in enumerate(self.fields) if f.name.casefold() == folded]
        if len(matches) > 1:
            found = ", ".join(repr(self.fields[j].name) for j in matches)
            raise SchemaError(f"Cannot find field {name!r}: ambiguous, matches {found}")
        return matches[0] if matches else None

    def find_path(self, path: tuple[str, ...] | list[str], *, case_sensitive: bool = True) -> StructField:
        """Return the nested field at ``path`` (each step descends into a struct).

        Raises:
            SchemaError: if a step names no field or a non-struct is traversed.
        """
        current: StructType = self
        for depth, name in enumerate(path):
            found = current.get(name, case_sensitive=case_sensitive)
            if found is None:
                raise SchemaError(f"Cannot find field {'.'.join(path)!r}: no field {name!r}")
            if depth == len(path) - 1:
                return found
            if not isinstance(found.type, StructType):
                raise SchemaError(f"Cannot find field {'.'.join(path)!r}: {name!r} is not a struct")
            current = found.type
        raise SchemaError("Cannot find field: empty path")

    def walk(self) -> Iterator[tuple[tuple[str, ...], StructField]]:
        """Yield ``(path, field)`` for every field, depth first, parents before children.

        Paths are tuples of field names. Fields inside arrays and maps are reached through the
        pseudo segments ``"element"``, ``"key"`` and ``"value"`` (the segments Delta uses in
        ``delta.typeChanges`` ``fieldPath``).

        Example:
            >>> s = schema_from_json({"type": "struct", "fields": [{"name": "a", "type": {"type": "struct",
            ...     "fields": [{"name": "b", "type": "long", "nullable": True, "metadata": {}}]},
            ...     "nullable": True, "metadata": {}}]})
            >>> [p for p, _ in s.walk()]
            [('a',), ('a', 'b')]
        """
        for f in self.fields:
            yield from _walk_field((f.name,), f)

    def to_json_value(self) -> dict[str, Any]:
        """Return ``{"type":"struct","fields":[...]}``."""
        return {"type": "struct", "fields": [f.to_dict() for f in self.fields]}

    def to_dict(self) -> dict[str, Any]:
        """Return the schema as a JSON-ready dict (what ``to_json`` serializes)."""
        return self.to_json_value()

    def to_json(self) -> str:
        """Return the compact JSON Spark writes into ``metaData.schemaString``."""
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False, allow_nan=False)

    def simple_string(self) -> str:
        """Return ``struct<a:long,b:string>``."""
        return "struct<" + ",".join(f"{f.name}:{f.type.simple_string()}" for f in self.fields) + ">"


def _walk_field(path: tuple[str, ...], f: StructField) -> Iterator[tuple[tuple[str, ...], StructField]]:
    yield path, f
    yield from _walk_type(path, f.type)


def _walk_type(path: tuple[str, ...], dt: DataType) -> Iterator[tuple[tuple[str, ...], StructField]]:
    if isinstance(dt, StructType):
        for child in dt.fields:
            yield from _walk_field((*path, child.name), child)
    elif isinstance(dt, ArrayType):
        yield from _walk_type((*path, "element"), dt.element_type)
    elif isinstance(dt, MapType):
        yield from _walk_type((*path, "key"), dt.key_type)
        yield from _walk_type((*path, "value"), dt.value_type)


_PRIMITIVES: dict[str, DataType] = {
    t.type_name: t
    for t in (
        StringType(),
        LongType(),
        IntegerType(),
        ShortType(),
        ByteType(),
        FloatType(),
        DoubleType(),
        BooleanType(),
        BinaryType(),
        DateType(),
        TimestampType(),
        TimestampNtzType(),
        NullType(),
    )
}
_PRIMITIVES["null"] = NullType()


def parse_data_type(value: Any, *, where: str = "schema") -> DataType:
    """Parse the JSON value of a type (a name such as ``"long"`` or an object such as an array).

    Args:
        value: the decoded JSON value.
        where: the location in the schema, for error messages.

    Returns:
        The type; :class:`UnsupportedType` for a type name this engine does not know.

    Raises:
        SchemaError: if the value is malformed.
    """
    if isinstance(value, str):
        return _parse_type_name(value, where=where)
    if not isinstance(value, Mapping):
        raise SchemaError(f"Cannot parse type of {where}: expected a string or an object, found {value!r}")
    kind = value.get("type")
    if kind == "struct":
        return _parse_struct(value, where=where)
    if kind == "array":
        return ArrayType(
            parse_data_type(_require(value, "elementType", where), where=f"{where}.element"),
            _bool(value, "containsNull", where),
        )
    if kind == "map":
        return MapType(
            parse_data_type(_require(value, "keyType", where), where=f"{where}.key"),
            parse_data_type(_require(value, "valueType", where), where=f"{where}.value"),
            _bool(value, "valueContainsNull", where),
        )
    if isinstance(kind, str):
        # Unknown complex type (e.g. Spark's UDT objects): keep it so the log stays readable.
        return UnsupportedType(kind, _canonical_json(dict(value)))
    raise SchemaError(f"Cannot parse type of {where}: object has no string 'type' (found {value!r})")


def _parse_type_name(name: str, *, where: str) -> DataType:
    primitive = _PRIMITIVES.get(name)
    if primitive is not None:
        return primitive
    if name == "decimal":
        return DecimalType(10, 0)
    match = _DECIMAL_RE.match(name)
    if match:
        precision, scale = int(match.group(1)), int(match.group(2))
        try:
            return DecimalType(precision, scale)
        except SchemaError as err:
            raise SchemaError(f"Cannot parse type of {where}: invalid decimal {name!r} ({err})") from err
    if not name:
        raise SchemaError(f"Cannot parse type of {where}: empty type name")
    return UnsupportedType(name)


def _require(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise SchemaError(f"Cannot parse type of {where}: missing {key!r} in {dict(obj)!r}")
    return obj[key]


def _bool(obj: Mapping[str, Any], key: str, where: str) -> bool:
    # Spark always writes the nullability flags; be lenient with hand-written JSON and default to True.
    value = obj.get(key, True)
    if not isinstance(value, bool):
        raise SchemaError(f"Cannot parse type of {where}: {key!r} must be a boolean, found {value!r}")
    return value


def _parse_struct(value: Mapping[str, Any], *, where: str) -> StructType:
    raw_fields = _require(value, "fields", where)
    if not isinstance(raw_fields, list):
        raise SchemaError(f"Cannot parse type of {where}: 'fields' must be a list, found {raw_fields!r}")
    fields = []
    for i, raw in enumerate(raw_fields):
        if not isinstance(raw, Mapping):
            raise SchemaError(f"Cannot parse field {i} of {where}: expected an object, found {raw!r}")
        name = raw.get("name")
        if not isinstance(name, str):
            raise SchemaError(f"Cannot parse field {i} of {where}: 'name' must be a string, found {name!r}")
        path = name if where == "schema" else f"{where}.{name}"
        if "type" not in raw:
            raise SchemaError(f"Cannot parse field {path!r}: missing 'type'")
        metadata = raw.get("metadata")
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, Mapping):
            raise SchemaError(
                f"Cannot parse field {path!r}: 'metadata' must be an object, found {metadata!r}"
            )
        fields.append(
            StructField(
                name, parse_data_type(raw["type"], where=path), _bool(raw, "nullable", path), metadata
            )
        )
    try:
        return StructType(tuple(fields))
    except SchemaError as err:
        raise SchemaError(f"Cannot parse type of {where}: {err}") from err


def schema_from_json(value: str | bytes | Mapping[str, Any]) -> StructType:
    """Parse a Delta schema: ``metaData.schemaString`` text or its decoded dict.

    Args:
        value: JSON text (``str`` or ``bytes``) or an already decoded mapping.

    Returns:
        The table schema.

    Raises:
        SchemaError: if the JSON is malformed or its top level is not a struct.

    Example:
        >>> schema_from_json('{"type":"struct","fields":[]}')
        StructType(fields=())
    """
    if isinstance(value, (str, bytes, bytearray)):
        try:
            decoded = json.loads(value)
        except ValueError as err:
            raise SchemaError(f"Cannot parse schema: invalid JSON ({err})") from err
    else:
        decoded = value
    if not isinstance(decoded, Mapping) or decoded.get("type") != "struct":
        raise SchemaError(
            f"Cannot parse schema: expected a JSON object with type 'struct', found {decoded!r:.200}"
        )
    return _parse_struct(decoded, where="schema")


__all__ = [
    "MAX_DECIMAL_PRECISION",
    "ArrayType",
    "BinaryType",
    "BooleanType",
    "ByteType",
    "DataType",
    "DateType",
    "DecimalType",
    "DoubleType",
    "FloatType",
    "IntegerType",
    "LongType",
    "MapType",
    "NullType",
    "PrimitiveType",
    "ShortType",
    "StringType",
    "StructField",
    "StructType",
    "TimestampNtzType",
    "TimestampType",
    "UnsupportedType",
    "parse_data_type",
    "schema_from_json",
]

"""Column mapping (PROTOCOL.md "Column Mapping"): ids, physical names and ``maxColumnId``.

With ``delta.columnMapping.mode`` = ``name`` or ``id``, every field (nested ones too) carries in its
metadata a stable ``delta.columnMapping.id`` and an immutable ``delta.columnMapping.physicalName``.
Data files, ``partitionValues`` and file statistics use the physical names; renaming or dropping a
column is then a metadata-only change.

    >>> from airflow_provider_delta.core.schema.types import LongType, StructField, StructType
    >>> schema, max_id = assign_column_mapping(StructType((StructField("id", LongType()),)), 1)
    >>> field_id(schema.field("id")), max_id, physical_name(schema.field("id")).startswith("col-")
    (1, 1, True)
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Literal

from airflow_provider_delta.core.schema.types import (
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
)
from airflow_provider_delta.exceptions import SchemaError

if TYPE_CHECKING:
    from collections.abc import Mapping

ColumnMappingMode = Literal["none", "name", "id"]

COLUMN_MAPPING_MODE_KEY = "delta.columnMapping.mode"
COLUMN_MAPPING_MAX_ID_KEY = "delta.columnMapping.maxColumnId"
PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"
COLUMN_ID_KEY = "delta.columnMapping.id"

_MODES: dict[str, ColumnMappingMode] = {"none": "none", "name": "name", "id": "id"}


def column_mapping_mode(configuration: Mapping[str, str]) -> ColumnMappingMode:
    """Return the table's column mapping mode from ``metaData.configuration``.

    Args:
        configuration: the table properties.

    Returns:
        ``"none"`` when ``delta.columnMapping.mode`` is absent, else its value (case-insensitive).

    Raises:
        SchemaError: if the value is not ``none``, ``name`` or ``id``.

    Example:
        >>> column_mapping_mode({"delta.columnMapping.mode": "name"})
        'name'
    """
    raw = configuration.get(COLUMN_MAPPING_MODE_KEY)
    if raw is None:
        return "none"
    mode = _MODES.get(str(raw).strip().lower())
    if mode is None:
        raise SchemaError(
            f"Cannot read column mapping mode: {COLUMN_MAPPING_MODE_KEY} is {raw!r}, "
            "expected 'none', 'name' or 'id'"
        )
    return mode


def physical_name(f: StructField, *, mode: ColumnMappingMode | None = None) -> str:
    """Return the name under which ``f`` is stored in data files, stats and partition values.

    Args:
        f: the field.
        mode: the table's column mapping mode. With ``"none"`` the logical name is returned even if
            the metadata holds a physical name (PROTOCOL.md: readers then use display names). With
            ``None`` the metadata decides.

    Returns:
        ``delta.columnMapping.physicalName``, or the logical name when there is none.
    """
    if mode == "none":
        return f.name
    name = f.metadata.get(PHYSICAL_NAME_KEY)
    if isinstance(name, str) and name:
        return name
    return f.name


def field_id(f: StructField) -> int | None:
    """Return the field's ``delta.columnMapping.id``, or ``None`` if it has none.

    Raises:
        SchemaError: if the id is not an integer.
    """
    raw = f.metadata.get(COLUMN_ID_KEY)
    if raw is None:
        return None
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        try:
            return int(raw)
        except ValueError:
            pass
    raise SchemaError(
        f"Cannot read column mapping id of field {f.name!r}: expected an integer, found {raw!r}"
    )


def physical_schema(schema: StructType, *, mode: ColumnMappingMode | None = None) -> StructType:
    """Return ``schema`` with every field (nested too) renamed to its physical name.

    Metadata is kept, so ids stay available and :func:`physical_name` of a renamed field still
    returns the same name.

    Args:
        schema: the logical schema.
        mode: see :func:`physical_name`; ``"none"`` returns ``schema`` unchanged.
    """
    if mode == "none":
        return schema
    return StructType(tuple(_physical_field(f) for f in schema.fields))


def _physical_field(f: StructField) -> StructField:
    return StructField(physical_name(f), _physical_type(f.type), f.nullable, f.metadata)


def _physical_type(dt: DataType) -> DataType:
    if isinstance(dt, StructType):
        return StructType(tuple(_physical_field(f) for f in dt.fields))
    if isinstance(dt, ArrayType):
        return ArrayType(_physical_type(dt.element_type), dt.contains_null)
    if isinstance(dt, MapType):
        return MapType(_physical_type(dt.key_type), _physical_type(dt.value_type), dt.value_contains_null)
    return dt


def logical_to_physical_paths(
    schema: StructType, *, mode: ColumnMappingMode | None = None
) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Map every column path (nested too) from logical names to physical names.

    Use it to look up ``partitionValues`` and ``stats`` entries, which are keyed by physical names
    when column mapping is on. Paths through arrays and maps use the pseudo segments ``"element"``,
    ``"key"`` and ``"value"``, which map to themselves.

    Args:
        schema: the logical schema.
        mode: see :func:`physical_name`.

    Example:
        >>> from airflow_provider_delta.core.schema.types import schema_from_json
        >>> s = schema_from_json({"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True,
        ...     "metadata": {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-1"}}]})
        >>> logical_to_physical_paths(s)
        {('a',): ('col-1',)}
    """
    result: dict[tuple[str, ...], tuple[str, ...]] = {}
    _collect_paths(schema, (), (), result, mode)
    return result


def _collect_paths(
    dt: DataType,
    logical: tuple[str, ...],
    physical: tuple[str, ...],
    out: dict[tuple[str, ...], tuple[str, ...]],
    mode: ColumnMappingMode | None,
) -> None:
    if isinstance(dt, StructType):
        for f in dt.fields:
            child_logical, child_physical = (*logical, f.name), (*physical, physical_name(f, mode=mode))
            out[child_logical] = child_physical
            _collect_paths(f.type, child_logical, child_physical, out, mode)
    elif isinstance(dt, ArrayType):
        _collect_paths(dt.element_type, (*logical, "element"), (*physical, "element"), out, mode)
    elif isinstance(dt, MapType):
        _collect_paths(dt.key_type, (*logical, "key"), (*physical, "key"), out, mode)
        _collect_paths(dt.value_type, (*logical, "value"), (*physical, "value"), out, mode)


def physical_to_logical_paths(
    schema: StructType, *, mode: ColumnMappingMode | None = None
) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Inverse of :func:`logical_to_physical_paths`."""
    return {p: q for q, p in logical_to_physical_paths(schema, mode=mode).items()}


def max_column_id(schema: StructType) -> int:
    """Return the largest ``delta.columnMapping.id`` in the schema (nested too), 0 if there is none.

    Writers must also respect ``delta.columnMapping.maxColumnId`` in the configuration, which may be
    larger (ids of dropped columns are never reused).
    """
    ids = [i for _, f in schema.walk() if (i := field_id(f)) is not None]
    return max(ids, default=0)


def assign_column_mapping(
    schema: StructType,
    start_id: int,
    *,
    keep_existing: bool = True,
    physical_names: Literal["uuid", "logical"] = "uuid",
) -> tuple[StructType, int]:
    """Give fields (nested too) a column mapping id and a physical name.

    Args:
        schema: the logical schema.
        start_id: the first id to hand out (``maxColumnId + 1`` of the table; 1 for a new table).
            With ``keep_existing`` ids start above the largest id already in the schema if higher.
        keep_existing: keep the id and physical name of fields that already have both, so only
            new fields (e.g. added columns) get fresh ones. With ``False`` every field gets new ones.
        physical_names: ``"uuid"`` gives ``col-<uuid4>`` names (new tables, new columns);
            ``"logical"`` reuses the logical name (enabling column mapping on an existing table,
            whose data files already use those names).

    Returns:
        The new schema and the largest id now in use (``start_id - 1`` if nothing was assigned and
        no field had an id).
    """
    # Never hand out an id a kept field already uses.
    counter = _IdCounter(max(start_id, max_column_id(schema) + 1) if keep_existing else start_id)
    fields = tuple(_assign_field(f, counter, keep_existing, physical_names) for f in schema.fields)
    result = StructType(fields)
    return result, max(counter.next_id - 1, max_column_id(result))


class _IdCounter:
    def __init__(self, start: int) -> None:
        self.next_id = start

    def take(self) -> int:
        value = self.next_id
        self.next_id += 1
        return value


def _assign_field(
    f: StructField, counter: _IdCounter, keep_existing: bool, physical_names: Literal["uuid", "logical"]
) -> StructField:
    metadata: dict[str, Any] = dict(f.metadata)
    has_both = COLUMN_ID_KEY in metadata and PHYSICAL_NAME_KEY in metadata
    if not (keep_existing and has_both):
        metadata[COLUMN_ID_KEY] = counter.take()
        metadata[PHYSICAL_NAME_KEY] = f.name if physical_names == "logical" else f"col-{uuid.uuid4()}"
    data_type = _assign_type(f.type, counter, keep_existing, physical_names)
    return StructField(f.name, data_type, f.nullable, metadata)


def _assign_type(
    dt: DataType, counter: _IdCounter, keep_existing: bool, physical_names: Literal["uuid", "logical"]
) -> DataType:
    if isinstance(dt, StructType):
        return StructType(tuple(_assign_field(f, counter, keep_existing, physical_names) for f in dt.fields))
    if isinstance(dt, ArrayType):
        return ArrayType(
            _assign_type(dt.element_type, counter, keep_existing, physical_names), dt.contains_null
        )
    if isinstance(dt, MapType):
        return MapType(
            _assign_type(dt.key_type, counter, keep_existing, physical_names),
            _assign_type(dt.value_type, counter, keep_existing, physical_names),
            dt.value_contains_null,
        )
    return dt


def _is_mapping_key(key: str) -> bool:
    # Delta's DeltaColumnMapping.COLUMN_MAPPING_METADATA_KEYS
    return key.startswith("delta.columnMapping.") or key in ("parquet.field.id", "parquet.field.nested.ids")


def without_column_mapping(schema: StructType) -> StructType:
    """``schema`` without column mapping metadata (ids, physical names, Parquet field ids) at any depth.

    The schema as Delta on Spark shows it to users, and as a data frame's schema compares to it.
    """

    def strip(dt: DataType) -> DataType:
        if isinstance(dt, StructType):
            return StructType(tuple(
                StructField(f.name, strip(f.type), f.nullable,
                            {k: v for k, v in f.metadata.items() if not _is_mapping_key(k)})
                for f in dt.fields
            ))
        if isinstance(dt, ArrayType):
            return ArrayType(strip(dt.element_type), dt.contains_null)
        if isinstance(dt, MapType):
            return MapType(strip(dt.key_type), strip(dt.value_type), dt.value_contains_null)
        return dt

    result = strip(schema)
    assert isinstance(result, StructType)
    return result


__all__ = [
    "COLUMN_ID_KEY",
    "COLUMN_MAPPING_MAX_ID_KEY",
    "COLUMN_MAPPING_MODE_KEY",
    "PHYSICAL_NAME_KEY",
    "ColumnMappingMode",
    "assign_column_mapping",
    "column_mapping_mode",
    "field_id",
    "logical_to_physical_paths",
    "max_column_id",
    "physical_name",
    "physical_schema",
    "physical_to_logical_paths",
    "without_column_mapping",
]

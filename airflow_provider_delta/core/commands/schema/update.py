"""``SchemaUpdate``: stage schema and property changes, commit them as one metadata change.

Each verb checks and applies its change to a staged copy of the table's schema and properties at
once (so a bad change raises where it is made), and :meth:`SchemaUpdate.commit` writes one
``metaData`` action in one transaction. Inside ``with`` the changes commit on a clean exit only.

Rename and drop are metadata-only through column mapping (mode ``name``), as in Delta Lake. Like
Delta, this engine does not switch column mapping on by itself (it upgrades the protocol to reader
2 / writer 5, which older readers cannot read): renaming or dropping on a table without it fails
with an error that says how to enable it, ``set_properties({"delta.columnMapping.mode": "name"})``
or ``ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')``. Enabling it gives
every existing column an id and a physical name equal to its current name (the data files already
use those names), and may be staged in the same update as the rename.

Example:
    >>> with t.update_schema() as u:                                   # doctest: +SKIP
    ...     u.add_column("colB.nested", "STRING", after="field1", comment="new")
    ...     u.set_properties({"delta.columnMapping.mode": "name"})
    ...     u.rename_column("colA", "id").drop_column("colC")
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa

from airflow_provider_delta.core.properties import protocol_for_versions, validate_properties
from airflow_provider_delta.core.schema import ddl
from airflow_provider_delta.core.schema import evolution as ev
from airflow_provider_delta.core.schema.arrow import from_arrow_schema, from_arrow_type
from airflow_provider_delta.core.schema.ddl import parse_data_type_sql
from airflow_provider_delta.core.schema.mapping import (
    COLUMN_MAPPING_MAX_ID_KEY,
    COLUMN_MAPPING_MODE_KEY,
    assign_column_mapping,
    column_mapping_mode,
)
from airflow_provider_delta.core.schema.types import DataType, StructField, StructType
from airflow_provider_delta.core.transaction.commit import Transaction
from airflow_provider_delta.exceptions import SchemaEvolutionError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from types import TracebackType

    from airflow_provider_delta.core.actions import Metadata, Protocol
    from airflow_provider_delta.core.schema.ddl import AlterStatement
    from airflow_provider_delta.core.snapshot import Snapshot

TypeLike: TypeAlias = "DataType | pa.DataType | str"

_MIN_READER, _MIN_WRITER = "delta.minReaderVersion", "delta.minWriterVersion"
_HOW_TO_MAP = (
    "Help: enable column mapping first: ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name') "
    "or update_schema().set_properties({'delta.columnMapping.mode': 'name'}) (upgrades the protocol to "
    "reader 2 / writer 5)."
)


def as_data_type(value: TypeLike) -> DataType:
    """A Delta type from a Delta type, a pyarrow type or a SQL type string (``"STRUCT<a:INT>"``)."""
    if isinstance(value, DataType):
        return value
    if isinstance(value, pa.DataType):
        return from_arrow_type(value)
    if isinstance(value, str):
        return parse_data_type_sql(value)
    raise SchemaEvolutionError(f"Cannot use {value!r} as a column type: expected a DataType, pyarrow type or SQL type")


def with_column_mapping(schema: StructType, configuration: Mapping[str, str]) -> tuple[StructType, dict[str, str]]:
    """Give fields without a column mapping id one (uuid physical name) when the table maps columns.

    Returns the schema and the configuration with ``delta.columnMapping.maxColumnId`` raised.
    """
    conf = dict(configuration)
    if column_mapping_mode(conf) == "none":
        return schema, conf
    start = int(conf.get(COLUMN_MAPPING_MAX_ID_KEY, "0") or 0) + 1
    mapped, max_id = assign_column_mapping(schema, start)
    conf[COLUMN_MAPPING_MAX_ID_KEY] = str(max(max_id, start - 1))
    return mapped, conf


def metadata_with_schema(metadata: Metadata, schema: StructType, **changes: Any) -> Metadata:
    """``metadata`` with ``schema`` (new fields given column mapping ids when the table maps columns).

    ``changes`` replace further metaData fields, e.g. ``partition_columns``.
    """
    mapped, configuration = with_column_mapping(schema, metadata.configuration)
    return dataclasses.replace(metadata, schema_string=mapped.to_json(), configuration=configuration, **changes)


class SchemaUpdate:
    """Staged schema and property changes on a table, committed as one metadata change.

    Verbs return ``self`` so they chain. Column paths are dotted (``"colB.field1"``) or tuples;
    existing names match ignoring case. Types are Delta types, pyarrow types or SQL strings.

    Example:
        >>> with DeltaTable("/data/t").update_schema() as u:          # doctest: +SKIP
        ...     u.add_column("note", "STRING", comment="free text").move_first("note")
    """

    def __init__(
        self,
        snapshot: Snapshot,
        *,
        isolation_level: Any = None,
        on_commit: Callable[[int | None], object] | None = None,
    ) -> None:
        self._on_commit = on_commit
        self._snapshot = snapshot
        self._isolation_level = isolation_level
        self.schema: StructType = self._snapshot.schema
        self.configuration: dict[str, str] = dict(self._snapshot.configuration)
        self.partition_columns: tuple[str, ...] = tuple(self._snapshot.partition_columns)
        self._operations: list[tuple[str, dict[str, Any]]] = []
        self._versions: dict[str, int] = {}
        self.committed_version: int | None = None

    # -- columns --------------------------------------------------------------------------------
    def add_column(
        self,
        path: ev.PathLike,
        data_type: TypeLike,
        *,
        comment: str | None = None,
        first: bool = False,
        after: str | None = None,
        nullable: bool = True,
    ) -> SchemaUpdate:
        """Add a nullable column at the end of its struct, or ``first`` / ``after`` a sibling.

        Raises:
            SchemaEvolutionError: the name exists, the parent is not a struct (arrays and maps
                cannot take new fields), the sibling is unknown, or ``nullable=False``.
        """
        parts = ev.parse_column_path(path)
        if not nullable:
            raise SchemaEvolutionError(
                f"Cannot add column {'.'.join(parts)!r}: NOT NULL columns cannot be added to an existing table "
                "(its rows would violate it). Help: add it nullable."
            )
        dt = as_data_type(data_type)
        self.schema = ev.add_column(self.schema, parts, dt, comment=comment, first=first, after=after)
        position = "FIRST" if first else f"AFTER {after}" if after else None
        column = StructField(parts[-1], dt, True, {"comment": comment} if comment else {}).to_dict()
        self._record("ADD COLUMNS", "columns", {"column": column, "position": position})
        return self

    def update_comment(self, path: ev.PathLike, comment: str | None) -> SchemaUpdate:
        """Set (or with None remove) a column's comment."""
        self.schema = ev.update_column(self.schema, path, comment=comment, clear_comment=comment is None)
        self._record("CHANGE COLUMN", "column", {"name": _text(path), "comment": comment})
        return self

    def move_first(self, path: ev.PathLike) -> SchemaUpdate:
        """Move a column to the front of its struct."""
        self.schema = ev.update_column(self.schema, path, first=True)
        self._record("CHANGE COLUMN", "column", {"name": _text(path), "position": "FIRST"})
        return self

    def move_after(self, path: ev.PathLike, after: str) -> SchemaUpdate:
        """Move a column right after a sibling in the same struct."""
        self.schema = ev.update_column(self.schema, path, after=after)
        self._record("CHANGE COLUMN", "column", {"name": _text(path), "position": f"AFTER {after}"})
        return self

    def drop_not_null(self, path: ev.PathLike) -> SchemaUpdate:
        """Make a NOT NULL column nullable (``ALTER COLUMN c DROP NOT NULL``)."""
        parts, _ = ev.resolve_column(self.schema, path, action="alter")
        self.schema = _set_nullable(self.schema, parts)
        self._record("CHANGE COLUMN", "column", {"name": _text(path), "nullable": True})
        return self

    def replace_columns(self, columns: StructType | pa.Schema | Sequence[StructField]) -> SchemaUpdate:
        """Replace the column list (reorder, re-comment, add); existing columns may not be dropped or retyped."""
        if isinstance(columns, pa.Schema):
            columns = from_arrow_schema(columns)
        new = columns if isinstance(columns, StructType) else StructType(tuple(columns))
        self.schema = ev.replace_columns(self.schema, new)
        self._record("REPLACE COLUMNS", "columns", *(f.to_dict() for f in new.fields))
        return self

    def rename_column(self, path: ev.PathLike, new_name: str) -> SchemaUpdate:
        """Rename a (nested) column, metadata-only (needs column mapping).

        Raises:
            SchemaEvolutionError: no column mapping, unknown column, name taken, or a CHECK
                constraint uses the column.
        """
        parts, _ = ev.resolve_column(self.schema, path, action="rename")
        self._require_mapping("rename", parts)
        self._refuse_constraint_columns("rename", parts)
        self.schema = ev.rename_column(self.schema, parts, new_name)
        if len(parts) == 1 and parts[0] in self.partition_columns:
            self.partition_columns = tuple(new_name if c == parts[0] else c for c in self.partition_columns)
        self._record("RENAME COLUMN", "oldColumnPath", ".".join(parts))
        self._operations[-1][1]["newColumnPath"] = ".".join((*parts[:-1], new_name))
        return self

    def drop_column(self, path: ev.PathLike, *, if_exists: bool = False) -> SchemaUpdate:
        """Drop a (nested) column, metadata-only (needs column mapping); its data stays in the files."""
        return self.drop_columns([path], if_exists=if_exists)

    def drop_columns(self, paths: Iterable[ev.PathLike], *, if_exists: bool = False) -> SchemaUpdate:
        """Drop (nested) columns, metadata-only (needs column mapping).

        Raises:
            SchemaEvolutionError: no column mapping, unknown column (unless ``if_exists``), a
                partition column, a column a CHECK constraint uses, or the last column of a struct.
        """
        resolved = []
        for path in paths:
            try:
                parts, _ = ev.resolve_column(self.schema, path, action="drop")
            except SchemaEvolutionError:
                if if_exists:
                    continue
                raise
            self._require_mapping("drop", parts)
            if len(parts) == 1 and parts[0] in self.partition_columns:
                raise SchemaEvolutionError(
                    f"Cannot drop column {parts[0]!r}: it is a partition column (partitioned by "
                    f"{', '.join(self.partition_columns)}). Help: rewrite the table with "
                    "overwrite(..., schema_mode='overwrite', partition_by=[...])."
                )
            self._refuse_constraint_columns("drop", parts)
            resolved.append(parts)
        if resolved:
            self.schema = ev.drop_columns(self.schema, resolved)
            self._record("DROP COLUMNS", "columns", *(".".join(p) for p in resolved))
        return self

    # -- properties -------------------------------------------------------------------------------
    def set_properties(self, properties: Mapping[str, Any]) -> SchemaUpdate:
        """Set table properties (``SET TBLPROPERTIES``); ``delta.columnMapping.mode = name`` enables mapping.

        Raises:
            InvalidPropertyError: an unknown ``delta.*`` key or a bad value.
            SchemaEvolutionError: a column mapping mode change Delta does not allow, or a CHECK
                constraint (add those with a constraint command, which checks existing rows).
        """
        props = validate_properties(dict(properties))
        # Delta turns these two into a protocol upgrade; they are not kept as properties.
        for key in (_MIN_READER, _MIN_WRITER):
            if key in props:
                self._versions[key] = max(self._versions.get(key, 0), int(props.pop(key)))
        for key in props:
            if key.startswith("delta.constraints."):
                raise SchemaEvolutionError(
                    f"Cannot set table property {key!r}: CHECK constraints are added with ALTER TABLE ADD "
                    "CONSTRAINT, which validates existing rows (not supported by this engine yet)"
                )
        if COLUMN_MAPPING_MODE_KEY in props:
            self._change_mapping_mode(props[COLUMN_MAPPING_MODE_KEY])
        self.configuration.update(props)
        self._record("SET TBLPROPERTIES", "properties", props)
        return self

    def unset_properties(self, keys: Iterable[str], *, if_exists: bool = False) -> SchemaUpdate:
        """Remove table properties (``UNSET TBLPROPERTIES [IF EXISTS]``).

        Raises:
            SchemaEvolutionError: a key is not set (unless ``if_exists``), or it is the column mapping mode.
        """
        keys = list(keys)
        for key in keys:
            if key not in self.configuration and not if_exists:
                raise SchemaEvolutionError(
                    f"Cannot unset table property {key!r}: it is not set. Help: use UNSET TBLPROPERTIES IF EXISTS."
                )
            if key in (COLUMN_MAPPING_MODE_KEY, COLUMN_MAPPING_MAX_ID_KEY) and key in self.configuration:
                raise SchemaEvolutionError(
                    f"Cannot unset table property {key!r}: column mapping cannot be switched off on an existing table"
                )
        for key in keys:
            self.configuration.pop(key, None)
        self._record("UNSET TBLPROPERTIES", "properties", *keys)
        self._operations[-1][1]["ifExists"] = if_exists
        return self

    # -- DDL --------------------------------------------------------------------------------------
    def apply(self, statement: AlterStatement | str) -> SchemaUpdate:
        """Stage one ``ALTER TABLE`` statement (text or parsed, see :mod:`core.schema.ddl`)."""
        parsed = ddl.parse_alter(statement) if isinstance(statement, str) else statement
        if isinstance(parsed, ddl.AddColumns):
            for c in parsed.columns:
                self.add_column(c.path, c.data_type, comment=c.comment, first=c.first, after=c.after,
                                nullable=c.nullable)
        elif isinstance(parsed, ddl.AlterColumn):
            self._apply_alter(parsed)
        elif isinstance(parsed, ddl.ReplaceColumns):
            self.replace_columns(parsed.schema)
        elif isinstance(parsed, ddl.RenameColumn):
            self.rename_column(parsed.path, parsed.new_name)
        elif isinstance(parsed, ddl.DropColumns):
            self.drop_columns(parsed.paths, if_exists=parsed.if_exists)
        elif isinstance(parsed, ddl.SetProperties):
            self.set_properties(parsed.properties)
        else:
            self.unset_properties(parsed.keys, if_exists=parsed.if_exists)
        return self

    def _apply_alter(self, parsed: Any) -> None:
        if parsed.comment is not None:
            self.update_comment(parsed.path, parsed.comment)
        elif parsed.first:
            self.move_first(parsed.path)
        elif parsed.after is not None:
            self.move_after(parsed.path, parsed.after)
        else:
            self.drop_not_null(parsed.path)

    # -- commit -----------------------------------------------------------------------------------
    def metadata(self) -> Metadata:
        """The metaData action the staged changes produce."""
        staged = dataclasses.replace(self._snapshot.metadata, configuration=self.configuration)
        return metadata_with_schema(staged, self.schema, partition_columns=self.partition_columns)

    def commit(self, *, app_id: str | None = None, app_version: int | None = None) -> int | None:
        """Commit the staged changes as one transaction; returns the version (None if nothing was staged).

        ``app_id``/``app_version`` record Delta's ``txn`` action with the change, so a caller that
        checks ``snapshot.app_transaction_version(app_id)`` first can treat an already-applied change
        set as done (a concurrent commit with the same id fails with ``ConcurrentTransactionException``).

        Raises:
            MetadataChangedException: another writer changed the table's metadata first.
        """
        if self.committed_version is not None:
            return self.committed_version
        if not self._operations:
            return None
        kinds = list(dict.fromkeys(kind for kind, _ in self._operations))
        operation = kinds[0] if len(kinds) == 1 else "UPDATE SCHEMA"
        params: dict[str, Any] = dict(self._operations[0][1]) if len(self._operations) == 1 else {
            "operations": [{"operation": k, **p} for k, p in self._operations]
        }
        txn = Transaction(self._snapshot, operation=operation, operation_parameters=params,
                          isolation_level=self._isolation_level)
        txn.update_metadata(self.metadata())
        if app_id is not None and app_version is not None:
            txn.app_transaction_version(app_id)  # recorded as read: a concurrent try with this id conflicts
            txn.set_app_transaction(app_id, app_version)
        protocol = self._requested_protocol()
        if protocol is not None:
            txn.update_protocol(protocol)
        self.committed_version = txn.commit()
        if self._on_commit is not None:
            self._on_commit(self.committed_version)
        return self.committed_version

    def __enter__(self) -> SchemaUpdate:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.commit()

    # -- checks -----------------------------------------------------------------------------------
    def _requested_protocol(self) -> Protocol | None:
        if not self._versions:
            return None
        return protocol_for_versions(self._snapshot.protocol, self._versions.get(_MIN_READER, 0),
                                     self._versions.get(_MIN_WRITER, 0), location=self._snapshot.location)

    def _record(self, kind: str, key: str, *values: Any) -> None:
        if self._operations and self._operations[-1][0] == kind and kind in ("ADD COLUMNS", "DROP COLUMNS"):
            self._operations[-1][1][key].extend(values)
            return
        value: Any = list(values) if kind in ("ADD COLUMNS", "DROP COLUMNS", "REPLACE COLUMNS",
                                              "UNSET TBLPROPERTIES") else values[0]
        self._operations.append((kind, {key: value}))

    def _require_mapping(self, action: str, parts: tuple[str, ...]) -> None:
        if column_mapping_mode(self.configuration) == "none":
            raise SchemaEvolutionError(
                f"Cannot {action} column {'.'.join(parts)!r}: the table does not use column mapping, and "
                f"{action} is a metadata-only change only with it. {_HOW_TO_MAP}"
            )

    def _refuse_constraint_columns(self, action: str, parts: tuple[str, ...]) -> None:
        folded = tuple(p.casefold() for p in parts)
        for key, text in self.configuration.items():
            if not key.startswith("delta.constraints."):
                continue
            # lazy: the expression engine loads sqlglot (~0.2 s); `import core` (sensors, DAG parsing) must not
            from airflow_provider_delta.core.expressions import parse_predicate, referenced_columns

            for ref in referenced_columns(parse_predicate(text)):
                ref_folded = tuple(p.casefold() for p in ref)
                if ref_folded[: len(folded)] == folded or folded[: len(ref_folded)] == ref_folded:
                    raise SchemaEvolutionError(
                        f"Cannot {action} column {'.'.join(parts)!r}: CHECK constraint "
                        f"{key[len('delta.constraints.'):]!r} ({text}) uses it. Help: drop the constraint first."
                    )

    def _change_mapping_mode(self, new_mode: str) -> None:
        current = column_mapping_mode(self.configuration)
        wanted = new_mode.lower()
        if wanted == current:
            return
        if current == "none" and wanted == "name":
            # Delta's upgrade: existing columns keep their names as physical names (the files use them).
            start = int(self.configuration.get(COLUMN_MAPPING_MAX_ID_KEY, "0") or 0) + 1
            self.schema, max_id = assign_column_mapping(self.schema, start, keep_existing=False,
                                                        physical_names="logical")
            self.configuration[COLUMN_MAPPING_MAX_ID_KEY] = str(max_id)
            return
        raise SchemaEvolutionError(
            f"Cannot change column mapping mode from {current!r} to {wanted!r}: only 'none' -> 'name' is "
            "allowed on an existing table"
        )


def _set_nullable(schema: StructType, parts: tuple[str, ...]) -> StructType:
    fields = []
    for f in schema.fields:
        if f.name != parts[0]:
            fields.append(f)
        elif len(parts) == 1:
            fields.append(StructField(f.name, f.type, True, f.metadata))
        else:
            assert isinstance(f.type, StructType)
            fields.append(f.with_type(_set_nullable(f.type, parts[1:])))
    return StructType(tuple(fields))


def _text(path: ev.PathLike) -> str:
    return path if isinstance(path, str) else ".".join(path)


__all__ = ["SchemaUpdate", "as_data_type", "metadata_with_schema", "with_column_mapping"]

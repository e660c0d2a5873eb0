"""Schemas and data files of the conformance corpus (tables written by Spark, Kernel and delta-rs)."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core.schema.arrow import from_arrow_schema, to_arrow_schema
from airflow_provider_delta.core.schema.conform import conform_table, null_table
from airflow_provider_delta.core.schema.mapping import (
    column_mapping_mode,
    field_id,
    logical_to_physical_paths,
    max_column_id,
    physical_name,
)
from airflow_provider_delta.core.schema.types import (
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    UnsupportedType,
    schema_from_json,
)
from airflow_provider_delta.exceptions import UnsupportedFeatureError
from tests.conformance import MISSING_MESSAGE, find_corpus, load_compare, manifest_entries

if TYPE_CHECKING:
    from types import ModuleType

_FOUND = find_corpus()
CORPUS = _FOUND if _FOUND is not None else Path("/nonexistent")

pytestmark = pytest.mark.skipif(_FOUND is None, reason=MISSING_MESSAGE)


def _schema_strings() -> dict[str, str]:
    """Every distinct metaData.schemaString in the corpus' JSON commits, keyed by where it was first seen."""
    found: dict[str, str] = {}
    for commit in sorted(CORPUS.glob("tables/**/_delta_log/*.json")):
        for line in commit.read_text(errors="replace").splitlines():
            if '"metaData"' not in line:
                continue
            try:
                action = json.loads(line)
            except ValueError:
                continue
            schema_string = (action.get("metaData") or {}).get("schemaString")
            if isinstance(schema_string, str) and schema_string not in found.values():
                found[
                    f"{commit.parent.parent.relative_to(CORPUS / 'tables')}@{commit.stem.lstrip('0') or '0'}"
                ] = schema_string
    return found


SCHEMA_STRINGS = _schema_strings() if _FOUND is not None else {}


def _contains_unsupported(data_type: DataType) -> bool:
    if isinstance(data_type, UnsupportedType):
        return True
    if isinstance(data_type, StructType):
        return any(_contains_unsupported(f.type) for f in data_type)
    if isinstance(data_type, ArrayType):
        return _contains_unsupported(data_type.element_type)
    if isinstance(data_type, MapType):
        return _contains_unsupported(data_type.key_type) or _contains_unsupported(data_type.value_type)
    return False


def _strip_metadata(data_type: DataType) -> DataType:
    if isinstance(data_type, StructType):
        return StructType(tuple(StructField(f.name, _strip_metadata(f.type), f.nullable) for f in data_type))
    if isinstance(data_type, ArrayType):
        return ArrayType(_strip_metadata(data_type.element_type), data_type.contains_null)
    if isinstance(data_type, MapType):
        return MapType(
            _strip_metadata(data_type.key_type),
            _strip_metadata(data_type.value_type),
            data_type.value_contains_null,
        )
    return data_type


def test_the_corpus_holds_many_schemas() -> None:
    assert len(SCHEMA_STRINGS) > 50


@pytest.mark.parametrize("schema_string", list(SCHEMA_STRINGS.values()), ids=list(SCHEMA_STRINGS))
def test_corpus_schema_round_trips_through_json(schema_string: str) -> None:
    schema = schema_from_json(schema_string)
    assert schema_from_json(schema.to_json()) == schema
    assert json.loads(schema.to_json()) == _normalized(json.loads(schema_string))


def _normalized(value: Any) -> Any:
    """Spark's JSON with the only two spellings this engine writes differently: `null` and `decimal(p, s)`."""
    if isinstance(value, dict):
        return {
            k: (_normalized(v) if k in ("type", "fields", "elementType", "keyType", "valueType") else v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    if value == "null":
        return "void"
    if value == "decimal":
        return "decimal(10,0)"
    if isinstance(value, str) and value.startswith("decimal("):
        return value.replace(" ", "")
    return value


@pytest.mark.parametrize("schema_string", list(SCHEMA_STRINGS.values()), ids=list(SCHEMA_STRINGS))
def test_corpus_schema_converts_to_arrow_or_refuses_unsupported_types(schema_string: str) -> None:
    schema = schema_from_json(schema_string)
    if _contains_unsupported(schema):
        with pytest.raises(UnsupportedFeatureError):
            to_arrow_schema(schema)
        return
    arrow_schema = to_arrow_schema(schema)
    assert arrow_schema.names == list(schema.names)
    assert from_arrow_schema(arrow_schema) == _strip_metadata(schema)
    physical = to_arrow_schema(schema, physical=True)
    assert physical.names == [physical_name(f) for f in schema]


@pytest.mark.parametrize("schema_string", list(SCHEMA_STRINGS.values()), ids=list(SCHEMA_STRINGS))
def test_corpus_column_mapping_metadata_is_consistent(schema_string: str) -> None:
    schema = schema_from_json(schema_string)
    ids = [i for _, f in schema.walk() if (i := field_id(f)) is not None]
    assert len(ids) == len(set(ids))
    assert max_column_id(schema) == max(ids, default=0)
    paths = logical_to_physical_paths(schema)
    assert len(set(paths.values())) == len(paths)


@pytest.fixture(scope="module")
def row_compare() -> ModuleType:
    """The corpus' own row comparison (pyarrow only)."""
    return load_compare(CORPUS)


def _data_cases() -> list[Any]:
    """Latest snapshots the schema layer alone can rebuild: no partitions, no deletion vectors."""
    if _FOUND is None:
        return []
    excluded = {"deletion-vectors", "partitioned", "negative/must-fail"}
    cases = []
    for entry in manifest_entries(CORPUS):
        if entry["expected_outcome"] not in ("read", "read_or_unsupported") or excluded & set(
            entry["groups"]
        ):
            continue
        if not entry["latest"].get("data"):
            continue
        metadata = json.loads((CORPUS / entry["expected"] / "metadata.json").read_text())
        if metadata.get("partition_columns") or not metadata.get("schema_json"):
            continue
        cases.append(pytest.param(entry, metadata, id=entry["name"]))
    return cases


DATA_CASES = _data_cases()


def test_the_corpus_holds_many_data_cases() -> None:
    assert len(DATA_CASES) > 50


@pytest.mark.parametrize(("entry", "metadata"), DATA_CASES)
def test_corpus_data_files_conform_to_the_expected_rows(
    entry: dict[str, Any], metadata: dict[str, Any], row_compare: ModuleType
) -> None:
    schema = schema_from_json(metadata["schema_json"])
    mode = column_mapping_mode(metadata["configuration"] or {})
    parts = []
    for active in metadata["active_files"]:
        path = CORPUS / entry["table"] / urllib.parse.unquote(active["path"])
        # INT96 as microseconds: nanoseconds overflow outside 1677-2262.
        table = pq.read_table(path, coerce_int96_timestamp_unit="us")
        conformed = conform_table(table, schema, mode=mode)
        assert conformed.schema == to_arrow_schema(schema)
        parts.append(conformed)
    result = pa.concat_tables(parts) if parts else null_table(schema, 0)
    expected = row_compare.read_expected(str(CORPUS / entry["latest"]["data"]))
    row_compare.assert_same_rows(result, expected, ignore_columns=entry.get("ignore_columns") or [])

"""``DeltaTable.create(location, pa_schema)`` keeps the Arrow fields' metadata as Delta column metadata.

Delta Lake keeps a column's metadata in the schema JSON (comments, ``delta.generationExpression``,
``delta.identity.*``, user keys) and strips column mapping keys from a new table that does not use column
mapping (``DeltaColumnMapping.verifyAndUpdateMetadataChange``); delta-rs keeps every key as well.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.exceptions import SchemaError
from tests.interop import assert_delta_rs_reads_identically

if TYPE_CHECKING:
    from pathlib import Path


def _fields(t: DeltaTable) -> list[dict[str, object]]:
    return json.loads(t.schema.to_json())["fields"]


def test_comments_and_user_keys_are_kept_at_every_level_as_delta_rs_keeps_them(tmp_path: Path) -> None:
    import deltalake

    inner = pa.struct([pa.field("c", pa.string(), metadata={"comment": "inner column"})])
    schema = pa.schema([
        pa.field("id", pa.int64(), metadata={"comment": "the key", "owner": "team-a"}),
        pa.field("s", inner, metadata={"comment": "a struct"}),
        pa.field("l", pa.list_(inner)),
        pa.field("plain", pa.string()),
    ])
    ours = DeltaTable.create(str(tmp_path / "ours"), schema)
    deltalake.DeltaTable.create(str(tmp_path / "theirs"), schema)
    theirs = json.loads(deltalake.DeltaTable(str(tmp_path / "theirs")).schema().to_json())["fields"]
    assert _fields(ours) == theirs
    assert _fields(ours)[0]["metadata"] == {"comment": "the key", "owner": "team-a"}
    assert _fields(ours)[2]["type"]["elementType"]["fields"][0]["metadata"] == {"comment": "inner column"}
    assert_delta_rs_reads_identically(ours.location)


def test_generation_and_identity_keys_are_kept_typed_and_enable_their_features(tmp_path: Path) -> None:
    schema = pa.schema([
        pa.field("id", pa.int64(), metadata={"delta.identity.start": "1", "delta.identity.step": "2",
                                             "delta.identity.allowExplicitInsert": "false"}),
        pa.field("a", pa.int64()),
        pa.field("b", pa.int64(), metadata={"delta.generationExpression": "a + 1", "comment": "derived"}),
    ])
    t = DeltaTable.create(str(tmp_path / "t"), schema)
    fields = _fields(t)
    # Delta's IdentityColumn reads these as a long and a boolean: the strings become JSON numbers/booleans.
    assert fields[0]["metadata"] == {"delta.identity.start": 1, "delta.identity.step": 2,
                                     "delta.identity.allowExplicitInsert": False}
    assert fields[2]["metadata"] == {"delta.generationExpression": "a + 1", "comment": "derived"}
    features = set(t.protocol.writer_features or ())
    implied = t.protocol.min_writer_version >= 6
    assert implied or {"generatedColumns", "identityColumns"} <= features
    assert_delta_rs_reads_identically(t.location)


def test_column_mapping_keys_are_stripped_without_column_mapping_and_kept_with_it(tmp_path: Path) -> None:
    mapped = {"delta.columnMapping.id": "5", "delta.columnMapping.physicalName": "col-a", "comment": "x"}
    schema = pa.schema([pa.field("a", pa.int64(), metadata=mapped),
                        pa.field("b", pa.int64(), metadata={"PARQUET:field_id": "9"})])
    plain = DeltaTable.create(str(tmp_path / "plain"), schema)
    assert [f["metadata"] for f in _fields(plain)] == [{"comment": "x"}, {}]
    named = DeltaTable.create(str(tmp_path / "named"), schema, properties={"delta.columnMapping.mode": "name"})
    first, second = (f["metadata"] for f in _fields(named))
    assert first == {"delta.columnMapping.id": 5, "delta.columnMapping.physicalName": "col-a", "comment": "x"}
    assert second["delta.columnMapping.id"] == 6  # above the largest id given
    assert int(named.configuration["delta.columnMapping.maxColumnId"]) == 6
    assert_delta_rs_reads_identically(named.location)


def test_a_typed_key_with_a_value_of_another_type_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), metadata={"delta.identity.step": "one"})])
    with pytest.raises(SchemaError, match=r"'delta.identity.step' = 'one'"):
        DeltaTable.create(str(tmp_path / "t"), schema)
    assert not os.path.exists(tmp_path / "t" / "_delta_log")

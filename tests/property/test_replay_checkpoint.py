"""Property: replaying our checkpoint plus the later commits equals replaying every JSON commit.

Random logs of adds and removes (paths with special characters, partition values with nulls,
deletion vectors, stats, tags, row-tracking fields), txns, domain metadata (set and removed), and
metadata and protocol changes are written as JSON commits. A checkpoint is written at a random
version, every commit up to it is deleted, and the state at every later version must be the same
as before: same files keyed by (path, DV id), tombstones, txns, domains, metadata and protocol.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_delta.core.log.checkpoint_write import write_checkpoint
from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.log.replay import replay
from airflow_provider_delta.core.log.segment import build_segment
from airflow_provider_delta.core.snapshot import Snapshot, load_snapshot
from airflow_provider_delta.core.storage import LocalStorage
from tests.snapshot_state import comparable_state

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
PATHS = ["f1.parquet", "p=a/f2.parquet", "p=a%20b/f3.parquet", "p=%C3%A9/f%3D4.parquet", "f 5.parquet"]
PARTITION_VALUES = ["a", "a b", "é", "x/y", "", None]
DVS: list[dict[str, Any] | None] = [
    None,
    None,
    {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 4,
        "sizeInBytes": 40,
        "cardinality": 6,
    },
    {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 44,
        "sizeInBytes": 40,
        "cardinality": 2,
    },
    {
        "storageType": "i",
        "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
        "sizeInBytes": 40,
        "cardinality": 6,
        "maxRowIndex": 29,
    },
]
PROTOCOLS = [
    {"minReaderVersion": 1, "minWriterVersion": 2},
    {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["deletionVectors"],
        "writerFeatures": ["deletionVectors", "domainMetadata", "rowTracking"],
    },
    {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["deletionVectors", "v2Checkpoint"],
        "writerFeatures": ["deletionVectors", "domainMetadata", "v2Checkpoint"],
    },
]

_opt_int = st.none() | st.integers(0, 2**40)
_file_fields = st.fixed_dictionaries(
    {
        "path": st.sampled_from(PATHS),
        "partitionValues": st.fixed_dictionaries({"p": st.sampled_from(PARTITION_VALUES)}),
        "deletionVector": st.sampled_from(DVS),
        "size": st.integers(0, 10**9),
    }
)


@st.composite
def add_actions(draw: st.DrawFn) -> dict[str, Any]:
    add = draw(_file_fields)
    add["modificationTime"] = draw(st.integers(0, 2**41))
    add["dataChange"] = draw(st.booleans())
    stats = draw(st.none() | st.integers(0, 1000).map(lambda n: json.dumps({"numRecords": n})))
    tags = draw(
        st.none()
        | st.dictionaries(st.sampled_from(["k", "INSERTION_TIME", "é"]), st.text(max_size=3), max_size=2)
    )
    optional = {
        "stats": stats,
        "tags": tags,
        "baseRowId": draw(_opt_int),
        "defaultRowCommitVersion": draw(_opt_int),
    }
    add.update({k: v for k, v in optional.items() if v is not None})
    if add["deletionVector"] is None:
        del add["deletionVector"]
    return {"add": add}


@st.composite
def remove_actions(draw: st.DrawFn) -> dict[str, Any]:
    remove = draw(_file_fields)
    if not draw(st.booleans()):
        del remove["partitionValues"]
        del remove["size"]
    remove["dataChange"] = draw(st.booleans())
    optional = {
        "deletionTimestamp": draw(_opt_int),
        "extendedFileMetadata": draw(st.none() | st.booleans()),
        "baseRowId": draw(_opt_int),
    }
    remove.update({k: v for k, v in optional.items() if v is not None})
    if remove["deletionVector"] is None:
        del remove["deletionVector"]
    return {"remove": remove}


txn_actions = st.builds(
    lambda app, version, updated: {
        "txn": {"appId": app, "version": version, **({"lastUpdated": updated} if updated is not None else {})}
    },
    st.sampled_from(["app-1", "app-2", "é app"]),
    st.integers(0, 10**6),
    _opt_int,
)
domain_actions = st.builds(
    lambda domain, config, removed: {
        "domainMetadata": {"domain": domain, "configuration": config, "removed": removed}
    },
    st.sampled_from(["user.a", "user.b", "delta.rowTracking"]),
    st.sampled_from(["{}", '{"rowIdHighWaterMark":7}', '{"x":"é"}']),
    st.booleans(),
)


@st.composite
def metadata_actions(draw: st.DrawFn) -> dict[str, Any]:
    options = {
        "delta.appendOnly": "false",
        "user.key": "é v",
        "user.empty": "",
        "delta.deletedFileRetentionDuration": "interval 1 days",
        "delta.setTransactionRetentionDuration": "interval 2 weeks",
    }
    keys = draw(st.lists(st.sampled_from(sorted(options)), unique=True, max_size=3))
    configuration = {k: options[k] for k in keys}
    return {
        "metaData": {
            "id": "table-id",
            "name": draw(st.none() | st.sampled_from(["t", "tâble"])),
            "description": draw(st.none() | st.just("desc")),
            "format": {
                "provider": "parquet",
                "options": draw(st.dictionaries(st.just("o"), st.just("v"), max_size=1)),
            },
            "schemaString": SCHEMA,
            "partitionColumns": ["p"],
            "configuration": configuration,
            "createdTime": draw(_opt_int),
        }
    }


_commit_body = st.lists(
    st.one_of(
        add_actions(),
        add_actions(),
        remove_actions(),
        txn_actions,
        domain_actions,
        metadata_actions(),
        st.sampled_from(PROTOCOLS).map(lambda p: {"protocol": p}),
    ),
    max_size=6,
)
_first_commit = st.tuples(st.sampled_from(PROTOCOLS), metadata_actions(), _commit_body).map(
    lambda t: [{"protocol": t[0]}, t[1], *t[2]]
)


@st.composite
def logs(draw: st.DrawFn) -> tuple[list[list[dict[str, Any]]], int]:
    commits = [draw(_first_commit), *draw(st.lists(_commit_body, max_size=7))]
    return commits, draw(st.integers(0, len(commits) - 1))


@settings(max_examples=50, deadline=None)
@given(logs())
def test_replay_from_checkpoint_equals_replay_of_all_commits(log: tuple[list[list[dict[str, Any]]], int]):
    commits, checkpoint_version = log
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "_delta_log").mkdir()
        for version, actions in enumerate(commits):
            (root / commit_path(version)).write_bytes(b"\n".join(json.dumps(a).encode() for a in actions))
        storage = LocalStorage(tmp)
        later = range(checkpoint_version, len(commits))
        expected = {v: comparable_state(load_snapshot(storage, tmp, v)) for v in later}

        # now_ms=0: no tombstone has expired, so the checkpoint must keep every one of them.
        write_checkpoint(load_snapshot(storage, tmp, checkpoint_version), now_ms=0)
        for version in range(checkpoint_version + 1):
            os.unlink(root / commit_path(version))

        for version in later:
            segment = build_segment(storage, version, location=tmp)
            assert segment.checkpoint is not None
            assert segment.checkpoint.version == checkpoint_version
            state = replay(storage, segment)
            assert comparable_state(Snapshot(storage, tmp, segment, state)) == expected[version]

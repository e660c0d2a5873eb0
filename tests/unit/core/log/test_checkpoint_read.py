"""Checkpoint reading: parquet checkpoints decoded in record batches, column by column.

Oracles: the same table replayed from its JSON commits (the checkpoint must summarise exactly that
state), a checkpoint written by delta-rs, and pyarrow's own ``to_pylist`` for the vectorised map decoding.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import deltalake
import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_delta.core.log.checkpoint_read import _BATCH_ROWS, _map_values
from airflow_provider_delta.core.log.checkpoint_write import write_checkpoint
from airflow_provider_delta.core.log.paths import commit_path
from airflow_provider_delta.core.snapshot import load_snapshot
from airflow_provider_delta.core.storage import LocalStorage
from tests.snapshot_state import comparable_state

REPO_ROOT = Path(__file__).resolve().parents[4]
SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
            {"name": "q", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
# Enough adds that a checkpoint spans several record batches, and a batch boundary falls mid-commit.
NUM_ADDS = 3 * _BATCH_ROWS + 123
PER_COMMIT = NUM_ADDS // 3 + 1
DV = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "sizeInBytes": 40, "cardinality": 6}


def _metadata(partition_columns: list[str]) -> dict[str, Any]:
    return {
        "metaData": {
            "id": "big",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": SCHEMA,
            "partitionColumns": partition_columns,
            "configuration": {},
            "createdTime": 1,
        }
    }


def _q(i: int) -> str | None:
    return None if i % 11 == 0 else ("" if i % 13 == 0 else f"v {i % 5}")


def _add(i: int, *, dv: dict[str, Any] | None = None, odd_pv: bool = True) -> dict[str, Any]:
    name = f"part-{i:05d}{'%20x' if i % 97 == 0 else ''}.parquet"
    pv: dict[str, str | None] = {"p": str(i % 7), "q": _q(i)}
    if odd_pv and i == 5:
        pv = {"p": "5"}  # a map with fewer entries than the others: the row-by-row decoding
    add: dict[str, Any] = {
        "path": f"p={i % 7}/{name}",
        "partitionValues": pv,
        "size": 1000 + i,
        "modificationTime": 1_700_000_000_000 + i,
        "dataChange": True,
        "stats": json.dumps({"numRecords": i, "minValues": {"id": i}, "maxValues": {"id": i + 9}}),
    }
    if i % 50 == 0:
        add["tags"] = {"INSERTION_TIME": str(i)}
    if dv is not None:
        add["deletionVector"] = {**dv, "offset": i}
    return add


def _remove(add: dict[str, Any]) -> dict[str, Any]:
    out = {k: add[k] for k in ("path", "partitionValues", "size")}
    out.update(deletionTimestamp=1_800_000_000_000, dataChange=True, extendedFileMetadata=True)
    if "deletionVector" in add:
        out["deletionVector"] = add["deletionVector"]
    return {"remove": out}


def _write(root: Path, commits: list[list[dict[str, Any]]]) -> None:
    (root / "_delta_log").mkdir(parents=True, exist_ok=True)
    for version, actions in enumerate(commits):
        (root / commit_path(version)).write_bytes(b"\n".join(json.dumps(a).encode() for a in actions))


def _big_log(*, with_dvs: bool) -> list[list[dict[str, Any]]]:
    """Commit 0 creates the table; 1-3 add NUM_ADDS files; 4 removes some and adds DV versions of others."""
    protocol = (
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors"],
        }
        if with_dvs
        else {"minReaderVersion": 1, "minWriterVersion": 2}
    )
    commits: list[list[dict[str, Any]]] = [[{"protocol": protocol}, _metadata(["p", "q"])]]
    adds = [_add(i, odd_pv=with_dvs) for i in range(NUM_ADDS)]
    for start in range(0, NUM_ADDS, PER_COMMIT):
        commits.append([{"add": a} for a in adds[start : start + PER_COMMIT]])
    last: list[dict[str, Any]] = [_remove(adds[i]) for i in range(0, NUM_ADDS, 37)]
    if with_dvs:
        # Same paths with a deletion vector: a new logical file each, and the old one removed.
        for i in range(1, NUM_ADDS, 41):
            last += [_remove(adds[i]), {"add": _add(i, dv=DV)}]
    commits.append(last)
    return commits


def _json_replay_states(root: Path, versions: range) -> dict[int, dict[str, Any]]:
    """The comparable state at each of ``versions``, replayed from JSON commits only."""
    storage = LocalStorage(str(root))
    assert not list((root / "_delta_log").glob("*.checkpoint*"))
    return {v: comparable_state(load_snapshot(storage, str(root), v)) for v in versions}


def _drop_commits_through(root: Path, version: int) -> None:
    for v in range(version + 1):
        os.unlink(root / commit_path(v))


def test_a_checkpoint_spanning_several_record_batches_holds_the_json_replay_state(tmp_path: Path):
    _write(tmp_path, _big_log(with_dvs=True))
    expected = _json_replay_states(tmp_path, range(3, 5))
    storage = LocalStorage(str(tmp_path))
    write_checkpoint(load_snapshot(storage, str(tmp_path), 3), now_ms=0)
    _drop_commits_through(tmp_path, 3)
    for version, state in expected.items():
        snapshot = load_snapshot(storage, str(tmp_path), version)
        assert snapshot.segment.checkpoint is not None
        assert comparable_state(snapshot) == state
    assert len(expected[3]["files"]) == NUM_ADDS > 3 * _BATCH_ROWS
    assert len(expected[4]["files"]) < NUM_ADDS  # commit 4's removes shadow files of the checkpoint


def test_the_files_of_a_large_checkpoint_keep_their_partition_values_and_keys(tmp_path: Path):
    _write(tmp_path, _big_log(with_dvs=True))
    storage = LocalStorage(str(tmp_path))
    write_checkpoint(load_snapshot(storage, str(tmp_path), 4), now_ms=0)
    _drop_commits_through(tmp_path, 4)
    snapshot = load_snapshot(storage, str(tmp_path))
    assert snapshot.segment.checkpoint is not None
    by_path = {(f.path, f.deletion_vector is not None): f for f in snapshot.files()}
    for i in (2, 11, 13, 97, 194):
        add = _add(i)
        f = by_path[(add["path"], False)]
        assert dict(f.partition_values) == add["partitionValues"]
        assert (f.size, f.modification_time, f.stats) == (add["size"], add["modificationTime"], add["stats"])
    assert dict(by_path[(_add(5)["path"], False)].partition_values) == {"p": "5"}
    with_dv = by_path[(_add(42)["path"], True)]
    assert with_dv.key == (_add(42)["path"], f"u{DV['pathOrInlineDv']}@42")
    assert dict(with_dv.deletion_vector or {})["cardinality"] == 6
    assert (_add(0)["path"], False) not in by_path  # removed by commit 4, its %-encoded path decoded


@pytest.mark.interop
def test_a_large_checkpoint_written_by_delta_rs_holds_the_json_replay_state(tmp_path: Path):
    commits = _big_log(with_dvs=False)
    _write(tmp_path, commits)
    expected = _json_replay_states(tmp_path, range(4, 5))[4]
    os.unlink(tmp_path / commit_path(4))
    deltalake.DeltaTable(str(tmp_path)).create_checkpoint()
    _write(tmp_path, commits)  # commit 4 again, after delta-rs's checkpoint of version 3
    _drop_commits_through(tmp_path, 3)
    got = comparable_state(load_snapshot(LocalStorage(str(tmp_path)), str(tmp_path)))
    # delta-rs may re-serialise the stats JSON: compare it parsed.
    for state in (expected, got):
        for f in state["files"].values():
            f["stats"] = orjson.loads(f["stats"])
    assert got["files"] == expected["files"]
    assert len(got["files"]) == NUM_ADDS - len(range(0, NUM_ADDS, 37))


def test_loading_a_checkpoint_does_not_import_pandas(tmp_path: Path):
    # pyarrow's to_numpy, pa.scalar and fill_null import pandas when installed: ~0.3 s on a cold load.
    _write(tmp_path, _big_log(with_dvs=False)[:2])
    write_checkpoint(load_snapshot(LocalStorage(str(tmp_path)), str(tmp_path)), now_ms=0)
    code = (
        "import sys\n"
        "from airflow_provider_delta.core import DeltaTable\n"
        f"t = DeltaTable({str(tmp_path)!r})\n"
        "assert t.snapshot.segment.checkpoint is not None and len(t.files()) > 0\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_a_load_leaves_the_collector_enabled_and_nothing_frozen(tmp_path: Path):
    _write(tmp_path, _big_log(with_dvs=False)[:2])
    assert gc.isenabled()
    snapshot = load_snapshot(LocalStorage(str(tmp_path)), str(tmp_path))
    assert snapshot.num_files == PER_COMMIT
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_a_load_keeps_objects_the_application_froze_frozen(tmp_path: Path):
    _write(tmp_path, _big_log(with_dvs=False)[:2])
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        load_snapshot(LocalStorage(str(tmp_path)), str(tmp_path))
        # Other threads (a live SparkSession's, in a full run) may free a few frozen objects meanwhile;
        # a load that unfroze them would leave next to none.
        assert frozen - 100 <= gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


# --------------------------------------------------------------------------- map decoding

_KEYS = st.sampled_from(["p", "q", "date", "é"])
_VALUES = st.none() | st.sampled_from(["", "a", "a b", "2024-01-01", "x%y", "é"])


@st.composite
def map_rows(draw: st.DrawFn) -> list[list[tuple[str, str | None]] | None]:
    uniform = draw(st.booleans())
    keys = draw(st.lists(_KEYS, unique=True, max_size=3))
    row = st.lists(st.tuples(_KEYS, _VALUES), max_size=3)
    if uniform:
        row = st.tuples(*[_VALUES for _ in keys]).map(lambda vs: list(zip(keys, vs, strict=True)))
    return draw(st.lists(st.none() | row, max_size=30))


@settings(max_examples=200, deadline=None)
@given(map_rows(), st.integers(0, 3))
def test_map_columns_decode_like_pyarrow(rows: list[Any], skip: int):
    arr = pa.array(rows, type=pa.map_(pa.string(), pa.string())).slice(min(skip, len(rows)))
    got = _map_values(arr)
    expected = [None if r is None else dict(r) for r in arr.to_pylist()]
    assert got == expected
    seen: dict[tuple[Any, ...], Any] = {}
    for pairs, value in zip(arr.to_pylist(), got, strict=True):
        if pairs is not None:
            assert seen.setdefault(tuple(pairs), value) is value  # equal maps share one dict


def test_maps_with_too_many_combinations_for_one_integer_still_decode():
    keys = [f"k{j}" for j in range(8)]
    rows = [
        [(k, None if (i + j) % 9 == 0 else f"v{(i * 7 + j) % 40}") for j, k in enumerate(keys)]
        for i in range(500)
    ]
    arr = pa.array(rows, type=pa.map_(pa.string(), pa.string()))
    assert _map_values(arr) == [dict(r) for r in rows]

"""How data files are encoded and written: dictionary choice, concurrent ordered writes, cleanup, memory pool.

Oracles: pyarrow's Parquet metadata (encodings per column chunk), the files on disk, delta-rs reading the
table back (rows and the stats it parses), and Arrow's own default memory pool.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from typing import TYPE_CHECKING, Any

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core.schema.types import (
    ArrayType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)
from airflow_provider_delta.core.storage import LocalStorage
from airflow_provider_delta.core.write.files import write_data_files
from airflow_provider_delta.core.write.memory import rewrite_memory_pool
from airflow_provider_delta.core.write.parquet import OrderedFileWrites, dictionary_columns
from airflow_provider_delta.exceptions import SchemaMismatchError

if TYPE_CHECKING:
    from pathlib import Path

    from airflow_provider_delta.core.actions import AddFile

SCHEMA = StructType(
    (
        StructField("id", LongType(), nullable=False),
        StructField("amount", DoubleType()),
        StructField("category", StringType()),
        StructField("tags", ArrayType(StringType())),
    )
)
ROWS = 200_000  # above the size from which the dictionary choice samples the file


def _big_table(rows: int = ROWS) -> pa.Table:
    ids = np.arange(rows, dtype=np.int64)
    rng = np.random.default_rng(7)
    category = pc.binary_join_element_wise("cat-", pc.cast(pa.array(ids % 7), pa.string()), "")
    return pa.table(
        {
            "id": ids,
            "amount": rng.random(rows),
            "category": category,
            "tags": pa.array([["a", "b"] if i % 3 else None for i in range(rows)], pa.list_(pa.string())),
        }
    )


def _write(root: Path, data: Any, **kwargs: Any) -> list[AddFile]:
    return write_data_files(
        data, storage=LocalStorage(str(root)), schema=SCHEMA, partition_columns=(), configuration={}, **kwargs
    )


def _encodings(root: Path, add: AddFile) -> dict[str, tuple[str, ...]]:
    meta = pq.ParquetFile(LocalStorage(str(root)).resolve(add.path)).metadata
    rg = meta.row_group(0)
    return {rg.column(i).path_in_schema: rg.column(i).encodings for i in range(rg.num_columns)}


def _commit(root: Path, adds: list[AddFile]) -> None:
    metadata = {
        "id": str(uuid.uuid4()),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": SCHEMA.to_json(),
        "partitionColumns": [],
        "configuration": {},
        "createdTime": 1,
    }
    lines = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": metadata},
        *({"add": a.to_dict()} for a in adds),
    ]
    (root / "_delta_log").mkdir(parents=True)
    (root / "_delta_log" / "00000000000000000000.json").write_text("\n".join(json.dumps(x) for x in lines))


# --------------------------------------------------------------------------------- dictionary choice


def test_mostly_distinct_columns_are_written_plain_and_repeating_ones_keep_their_dictionary(
    tmp_path: Path,
) -> None:
    [add] = _write(tmp_path, _big_table())
    encodings = _encodings(tmp_path, add)
    assert "RLE_DICTIONARY" not in encodings["id"]
    assert "RLE_DICTIONARY" not in encodings["amount"]
    assert "RLE_DICTIONARY" in encodings["category"]
    assert "RLE_DICTIONARY" in encodings["tags.list.element"]  # nested leaves always keep theirs


def test_small_files_keep_a_dictionary_for_every_column(tmp_path: Path) -> None:
    [add] = _write(tmp_path, _big_table(1_000))
    assert all("RLE_DICTIONARY" in e for e in _encodings(tmp_path, add).values())


def test_dictionary_choice_sees_every_column_of_a_repetitive_file_as_worth_a_dictionary() -> None:
    table = pa.table({"id": np.arange(ROWS) % 100, "flag": [True, False] * (ROWS // 2)})
    assert dictionary_columns(table, {}) is True
    assert dictionary_columns(table.append_column("uid", pa.array(np.arange(ROWS))), {}) == ["id", "flag"]


def test_delta_rs_reads_plain_encoded_files_with_their_rows_and_stats(tmp_path: Path) -> None:
    data = _big_table()
    adds = _write(tmp_path, data, target_file_rows=150_000)
    _commit(tmp_path, adds)
    table = deltalake.DeltaTable(str(tmp_path))
    read = pa.table(table.to_pyarrow_table()).sort_by("id")
    assert read.equals(data.cast(read.schema))
    stats = pa.table(table.get_add_actions(flatten=True)).sort_by("num_records").to_pylist()
    assert [s["num_records"] for s in stats] == [50_000, 150_000]
    assert [(s["min.id"], s["max.id"]) for s in stats] == [(150_000, ROWS - 1), (0, 149_999)]
    assert stats[1]["max.amount"] == pc.max(data.column("amount").slice(0, 150_000)).as_py()


# ----------------------------------------------------------------------------- concurrent file writes


def test_many_files_are_written_concurrently_and_returned_in_input_order(tmp_path: Path) -> None:
    data = _big_table(50_000)
    adds = _write(tmp_path, data, target_file_rows=4_000)
    assert [a.path[:10] for a in adds] == [f"part-{i:05d}" for i in range(13)]
    first_ids = [pq.read_table(tmp_path / a.path).column("id")[0].as_py() for a in adds]
    assert first_ids == list(range(0, 50_000, 4_000))
    assert [json.loads(a.stats or "")["minValues"]["id"] for a in adds] == first_ids
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(a.path for a in adds)


def test_input_failing_after_files_were_written_leaves_no_file_behind(tmp_path: Path) -> None:
    good = _big_table(10_000)
    bad = good.set_column(0, "id", pa.array(["x"] * good.num_rows))

    def batches() -> Any:
        yield from good.to_batches(max_chunksize=2_500)
        yield bad.to_batches()[0]

    reader = pa.RecordBatchReader.from_batches(good.schema, batches())
    with pytest.raises(SchemaMismatchError, match="'id'"):
        _write(tmp_path, reader, target_file_rows=1_000)
    assert list(tmp_path.iterdir()) == []


def test_ordered_writes_return_results_in_submission_order_whatever_finishes_first() -> None:
    gate = threading.Event()
    writes: OrderedFileWrites[int] = OrderedFileWrites(cleanup=lambda r: None, max_workers=3)
    writes.submit(lambda: int(gate.wait(5)) * 0)  # the first job finishes last
    for i in range(1, 6):
        writes.submit(lambda i=i: i)
    gate.set()
    assert writes.results() == [0, 1, 2, 3, 4, 5]


def test_ordered_writes_raise_the_first_failure_and_clean_up_every_completed_job() -> None:
    cleaned: list[str] = []
    lock = threading.Lock()

    def job(name: str) -> str:
        if name in ("c", "e"):
            raise OSError(f"disk full writing {name}")
        return name

    def cleanup(name: str) -> None:
        with lock:
            cleaned.append(name)

    writes: OrderedFileWrites[str] = OrderedFileWrites(cleanup=cleanup, max_workers=2)
    with pytest.raises(OSError, match="writing c"):
        for name in "abcdef":
            writes.submit(lambda name=name: job(name))
        writes.results()
    assert {"a", "b"} <= set(cleaned)
    assert not {"c", "e"} & set(cleaned)


def test_a_single_write_runs_on_the_calling_thread() -> None:
    writes: OrderedFileWrites[str] = OrderedFileWrites(cleanup=lambda r: None)
    writes.submit(lambda: threading.current_thread().name)
    assert writes.results() == [threading.current_thread().name]


# ------------------------------------------------------------------------------------- memory pool


needs_jemalloc = pytest.mark.skipif(
    "jemalloc" not in pa.supported_memory_backends() or "ARROW_DEFAULT_MEMORY_POOL" in os.environ,
    reason="pyarrow without jemalloc, or the pool is chosen by the environment",
)


@needs_jemalloc
def test_rewrites_allocate_with_jemalloc_and_restore_the_default_pool_afterwards() -> None:
    before = pa.default_memory_pool().backend_name
    with rewrite_memory_pool():
        with rewrite_memory_pool():
            inner = pa.default_memory_pool().backend_name
        outer = pa.default_memory_pool().backend_name
        data = pa.array(np.arange(1_000))
    assert (inner, outer) == (("jemalloc", "jemalloc") if before == "mimalloc" else (before, before))
    assert pa.default_memory_pool().backend_name == before
    assert pc.sum(data).as_py() == 499_500  # buffers made inside stay valid


def test_a_pool_the_process_chose_itself_is_left_alone() -> None:
    chosen = pa.system_memory_pool()
    previous = pa.default_memory_pool()
    pa.set_memory_pool(chosen)
    try:
        with rewrite_memory_pool():
            assert pa.default_memory_pool().backend_name == "system"
        assert pa.default_memory_pool().backend_name == "system"
    finally:
        pa.set_memory_pool(previous)


def test_a_slice_of_a_list_column_with_nulls_is_written(tmp_path: Path) -> None:
    data = _big_table(10).slice(1)  # sliced offsets and a null mask: pyarrow's from_arrays refuses both
    [add] = _write(tmp_path, data)
    assert pq.read_table(tmp_path / add.path).column("tags").to_pylist() == data.column("tags").to_pylist()

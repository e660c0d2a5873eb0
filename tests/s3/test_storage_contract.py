"""The storage contract, one suite over every implementation: local disk, S3 (a real server), memory://.

What the engine relies on: sorted listings with ``start_after``, FileNotFoundError for absent files,
put-if-absent that exactly one racing writer wins, whole-file replacement, streams that leave nothing
behind when they fail, and log paths (percent-encoded) opened as the files they name.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core.storage import LocalStorage, storage_for
from airflow_provider_delta.core.storage.object_store import ObjectStoreStorage

if TYPE_CHECKING:
    from pathlib import Path

    from airflow_provider_delta.core.storage import Storage
    from tests.s3_fixtures import S3Env


@pytest.fixture(params=["local", "s3", "memory"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param == "local":
        return storage_for(str(tmp_path / "table"))
    if request.param == "memory":
        return storage_for("memory:///table")
    s3: S3Env = request.getfixturevalue("s3")
    return storage_for(s3.uri, s3.options)


def test_storage_for_picks_the_implementation(tmp_path: Path, s3: S3Env) -> None:
    assert isinstance(storage_for(str(tmp_path)), LocalStorage)
    assert isinstance(storage_for(s3.uri, s3.options), ObjectStoreStorage)
    assert isinstance(storage_for(s3.uri.replace("s3://", "s3a://"), s3.options), ObjectStoreStorage)


def test_absent_files_are_not_found(storage: Storage) -> None:
    assert storage.list_dir("_delta_log") == []
    assert not storage.exists("_delta_log/00000000000000000000.json")
    with pytest.raises(FileNotFoundError):
        storage.read_bytes("_delta_log/00000000000000000000.json")
    with pytest.raises(FileNotFoundError):
        storage.modification_time("_delta_log/00000000000000000000.json")
    storage.delete("_delta_log/missing.json")  # ignored


def test_listing_is_sorted_direct_children_only_and_starts_after(storage: Storage) -> None:
    for name in [
        "00000000000000000002.json",
        "00000000000000000000.json",
        "00000000000000000001.json",
        "00000000000000000001.checkpoint.parquet",
        "_last_checkpoint",
        "_sidecars/a.parquet",
    ]:
        storage.write(f"_delta_log/{name}", b"x" * 3)
    names = [f.name for f in storage.list_dir("_delta_log")]
    assert names == [
        "00000000000000000000.json",
        "00000000000000000001.checkpoint.parquet",
        "00000000000000000001.json",
        "00000000000000000002.json",
        "_last_checkpoint",
    ]
    after = [f.name for f in storage.list_dir("_delta_log", start_after="00000000000000000001")]
    assert after == [
        "00000000000000000001.checkpoint.parquet",
        "00000000000000000001.json",
        "00000000000000000002.json",
        "_last_checkpoint",
    ]
    info = storage.list_dir("_delta_log", start_after="00000000000000000001.json")[0]
    assert (info.name, info.size) == ("00000000000000000002.json", 3)
    assert info.modification_time > 1_600_000_000_000


def test_write_if_absent_creates_once(storage: Storage) -> None:
    path = "_delta_log/00000000000000000000.json"
    assert storage.write_if_absent(path, b"first\n")
    assert not storage.write_if_absent(path, b"second\n")
    assert storage.read_bytes(path) == b"first\n"
    assert storage.exists(path)


def test_exactly_one_of_eight_racing_writers_wins(storage: Storage) -> None:
    path = "_delta_log/00000000000000000007.json"
    barrier = threading.Barrier(8)
    results: dict[int, bool] = {}

    def race(i: int) -> None:
        barrier.wait()
        results[i] = storage.write_if_absent(path, f"writer {i}\n".encode())

    threads = [threading.Thread(target=race, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, won in results.items() if won]
    assert len(winners) == 1
    assert storage.read_bytes(path) == f"writer {winners[0]}\n".encode()


def test_write_replaces_and_read_many_keeps_order(storage: Storage) -> None:
    storage.write("_delta_log/_last_checkpoint", b'{"version":1}')
    storage.write("_delta_log/_last_checkpoint", b'{"version":2}')
    assert storage.read_bytes("_delta_log/_last_checkpoint") == b'{"version":2}'
    paths = [f"_delta_log/{i:020d}.json" for i in range(20)]
    for i, p in enumerate(paths):
        storage.write(p, str(i).encode())
    assert storage.read_many(paths) == [str(i).encode() for i in range(20)]


def test_write_stream_returns_size_and_leaves_nothing_on_failure(storage: Storage) -> None:
    table = pa.table({"id": list(range(1000))})
    size, mtime = storage.write_stream("part=a b/file.parquet", lambda sink: pq.write_table(table, sink))
    assert size == len(storage.read_bytes("part=a b/file.parquet")) and mtime > 0

    def broken(sink: pa.NativeFile) -> None:
        sink.write(b"PAR1 half a file")
        raise RuntimeError("the writer died")

    with pytest.raises(RuntimeError, match="died"):
        storage.write_stream("part=a b/broken.parquet", broken)
    assert not storage.exists("part=a b/broken.parquet")


def test_log_paths_are_percent_decoded_once(storage: Storage) -> None:
    table = pa.table({"id": [1, 2, 3]})
    storage.write_stream("country=C%3A/a b.parquet", lambda sink: pq.write_table(table, sink))
    # The log stores the path URI-encoded: '%' -> %25, ' ' -> %20.
    with storage.open_input_file("country=C%253A/a%20b.parquet") as source:
        assert pq.read_table(source).column("id").to_pylist() == [1, 2, 3]
    size = len(storage.read_bytes("country=C%3A/a b.parquet"))
    with storage.open_input_file("country=C%253A/a%20b.parquet", size=size) as source:
        assert pq.ParquetFile(source).metadata.num_rows == 3


def test_absolute_uris_in_the_table_open(storage: Storage) -> None:
    storage.write("dv/deletion_vector_1.bin", b"\x01abc")
    absolute = (
        f"{storage.root}/dv/deletion_vector_1.bin"
        if "://" in storage.root
        else f"file://{storage.root}/dv/deletion_vector_1.bin"
    )
    with storage.open_input_file(absolute) as source:
        assert source.read() == b"\x01abc"

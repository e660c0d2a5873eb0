"""Paths a log names resolve inside the table or are refused (no file outside the table is opened)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.storage import LocalStorage, is_inside
from airflow_provider_delta.core.storage.arrow import ArrowFileSystemStorage
from airflow_provider_delta.core.storage.object_store import ObjectStoreStorage
from airflow_provider_delta.exceptions import DataFileError

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("part-0.parquet", "/data/t/part-0.parquet"),
        ("p%3D1/part%200.parquet", "/data/t/p=1/part 0.parquet"),
        ("p=1/../part-0.parquet", "/data/t/p=1/../part-0.parquet"),
        ("/data/t/x.parquet", "/data/t/x.parquet"),
        ("file:///data/t/x.parquet", "/data/t/x.parquet"),
        ("file:/data/t/x.parquet", "/data/t/x.parquet"),
    ],
)
def test_paths_inside_the_table_resolve(path: str, expected: str) -> None:
    assert LocalStorage("/data/t").resolve(path) == expected


@pytest.mark.parametrize(
    "path",
    [
        "../u/part-0.parquet",
        "p=1/../../u/x.parquet",
        "%2E%2E/u/x.parquet",
        "/data/u/x.parquet",
        "/data/t2/x.parquet",
        "file:///etc/passwd",
        "s3://bucket/x.parquet",
        "hdfs://nn/x.parquet",
    ],
)
def test_paths_escaping_the_table_are_refused(path: str) -> None:
    with pytest.raises(DataFileError) as info:
        LocalStorage("/data/t").resolve(path)
    assert info.value.path == path


def test_pyarrow_file_system_paths_stay_in_the_table() -> None:
    storage = ArrowFileSystemStorage(pafs.LocalFileSystem(), "namenode/t", scheme="hdfs")
    assert storage.resolve("p=1/x.parquet") == "namenode/t/p=1/x.parquet"
    assert storage.resolve("hdfs://namenode/t/x.parquet") == "namenode/t/x.parquet"
    for path in (
        "hdfs://namenode/u/x.parquet",
        "hdfs://other/t/x.parquet",
        "../u/x.parquet",
        "gs://namenode/t/x",
    ):
        with pytest.raises(DataFileError):
            storage.resolve(path)


def test_object_store_keys_stay_under_the_table_prefix() -> None:
    storage = ObjectStoreStorage("s3://bucket/t", {"aws_region": "us-east-1"}, store=object())
    assert storage.resolve("p=1/x.parquet") == "t/p=1/x.parquet"
    assert storage.resolve("s3a://bucket/t/x.parquet") == "t/x.parquet"
    for path in ("s3://bucket/u/x.parquet", "../u/x.parquet", "p=1/../../u/x.parquet", "%2E%2E/u/x.parquet"):
        with pytest.raises(DataFileError):
            storage.resolve(path)


def test_is_inside_compares_whole_path_components() -> None:
    assert is_inside("/data/t", "/data/t/a")
    assert not is_inside("/data/t", "/data/t2/a")
    assert not is_inside("/data/t", "/data")


def test_a_table_whose_log_names_a_file_outside_it_refuses_to_read_it(tmp_path: Path) -> None:
    secret = tmp_path / "secret.parquet"
    pq.write_table(pa.table({"id": [-777]}), secret)
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1]}))
    commit = tmp_path / "t" / "_delta_log" / f"{1:020d}.json"
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for a in actions:
        if "add" in a:
            a["add"]["path"] = "../secret.parquet"
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    with pytest.raises(DataFileError, match="outside the table root") as info:
        DeltaTable(str(tmp_path / "t")).to_arrow()
    message = str(info.value)
    assert str(tmp_path / "t") in message and "version 1" in message and "../secret.parquet" in message

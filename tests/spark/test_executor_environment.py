"""Executors whose Python cannot run the data plane: a clear error before anything is written.

Each test gives the executors another Python: the interpreter without site-packages (``local[1]``),
and on the standalone cluster an interpreter that has pyarrow but not this package, or has another
version of it. ``read_delta`` and ``write_delta`` must raise ``ExecutorEnvironmentError`` naming the
missing module (and the fix), and the table must stay at its version with no new file.

On ``local[*]`` the executors' Python workers run with the driver JVM's working directory (the
repository here) first on ``sys.path``, so "package missing" can only be staged on the cluster,
whose executors run in their own work directories.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
import sysconfig
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

import airflow_provider_delta
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import ExecutorEnvironmentError
from airflow_provider_delta.spark import read_delta, write_delta
from tests.spark_cluster import spark_session, stop_spark_session

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

    from tests.spark_cluster import StandaloneCluster

pytestmark = pytest.mark.spark

BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)


def _table(path: Path) -> DeltaTable:
    table = DeltaTable.create(str(path), pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": [1, 2, 3]}))
    return table.refresh()


def _files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}


def _wrapper(tmp_path: Path, name: str, python: str, pythonpath: str) -> str:
    """An executable that runs ``python`` with ``pythonpath`` first on its path."""
    script = tmp_path / name
    script.write_text(
        f'#!/bin/sh\nPYTHONPATH="{pythonpath}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{python}" "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def _assert_refused_untouched(spark: SparkSession, path: Path, module: str) -> None:
    before_version, before_files = DeltaTable(str(path)).version, _files(path)
    with pytest.raises(
        ExecutorEnvironmentError, match=rf"cannot import '{module}'.*spark\.pyspark\.python"
    ) as info:
        write_delta(spark.range(10), str(path))
    assert re.fullmatch(module, str(info.value.module))
    with pytest.raises(ExecutorEnvironmentError, match=rf"cannot import '{module}'"):
        read_delta(spark, str(path)).collect()
    assert DeltaTable(str(path)).version == before_version
    assert _files(path) == before_files


def test_executors_without_pyarrow_are_refused_before_writing(tmp_path: Path) -> None:
    bare = tmp_path / "python-without-site-packages"  # -S: the standard library and PYTHONPATH only
    bare.write_text(f'#!/bin/sh\nexec "{BASE_PYTHON}" -S "$@"\n')
    bare.chmod(bare.stat().st_mode | stat.S_IXUSR)
    table = _table(tmp_path / "t")
    spark = spark_session("local[1]", python=str(bare))
    try:
        # The first dependency the task's unpickling imports is named (orjson or pyarrow).
        _assert_refused_untouched(spark, tmp_path / "t", "(?:orjson|pyarrow)")
    finally:
        stop_spark_session("local[1]")
    assert table.refresh().to_arrow().column("id").to_pylist() == [1, 2, 3]


@pytest.mark.cluster
def test_cluster_executors_without_the_package_are_refused(
    spark_cluster: StandaloneCluster, tmp_path: Path
) -> None:
    site_packages = sysconfig.get_paths()["purelib"]  # pyarrow & co; the editable .pth is not processed
    python = _wrapper(tmp_path, "python-without-package", BASE_PYTHON, site_packages)
    _table(tmp_path / "t")
    stop_spark_session()
    spark = spark_session(spark_cluster.master_url, conf=spark_cluster.session_conf(), python=python)
    try:
        _assert_refused_untouched(spark, tmp_path / "t", "airflow_provider_delta")
    finally:
        stop_spark_session(spark_cluster.master_url)


@pytest.mark.cluster
def test_cluster_executors_with_another_version_are_refused(
    spark_cluster: StandaloneCluster, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    shutil.copytree(
        os.path.dirname(airflow_provider_delta.__file__),
        other / "airflow_provider_delta",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    init = other / "airflow_provider_delta" / "__init__.py"
    init.write_text(init.read_text().replace(airflow_provider_delta.__version__, "0.0.0+other"))
    python = _wrapper(tmp_path, "python-other-version", sys.executable, str(other))
    _table(tmp_path / "t")
    before = _files(tmp_path / "t")
    stop_spark_session()
    spark = spark_session(spark_cluster.master_url, conf=spark_cluster.session_conf(), python=python)
    try:
        with pytest.raises(ExecutorEnvironmentError, match=r"0\.0\.0\+other .* driver runs"):
            write_delta(spark.range(10), str(tmp_path / "t"))
    finally:
        stop_spark_session(spark_cluster.master_url)
    assert DeltaTable(str(tmp_path / "t")).version == 1
    assert _files(tmp_path / "t") == before

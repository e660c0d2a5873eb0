"""Subprocess worker of bench_merge: one MERGE by one engine on one clone of the target table.

    python -m benchmarks._merge_worker '{"engine": "ours", "path": ..., "source": ...}'

``ours`` and ``delta-rs`` read the source Parquet file with pyarrow and load the table (not timed), then
time only the merge call. ``spark`` starts a ``local[2]`` SparkSession (its start reported apart as
``jvm_ms``), warms it up with a tiny merge on a scratch table, then times ``merge_delta`` with the source
read by Spark from the Parquet file (no row passes through the driver); ``base_kb``/``peak_kb`` are the
Python driver's peak RSS before and after the timed merge, ``cpu_ms``/``again_cpu_ms`` the CPU the JVM's
threads (by kind) and the Python workers spent in each merge (:mod:`benchmarks._cpu`). The last stdout line is JSON:
``{"ms": ..., "load_ms": ..., "metrics": {...}}`` or ``{"error": ..., "traceback": ...}``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any

import pyarrow.parquet as pq

from benchmarks.workload import finish_lazy_imports

CONDITION = "t.id = s.id"


def _ours(path: str, source: Any) -> dict[str, Any]:
    from airflow_provider_delta.core import DeltaTable

    # The merge modules (and sqlglot, which they load) are imported before the clock starts, as
    # ``import deltalake`` is for delta-rs: the timing is the merge, not module loading.
    import_started = time.perf_counter()
    import airflow_provider_delta.core.commands.merge.command  # noqa: F401

    imports_ms = (time.perf_counter() - import_started) * 1000
    started = time.perf_counter()
    t = DeltaTable(path)
    loaded, cpu = time.perf_counter(), time.process_time()
    metrics = (
        t.merge(source, CONDITION, source_alias="s", target_alias="t", schema_evolution=True)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    done = time.perf_counter()
    return {
        "ms": (done - loaded) * 1000,
        "cpu_s": time.process_time() - cpu,
        "load_ms": (loaded - started) * 1000,
        "imports_ms": imports_ms,
        "metrics": metrics,
    }


def _delta_rs(path: str, source: Any) -> dict[str, Any]:
    import deltalake

    started = time.perf_counter()
    dt = deltalake.DeltaTable(path)
    loaded, cpu = time.perf_counter(), time.process_time()
    metrics = (
        dt.merge(source, CONDITION, source_alias="s", target_alias="t", merge_schema=True)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    done = time.perf_counter()
    return {"ms": (done - loaded) * 1000, "cpu_s": time.process_time() - cpu, "load_ms": (loaded - started) * 1000,
            "metrics": metrics}


def _spark(path: str, source_path: str, origin: str | None = None, java_options: str | None = None) -> dict[str, Any]:
    import shutil
    from pathlib import Path

    from airflow_provider_delta.core import DeltaTable
    from airflow_provider_delta.spark import merge_delta
    from benchmarks._cpu import cpu_delta, cpu_snapshot
    from benchmarks._spark_worker import _spark as start_spark
    from benchmarks._spark_worker import _warm_up
    from benchmarks._worker import _maxrss_kb

    spark, jvm_s = start_spark(java_options)
    scratch = f"{path}-warm-up"
    try:
        _warm_up(spark)
        # One tiny merge first: the executors' Python workers load the engine, the JVM compiles the join.
        small = pq.read_table(source_path).slice(0, 1000)
        DeltaTable.create(scratch, small.schema.remove(small.schema.get_field_index("score"))).append(
            small.drop_columns(["score"]).slice(0, 500)
        )
        merge_delta(spark, scratch, spark.createDataFrame(small), CONDITION, source_alias="s", target_alias="t",
                    schema_evolution=True).when_matched_update_all().when_not_matched_insert_all().execute()
        base = _maxrss_kb()
        cpu_before = cpu_snapshot(os.getpid())
        started = time.perf_counter()
        metrics = (  # the table's snapshot is loaded inside (20 commits): timed
            merge_delta(spark, path, spark.read.parquet(source_path), CONDITION, source_alias="s",
                        target_alias="t", schema_evolution=True)
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
        done = time.perf_counter()
        cpu = cpu_delta(cpu_before, cpu_snapshot(os.getpid()))
        peak = _maxrss_kb()
        again_ms = again_cpu = None
        if origin is not None:  # info: the same MERGE again in the now warm session, on a fresh clone
            from benchmarks.bench_merge import _clone

            _clone(Path(origin), Path(f"{path}-again"))
            cpu_before = cpu_snapshot(os.getpid())
            again = time.perf_counter()
            merge_delta(spark, f"{path}-again", spark.read.parquet(source_path), CONDITION, source_alias="s",
                        target_alias="t", schema_evolution=True).when_matched_update_all() \
                .when_not_matched_insert_all().execute()
            again_ms = (time.perf_counter() - again) * 1000
            again_cpu = cpu_delta(cpu_before, cpu_snapshot(os.getpid()))
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(f"{path}-again", ignore_errors=True)
    return {
        "ms": (done - started) * 1000,
        "again_ms": again_ms,
        "cpu_ms": cpu,
        "again_cpu_ms": again_cpu,
        "jvm_ms": jvm_s * 1000,
        "base_kb": base,
        "peak_kb": peak,
        "metrics": metrics,
    }


def main(argv: list[str]) -> int:
    req = json.loads(argv[1])
    if req["engine"] == "ours":
        finish_lazy_imports()
    try:
        if req["engine"] == "spark":
            import warnings

            warnings.simplefilter("ignore", FutureWarning)  # pyspark 4.3's "pandas >= 3" notice
            out = _spark(req["path"], req["source"], req.get("origin"), req.get("java_options"))
        else:
            source = pq.read_table(req["source"])
            run = _ours if req["engine"] == "ours" else _delta_rs
            out = run(req["path"], source)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which prints it
        out = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    sys.stdout.write("\n" + json.dumps(out, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

"""The Spark plane against delta-spark in one SparkSession: ``python -m benchmarks._spark_delta_worker '<json>'``.

Runs in the oracle's venv (``.venv-delta``: pyspark 4.2.0, delta-spark, this package); one ``local[2]``
session has delta-spark's jars, extension and catalog, and our ``read_delta``/``write_delta``/
``merge_delta``/``SparkExecutor`` run in it too. Both engines are warmed up on small data first; then
for each case the engines alternate (the first engine swaps from repeat to repeat), every run on its own
table (MERGE and OPTIMIZE: a hard-linked clone of one cached table). Timings are wall ms of the action
only. The request: ``n`` (write/read rows), ``merge_root`` (a ``bench_merge`` data folder), ``optimize_files``,
``work`` (scratch folder), ``repeats``. The last stdout line is the JSON result: per case and engine the
list of run times, and what the cross-checks need (counts, sums, row counts after MERGE/OPTIMIZE).
"""

from __future__ import annotations

import glob
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._spark_worker import spark_rows

OURS, DELTA = "ours", "delta-spark"
JARS_DIR = Path(os.environ.get("DELTA_JARS_DIR", ".cache/jars/delta"))
CONDITION = "t.id = s.id"


def session(jars: list[str]) -> tuple[Any, float]:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    started = time.perf_counter()
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-spark-delta")
        .config("spark.jars", ",".join(jars))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.catalogImplementation", "in-memory")
        # delta-spark's log replay in 2 partitions instead of 50 (as the oracle fixture): 2 cores, small logs.
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark, time.perf_counter() - started


def _timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return (time.perf_counter() - started) * 1000, out


def _alternate(repeats: int, runs: dict[str, Any]) -> dict[str, list[tuple[float, Any]]]:
    """Each engine's ``runs[engine](r)`` ``repeats`` times, the first engine swapping every repeat."""
    engines = list(runs)
    out: dict[str, list[tuple[float, Any]]] = {e: [] for e in engines}
    for r in range(repeats):
        for engine in engines if r % 2 == 0 else engines[::-1]:
            out[engine].append(_timed(lambda e=engine, r=r: runs[e](r)))
    return out


def _writes(spark: Any, n: int, work: Path, repeats: int) -> tuple[dict[str, Any], str]:
    from airflow_provider_delta.spark import write_delta

    runs = {
        OURS: lambda r: write_delta(spark_rows(spark, n), str(work / f"w-ours-{n}-{r}")),
        DELTA: lambda r: spark_rows(spark, n).write.format("delta").save(str(work / f"w-delta-{n}-{r}")),
    }
    res = _alternate(repeats, runs)
    return {e: [ms for ms, _ in v] for e, v in res.items()}, str(work / f"w-delta-{n}-0")


def _reads(spark: Any, path: str, n: int, repeats: int) -> dict[str, Any]:
    """count, filtered sum and group by of one table (written by delta-spark) through both readers."""
    from pyspark.sql import functions as F

    from airflow_provider_delta.spark import read_delta

    cut = n // 10
    frames = {OURS: lambda: read_delta(spark, path), DELTA: lambda: spark.read.format("delta").load(path)}
    cases = {
        "count": lambda df: df.count(),
        "filtered sum": lambda df: df.where(F.col("id") < cut).agg(F.sum("value")).collect()[0][0],
        "group by": lambda df: sorted(
            tuple(row) for row in df.groupBy("name").agg(F.count("*"), F.sum("value")).collect()
        ),
    }
    out: dict[str, Any] = {}
    for case, op in cases.items():
        res = _alternate(repeats, {e: (lambda r, f=f, op=op: op(f())) for e, f in frames.items()})
        out[case] = {e: [ms for ms, _ in v] for e, v in res.items()}
        values = {e: v[-1][1] for e, v in res.items()}
        out[case]["agree"] = values[OURS] == values[DELTA]
        out[case]["value"] = values[DELTA] if case != "group by" else len(values[DELTA])
    pushed = _alternate(repeats, {
        OURS: lambda r: read_delta(spark, path, filter=f"id < {cut}").where(F.col("id") < cut)
        .agg(F.sum("value")).collect()[0][0],
    })
    out["filtered sum, filter= pushed"] = {OURS: [ms for ms, _ in pushed[OURS]],
                                           "agree": pushed[OURS][-1][1] == out["filtered sum"]["value"]}
    return out


def _clone(src: Path, dst: Path) -> str:
    from benchmarks.bench_merge import _clone as hard_link_clone

    hard_link_clone(src, dst)
    return str(dst)


def _merges(spark: Any, root: Path, work: Path, repeats: int) -> dict[str, Any]:
    from delta.tables import DeltaTable as SparkDeltaTable

    from airflow_provider_delta.spark import merge_delta

    source = spark.read.parquet(str(root / "source.parquet"))

    def ours(r: int) -> Any:
        path = _clone(root / "table", work / f"m-ours-{r}")
        return (merge_delta(spark, path, source, CONDITION, source_alias="s", target_alias="t",
                            schema_evolution=True).when_matched_update_all().when_not_matched_insert_all().execute())

    def delta(r: int) -> Any:
        path = _clone(root / "table", work / f"m-delta-{r}")
        (SparkDeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), CONDITION)
         .withSchemaEvolution().whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())

    res = _alternate(repeats, {OURS: ours, DELTA: delta})
    counts = {}
    for engine, prefix in ((OURS, "m-ours"), (DELTA, "m-delta")):
        df = spark.read.format("delta").load(str(work / f"{prefix}-0"))
        counts[engine] = df.selectExpr("count(*)", "count(score)", "sum(id)").collect()[0].asDict()
    return {**{e: [ms for ms, _ in v] for e, v in res.items()}, "after": counts}


def _small_files_table(spark: Any, n: int, files: int, work: Path) -> Path:
    """n rows in ``files`` files (one write_delta of a DataFrame with that many partitions)."""
    from airflow_provider_delta.spark import write_delta

    path = work / f"opt-src-{n}-{files}"
    write_delta(spark_rows(spark, n).repartition(files), str(path))
    return path


def _optimizes(spark: Any, src: Path, work: Path, repeats: int) -> dict[str, Any]:
    from delta.tables import DeltaTable as SparkDeltaTable

    from airflow_provider_delta.core import DeltaTable
    from airflow_provider_delta.core.commands.optimize.command import optimize
    from airflow_provider_delta.spark import SparkExecutor

    executor = SparkExecutor(spark)
    runs = {
        OURS: lambda r: optimize(DeltaTable(_clone(src, work / f"o-ours-{r}")).snapshot, executor=executor),
        DELTA: lambda r: SparkDeltaTable.forPath(spark, _clone(src, work / f"o-delta-{r}")).optimize()
        .executeCompaction().collect(),
    }
    res = _alternate(repeats, runs)
    after = {}
    for engine, prefix in ((OURS, "o-ours"), (DELTA, "o-delta")):
        path = str(work / f"{prefix}-0")
        after[engine] = {"rows": spark.read.format("delta").load(path).count(),
                         "files": len(DeltaTable(path).files())}
    return {**{e: [ms for ms, _ in v] for e, v in res.items()}, "after": after,
            "files_before": len(DeltaTable(str(src)).files())}


def _warm_up(spark: Any, work: Path, merge_root: Path) -> None:
    """Every code path of both engines once on small data, so no timed run pays the first compilation."""
    from delta.tables import DeltaTable as SparkDeltaTable

    from airflow_provider_delta.spark import merge_delta, read_delta, write_delta

    write_delta(spark_rows(spark, 100_000), str(work / "warm-ours"))
    spark_rows(spark, 100_000).write.format("delta").save(str(work / "warm-delta"))
    read_delta(spark, str(work / "warm-delta")).groupBy("name").count().collect()
    spark.read.format("delta").load(str(work / "warm-ours")).groupBy("name").count().collect()
    small = spark.read.parquet(str(merge_root / "source.parquet")).limit(1000)
    small_target = spark_rows(spark, 10_000).selectExpr(
        "id", "name", "value as amount", "ts", "name as category")
    for engine in (OURS, DELTA):
        path = str(work / f"warm-merge-{engine}")
        write_delta(small_target, path)
        if engine == OURS:
            merge_delta(spark, path, small, CONDITION, source_alias="s", target_alias="t", schema_evolution=True) \
                .when_matched_update_all().when_not_matched_insert_all().execute()
        else:
            SparkDeltaTable.forPath(spark, path).alias("t").merge(small.alias("s"), CONDITION) \
                .withSchemaEvolution().whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()


def main(request: dict[str, Any]) -> dict[str, Any]:
    import delta
    import pyspark

    jars = sorted(glob.glob(str(JARS_DIR / "*.jar")))
    spark, jvm_s = session(jars)
    work, n, repeats = Path(request["work"]), request["n"], request["repeats"]
    merge_root = Path(request["merge_root"])
    _warm_up(spark, work, merge_root)
    result: dict[str, Any] = {"jvm_ms": jvm_s * 1000, "pyspark": pyspark.__version__,
                              "delta_spark": getattr(delta, "__version__", None) or _dist("delta-spark")}
    result["write"], table = _writes(spark, n, work, repeats)
    result["read"] = _reads(spark, table, n, repeats)
    result["merge"] = _merges(spark, merge_root, work, repeats)
    src = _small_files_table(spark, n, request["optimize_files"], work)
    result["optimize"] = _optimizes(spark, src, work, repeats)
    spark.stop()
    return result


def _dist(name: str) -> str:
    import importlib.metadata as md

    return md.version(name)


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1])), default=str), flush=True)

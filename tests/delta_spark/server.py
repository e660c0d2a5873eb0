"""The Delta Lake on Spark oracle: a long-lived SparkSession with delta-spark, answering JSON-lines requests.

Runs in the oracle's own venv (``.venv-delta``: the pyspark version delta-spark supports, delta-spark,
pyarrow), never in the project's: ``.venv-delta/bin/python tests/delta_spark/server.py --jars DIR``.
The client (:mod:`tests.delta_spark`) starts it once per pytest session.

Protocol: one JSON object per line on stdin, one JSON answer per line on the file descriptor the
server was started with for answers (stdout, which is then pointed at stderr so that nothing the
JVM or Spark print can corrupt an answer). Rows go both ways as files: Arrow tables the client
sends are Parquet files, registered as temporary views; results are Arrow IPC files.

Requests (``op`` and its fields); each answer is ``{"ok": true, ...}`` or ``{"ok": false, "error": {...}}``
with the exception's Python type, the Java class of its JVM cause (``ConcurrentAppendException``)
and the message:

- ``sql``: ``statement``, ``views`` ({name: parquet path}), ``result`` (IPC path): the statement's rows.
- ``read``: ``path``, ``version`` (or null), ``result``: the table's rows.
- ``changes``: ``path``, ``start``, ``end`` (or null), ``result``: ``readChangeFeed`` rows.
- ``schema``: ``path``, ``version``: the schema delta-spark reads, as Spark's JSON.
- ``ping``: nothing; answers the versions of Spark and delta-spark.

``oracle_gate(dir, column)`` is a SQL function (a Python UDF) for orchestrating races: the first call
creates ``dir/started`` and every call waits until ``dir/release`` exists (at most 120 s), then returns
true. A statement that uses it in a condition holds its transaction open, between reading its
snapshot and committing, until the test releases it. The column (any column of the table the
condition filters) ties the call to that table's scan: Spark refuses a Python UDF without one there.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc


def _gate(directory: str, _column: Any = None) -> bool:
    gate = Path(directory)
    started = gate / "started"
    if not started.exists():
        started.touch()
    deadline = time.monotonic() + 120
    while not (gate / "release").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"oracle_gate: {gate / 'release'} did not appear within 120 s")
        time.sleep(0.01)
    return True


def session(jars: list[str], conf: dict[str, str]) -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("delta-spark-oracle")
        .config("spark.jars", ",".join(jars))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.showConsoleProgress", "false")
        # Log replay (state reconstruction) in 2 partitions instead of 50: small tables, 2 cores.
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # Tests make tables with VACUUM RETAIN 0 HOURS and without the Hive metastore.
        .config("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        .config("spark.sql.catalogImplementation", "in-memory")
        .config("spark.sql.warehouse.dir", str(Path.cwd() / "spark-warehouse"))
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    spark.udf.register("oracle_gate", _gate, "boolean")
    return spark


class Oracle:
    """Executes requests on one SparkSession."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.views: set[str] = set()

    def _write_result(self, df: Any, result: str | None) -> dict[str, Any]:
        try:
            table = df.toArrow()
        except pa.ArrowInvalid:
            # Spark marks some command results' fields non-null while they hold nulls (OPTIMIZE's
            # metrics): small results, so take their rows and let Arrow infer the types.
            table = pa.Table.from_pylist([row.asDict(recursive=True) for row in df.collect()])
        if result is not None:
            with pa.OSFile(result, "wb") as sink, ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
        return {"rows": table.num_rows}

    def _register(self, views: dict[str, str]) -> None:
        for name in self.views - set(views):
            self.spark.catalog.dropTempView(name)
        for name, path in views.items():
            self.spark.read.parquet(path).createOrReplaceTempView(name)
        self.views = set(views)

    def _reader(self, path: str, version: int | None) -> Any:
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(path)

    def op_ping(self) -> dict[str, Any]:
        import importlib.metadata

        return {"spark": self.spark.version, "delta": importlib.metadata.version("delta-spark")}

    def op_sql(
        self, statement: str, views: dict[str, str] | None = None, result: str | None = None
    ) -> dict[str, Any]:
        self._register(views or {})
        return self._write_result(self.spark.sql(statement), result)

    def op_read(self, path: str, version: int | None = None, result: str | None = None) -> dict[str, Any]:
        return self._write_result(self._reader(path, version), result)

    def op_changes(
        self, path: str, start: int, end: int | None = None, result: str | None = None
    ) -> dict[str, Any]:
        reader = (
            self.spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", start)
        )
        if end is not None:
            reader = reader.option("endingVersion", end)
        return self._write_result(reader.load(path), result)

    def op_schema(self, path: str, version: int | None = None) -> dict[str, Any]:
        return {"schema": json.loads(self._reader(path, version).schema.json())}


def _java_classes(err: BaseException) -> list[str]:
    """The class names of the JVM exception behind ``err`` and of its causes, outermost first."""
    java = getattr(err, "_origin", None) or getattr(err, "java_exception", None)
    names: list[str] = []
    while java is not None and len(names) < 10:
        try:
            names.append(str(java.getClass().getName()))
            java = java.getCause()
        except Exception:  # noqa: BLE001 - a broken py4j proxy ends the chain
            break
    return names


def _error(err: BaseException) -> dict[str, Any]:
    classes = _java_classes(err)
    condition = None
    getter = getattr(err, "getCondition", None) or getattr(err, "getErrorClass", None)
    if getter is not None:
        try:
            condition = getter()
        except Exception:  # noqa: BLE001
            condition = None
    return {
        "type": type(err).__name__,
        "java_class": classes[0].rsplit(".", 1)[-1] if classes else None,
        "java_classes": classes,
        "condition": condition,
        "message": str(err)[:4000],
    }


def serve(oracle: Oracle, requests: Any, answers: Any) -> None:
    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        op = request.pop("op")
        started = time.monotonic()
        try:
            answer: dict[str, Any] = {"ok": True, **getattr(oracle, f"op_{op}")(**request)}
        except Exception as err:  # noqa: BLE001 - every failure goes back to the client
            traceback.print_exc()
            answer = {"ok": False, "error": _error(err)}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
        print(
            f"oracle: {op} {'ok' if answer['ok'] else 'failed'} in {time.monotonic() - started:.2f} s",
            file=sys.stderr,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--jars",
        action="append",
        required=True,
        help="a folder of jars for spark.jars (delta-spark's; repeatable)",
    )
    parser.add_argument("--conf", action="append", default=[], help="a Spark setting KEY=VALUE (repeatable)")
    args = parser.parse_args(argv)
    # Answers go to the original stdout; everything else printed to fd 1 (the JVM's console) goes to stderr.
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    jars = [jar for folder in args.jars for jar in sorted(glob.glob(os.path.join(folder, "*.jar")))]
    if not jars:
        answers.write(json.dumps({"ok": False, "error": {"message": f"no jars in {args.jars}"}}) + "\n")
        return 2
    oracle = Oracle(session(jars, dict(item.split("=", 1) for item in args.conf)))
    answers.write(json.dumps({"ok": True, "ready": True, **oracle.op_ping()}) + "\n")
    answers.flush()
    serve(oracle, sys.stdin, answers)
    oracle.spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The plumbing Spark tasks of the data plane share: file lists in, actions out, errors back.

- :func:`file_frame`: a DataFrame of one row per data file (the JSON of its ``add`` action), split
  into partitions the way Spark splits files for its own Parquet reader (by size, at most
  ``spark.sql.files.maxPartitionBytes`` per task, at least ``defaultParallelism`` tasks when the
  files allow), so a ``mapInArrow`` over it reads or rewrites the files on the executors.
- :func:`records_batch` / :func:`collect_records`: tasks yield what they did as JSON objects in one
  ``string`` column, :data:`RECORD_SCHEMA` (actions and counters are small: only they travel back
  to the driver).
- :func:`delta_errors` (in a task) and :func:`reraise_task_error` (in the driver): a ``DeltaError``
  raised in a task fails the Spark job; the driver finds its type and message in the Spark error
  and raises the same ``DeltaError`` type, chained to the Spark error.
- :func:`spark_arrow_schema`: the exact Arrow schema Spark expects from ``mapInArrow`` for a Delta
  schema (session time zone on ``timestamp``, large strings when Spark is set to use them).

Example:
    >>> frame = file_frame(spark, snapshot.files())                    # doctest: +SKIP
    >>> records = collect_records(frame.mapInArrow(task, RECORD_SCHEMA))  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import re
import warnings
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa

from airflow_provider_delta import exceptions
from airflow_provider_delta.exceptions import DeltaError, ExecutorEnvironmentError
from airflow_provider_delta.spark.types import to_spark_schema

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.group import GroupedData

    from airflow_provider_delta.core.actions import AddFile
    from airflow_provider_delta.core.schema.types import StructType

__all__ = [
    "EXECUTOR_ENVIRONMENT_HELP",
    "FILE_COLUMN",
    "RECORD_COLUMN",
    "RECORD_SCHEMA",
    "TaskError",
    "apply_in_arrow",
    "collect_records",
    "delta_errors",
    "file_frame",
    "file_partitions",
    "json_frame",
    "map_in_arrow",
    "raise_for_executor_environment",
    "records_batch",
    "reraise_task_error",
    "spark_arrow_schema",
    "task_rows",
]

RECORD_COLUMN = "record"
RECORD_SCHEMA = f"{RECORD_COLUMN} string"
"""The output of every writing task: one JSON object per row (declared ``string``: Arrow ``string``)."""

FILE_COLUMN = "file"

# Spark's defaults for splitting files into read tasks (spark.sql.files.maxPartitionBytes and
# spark.sql.files.openCostInBytes), used when the session does not set them.
_MAX_PARTITION_BYTES = 128 * 1024 * 1024
_OPEN_COST_BYTES = 4 * 1024 * 1024

_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")
EXECUTOR_ENVIRONMENT_HELP = (
    "Help: install the same airflow-provider-delta (and its pyarrow) into the Python that Spark's "
    "executors run on every worker (the interpreter named by spark.pyspark.python or PYSPARK_PYTHON; "
    "on a standalone cluster set in the workers' environment), or ship a packed virtualenv with "
    "spark.archives (e.g. venv-pack) and point spark.pyspark.python at it. delta-spark is not needed."
)

_ERROR_MARKER = "delta-task-error: "
_ERROR_PATTERN = re.compile(re.escape(_ERROR_MARKER) + r"(\{.*\})")

# pyspark 4.3 warns on every mapInArrow when pandas >= 3 is installed (require_minimum_pandas_version);
# mapInArrow exchanges Arrow batches only and never converts to pandas, so the warning does not apply.
_PANDAS_WARNING = "PySpark does not yet fully support pandas"


class TaskError(RuntimeError):
    """A ``DeltaError`` raised in a Spark task, as text the driver can turn back into the error."""


_ERROR_FIELDS = ("clause", "column", "value")
"""Keyword fields of a task's error that travel to the driver with its type and message."""


@contextlib.contextmanager
def delta_errors() -> Iterator[None]:
    """In a task: re-raise a ``DeltaError`` as :class:`TaskError` whose message encodes its type.

    Spark hands the driver only the text of a task's Python traceback; the last line of it is then
    ``TaskError: delta-task-error: {"type": ..., "message": ...}``, which :func:`reraise_task_error`
    decodes.
    """
    try:
        yield
    except DeltaError as err:
        fields = {k: getattr(err, k) for k in _ERROR_FIELDS if isinstance(getattr(err, k, None), str)}
        payload = orjson.dumps({"type": type(err).__name__, "message": str(err), "fields": fields}).decode()
        raise TaskError(_ERROR_MARKER + payload) from err


def reraise_task_error(err: BaseException) -> None:
    """In the driver: raise the ``DeltaError`` a failed task reported in ``err``, if any.

    The error has the task's exception type (a ``DeltaError`` subclass of
    :mod:`airflow_provider_delta.exceptions`) and message, and is chained to the Spark error.
    Returns normally when ``err`` carries no such report (the caller re-raises ``err``).
    """
    found = _ERROR_PATTERN.findall(str(err))
    if not found:
        return
    try:
        report = orjson.loads(found[-1])
    except orjson.JSONDecodeError:
        return
    cls = getattr(exceptions, str(report.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, DeltaError)):
        cls = DeltaError
    message = str(report.get("message"))
    fields = report.get("fields") if isinstance(report.get("fields"), dict) else {}
    try:
        error = cls(message, **fields) if fields else cls(message)
    except TypeError:  # an error type with required keyword fields, or without these
        try:
            error = cls(message)
        except TypeError:
            error = DeltaError(message)
    raise error from err


def raise_for_executor_environment(err: BaseException) -> None:
    """In the driver: raise :class:`ExecutorEnvironmentError` when ``err`` is a Python worker missing a module.

    Returns normally for any other failure (the caller re-raises ``err``).
    """
    found = _MISSING_MODULE.findall(str(err))
    if not found:
        return
    module = found[-1]
    raise ExecutorEnvironmentError(
        f"A Spark executor's Python cannot import {module!r} (ModuleNotFoundError in a Python worker), so it "
        f"cannot run the Delta data plane's tasks; nothing was written to the table. {EXECUTOR_ENVIRONMENT_HELP}",
        module=module,
    ) from err


@contextlib.contextmanager
def _quiet_pandas_warning() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", _PANDAS_WARNING, FutureWarning)
        yield


def map_in_arrow(frame: DataFrame, task: Any, schema: Any) -> DataFrame:
    """``frame.mapInArrow(task, schema)`` without pyspark's pandas-version warning (see above)."""
    with _quiet_pandas_warning():
        return frame.mapInArrow(task, schema)


def apply_in_arrow(grouped: GroupedData, task: Any, schema: Any) -> DataFrame:
    """``grouped.applyInArrow(task, schema)`` without pyspark's pandas-version warning (see above)."""
    with _quiet_pandas_warning():
        return grouped.applyInArrow(task, schema)


def collect_records(frame: DataFrame) -> list[dict[str, Any]]:
    """Run the tasks of ``frame`` (of :data:`RECORD_SCHEMA`) and decode their records in the driver.

    Raises:
        DeltaError: a task raised one (same type and message; see :func:`reraise_task_error`).
        ExecutorEnvironmentError: an executor's Python could not import pyarrow or this package.
    """
    try:
        with _quiet_pandas_warning():
            rows = frame.collect()
    except Exception as err:
        reraise_task_error(err)
        raise_for_executor_environment(err)
        raise
    return [orjson.loads(row[0]) for row in rows]


def task_payloads(batches: Iterator[pa.RecordBatch]) -> Iterator[Any]:
    """The JSON payloads a task receives: one per row of its input (column 0 of a ``json_frame`` or
    ``file_frame``), decoded, in order."""
    for batch in batches:
        for text in batch.column(0).to_pylist():
            yield orjson.loads(text)


def records_batch(records: Sequence[Mapping[str, Any]]) -> pa.RecordBatch:
    """One Arrow batch of :data:`RECORD_SCHEMA` holding ``records`` as JSON text."""
    texts = [orjson.dumps(dict(r)).decode() for r in records]
    return pa.RecordBatch.from_arrays([pa.array(texts, pa.string())], names=[RECORD_COLUMN])


def task_rows(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    """All rows a task was given, as one table; None when it was given none."""
    collected = [b for b in batches if b.num_rows]
    return pa.Table.from_batches(collected) if collected else None


def _conf_bytes(spark: SparkSession, key: str, default: int) -> int:
    try:
        value = spark.conf.get(key)
    except Exception:  # noqa: BLE001 - an unset or unreadable key means Spark's default
        return default
    if value is None:
        return default
    text = str(value).strip().lower()
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    text = text.removesuffix("b")
    scale = units.get(text[-1:], 1)
    if text[-1:] in units:
        text = text[:-1]
    try:
        return int(float(text) * scale)
    except ValueError:
        return default


def file_partitions(
    sizes: Sequence[int], *, parallelism: int, max_bytes: int = _MAX_PARTITION_BYTES, open_cost: int = _OPEN_COST_BYTES
) -> list[list[int]]:
    """Group files (by index into ``sizes``) into tasks, as Spark's ``FilePartition.getFilePartitions``.

    The split size is ``min(max_bytes, max(open_cost, total / parallelism))`` where every file costs
    its size plus ``open_cost``; files are taken largest first and a task is closed when the next
    file would make it exceed the split size.

    Example:
        >>> file_partitions([10, 10, 10, 10], parallelism=2, max_bytes=100, open_cost=5)
        [[0, 1], [2, 3]]
    """
    if not sizes:
        return []
    total = sum(size + open_cost for size in sizes)
    split = min(max_bytes, max(open_cost, total // max(1, parallelism)))
    groups: list[list[int]] = []
    current: list[int] = []
    current_size = 0
    for index in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        if current and current_size + sizes[index] > split:
            groups.append(current)
            current, current_size = [], 0
        current.append(index)
        current_size += sizes[index] + open_cost
    if current:
        groups.append(current)
    return groups


def file_frame(spark: SparkSession, files: Sequence[AddFile], *, with_stats: bool = True) -> DataFrame:
    """A DataFrame with one row per file: ``file`` = ``{"index": i, "add": {...}}`` (JSON).

    ``index`` is the file's position in ``files``. Partitions follow :func:`file_partitions`.
    Without ``with_stats`` the actions' ``stats`` (often most of their size) are left out: readers
    need the path, partition values and deletion vector only.
    """
    groups = file_partitions(
        [f.size for f in files],
        parallelism=spark.sparkContext.defaultParallelism,
        max_bytes=_conf_bytes(spark, "spark.sql.files.maxPartitionBytes", _MAX_PARTITION_BYTES),
        open_cost=_conf_bytes(spark, "spark.sql.files.openCostInBytes", _OPEN_COST_BYTES),
    )
    return json_frame(spark, [[_file_payload(i, files[i], with_stats) for i in group] for group in groups])


def json_frame(spark: SparkSession, groups: Sequence[Sequence[str]]) -> DataFrame:
    """A DataFrame of one ``file`` (string) column: one partition per group, one row per JSON text."""
    from pyspark.sql.types import StringType, StructField, StructType

    payloads = [list(group) for group in groups]
    # One group per slice (parallelize splits a list of n elements into n slices of one element),
    # then one row per payload within its group's partition.
    rdd = spark.sparkContext.parallelize(payloads, max(1, len(payloads))).flatMap(lambda group: [(p,) for p in group])
    return spark.createDataFrame(rdd, StructType([StructField(FILE_COLUMN, StringType(), nullable=False)]))


def _file_payload(index: int, add: AddFile, with_stats: bool) -> str:
    action = add.to_dict()
    if not with_stats:
        action.pop("stats", None)
    return orjson.dumps({"index": index, "add": action}).decode()


def spark_arrow_schema(spark: SparkSession, struct: StructType) -> pa.Schema:
    """The Arrow schema Spark reads from ``mapInArrow`` batches declared as ``to_spark_schema(struct)``.

    ``timestamp`` carries the session time zone and strings/binaries are large when
    ``spark.sql.execution.arrow.useLargeVarTypes`` is on, as Spark's own Arrow conversion does.
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    timezone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    large = str(spark.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")).lower() == "true"
    return to_arrow_schema(to_spark_schema(struct), timezone=timezone, prefers_large_types=large)

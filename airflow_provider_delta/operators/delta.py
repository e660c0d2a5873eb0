"""Operators that run Delta jobs on Spark: :class:`DeltaSparkJobOperator` and :class:`DeltaCheckpointOperator`.

Every operator here follows one path (the job protocol, :mod:`airflow_provider_delta.spark.protocol`):

1. build a JSON :class:`~airflow_provider_delta.spark.protocol.JobSpec` (table, options, conflict
   policy, idempotency key) in a temporary folder;
2. submit ``spark/jobs/run_job.py`` through apache-airflow-providers-apache-spark's ``SparkSubmitHook``
   (connection ``spark_default`` unless the ``delta`` connection or the operator names another;
   **without that connection the master is** ``local[*]``, not the hook's own yarn fallback);
3. read the JSON result back: on success push it to XCom (the return value); on failure map the
   reported exception through the conflict policy: ``skip`` -> ``AirflowSkipException``, ``fail`` ->
   ``AirflowFailException`` (no Airflow retries), ``airflow_retry`` (and an exhausted in-job ``retry``)
   -> ``DeltaConflictError`` (an ``AirflowException``) so the task's ``retries`` apply.

The Airflow worker never starts Spark in its own process, and this module imports no pyspark.
The driver runs on the Airflow worker (client mode, as for every Python application on a standalone
cluster), so spec and result are local files.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowNotFoundException

from airflow_provider_delta.core.transaction.policy import ConflictPolicy
from airflow_provider_delta.exceptions import JobSpecError
from airflow_provider_delta.hooks.delta import DeltaHook
from airflow_provider_delta.operators.lineage import DeltaLineageMixin, job_lineage
from airflow_provider_delta.policies.conflicts import conflict_exception
from airflow_provider_delta.spark import job_script
from airflow_provider_delta.spark.jobs import JOBS
from airflow_provider_delta.spark.protocol import JobResult, JobSpec

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow.sdk import Context

    from airflow_provider_delta.operators.lineage import LineageTable

DEFAULT_MASTER = "local[*]"
#: Spark conf every job gets unless the connection or the task overrides it: no UI port, and a
#: driver JVM that starts fast (the driver runs the engine in Python; C1 and the serial GC roughly
#: halve the CPU of a small job).
DEFAULT_SPARK_CONF: Mapping[str, str] = {
    "spark.ui.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


class _DeltaSparkSubmitHook(SparkSubmitHook):
    """``SparkSubmitHook`` that uses ``fallback_master`` (not yarn) when its connection does not exist.

    Also points spark-submit at this interpreter (the driver runs here, in client mode) and, for
    ``local`` masters, binds Spark to 127.0.0.1.
    """

    def __init__(self, *, fallback_master: str = DEFAULT_MASTER, **kwargs: Any) -> None:
        self._fallback_master = fallback_master
        super().__init__(**kwargs)

    def _resolve_connection(self) -> dict[str, Any]:
        try:
            self.get_connection(self._conn_id)
            missing = False
        except AirflowNotFoundException:
            missing = True
        data = super()._resolve_connection()
        if missing:
            self.log.warning(
                "Spark connection %r does not exist: submitting to master %r (define it, e.g. "
                'AIRFLOW_CONN_SPARK_DEFAULT=\'{"conn_type": "spark", "host": "local[2]"}\')',
                self._conn_id,
                self._fallback_master,
            )
            data["master"] = self._fallback_master
        bin_dir = str(Path(sys.executable).parent)
        env = {
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        if data["master"].startswith("local"):
            env |= {"PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
        self._env_vars = {**env, **(self._env_vars or {})}
        return data

    @property
    def master(self) -> str:
        """The master the application is submitted to."""
        return str(self._connection["master"])


def app_transaction_id(context: Context) -> str:
    """The idempotency key of a task instance: ``airflow:<dag_id>:<task_id>:<run_id>[:<map_index>]``.

    Every try of the same task instance in the same DAG run gets the same key (recorded with
    version 0 in Delta's ``txn`` action), so a retry after a commit that landed writes nothing.

    Example:
        >>> app_transaction_id(context)  # doctest: +SKIP
        'airflow:daily_load:append_events:scheduled__2026-01-01T00:00:00+00:00'
    """
    ti = context["ti"]
    key = f"airflow:{ti.dag_id}:{ti.task_id}:{ti.run_id}"
    map_index = getattr(ti, "map_index", -1)
    return f"{key}:{map_index}" if map_index is not None and map_index >= 0 else key


def _as_policy(policy: ConflictPolicy | Mapping[str, Any] | None) -> ConflictPolicy:
    if policy is None or isinstance(policy, ConflictPolicy):
        return policy or ConflictPolicy()
    return ConflictPolicy.from_dict(policy)


def raise_for_result(result: JobResult, policy: ConflictPolicy, *, location: str) -> None:
    """Raise the Airflow exception a failed job result maps to (nothing for a success).

    The reported exception's type name goes through ``policy`` (``policies.conflicts.conflict_exception``):
    ``skip`` -> ``AirflowSkipException``, ``fail`` -> ``AirflowFailException``, ``airflow_retry`` or an
    in-job ``retry`` that ran out of attempts -> ``DeltaConflictError`` (an ``AirflowException``, so the
    task's retries apply). A malformed spec (``JobSpecError``) fails without retries.

    Raises:
        AirflowSkipException: action ``skip``.
        AirflowFailException: action ``fail``, or a malformed spec.
        AirflowException: action ``airflow_retry`` or an exhausted ``retry``.
    """
    if result.status == "success" or result.error is None:
        return
    error = result.error
    name = str(error.get("type"))
    message = f"{error.get('message', '')} (job {result.job!r} on table {location!r})"
    if name == JobSpecError.__name__:
        raise AirflowFailException(f"Cannot run Delta job {result.job!r} on table {location!r}: {message}")
    raise conflict_exception(
        name, message, policy, attempts=int(error.get("attempts") or result.attempts or 1)
    )


class DeltaSparkJobOperator(DeltaLineageMixin, BaseOperator):
    """Run a Delta job (``checkpoint``, ``write``, ...) as a PySpark application and return its result.

    Args:
        job: the job's name (a key of ``airflow_provider_delta.spark.jobs.JOBS``).
        table: a full path/URI, or a bare name under the ``delta`` connection's base path (templated).
        job_options: the job's options (templated), e.g. ``{"mode": "append", "rows": [...]}`` for ``write``.
        delta_conn_id: the ``delta`` connection (storage options, Spark connection and conf).
        spark_conn_id: the Spark connection; default: the ``delta`` connection's, else ``spark_default``.
            Without such a connection the job runs on ``local[*]``.
        spark_conf: Spark conf for this task, over :data:`DEFAULT_SPARK_CONF` and the connection's (templated).
        conflict_policy: a ``ConflictPolicy`` (or its dict) deciding what each exception does.
        idempotent: record an application transaction (see :func:`app_transaction_id`) so an Airflow
            retry of a task whose commit already landed does not write twice (write jobs only).
        app_id: override the derived idempotency key (templated); ``app_version`` goes with it.
        spark_submit_kwargs: more ``SparkSubmitHook`` arguments (``driver_memory``, ``packages``, ...).

    Returns (XCom ``return_value``): the job result as a dict: ``status``, ``version``, ``committed``,
    ``metrics``, ``attempts``, ``engine``, ``duration_s``.

    Example:
        >>> DeltaSparkJobOperator(task_id="load", job="write", table="/data/events",
        ...                       job_options={"mode": "append", "rows": [{"id": 1}]})  # doctest: +SKIP
    """

    template_fields: tuple[str, ...] = ("table", "job_options", "spark_conf", "app_id", "spark_conn_id")
    template_fields_renderers: ClassVar[dict[str, str]] = {"job_options": "json", "spark_conf": "json"}
    ui_color = "#00add4"
    #: whether the job commits data (and so records an application transaction when ``idempotent``).
    is_write_job: ClassVar[bool] = True

    def __init__(
        self,
        *,
        job: str,
        table: str,
        job_options: dict[str, Any] | None = None,
        delta_conn_id: str = DeltaHook.default_conn_name,
        spark_conn_id: str | None = None,
        spark_conf: dict[str, Any] | None = None,
        conflict_policy: ConflictPolicy | Mapping[str, Any] | None = None,
        idempotent: bool = True,
        app_id: str | None = None,
        app_version: int = 0,
        spark_submit_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if job not in JOBS:
            raise ValueError(
                f"Cannot create task {kwargs.get('task_id')!r}: unknown job {job!r} "
                f"(known: {', '.join(sorted(JOBS))})"
            )
        self.job = job
        self.table = table
        self.job_options = job_options or {}
        self.delta_conn_id = delta_conn_id
        self.spark_conn_id = spark_conn_id
        self.spark_conf = spark_conf or {}
        self.conflict_policy = _as_policy(conflict_policy)
        self.idempotent = idempotent
        self.app_id = app_id
        self.app_version = app_version
        self.spark_submit_kwargs = spark_submit_kwargs or {}
        self._hook: _DeltaSparkSubmitHook | None = None

    def build_spec(self, context: Context, location: str, storage_options: dict[str, str]) -> JobSpec:
        """The job spec of this task instance."""
        app_id: str | None = None
        if self.is_write_job and self.idempotent:
            app_id = self.app_id or app_transaction_id(context)
        return JobSpec(
            job=self.job,
            table=location,
            storage_options=storage_options,
            options=dict(self.job_options),
            conflict_policy=self.conflict_policy.to_dict(),
            app_id=app_id,
            app_version=self.app_version if app_id is not None else None,
        )

    def execute(self, context: Context) -> dict[str, Any]:
        """Submit the job, wait, read its result; return it (XCom) or raise per the conflict policy."""
        delta = DeltaHook(self.delta_conn_id)
        location = delta.resolve_table(self.table)
        spec = self.build_spec(context, location, delta.storage_options)
        workdir = Path(tempfile.mkdtemp(prefix=f"delta-{self.job}-"))
        try:
            spec_path, result_path = workdir / "spec.json", workdir / "result.json"
            spec_path.write_text(spec.to_json(), encoding="utf-8")
            self.log.info("Delta job %r on %r; spec: %s", self.job, location, spec.to_json())
            result = self._submit_and_read(delta, spec_path, result_path, location)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        self.log.info("Delta job %r on %r: %s", self.job, location, result.to_json())
        if result.status != "success":
            context["ti"].xcom_push(key="delta_job_result", value=result.to_dict())
        raise_for_result(result, self.conflict_policy, location=location)
        self.delta_lineage = self.lineage(location, result.to_dict(), spec)
        return result.to_dict()

    def lineage(self, location: str, result: dict[str, Any], spec: JobSpec) -> list[LineageTable]:
        """What the job read and wrote, for OpenLineage (:mod:`.lineage`); operators may refine it."""
        return job_lineage(self.job, location, result, spec.options, spec.storage_options,
                           is_write_job=self.is_write_job)

    def _submit_and_read(
        self, delta: DeltaHook, spec_path: Path, result_path: Path, location: str
    ) -> JobResult:
        submit_error: AirflowException | None = None
        try:
            self.submit_job(delta, spec_path, result_path)
        except AirflowException as err:  # the job exits 2 when it failed and wrote why
            submit_error = err
        if not result_path.exists():
            raise AirflowException(
                f"Cannot run Delta job {self.job!r} on table {location!r}: the application wrote no result "
                "(it crashed or was killed before finishing); see the spark-submit output above"
            ) from submit_error
        return JobResult.read(result_path)

    def submit_hook(self, delta: DeltaHook, spec_path: Path, result_path: Path) -> _DeltaSparkSubmitHook:
        """The ``SparkSubmitHook`` that runs ``run_job.py --spec <spec_path> --result <result_path>``."""
        conf = {**DEFAULT_SPARK_CONF, **delta.spark_conf, **{k: str(v) for k, v in self.spark_conf.items()}}
        return _DeltaSparkSubmitHook(
            conn_id=self.spark_conn_id or delta.spark_conn_id,
            conf=conf,
            name=f"delta-{self.job}-{self.dag_id}.{self.task_id}",
            application_args=["--spec", str(spec_path), "--result", str(result_path)],
            **self.spark_submit_kwargs,
        )

    def submit_job(self, delta: DeltaHook, spec_path: Path, result_path: Path) -> None:
        """spark-submit the job runner and wait for it (raises ``AirflowException`` on a non-zero exit)."""
        self._hook = hook = self.submit_hook(delta, spec_path, result_path)
        self.log.info("Submitting to Spark master %r", hook.master)
        try:
            hook.submit(application=job_script())
        finally:
            # SparkSubmitHook never closes spark-submit's output pipe (a leaked descriptor per job).
            process = getattr(hook, "_submit_sp", None)
            if process is not None and process.stdout is not None:
                process.stdout.close()

    def on_kill(self) -> None:
        """Stop the Spark application (kills spark-submit and, on a cluster, the driver)."""
        if self._hook is not None:
            self._hook.on_kill()


class DeltaCheckpointOperator(DeltaSparkJobOperator):
    """Write a checkpoint of a table's newest version and clean up expired log files, on Spark.

    A checkpoint lets readers (this engine, Spark, delta-rs) load the table from one Parquet file
    instead of replaying every JSON commit; run it periodically on busy tables.

    Args:
        table: a full path/URI or a bare name under the ``delta`` connection's base path (templated).
        cleanup_log: also delete log files older than ``delta.logRetentionDuration`` (default True).
        **kwargs: as :class:`DeltaSparkJobOperator` (connections, Spark conf, conflict policy, ...).

    Returns (XCom): the job result; ``version`` is the checkpointed version and ``metrics`` holds
    ``checkpointPath``, ``checkpointSize``, ``checkpointSizeInBytes``, ``numAddFiles``, ``numDeletedLogFiles``.

    Example:
        >>> DeltaCheckpointOperator(task_id="checkpoint_events", table="/data/events")  # doctest: +SKIP
    """

    is_write_job: ClassVar[bool] = False

    def __init__(self, *, table: str, cleanup_log: bool = True, **kwargs: Any) -> None:
        super().__init__(job="checkpoint", table=table, job_options={"cleanup_log": cleanup_log}, **kwargs)
        self.cleanup_log = cleanup_log

"""Operators that run Delta jobs: :class:`DeltaSparkJobOperator` and :class:`DeltaCheckpointOperator`.

Every operator here follows one path (the job framework, :mod:`airflow_provider_delta.jobs`):

1. check the job's options against its declaration (``JOB`` in its module): when the DAG is parsed,
   and again after rendering, where rendered strings become the declared types
   (``Option.convert``). The generic operator takes them as ``job_options``; an operator for one
   job (``class DeltaVacuumOperator(DeltaSparkJobOperator, job="vacuum")``) takes each option as
   its own templated argument (:mod:`.job_arguments`);
2. build a JSON :class:`~airflow_provider_delta.jobs.spec.JobSpec` (table or tables, options,
   conflict policy, idempotency key);
3. run it on the job's engine: ``spark`` submits ``jobs/__main__.py`` (the job runner) through
   apache-airflow-providers-apache-spark's ``SparkSubmitHook`` (connection ``spark_default`` unless
   the ``delta`` connection or the operator names another; **without that connection the master
   is** ``local[*]``, not the hook's own yarn fallback); ``local`` runs the same job code in this
   process, without Spark (jobs that move no data);
4. read the JSON result: on success push it to XCom (the return value) and attach the table's asset
   to the outlet alias when the table was only known at run time; on failure map the reported
   exception through the conflict policy: ``skip`` -> ``AirflowSkipException``, ``fail`` ->
   ``AirflowFailException`` (no Airflow retries; the default for permanent errors),
   ``airflow_retry`` (and an exhausted in-job ``retry``) -> ``DeltaConflictError`` or
   ``DeltaJobError`` (``AirflowException``) so the task's ``retries`` apply.

The Airflow worker never starts Spark in its own process, and this module imports no pyspark.
The driver runs on the Airflow worker (client mode, as for every Python application on a standalone
cluster), so spec and result are local files.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import Asset, AssetAlias, BaseOperator
from airflow.sdk.exceptions import (
    AirflowException,
    AirflowFailException,
    AirflowNotFoundException,
    AirflowSkipException,
)

from airflow_provider_delta.assets import asset_uri
from airflow_provider_delta.core.transaction.policy import ERROR_KINDS, ConflictPolicy
from airflow_provider_delta.exceptions import JobSpecError
from airflow_provider_delta.hooks.delta import DeltaHook, is_full_location
from airflow_provider_delta.jobs.definition import Engine, JobDefinition, is_deferred_value
from airflow_provider_delta.jobs.registry import JOBS, job_definition, runner_script
from airflow_provider_delta.jobs.runner import run_spec
from airflow_provider_delta.jobs.spec import JobResult, JobSpec
from airflow_provider_delta.operators.job_arguments import declare_job_arguments, pop_job_arguments
from airflow_provider_delta.operators.job_secrets import redacted_spec_json, write_private_file
from airflow_provider_delta.operators.lineage import DeltaLineageMixin, job_lineage
from airflow_provider_delta.policies.conflicts import DeltaJobError, failure_exception
from airflow_provider_delta.spark.install import pyspark_install_problem

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow.sdk import Context

    from airflow_provider_delta.operators.lineage import LineageTable

DEFAULT_MASTER = "local[*]"
#: Spark conf every job gets unless the connection or the task overrides it: no UI port, and a
#: driver JVM that starts fast (the driver runs the engine in Python; C1 and the serial GC roughly
#: halve the CPU of a small job).
DEFAULT_SPARK_CONF: Mapping[str, str] = {
    "spark.ui.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    # Spark's own INFO lines (~80 per job) would bury the job's progress lines in the task log.
    "spark.log.level": "WARN",
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

    The reported exception (type name, message, class of error) goes through ``policy``
    (``policies.conflicts.failure_exception``): ``skip`` -> ``AirflowSkipException``, ``fail`` ->
    ``AirflowFailException`` (the default for permanent errors: a bad predicate, a schema mismatch, a
    missing table, a bad option), ``airflow_retry`` or an in-job ``retry`` that ran out of attempts
    -> ``DeltaConflictError`` / ``DeltaJobError`` (``AirflowException``: the task's retries apply).
    The engine's message appears once; the table is named if the message does not name it already.

    Raises:
        AirflowSkipException: action ``skip``.
        AirflowFailException: action ``fail``.
        AirflowException: action ``airflow_retry`` or an exhausted ``retry``.
    """
    if result.status == "success" or result.error is None:
        return
    if not result.tables:
        raise _exception_for(result.error, policy, location, result.attempts)
    failed = [t for t in result.tables if t.get("status") != "success"]
    outcomes = [_exception_for(t.get("error") or {}, policy, str(t.get("table")), t.get("attempts")) for t in failed]
    # One outcome for the task: retry if a retry may help any table, else fail, skip only if all skip.
    chosen = next((e for e in outcomes if not isinstance(e, AirflowFailException | AirflowSkipException)), None)
    chosen = chosen or next((e for e in outcomes if isinstance(e, AirflowFailException)), outcomes[0])
    text = f"{len(failed)} of {len(result.tables)} tables failed: " + "; ".join(str(e) for e in outcomes)
    if isinstance(chosen, DeltaJobError):
        raise DeltaJobError(
            text, delta_exception_type=chosen.delta_exception_type, conflict_action=chosen.conflict_action,
            attempts=chosen.attempts, error_kind=chosen.error_kind,
        )
    raise type(chosen)(text)


def _exception_for(
    error: Mapping[str, Any], policy: ConflictPolicy, location: str, attempts: int | None
) -> AirflowException:
    message = str(error.get("message", ""))
    if location not in message:
        message = f"{message} (table {location!r})"
    kind = error.get("kind")
    return failure_exception(
        str(error.get("type")),
        message,
        policy,
        attempts=int(error.get("attempts") or attempts or 1),
        kind=kind if kind in ERROR_KINDS else None,
    )


class DeltaSparkJobOperator(DeltaLineageMixin, BaseOperator):
    """Run a Delta job (``checkpoint``, ``write``, ...) and return its result.

    The job runs on its engine: ``spark`` (a PySpark application through ``SparkSubmitHook``) or
    ``local`` (the same job code in the task's own process, without Spark: for jobs that move no
    data, where a JVM would cost ~10 s for milliseconds of work). Each job declares where it may run
    and its default (``python -m airflow_provider_delta.jobs.registry`` lists them).

    A subclass for one job names it in its class statement and gets the job's options as its own
    arguments (see :mod:`.job_arguments`)::

        class DeltaVacuumOperator(DeltaSparkJobOperator, job="vacuum"): ...

    Args:
        job: the job's name (a key of ``airflow_provider_delta.jobs.registry.JOBS``); not with a
            subclass for one job.
        table: a full path/URI, or a bare name under the ``delta`` connection's base path (templated).
        tables: several tables instead of ``table`` (templated; a list, or a comma-separated string),
            for jobs that take a list (maintenance jobs): one job, one result per table in ``tables``.
        job_options: the job's options (templated), e.g. ``{"mode": "append", "rows": [...]}`` for
            ``write``. Checked against the job's declaration when the DAG is parsed and again after
            rendering (a rendered string becomes the declared type): an unknown or mistyped option
            fails with "did you mean ...". A subclass for one job takes the options as arguments.
        engine: ``"spark"`` or ``"local"``; default: the job's (``local`` for jobs that move no data).
        delta_conn_id: the ``delta`` connection (storage options, Spark connection and conf).
        spark_conn_id: the Spark connection; default: the ``delta`` connection's, else ``spark_default``.
            Without such a connection the job runs on ``local[*]``.
        spark_conf: Spark conf for this task, over :data:`DEFAULT_SPARK_CONF` and the connection's
            (templated). ``{"spark.log.level": "INFO"}`` brings Spark's INFO lines back.
        conflict_policy: a ``ConflictPolicy`` (or its dict) deciding what each failure does.
        idempotent: record an application transaction (see :func:`app_transaction_id`) so an Airflow
            retry of a task whose commit already landed does not write twice (jobs whose ``JOB``
            declares ``app_transaction=True``).
        app_id: override the derived idempotency key (templated); ``app_version`` goes with it.
        spark_submit_kwargs: more ``SparkSubmitHook`` arguments (``driver_memory``, ``packages``, ...).
        inlet_tables: tables the job reads (e.g. a MERGE's source), declared as the task's inlets.

    Assets: a job that changes its table (``JOB.outlet``, e.g. ``write``) declares the table as the
    task's outlet, ``Asset("delta:///path")`` (see :mod:`airflow_provider_delta.assets`), so DAGs
    scheduled on that asset run after it without ``outlets=`` written by hand. A table named by a
    template or a bare name is only known at run time: the outlet is then an ``AssetAlias``
    (``delta-table:<dag_id>.<task_id>``) to which the run attaches the table's asset. ``inlet_tables``
    given as full paths become inlets. Outlets and inlets passed by hand are kept.

    Returns (XCom ``return_value``): the job result as a dict: ``status``, ``version``, ``committed``,
    ``metrics``, ``attempts``, ``engine``, ``duration_s``; with ``tables``, ``tables`` holds one such
    dict per table.

    Example:
        >>> DeltaSparkJobOperator(task_id="load", job="write", table="/data/events",
        ...                       job_options={"mode": "append", "rows": [{"id": 1}]})  # doctest: +SKIP
    """

    template_fields: tuple[str, ...] = (
        "table", "tables", "job_options", "spark_conf", "app_id", "spark_conn_id",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"job_options": "json", "spark_conf": "json"}
    ui_color = "#00add4"
    #: The job of a subclass for one job (``job=`` in its class statement); None for this class.
    job_definition: ClassVar[JobDefinition | None] = None

    def __init_subclass__(cls, *, job: str | JobDefinition | None = None, **kwargs: Any) -> None:
        """``job="vacuum"`` (a registered job, or its ``JobDefinition``) in a subclass's class statement:
        the job's options become the subclass's arguments (:mod:`.job_arguments`)."""
        super().__init_subclass__(**kwargs)
        if job is not None:
            base = tuple(f for f in DeltaSparkJobOperator.template_fields if f != "job_options")
            declare_job_arguments(cls, job if isinstance(job, JobDefinition) else job_definition(job), base)

    def __init__(
        self,
        *,
        job: str | None = None,
        table: str | None = None,
        tables: list[str] | str | None = None,
        job_options: dict[str, Any] | None = None,
        engine: Engine | None = None,
        delta_conn_id: str = DeltaHook.default_conn_name,
        spark_conn_id: str | None = None,
        spark_conf: dict[str, Any] | None = None,
        conflict_policy: ConflictPolicy | Mapping[str, Any] | None = None,
        idempotent: bool = True,
        app_id: str | None = None,
        app_version: int = 0,
        spark_submit_kwargs: dict[str, Any] | None = None,
        inlet_tables: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        declared = type(self).job_definition
        arguments = pop_job_arguments(declared, kwargs) if declared is not None else {}
        super().__init__(**kwargs)
        self.definition = self._definition(job, job_options)
        self.job = self.definition.name
        for name, value in arguments.items():
            setattr(self, name, value)  # as given: Airflow renders them in place
        if (table is None) == (tables is None):
            raise JobSpecError(f"{self._where()}: pass exactly one of 'table' and 'tables'")
        if tables is not None and not self.definition.multi_table:
            raise JobSpecError(f"{self._where()}: the job takes one table; pass 'table', not 'tables'")
        self.table = table
        self.tables = tables
        self.engine: Engine = self.definition.check_engine(engine or self.definition.default_engine, self._where())
        if declared is None:
            self.job_options = job_options or {}
        if isinstance(self.job_options, dict):
            # DAG-parse time: a typo or a wrong type fails the import, not the run (templates are
            # checked again in execute(), after rendering).
            self.definition.validate(self.job_options, where=self._where(), engine=self.engine, partial=True)
        self.delta_conn_id = delta_conn_id
        self.spark_conn_id = spark_conn_id
        self.spark_conf = spark_conf or {}
        self.conflict_policy = _as_policy(conflict_policy)
        self.idempotent = idempotent
        self.app_id = app_id
        self.app_version = app_version
        self.spark_submit_kwargs = spark_submit_kwargs or {}
        self._hook: _DeltaSparkSubmitHook | None = None
        self._table_alias: AssetAlias | None = None
        self._declare_assets(list(inlet_tables))

    def _definition(self, job: str | None, job_options: dict[str, Any] | None) -> JobDefinition:
        """The job's declaration: the class's (a subclass for one job), else ``job``'s."""
        declared = type(self).job_definition
        if declared is not None:
            if job not in (None, declared.name) or job_options is not None:
                raise JobSpecError(
                    f"{self._where(declared.name)}: {type(self).__name__} runs job {declared.name!r}; pass its "
                    "options as arguments (not job= or job_options=)"
                )
            return declared
        if job not in JOBS:
            raise JobSpecError(
                f"Cannot create task {self.task_id!r}: unknown job {job!r} (known: {', '.join(sorted(JOBS))})"
            )
        return job_definition(job)

    def _declare_assets(self, inlet_tables: list[str]) -> None:
        """The table as an outlet (an asset, or an alias filled at run time) and the inlet tables."""
        if self.definition.outlet:
            names = [self.table] if self.tables is None else self.tables
            static = [_static_asset(n) for n in names] if isinstance(names, list) else [None]
            for asset in static:
                if asset is not None:
                    _add_unique(self.outlets, asset)
            if any(a is None for a in static):
                self._table_alias = AssetAlias(name=f"delta-table:{self.dag_id or '-'}.{self.task_id}")
                _add_unique(self.outlets, self._table_alias)
        for name in inlet_tables:
            asset = _static_asset(name)
            if asset is not None:
                _add_unique(self.inlets, asset)

    def _emit_table_assets(self, context: Context, locations: list[str]) -> None:
        """Attach the run's table assets to the outlet alias (tables known only at run time)."""
        if self._table_alias is None:
            return
        events = context["outlet_events"][self._table_alias]
        for location in locations:
            try:
                events.add(Asset(uri=asset_uri(location)))
            except ValueError as err:
                self.log.warning("Table %r is not announced as an asset: %s", location, err)

    def _where(self, job: str | None = None) -> str:
        return f"Cannot create task {self.task_id!r} (job {job or self.job!r})"

    def table_names(self) -> list[str]:
        """The rendered table name(s): ``[table]``, or ``tables`` (a list or a comma-separated string)."""
        if self.tables is None:
            return [str(self.table)]
        names = self.tables.split(",") if isinstance(self.tables, str) else list(self.tables)
        cleaned = [str(n).strip() for n in names if str(n).strip()]
        if not cleaned:
            raise AirflowFailException(f"Cannot run task {self.task_id!r}: 'tables' rendered to no table")
        return cleaned

    def build_spec(
        self, context: Context, location: str | list[str], storage_options: dict[str, str]
    ) -> JobSpec:
        """The job spec of this task instance (``location``: one table, or the list for ``tables``)."""
        app_id: str | None = None
        if self.definition.app_transaction and self.idempotent:
            app_id = self.app_id or app_transaction_id(context)
        many = isinstance(location, list)
        return JobSpec(
            job=self.job,
            table="" if many else str(location),
            tables=list(location) if many else [],
            storage_options=storage_options,
            options=self.rendered_job_options(),
            conflict_policy=self.conflict_policy.to_dict(),
            app_id=app_id,
            app_version=self.app_version if app_id is not None else None,
        )

    def rendered_job_options(self) -> dict[str, Any]:
        """The options this task instance gives the job: as given (rendered), converted to the declared types.

        Options given as None are left out (the job's defaults apply).

        Raises:
            AirflowFailException: ``job_options`` is not a dict, or an option is unknown, mistyped or
                (a rendered string) does not convert to its type; no retries, it stays wrong.
        """
        given = self.job_options
        if not isinstance(given, dict):
            raise AirflowFailException(f"{self._where()}: job_options must render to a dict, found {given!r}")
        try:
            values = self.definition.validate(
                given, engine=self.engine, where=f"Cannot run task {self.task_id!r} (job {self.job!r})"
            )
        except JobSpecError as err:
            raise AirflowFailException(str(err)) from err
        return {name: values[name] for name, value in given.items() if value is not None}

    def execute(self, context: Context) -> dict[str, Any]:
        """Run the job (spark-submit, or in this process on engine ``local``); return its result or raise."""
        self.rendered_job_options()  # a bad option fails before the table is resolved
        delta = DeltaHook(self.delta_conn_id)
        locations = [delta.resolve_table(name) for name in self.table_names()]
        spec = self.build_spec(context, locations if self.tables is not None else locations[0], delta.storage_options)
        label = ", ".join(locations)
        self.log.info("Delta job %r on %s (engine %s); options: %s", self.job, label, self.engine, spec.options)
        result = self.run_local(spec) if self.engine == "local" else self.run_spark(delta, spec, label)
        for one in result.tables or [result.to_dict()]:
            self.log.info(
                "Delta job %r on %r: %s, version %s, metrics %s",
                self.job, one.get("table"), one.get("status"), one.get("version"), one.get("metrics"),
            )
        if result.status != "success":
            context["ti"].xcom_push(key="delta_job_result", value=result.to_dict())
        raise_for_result(result, self.conflict_policy, location=label)
        done = result.tables or [{**result.to_dict(), "table": locations[0]}]
        self.delta_lineage = [t for one in done for t in self.lineage(str(one.get("table")), one, spec)]
        self._emit_table_assets(context, locations)
        return result.to_dict()

    def run_local(self, spec: JobSpec) -> JobResult:
        """Run the job in this process (engine ``local``): the job code spark-submit would run, no JVM."""
        return run_spec(spec)

    def run_spark(self, delta: DeltaHook, spec: JobSpec, label: str) -> JobResult:
        """spark-submit the job runner with ``spec``; wait and read its result."""
        problem = pyspark_install_problem()
        if problem is not None:
            raise AirflowFailException(f"Cannot run Delta job {self.job!r} on Spark: {problem}")
        workdir = Path(tempfile.mkdtemp(prefix=f"delta-{self.job}-"))
        try:
            spec_path, result_path = workdir / "spec.json", workdir / "result.json"
            write_private_file(spec_path, spec.to_json())  # it may hold storage credentials
            self.log.info("Delta job %r on %s; spec: %s", self.job, label, redacted_spec_json(spec))
            return self._submit_and_read(delta, spec_path, result_path, label)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    @property
    def is_write_job(self) -> bool:
        """Whether the job writes the table's rows (lineage: an output at the committed version)."""
        return self.definition.app_transaction

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
        """The ``SparkSubmitHook`` that runs ``jobs/__main__.py --spec <spec_path> --result <result_path>``."""
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
            hook.submit(application=runner_script())
        finally:
            # SparkSubmitHook never closes spark-submit's output pipe (a leaked descriptor per job).
            process = getattr(hook, "_submit_sp", None)
            if process is not None and process.stdout is not None:
                process.stdout.close()

    def on_kill(self) -> None:
        """Stop the Spark application (kills spark-submit and, on a cluster, the driver)."""
        if self._hook is not None:
            self._hook.on_kill()


class DeltaCheckpointOperator(DeltaSparkJobOperator, job="checkpoint"):
    """Write a checkpoint of each table's newest version and clean up expired log files.

    A checkpoint lets readers (this engine, Spark, delta-rs) load the table from one Parquet file
    instead of replaying every JSON commit; run it periodically on busy tables. It moves no data, so
    it runs in the task's process by default (``engine="local"``, no JVM); ``engine="spark"`` runs
    it through spark-submit instead.

    Args:
        table: a full path/URI or a bare name under the ``delta`` connection's base path (templated).
        tables: several tables, checkpointed one after the other in one job (templated); each gets
            its own result, and a failure of one does not stop the others.
        **kwargs: as :class:`DeltaSparkJobOperator` (engine, connections, Spark conf, conflict policy, ...).

    Returns (XCom): the job result; ``version`` is the checkpointed version and ``metrics`` holds
    ``checkpointPath``, ``checkpointSize``, ``checkpointSizeInBytes``, ``numAddFiles``, ``numDeletedLogFiles``
    (with ``tables``: one such result per table in ``tables``).

    Example:
        >>> DeltaCheckpointOperator(task_id="checkpoint", tables=["/data/events", "/data/orders"])  # doctest: +SKIP
    """


def _static_asset(name: Any) -> Asset | None:
    """The asset of a table named by a literal full path or URI; None for a template or a bare name."""
    if not isinstance(name, str) or is_deferred_value(name) or not is_full_location(name):
        return None
    try:
        return Asset(uri=asset_uri(name))
    except ValueError:
        return None


def _add_unique(items: list[Any], item: Any) -> None:
    if item not in items:
        items.append(item)


def _document_jobs(cls: type) -> None:
    """Append every job's options to the generic operator's docstring (``job_options``)."""
    sections = [
        textwrap.indent(job_definition(name).docstring(f"``job_options`` of job ``{name}``:"), "    ")
        for name in sorted(JOBS)
    ]
    cls.__doc__ = "\n\n".join([(cls.__doc__ or "").rstrip(), *sections]) + "\n"


_document_jobs(DeltaSparkJobOperator)

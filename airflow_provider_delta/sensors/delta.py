"""``DeltaVersionSensor``: wait for a Delta table to gain a version (poke, reschedule or deferrable)."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.configuration import conf
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSensorTimeout

from airflow_provider_delta.core.log.sensing import current_table_id, current_version, new_commits
from airflow_provider_delta.core.transaction.policy import classify
from airflow_provider_delta.exceptions import DeltaError
from airflow_provider_delta.hooks.delta import DeltaHook
from airflow_provider_delta.triggers.delta import DeltaVersionTrigger, event_payload

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow.sdk import Context

    from airflow_provider_delta.core.log.sensing import NewCommits

BASELINE_KEY = "delta_version_sensor_baseline"
#: The table's ``metaData.id`` at the baseline: a different id later means the table was recreated.
BASELINE_ID_KEY = "delta_version_sensor_table_id"


class DeltaVersionSensor(BaseSensorOperator):
    """Wait until ``table`` has a version newer than ``after_version``.

    Args:
        table: a path/URI, or a bare name under the connection's base path (templated).
        after_version: the version already known (templated). Default: the version the table had
            when the sensor first looked (``-1`` if it did not exist yet, so its creation counts).
            The first look is stored in the task's state store, so reschedule mode and deferral
            resume from it.
        operations: only commits whose operation is one of these count, e.g. ``["WRITE", "MERGE"]``
            (templated).
        delta_conn_id: the ``delta`` connection (not needed for a table named by full path).
        deferrable: wait in the triggerer instead of a worker slot.
        poll_interval: seconds between checks in deferrable mode (default: ``poke_interval``).

    Pushes to XCom (``return_value``) a dict: ``version`` (newest), ``previous_version`` (the
    baseline; None when the table is new or was recreated), ``start_version``/``end_version`` (the
    range to read, e.g. for a change-data-feed export), ``commits`` (``version``, ``timestamp``,
    ``operation``, ``operationMetrics`` of the newest 100 new commits that matched),
    ``commit_count`` (all of them), ``commits_truncated`` (when more than 100), ``recreated`` (the
    table was dropped and created again: its ``metaData.id`` changed, or its version went back),
    ``table_id``, ``table``. Poke, reschedule and deferrable modes push the same dict.

    Example:
        >>> DeltaVersionSensor(task_id="wait", table="/data/events", operations=["WRITE"],
        ...                    deferrable=True, poke_interval=30)  # doctest: +SKIP
    """

    template_fields: Sequence[str] = ("table", "after_version", "operations")
    ui_color = "#00add4"

    def __init__(
        self,
        *,
        table: str,
        after_version: int | str | None = None,
        operations: Sequence[str] | None = None,
        delta_conn_id: str = DeltaHook.default_conn_name,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poll_interval: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.table = table
        self.after_version = after_version
        self.operations = operations
        self.delta_conn_id = delta_conn_id
        self.deferrable = deferrable
        self.poll_interval = poll_interval
        self._baseline: int | None = None
        self._table_id: str | None = None

    # -- helpers ----------------------------------------------------------------------------------
    @property
    def hook(self) -> DeltaHook:
        """The hook (built on use; reads no connection for a table named by full path)."""
        return DeltaHook(self.delta_conn_id)

    def _operations(self) -> list[str] | None:
        ops = self.operations
        if ops is None or ops == "" or ops == []:
            return None
        if isinstance(ops, str):
            ops = [op.strip() for op in ops.split(",")]
        return [str(op) for op in ops if str(op).strip()]

    def _explicit_after_version(self) -> int | None:
        value = self.after_version
        if value is None or (isinstance(value, str) and value.strip() in ("", "None")):
            return None
        try:
            return int(value)
        except (TypeError, ValueError):
            raise AirflowFailException(
                f"Cannot sense table {self.table!r}: after_version must be an integer version, found {value!r}"
            ) from None

    def _baseline_for(self, context: Context, location: str, options: dict[str, str]) -> int:
        """The explicit after_version, else the first look, kept in the task state store.

        The table's id at the first look is kept too (``_table_id``), so a table dropped and
        recreated while the sensor waits is reported as ``recreated``, not as new commits.
        """
        store = context.get("task_state_store")  # type: ignore[call-overload]
        if self._table_id is None:
            stored_id = store.get(BASELINE_ID_KEY) if store is not None else None
            if stored_id:
                self._table_id = str(stored_id)
            else:
                self._table_id = self._call(current_table_id, location, storage_options=options)
                if store is not None and self._table_id is not None:
                    store.set(BASELINE_ID_KEY, self._table_id)
        explicit = self._explicit_after_version()
        if explicit is not None:
            return explicit
        if self._baseline is not None:
            return self._baseline
        stored = store.get(BASELINE_KEY) if store is not None else None
        if stored is not None:
            self._baseline = int(str(stored))
            self.log.info("Resuming from baseline version %s of %s", self._baseline, location)
            return self._baseline
        self._baseline = self._call(current_version, location, storage_options=options)
        if store is not None:
            store.set(BASELINE_KEY, self._baseline)
        self.log.info("Baseline: version %s of %s (-1: no table yet)", self._baseline, location)
        return self._baseline

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a core read; errors become Airflow errors (permanent ones without retries)."""
        try:
            return fn(*args, **kwargs)
        except (DeltaError, OSError) as err:
            if classify(err) == "permanent":  # e.g. NotADeltaTableError, PermissionError, LogCorruptedError
                raise AirflowFailException(f"Cannot sense table {self.table!r}: {err}") from err
            raise AirflowException(f"Cannot sense table {self.table!r}: {err}") from err

    def _check(self, context: Context) -> tuple[NewCommits, str, dict[str, str], int]:
        hook = self.hook
        location = hook.resolve_table(self.table)
        options = hook.storage_options
        baseline = self._baseline_for(context, location, options)
        result = self._call(
            new_commits, location, baseline, self._operations(), storage_options=options, table_id=self._table_id
        )
        return result, location, options, baseline

    # -- poke / reschedule ------------------------------------------------------------------------
    def poke(self, context: Context) -> PokeReturnValue:
        """One look: a few file probes from the baseline, then the new commits' commitInfo."""
        result, location, _, baseline = self._check(context)
        if result.has_new_version:
            self.log.info(
                "%s: version %s after %s%s", location, result.latest_version, baseline,
                " (the table was recreated)" if result.recreated else "",
            )
            return PokeReturnValue(is_done=True, xcom_value=event_payload(result))
        if result.latest_version is None:
            self.log.info("%s does not exist yet; waiting", location)
        return PokeReturnValue(is_done=False)

    # -- deferrable -------------------------------------------------------------------------------
    def execute(self, context: Context) -> Any:
        """Poke/reschedule as usual, or look once and defer to ``DeltaVersionTrigger``."""
        if not self.deferrable:
            return super().execute(context)
        result, location, options, baseline = self._check(context)
        if result.has_new_version:
            return event_payload(result)
        self.defer(
            trigger=DeltaVersionTrigger(
                table=location,
                after_version=baseline,
                operations=self._operations(),
                # The triggerer resolves the connection itself: no credentials in the trigger's kwargs.
                delta_conn_id=self.hook.delta_conn_id if options else None,
                storage_options=None,
                poll_interval=self.poll_interval if self.poll_interval is not None else self.poke_interval,
                end_time=time.time() + self.timeout,
                table_id=self._table_id,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout),
        )
        return None  # not reached: defer() raises TaskDeferred

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> dict[str, Any]:
        """Resume after the trigger fired: the event's payload, or an error."""
        if not event:
            raise AirflowException(f"Cannot sense table {self.table!r}: the trigger sent no event")
        status = event.get("status")
        if status == "success":
            self.log.info("%s: version %s", event.get("table"), event.get("version"))
            return {k: v for k, v in event.items() if k != "status"}
        if status == "timeout":
            raise AirflowSensorTimeout(event.get("message") or f"Sensor on {self.table!r} timed out")
        message = event.get("message") or f"Cannot sense table {self.table!r}: {event}"
        if event.get("permanent"):
            raise AirflowFailException(message)
        raise AirflowException(message)

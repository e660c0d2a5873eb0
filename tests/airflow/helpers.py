"""Helpers for the Airflow tests: tables, a background committer, XCom reads from a finished run."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core import DeltaTable

if TYPE_CHECKING:
    from collections.abc import Callable

SCHEMA = pa.schema([("id", pa.int64())])


def make_table(path: str, appends: int = 0) -> DeltaTable:
    table = DeltaTable.create(path, SCHEMA)
    for i in range(appends):
        table.append(pa.table({"id": [i]}, schema=SCHEMA))
    return table


def append(path: str, n: int = 1) -> int:
    version = -1
    for i in range(n):
        version = DeltaTable(path).append(pa.table({"id": [i]}, schema=SCHEMA)) or version
    return version


def ti_state(dag_id: str, task_id: str) -> str | None:
    """The task instance's state; ``"deferred"`` also while dag.test() runs its trigger inline.

    dag.test() marks a deferred task QUEUED while it runs the trigger in process; such a task still
    has its trigger (``trigger_id``), which a task queued to start for the first time has not.
    """
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        row = session.execute(
            select(TaskInstance.state, TaskInstance.trigger_id).where(
                TaskInstance.dag_id == dag_id, TaskInstance.task_id == task_id
            )
        ).first()
    if row is None or row[0] is None:
        return None
    state = str(getattr(row[0], "value", row[0]))
    # Deferred = it has a trigger; a QUEUED task with a start date may also be one about to start.
    return "deferred" if state in ("queued", "deferred") and row[1] is not None else state


class CommitWhen(threading.Thread):
    """Commit to ``path`` from another thread once ``condition()`` holds (a real concurrent writer).

    ``action(path)`` is the change (default: one append); it returns the new version.
    """

    def __init__(
        self,
        path: str,
        condition: Callable[[], bool],
        *,
        timeout: float = 60,
        action: Callable[[str], int] | None = None,
    ) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.condition = condition
        self.timeout = timeout
        self.action = action or append
        self.version: int | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        deadline = time.monotonic() + self.timeout
        try:
            while not self.condition():
                if time.monotonic() > deadline:
                    raise TimeoutError("condition never held")
                time.sleep(0.2)
            self.version = self.action(self.path)
        except Exception as err:  # noqa: BLE001 - reported by the test
            self.error = err


def xcom_value(dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        value = session.scalar(
            select(XComModel.value).where(
                XComModel.dag_id == dag_id,
                XComModel.run_id == run_id,
                XComModel.task_id == task_id,
                XComModel.key == key,
            )
        )
    return XComModel.deserialize_value(type("X", (), {"value": value})()) if value is not None else None


def recreate(path: str, appends: int = 3) -> int:
    """Drop the table and create a new one at the same path with ``appends`` commits.

    The old folder is moved away and the new table moved in (two renames), so a sensor polling
    meanwhile sees the table, then no table, then the new one, never a half-deleted folder.
    """
    import os
    import shutil

    staging = f"{path}.new"
    version = make_table(staging, appends=appends).version
    os.rename(path, f"{path}.old")
    os.rename(staging, path)
    shutil.rmtree(f"{path}.old")
    return version

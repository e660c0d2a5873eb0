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
    from sqlalchemy import select

    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        state = session.scalar(
            select(TaskInstance.state).where(TaskInstance.dag_id == dag_id, TaskInstance.task_id == task_id)
        )
        return None if state is None else str(state)


class CommitWhen(threading.Thread):
    """Commit to ``path`` from another thread once ``condition()`` holds (a real concurrent writer)."""

    def __init__(self, path: str, condition: Callable[[], bool], *, timeout: float = 60) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.condition = condition
        self.timeout = timeout
        self.version: int | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        deadline = time.monotonic() + self.timeout
        try:
            while not self.condition():
                if time.monotonic() > deadline:
                    raise TimeoutError("condition never held")
                time.sleep(0.2)
            self.version = append(self.path)
        except BaseException as err:  # reported by the test
            self.error = err


def xcom_value(dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
    from sqlalchemy import select

    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        value = session.scalar(
            select(XComModel.value).where(
                XComModel.dag_id == dag_id, XComModel.run_id == run_id,
                XComModel.task_id == task_id, XComModel.key == key,
            )
        )
    return XComModel.deserialize_value(type("X", (), {"value": value})()) if value is not None else None

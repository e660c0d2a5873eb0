"""Tables, concurrent writers and test hooks for the job tests.

A real conflict needs a commit to land between a job's read and its commit. The job's
``test_hooks.before_commit`` barrier makes that deterministic: the job creates ``signal`` and waits
for ``wait_for``; :class:`ConcurrentWriter` waits for ``signal``, commits through the engine, then
creates ``wait_for``. Works across processes (files), so the job may run in spark-submit.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core.table import DeltaTable

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])


def make_table(location: Path, *, commits: int = 3) -> Path:
    """A table partitioned by ``part`` with ``commits`` appends of one row each into part 'a'."""
    table = DeltaTable.create(str(location), SCHEMA, partition_by=["part"])
    for i in range(commits):
        table.append(pa.table({"id": [i], "part": ["a"]}, schema=SCHEMA))
    return location


def barrier_hooks(folder: Path) -> dict[str, Any]:
    """``test_hooks`` for a spec: pause before the first commit until the concurrent writer is done."""
    return {
        "before_commit": {
            "signal": str(folder / "job-ready"),
            "wait_for": str(folder / "writer-done"),
            "timeout_s": 120,
        }
    }


class ConcurrentWriter(threading.Thread):
    """Commits ``write(table)`` while a job waits at its ``before_commit`` barrier."""

    def __init__(
        self, location: Path, folder: Path, write: Callable[[DeltaTable], Any], *, timeout: float = 120
    ):
        super().__init__(daemon=True)
        self.location, self.folder, self.write, self.timeout = location, folder, write, timeout
        self.version: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            deadline = time.monotonic() + self.timeout
            while not (self.folder / "job-ready").exists():
                if time.monotonic() > deadline:
                    raise TimeoutError("the job never reached its before_commit barrier")
                time.sleep(0.02)
            self.version = self.write(DeltaTable(str(self.location)))
        except BaseException as err:  # noqa: BLE001 - reported by join_checked
            self.error = err
        finally:
            (self.folder / "writer-done").touch()

    def join_checked(self) -> Any:
        """Wait for the writer; re-raise its error; return what ``write`` returned."""
        self.join(self.timeout)
        if self.error is not None:
            raise self.error
        return self.version


def append_to_part_a(table: DeltaTable) -> int | None:
    """The concurrent change: one row into partition 'a' (what an overwrite of part 'a' read)."""
    return table.append(pa.table({"id": [100], "part": ["a"]}, schema=SCHEMA))


def overwrite_part_a_spec_options() -> dict[str, Any]:
    """Job options that replace partition 'a'; Serializable, so a concurrent append there conflicts."""
    return {
        "mode": "overwrite",
        "predicate": "part = 'a'",
        "rows": [{"id": 7, "part": "a"}],
        "isolation_level": "Serializable",
    }


def orphan_files(location: Path) -> set[str]:
    """Data and change files on disk that no commit in the log ever added: what a failed attempt left."""
    import json
    from urllib.parse import unquote

    logged: set[str] = set()
    for commit in (location / "_delta_log").glob("*.json"):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            for key in ("add", "cdc"):
                if key in action:
                    logged.add(unquote(action[key]["path"]))
    on_disk = {
        str(p.relative_to(location))
        for p in location.rglob("*.parquet")
        if "_delta_log" not in p.relative_to(location).parts
    }
    return on_disk - logged

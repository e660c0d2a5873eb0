"""The job spec and the job result: the JSON that goes into one run of a job, and the JSON that comes out.

Standard library only, so both sides share it: the Airflow operator writes a :class:`JobSpec` and
reads a :class:`JobResult`; the job runner (:mod:`.runner`, under spark-submit or in the task's
process) does the reverse.

Spec (``--spec``, a file path or the JSON text itself)::

    {"protocol": 1, "job": "checkpoint", "table": "/data/events", "storage_options": {},
     "options": {"cleanup_log": true}, "conflict_policy": null,
     "app_id": "airflow:dag:task:run", "app_version": 0, "test_hooks": {}}

A job declared ``multi_table`` may get ``"tables": ["/data/a", "/data/b"]`` instead of ``"table"``: it
runs once per table, in order, in the same process, and the result's ``"tables"`` holds one result
per table (a failure of one table does not stop or hide the others).

Result (``--result``, a file path)::

    {"protocol": 1, "status": "success", "job": "checkpoint", "table": "/data/events",
     "version": 12, "committed": true, "metrics": {...}, "attempts": 1, "duration_s": 0.4,
     "engine": {"name": "spark", "spark_version": "4.3.0", "master": "local[2]"}, "error": null}

On failure ``status`` is ``"error"`` and ``error`` is ``{"type": "ConcurrentAppendException",
"message": ..., "attempts": 3, "action": "fail", "kind": "conflict"}``: the exception's class name
(Delta Lake's names for conflicts), its message, how many attempts the in-job retry loop made, the
conflict policy's action and the class of error (``conflict``, ``transient``, ``permanent``, ``unknown``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from airflow_provider_delta.exceptions import JobSpecError

PROTOCOL_VERSION = 1

Status = Literal["success", "error"]


def _mapping(raw: dict[str, Any], key: str, what: str) -> dict[str, Any]:
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise JobSpecError(f"Cannot read {what}: {key!r} must be a JSON object, found {value!r}")
    return value


@dataclass(frozen=True)
class JobSpec:
    """What one run of a job should do.

    Attributes:
        job: the job's name in :data:`airflow_provider_delta.jobs.JOBS` (``checkpoint``, ``write``).
        table: the table's full path or URI (empty when ``tables`` is given).
        storage_options: object-store options for the table.
        options: the job's own options (``{"cleanup_log": true}`` for ``checkpoint``).
        conflict_policy: a serialised ``ConflictPolicy`` (None: the defaults).
        app_id: the application id of an idempotent write (Delta's ``txn`` action), or None.
        app_version: the version recorded with ``app_id``; a table that already has it is not written again.
        test_hooks: test-only synchronisation points (``{"before_commit": {"signal": path,
            "wait_for": path, "timeout_s": 60}}``); empty in production.
        tables: several tables for a job declared ``multi_table`` (instead of ``table``).

    Example:
        >>> spec = JobSpec(job="checkpoint", table="/data/events", options={"cleanup_log": True})
        >>> JobSpec.from_json(spec.to_json()) == spec
        True
    """

    job: str
    table: str = ""
    storage_options: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    conflict_policy: dict[str, Any] | None = None
    app_id: str | None = None
    app_version: int | None = None
    test_hooks: dict[str, Any] = field(default_factory=dict)
    tables: list[str] = field(default_factory=list)

    @property
    def locations(self) -> list[str]:
        """The table(s) this spec names: ``tables``, else ``[table]``."""
        return list(self.tables) or [self.table]

    def to_json(self) -> str:
        """The spec as JSON text (with ``"protocol": 1``)."""
        return json.dumps({"protocol": PROTOCOL_VERSION, **asdict(self)}, sort_keys=True)

    @classmethod
    def from_dict(cls, raw: Any) -> JobSpec:
        """Validate a decoded spec.

        Raises:
            JobSpecError: a field is missing or has the wrong type, or the protocol is newer than this code.
        """
        if not isinstance(raw, dict):
            raise JobSpecError(f"Cannot read job spec: expected a JSON object, found {type(raw).__name__}")
        protocol = raw.get("protocol", PROTOCOL_VERSION)
        if protocol != PROTOCOL_VERSION:
            raise JobSpecError(
                f"Cannot read job spec: protocol {protocol!r} is not supported (expected {PROTOCOL_VERSION}); "
                "install the same airflow-provider-delta version on the Airflow workers and the Spark driver"
            )
        tables = raw.get("tables") or []
        if not isinstance(tables, list) or not all(isinstance(t, str) and t for t in tables):
            raise JobSpecError(f"Cannot read job spec: 'tables' must be a list of non-empty strings, found {tables!r}")
        keys = ("job",) if tables else ("job", "table")
        for key in keys:
            if not isinstance(raw.get(key), str) or not raw[key]:
                raise JobSpecError(
                    f"Cannot read job spec: {key!r} must be a non-empty string, found {raw.get(key)!r}"
                )
        if tables and raw.get("table"):
            raise JobSpecError("Cannot read job spec: pass 'table' or 'tables', not both")
        app_id, app_version = raw.get("app_id"), raw.get("app_version")
        if (app_id is None) != (app_version is None):
            raise JobSpecError("Cannot read job spec: pass 'app_id' and 'app_version' together")
        if app_version is not None and (isinstance(app_version, bool) or not isinstance(app_version, int)):
            raise JobSpecError(
                f"Cannot read job spec: 'app_version' must be an integer, found {app_version!r}"
            )
        policy = raw.get("conflict_policy")
        if policy is not None and not isinstance(policy, dict):
            raise JobSpecError(
                f"Cannot read job spec: 'conflict_policy' must be a JSON object, found {policy!r}"
            )
        return cls(
            job=raw["job"],
            table=raw.get("table") or "",
            tables=list(tables),
            storage_options={str(k): str(v) for k, v in _mapping(raw, "storage_options", "job spec").items()},
            options=_mapping(raw, "options", "job spec"),
            conflict_policy=policy,
            app_id=app_id,
            app_version=app_version,
            test_hooks=_mapping(raw, "test_hooks", "job spec"),
        )

    @classmethod
    def from_json(cls, text: str) -> JobSpec:
        """Parse and validate JSON text (see :meth:`from_dict`)."""
        try:
            raw = json.loads(text)
        except ValueError as err:
            raise JobSpecError(f"Cannot read job spec: not valid JSON ({err})") from err
        return cls.from_dict(raw)

    @classmethod
    def load(cls, source: str) -> JobSpec:
        """A spec from a file path or from JSON text (``--spec`` accepts both)."""
        text = source if source.lstrip().startswith("{") else Path(source).read_text(encoding="utf-8")
        return cls.from_json(text)


@dataclass(frozen=True)
class JobResult:
    """What one run of a job did.

    Attributes:
        status: ``"success"`` or ``"error"``.
        job: the job's name.
        table: the table's location.
        version: the version committed (or checkpointed); the table's version when nothing was written.
        committed: whether this run wrote a commit (False for an idempotent write that had already landed).
        metrics: job-specific numbers (``numAddedFiles``, ``checkpointSizeInBytes`` ...).
        attempts: how many times the in-job retry loop ran the job.
        duration_s: wall time of the job in the driver.
        engine: where it ran: ``{"name": "spark", "spark_version": ..., "master": ...}`` or ``{"name": "local"}``.
        error: on failure ``{"type", "message", "attempts", "action", "kind"}``.
        tables: for a spec with ``tables``, one result (as a dict) per table, in order.

    Example:
        >>> r = JobResult(status="success", job="checkpoint", table="/t", version=3)
        >>> JobResult.from_json(r.to_json()).version
        3
    """

    status: Status
    job: str
    table: str
    version: int | None = None
    committed: bool = False
    metrics: dict[str, Any] = field(default_factory=dict)
    attempts: int = 0
    duration_s: float = 0.0
    engine: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    tables: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready dict (what the operator pushes to XCom)."""
        return {"protocol": PROTOCOL_VERSION, **asdict(self)}

    def to_json(self) -> str:
        """The result as JSON text."""
        return json.dumps(self.to_dict(), sort_keys=True, default=str)

    def write(self, path: str | Path) -> None:
        """Write the result to ``path`` atomically (temporary file, then rename)."""
        target = Path(path)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(self.to_json(), encoding="utf-8")
        tmp.replace(target)

    @classmethod
    def from_json(cls, text: str) -> JobResult:
        """Parse a result written by :meth:`to_json`.

        Raises:
            JobSpecError: the text is not a result of this protocol.
        """
        try:
            raw = json.loads(text)
        except ValueError as err:
            raise JobSpecError(f"Cannot read job result: not valid JSON ({err})") from err
        if not isinstance(raw, dict) or raw.get("status") not in ("success", "error"):
            raise JobSpecError(
                f"Cannot read job result: expected status 'success' or 'error', found {raw!r:.200}"
            )
        if raw.get("protocol", PROTOCOL_VERSION) != PROTOCOL_VERSION:
            raise JobSpecError(f"Cannot read job result: protocol {raw.get('protocol')!r} is not supported")
        error = raw.get("error")
        if raw["status"] == "error" and not (isinstance(error, dict) and isinstance(error.get("type"), str)):
            raise JobSpecError(f"Cannot read job result: an error result needs error.type, found {error!r}")
        known = {k: raw[k] for k in cls.__dataclass_fields__ if k in raw}
        return cls(**known)

    @classmethod
    def read(cls, path: str | Path) -> JobResult:
        """Read a result file."""
        return cls.from_json(Path(path).read_text(encoding="utf-8"))

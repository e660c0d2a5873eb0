"""Turn a failed Delta job or commit into an Airflow task outcome, per ``core.transaction.policy.ConflictPolicy``.

Two entry points:

- ``failure_exception(type_name, message, policy, kind=...)``: what an operator raises when a job
  reports a failure (the job result carries the exception's type name, message and class of error):
  ``"skip"`` -> ``AirflowSkipException``, ``"fail"`` -> ``AirflowFailException`` (no retries; the
  default for permanent errors, with the engine's message as it is), and ``"retry"`` (in-job retries
  exhausted) or ``"airflow_retry"`` -> ``DeltaConflictError`` for a conflict, ``DeltaJobError`` for
  anything else: ``AirflowException`` subclasses that Airflow's task retries handle.
- ``DeltaConflictRetryPolicy``: the same mapping as an Airflow 3.3 pluggable retry policy
  (``retry_policy=`` on any task), for tasks that commit in-process (e.g. a ``@task`` calling
  ``DeltaTable.append``) or operators raising ``DeltaJobError``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import RetryDecision, RetryPolicy
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from airflow_provider_delta.core.transaction.policy import (
    ConflictAction,
    ConflictPolicy,
    ErrorKind,
    classify,
    exception_name,
)

if TYPE_CHECKING:
    from airflow.sdk import Context


class DeltaJobError(AirflowException):
    """A Delta job failed in a way Airflow's task retries may fix (a transient or unknown error).

    Attributes:
        delta_exception_type: the engine's exception name, e.g. ``"OSError"``.
        error_kind: ``"conflict"``, ``"transient"``, ``"permanent"`` or ``"unknown"``.
        conflict_action: the action the policy chose.
        attempts: how many attempts the job made.
    """

    def __init__(
        self,
        message: str,
        *,
        delta_exception_type: str,
        conflict_action: ConflictAction,
        attempts: int = 1,
        error_kind: ErrorKind = "unknown",
    ) -> None:
        super().__init__(message)
        self.delta_exception_type = delta_exception_type
        self.conflict_action = conflict_action
        self.attempts = attempts
        self.error_kind = error_kind


class DeltaConflictError(DeltaJobError):
    """A Delta commit lost to a concurrent one; Airflow's task retries (and any retry policy) decide next."""

    def __init__(
        self, message: str, *, delta_exception_type: str, conflict_action: ConflictAction, attempts: int = 1
    ) -> None:
        super().__init__(
            message, delta_exception_type=delta_exception_type, conflict_action=conflict_action,
            attempts=attempts, error_kind="conflict",
        )


def failure_text(name: str, message: str, kind: ErrorKind, action: ConflictAction, attempts: int | None) -> str:
    """How a failure reads in the task log: the engine's message once, labelled only where it helps.

    Example:
        >>> failure_text("PredicateError", "Cannot parse predicate 'a >': ...", "permanent", "fail", 1)
        "PredicateError: Cannot parse predicate 'a >': ..."
        >>> failure_text("ConcurrentAppendException", "Cannot commit ...", "conflict", "airflow_retry", 5)
        'ConcurrentAppendException after 5 attempt(s): Cannot commit ... [conflict policy: airflow_retry]'
    """
    show_attempts = bool(attempts) and (kind == "conflict" or (attempts or 0) > 1)
    tried = f" after {attempts} attempt(s)" if show_attempts else ""
    text = f"{name}{tried}: {message}"
    if kind == "conflict":
        return f"{text} [conflict policy: {action}]"
    if kind == "permanent" and action == "fail":
        return text
    return f"{text} [{kind} error; policy: {action}]"


def failure_exception(
    type_name: str,
    message: str,
    policy: ConflictPolicy | dict[str, Any] | None = None,
    *,
    attempts: int | None = None,
    kind: ErrorKind | None = None,
) -> AirflowException:
    """The Airflow exception to raise for a failure reported as ``type_name: message``.

    Example:
        >>> exc = failure_exception("ConcurrentTransactionException", "appId 'x' committed")
        >>> type(exc).__name__
        'AirflowFailException'
        >>> type(failure_exception("PredicateError", "Cannot parse predicate 'a >'")).__name__
        'AirflowFailException'
        >>> type(failure_exception("OSError", "503 SlowDown")).__name__
        'DeltaJobError'
        >>> type(failure_exception("ConcurrentAppendException", "lost", {"overrides": {
        ...     "ConcurrentAppendException": "skip"}})).__name__
        'AirflowSkipException'
    """
    if not isinstance(policy, ConflictPolicy):
        policy = ConflictPolicy.from_dict(policy)
    name = exception_name(type_name)
    kind = kind or classify(name, message)
    action = policy.action_for(name, message, kind=kind)
    text = failure_text(name, message, kind, action, attempts)
    if action == "skip":
        return AirflowSkipException(text)
    if action == "fail":
        return AirflowFailException(text)
    if kind == "conflict":
        return DeltaConflictError(text, delta_exception_type=name, conflict_action=action, attempts=attempts or 1)
    return DeltaJobError(
        text, delta_exception_type=name, conflict_action=action, attempts=attempts or 1, error_kind=kind
    )


#: The former name of :func:`failure_exception` (it maps every failure, not only conflicts).
conflict_exception = failure_exception


def _delta_failure(exception: BaseException) -> tuple[BaseException | str, str, ErrorKind] | None:
    """The Delta failure behind ``exception`` (itself, a DeltaJobError, or a cause): what, text, kind."""
    seen: set[int] = set()
    current: BaseException | None = exception
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DeltaJobError):
            return current.delta_exception_type, str(current), current.error_kind
        if type(current).__module__.startswith("airflow_provider_delta."):
            return current, str(current), classify(current)
        current = current.__cause__ or current.__context__
    return None


class DeltaConflictRetryPolicy(RetryPolicy):
    """An Airflow retry policy that follows a ``ConflictPolicy``.

    ``"retry"`` and ``"airflow_retry"`` retry the task (``"retry"`` with the policy's backoff as the
    delay), ``"fail"`` fails at once (by default: permanent errors such as ``PredicateError`` or
    ``SchemaMismatchError``, and ``ConcurrentTransactionException``), ``"skip"`` also stops retrying
    (a retry policy cannot skip a task; Delta operators raise ``AirflowSkipException`` themselves).
    Errors that are not Delta's fall through to the task's standard retries.

    Example:
        >>> from airflow.sdk import task
        >>> @task(retries=3, retry_policy=DeltaConflictRetryPolicy())
        ... def append_rows(): ...
    """

    def __init__(self, policy: ConflictPolicy | dict[str, Any] | None = None) -> None:
        self.policy = policy if isinstance(policy, ConflictPolicy) else ConflictPolicy.from_dict(policy)

    def evaluate(
        self,
        exception: BaseException,
        try_number: int,
        max_tries: int,
        context: Context | None = None,
    ) -> RetryDecision:
        """Decide from the Delta exception behind ``exception``."""
        found = _delta_failure(exception)
        if found is None:
            return RetryDecision.default()
        what, message, kind = found
        action = self.policy.action_for(what, message, kind=kind)
        reason = f"{exception_name(what)} ({kind} error): policy says {action!r}"
        if action in ("fail", "skip"):
            return RetryDecision.fail(reason)
        if action == "retry":
            return RetryDecision.retry(timedelta(seconds=self.policy.backoff(max(1, try_number))), reason)
        return RetryDecision.retry(None, reason)

    def serialize(self) -> dict[str, Any]:
        """JSON-able form (``deserialize`` reverses it)."""
        return {"__type": "DeltaConflictRetryPolicy", "policy": self.policy.to_dict()}

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> DeltaConflictRetryPolicy:
        """The policy ``serialize`` described."""
        return cls(ConflictPolicy.from_dict(data.get("policy")))

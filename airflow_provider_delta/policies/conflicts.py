"""Turn a Delta conflict into an Airflow task outcome, per ``core.transaction.policy.ConflictPolicy``.

Two entry points:

- ``conflict_exception(type_name, message, policy)``: what an operator raises when a Spark job
  reports that its commit failed (the job result carries the exception's type name and message):
  ``"skip"`` -> ``AirflowSkipException``, ``"fail"`` -> ``AirflowFailException`` (no retries), and
  ``"retry"`` (in-job retries exhausted) or ``"airflow_retry"`` -> ``DeltaConflictError``, an
  ``AirflowException`` that Airflow's task retries handle.
- ``DeltaConflictRetryPolicy``: the same mapping as an Airflow 3.3 pluggable retry policy
  (``retry_policy=`` on any task), for tasks that commit in-process (e.g. a ``@task`` calling
  ``DeltaTable.append``) or operators raising ``DeltaConflictError``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import RetryDecision, RetryPolicy
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from airflow_provider_delta.core.transaction.policy import ConflictAction, ConflictPolicy, exception_name

if TYPE_CHECKING:
    from airflow.sdk import Context


class DeltaConflictError(AirflowException):
    """A Delta commit failed; Airflow's task retries (and any retry policy) decide what happens next.

    Attributes:
        delta_exception_type: the engine's exception name, e.g. ``"ConcurrentAppendException"``.
        conflict_action: the action the policy chose.
        attempts: how many commit attempts the job made.
    """

    def __init__(
        self, message: str, *, delta_exception_type: str, conflict_action: ConflictAction, attempts: int = 1
    ) -> None:
        super().__init__(message)
        self.delta_exception_type = delta_exception_type
        self.conflict_action = conflict_action
        self.attempts = attempts


def conflict_exception(
    type_name: str,
    message: str,
    policy: ConflictPolicy | dict[str, Any] | None = None,
    *,
    attempts: int | None = None,
) -> AirflowException:
    """The Airflow exception to raise for a failed commit reported as ``type_name: message``.

    Example:
        >>> exc = conflict_exception("ConcurrentTransactionException", "appId 'x' committed")
        >>> type(exc).__name__
        'AirflowFailException'
        >>> type(conflict_exception("ConcurrentAppendException", "lost", {"overrides": {
        ...     "ConcurrentAppendException": "skip"}})).__name__
        'AirflowSkipException'
    """
    if not isinstance(policy, ConflictPolicy):
        policy = ConflictPolicy.from_dict(policy)
    name = exception_name(type_name)
    action = policy.action_for(name, message)
    tried = f" after {attempts} attempt(s)" if attempts else ""
    text = f"{name}{tried}: {message} [conflict policy: {action}]"
    if action == "skip":
        return AirflowSkipException(text)
    if action == "fail":
        return AirflowFailException(text)
    return DeltaConflictError(text, delta_exception_type=name, conflict_action=action, attempts=attempts or 1)


def _delta_exception_name(exception: BaseException) -> tuple[str, str] | None:
    """The Delta exception behind ``exception`` (itself, a DeltaConflictError, or a cause)."""
    seen: set[int] = set()
    current: BaseException | None = exception
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DeltaConflictError):
            return current.delta_exception_type, str(current)
        if type(current).__module__.startswith("airflow_provider_delta."):
            return type(current).__name__, str(current)
        current = current.__cause__ or current.__context__
    return None


class DeltaConflictRetryPolicy(RetryPolicy):
    """An Airflow retry policy that follows a ``ConflictPolicy``.

    ``"retry"`` and ``"airflow_retry"`` retry the task (``"retry"`` with the policy's backoff as the
    delay), ``"fail"`` fails at once, ``"skip"`` also stops retrying (a retry policy cannot skip a
    task; Delta operators raise ``AirflowSkipException`` themselves). Errors that are not Delta's
    fall through to the task's standard retries.

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
        found = _delta_exception_name(exception)
        if found is None:
            return RetryDecision.default()
        name, message = found
        action = self.policy.action_for(name, message)
        reason = f"{name}: conflict policy says {action!r}"
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

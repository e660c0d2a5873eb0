"""What to do when a commit loses a race: retry in place, hand over to Airflow, fail fast, or skip.

Pure Python (no airflow, no pyspark): the Spark job runs it around its commit, and the Airflow layer
reads the same policy to turn a job's reported exception into a task outcome.

Actions:

- ``"retry"``: retry inside the job with exponential backoff and jitter, up to ``max_attempts``.
  Default for ``ConcurrentAppendException``, ``ConcurrentDeleteReadException``,
  ``ConcurrentDeleteDeleteException``, ``MetadataChangedException``, and for
  ``ProtocolChangedException`` when the new protocol is one this engine can still write.
- ``"airflow_retry"``: give up in the job and let Airflow's task retries run the task again.
  Default for ``CommitRetriesExhaustedError`` and for any error that is not a conflict.
- ``"fail"``: fail fast, with no retries at all. Default for ``ConcurrentTransactionException``
  (the same application transaction committed elsewhere: a retry would write twice or be a no-op)
  and for ``ProtocolChangedException`` when the winner upgraded to a protocol this engine cannot write.
- ``"skip"``: give up and mark the task skipped.

Example:
    >>> policy = ConflictPolicy(overrides={"ConcurrentAppendException": "airflow_retry"}, max_attempts=3)
    >>> policy.action_for("ConcurrentAppendException"), policy.action_for("MetadataChangedException")
    ('airflow_retry', 'retry')
    >>> ConflictPolicy.from_dict(policy.to_dict()) == policy
    True
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, get_args

from airflow_provider_delta.exceptions import (
    DeltaConcurrentModificationException,
    DeltaError,
    ProtocolChangedException,
    UnsupportedFeatureError,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

ConflictAction = Literal["retry", "airflow_retry", "fail", "skip"]
ACTIONS: tuple[ConflictAction, ...] = get_args(ConflictAction)

T = TypeVar("T")

#: The defaults, by Delta Lake's exception names (``ProtocolChangedException`` is refined below).
DEFAULT_ACTIONS: Mapping[str, ConflictAction] = MappingProxyType(
    {
        "ConcurrentAppendException": "retry",
        "ConcurrentDeleteReadException": "retry",
        "ConcurrentDeleteDeleteException": "retry",
        "MetadataChangedException": "retry",
        "ProtocolChangedException": "retry",
        "ConcurrentTransactionException": "fail",
        "CommitRetriesExhaustedError": "airflow_retry",
    }
)
CONFLICT_NAMES = frozenset(DEFAULT_ACTIONS) - {"CommitRetriesExhaustedError"}
_BASE_NAME = DeltaConcurrentModificationException.__name__
# core/transaction/conflicts.py words an unwritable upgrade this way; a job result carries only type + message.
_UNWRITABLE_MARKERS = ("cannot write", "UnsupportedFeature")


def exception_name(exc: BaseException | str) -> str:
    """The bare class name: ``'io.delta.exceptions.ConcurrentAppendException'`` -> ``'ConcurrentAppendException'``."""
    name = exc if isinstance(exc, str) else type(exc).__name__
    return name.strip().rsplit(".", 1)[-1]


def is_unwritable_protocol_change(exc: BaseException | str, message: str = "") -> bool:
    """Whether a ``ProtocolChangedException`` says the winner moved to a protocol we cannot write."""
    if isinstance(exc, BaseException):
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, UnsupportedFeatureError):
            return True
        message = message or str(exc)
    return any(marker in message for marker in _UNWRITABLE_MARKERS)


@dataclass(frozen=True)
class ConflictPolicy:
    """Per-exception actions plus the backoff of in-job retries. JSON-able: it travels in job specs.

    Args:
        overrides: exception name -> action, over the defaults. ``DeltaConcurrentModificationException``
            as a key sets the action of every conflict not named itself.
        max_attempts: attempts in total (the first one included) for ``"retry"``.
        base_backoff: seconds before the first retry; doubles with each attempt.
        max_backoff: ceiling of one wait, in seconds.
        jitter: fraction (0 to 1) of each wait that is randomised, so racing writers spread out.

    Example:
        >>> ConflictPolicy().action_for("ConcurrentTransactionException")
        'fail'
        >>> ConflictPolicy(overrides={"DeltaConcurrentModificationException": "skip"}).action_for(
        ...     "ConcurrentAppendException")
        'skip'
    """

    overrides: Mapping[str, ConflictAction] = field(default_factory=dict)
    max_attempts: int = 5
    base_backoff: float = 0.5
    max_backoff: float = 30.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        clean: dict[str, ConflictAction] = {}
        for name, action in dict(self.overrides).items():
            if action not in ACTIONS:
                raise DeltaError(
                    f"Cannot use conflict action {action!r} for {name!r}: expected one of {', '.join(ACTIONS)}"
                )
            clean[exception_name(name)] = action
        object.__setattr__(self, "overrides", MappingProxyType(clean))
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise DeltaError(f"Cannot use max_attempts={self.max_attempts!r}: expected an int >= 1")
        if not 0 <= self.base_backoff <= self.max_backoff:
            raise DeltaError(
                f"Cannot use base_backoff={self.base_backoff!r}, max_backoff={self.max_backoff!r}: "
                "expected 0 <= base_backoff <= max_backoff"
            )
        if not 0 <= self.jitter <= 1:
            raise DeltaError(f"Cannot use jitter={self.jitter!r}: expected a fraction between 0 and 1")

    def __hash__(self) -> int:
        return hash((tuple(sorted(self.overrides.items())), self.max_attempts, self.base_backoff,
                     self.max_backoff, self.jitter))

    def action_for(self, exc: BaseException | str, message: str = "") -> ConflictAction:
        """The action for an exception, or for its class name as a job result reports it.

        Exceptions match by their own class first, then their base classes (so a subclass of a
        conflict follows its parent). Anything that is not a known conflict is ``"airflow_retry"``:
        Airflow's normal retry behaviour.
        """
        names = (
            [exception_name(exc)] if isinstance(exc, str) else [k.__name__ for k in type(exc).__mro__]
        )
        if isinstance(exc, str) and names[0] in CONFLICT_NAMES:
            names.append(_BASE_NAME)
        for name in names:
            if name in self.overrides:
                return self.overrides[name]
        for name in names:
            if name == ProtocolChangedException.__name__ and is_unwritable_protocol_change(exc, message):
                return "fail"
            if name in DEFAULT_ACTIONS:
                return DEFAULT_ACTIONS[name]
        return "airflow_retry"

    def backoff(self, attempt: int, *, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based), jitter applied."""
        delay = min(self.max_backoff, self.base_backoff * (2 ** max(0, attempt - 1)))
        draw = (rng or random).random()
        return delay * (1 - self.jitter * draw)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict; ``from_dict`` reverses it."""
        return {
            "overrides": dict(sorted(self.overrides.items())),
            "max_attempts": self.max_attempts,
            "base_backoff": self.base_backoff,
            "max_backoff": self.max_backoff,
            "jitter": self.jitter,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ConflictPolicy:
        """The policy ``to_dict`` described (None or {} gives the defaults).

        Raises:
            DeltaError: an unknown key or action.
        """
        data = dict(data or {})
        unknown = set(data) - {"overrides", "max_attempts", "base_backoff", "max_backoff", "jitter"}
        if unknown:
            raise DeltaError(f"Cannot read conflict policy: unknown key(s) {sorted(unknown)}")
        return cls(
            overrides=cast("dict[str, ConflictAction]", dict(data.get("overrides") or {})),
            max_attempts=int(data.get("max_attempts", 5)),
            base_backoff=float(data.get("base_backoff", 0.5)),
            max_backoff=float(data.get("max_backoff", 30.0)),
            jitter=float(data.get("jitter", 0.5)),
        )


def run_with_conflict_policy(
    fn: Callable[[], T],
    policy: ConflictPolicy | None = None,
    *,
    sleep: Callable[[float], object] = time.sleep,
    rng: random.Random | None = None,
) -> T:
    """Call ``fn`` until it succeeds, retrying the errors whose action is ``"retry"``.

    ``fn`` must start from a fresh snapshot each time (a commit that lost a race cannot be replayed
    as is). Any other action, or the last attempt, re-raises the exception with two attributes set:
    ``conflict_attempts`` (how many calls were made) and ``conflict_action``.

    Example:
        >>> calls = []
        >>> def commit():
        ...     calls.append(1)
        ...     if len(calls) < 3:
        ...         raise ConcurrentAppendException("lost the race")
        ...     return 7
        >>> from airflow_provider_delta.exceptions import ConcurrentAppendException
        >>> run_with_conflict_policy(commit, ConflictPolicy(base_backoff=0), sleep=lambda s: None), len(calls)
        (7, 3)
    """
    policy = policy or ConflictPolicy()
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except Exception as exc:
            action = policy.action_for(exc)
            if action != "retry" or attempt >= policy.max_attempts:
                exc.conflict_attempts = attempt  # type: ignore[attr-defined]
                exc.conflict_action = action  # type: ignore[attr-defined]
                raise
            sleep(policy.backoff(attempt, rng=rng))


def failure_record(exc: BaseException, policy: ConflictPolicy | None = None) -> dict[str, Any]:
    """How a job reports a failure: type name, message, action and attempts (JSON-able).

    Example:
        >>> from airflow_provider_delta.exceptions import ConcurrentTransactionException
        >>> failure_record(ConcurrentTransactionException("same appId"))["action"]
        'fail'
    """
    policy = policy or ConflictPolicy()
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "action": getattr(exc, "conflict_action", None) or policy.action_for(exc),
        "attempts": int(getattr(exc, "conflict_attempts", 1)),
        "is_conflict": isinstance(exc, DeltaConcurrentModificationException),
    }

"""What to do when a job fails: retry in place, hand over to Airflow, fail fast, or skip.

Pure Python (no airflow, no pyspark): the Spark job runs it around its work, and the Airflow layer
reads the same policy to turn a job's reported exception into a task outcome.

Every failure is first classified (:func:`classify`):

- ``"conflict"``: Delta's concurrent-modification exceptions and ``CommitRetriesExhaustedError``;
- ``"transient"``: I/O that may succeed later: timeouts, dropped connections, storage throttling
  (``SlowDown``, HTTP 429/503), other ``OSError`` except the permanent ones below;
- ``"permanent"``: what no retry can fix: every other ``DeltaError`` (``PredicateError``,
  ``SchemaMismatchError``, ``TableNotFoundError``, ``JobSpecError``, ``UnsupportedFeatureError`` ...),
  ``PermissionError``/``FileNotFoundError``, programming errors (``TypeError``, ``KeyError`` ...) and
  Spark's analysis errors (``AnalysisException``, ``ParseException`` ...);
- ``"unknown"``: anything else (Airflow's usual behaviour applies: its task retries).

Actions:

- ``"retry"``: retry inside the job with exponential backoff and jitter, up to ``max_attempts``.
  Default for ``ConcurrentAppendException``, ``ConcurrentDeleteReadException``,
  ``ConcurrentDeleteDeleteException``, ``MetadataChangedException``, for ``ProtocolChangedException``
  when the new protocol is one this engine can still write, and for transient errors.
- ``"airflow_retry"``: give up in the job and let Airflow's task retries run the task again.
  Default for ``CommitRetriesExhaustedError`` and for unknown errors.
- ``"fail"``: fail fast, with no retries at all. Default for permanent errors, for
  ``ConcurrentTransactionException`` (the same application transaction committed elsewhere: a retry
  would write twice or be a no-op) and for ``ProtocolChangedException`` when the winner upgraded to
  a protocol this engine cannot write.
- ``"skip"``: give up and mark the task skipped.

Overrides name an exception (``"ConcurrentAppendException"``, ``"PredicateError"``), the base of
all conflicts (``"DeltaConcurrentModificationException"``), or a whole class of errors
(``"transient"``, ``"permanent"``, ``"unknown"``).

Example:
    >>> policy = ConflictPolicy(overrides={"ConcurrentAppendException": "airflow_retry"}, max_attempts=3)
    >>> policy.action_for("ConcurrentAppendException"), policy.action_for("MetadataChangedException")
    ('airflow_retry', 'retry')
    >>> policy.action_for("PredicateError"), policy.action_for(TimeoutError("read timed out"))
    ('fail', 'retry')
    >>> ConflictPolicy.from_dict(policy.to_dict()) == policy
    True
"""

from __future__ import annotations

import builtins
import random
import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, get_args

from airflow_provider_delta import exceptions as _exceptions
from airflow_provider_delta.exceptions import (
    CommitOutcomeUnknownError,
    CommitRetriesExhaustedError,
    DeltaConcurrentModificationException,
    DeltaError,
    ProtocolChangedException,
    StorageUnavailableError,
    UnsupportedFeatureError,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

ConflictAction = Literal["retry", "airflow_retry", "fail", "skip"]
ACTIONS: tuple[ConflictAction, ...] = get_args(ConflictAction)
ErrorKind = Literal["conflict", "transient", "permanent", "unknown"]
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)

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
#: The default action of each class of error (conflicts are decided per exception above).
KIND_ACTIONS: Mapping[ErrorKind, ConflictAction] = MappingProxyType(
    {"conflict": "airflow_retry", "transient": "retry", "permanent": "fail", "unknown": "airflow_retry"}
)
#: OS errors that waiting does not heal.
PERMANENT_OS_ERRORS: tuple[type[OSError], ...] = (
    PermissionError, FileNotFoundError, FileExistsError, NotADirectoryError, IsADirectoryError,
)
#: Programming and input errors: the same call fails the same way again.
_PERMANENT_BUILTINS: tuple[type[BaseException], ...] = (
    ValueError, TypeError, LookupError, AttributeError, NameError, AssertionError, NotImplementedError,
    ArithmeticError, RecursionError,
)
#: Errors of Spark (by class name: core cannot import pyspark) that a retry cannot fix.
_PERMANENT_SPARK_NAMES = frozenset(
    {
        "AnalysisException", "ParseException", "IllegalArgumentException", "NumberFormatException",
        "UnsupportedOperationException", "PySparkValueError", "PySparkTypeError", "PySparkAttributeError",
        "PySparkNotImplementedError", "ArithmeticException", "SparkUpgradeException",
    }
)
#: Words of storage throttling and dropped connections in an error's text (S3, GCS, Azure, HTTP).
_TRANSIENT_MARKERS = (
    "slowdown", "slow down", "throttl", "too many requests", "toomanyrequests", "requestlimitexceeded",
    "service unavailable", "serviceunavailable", "503", "429", "requesttimeout", "request timeout",
    "timed out", "timeout", "connection reset", "connection refused", "connection aborted",
    "broken pipe", "temporarily unavailable", "try again",
)
_BASE_NAME = DeltaConcurrentModificationException.__name__
# core/transaction/conflicts.py words an unwritable upgrade this way; a job result carries only type + message.
_UNWRITABLE_MARKERS = ("cannot write", "UnsupportedFeature")


def _named_class(name: str) -> type[BaseException] | None:
    """The exception class a job result names (this package's errors and Python's builtins)."""
    for module in (_exceptions, builtins):
        found = getattr(module, name, None)
        if isinstance(found, type) and issubclass(found, BaseException):
            return found
    return None


def _has_transient_marker(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in _TRANSIENT_MARKERS)


def _classify_class(cls: type[BaseException], message: str) -> ErrorKind:
    if issubclass(cls, DeltaConcurrentModificationException | CommitRetriesExhaustedError):
        return "conflict"
    # A store that kept failing through its own retries, or a commit whose write hid whether it landed
    # (the next attempt finds out from the log), may succeed later.
    if issubclass(cls, StorageUnavailableError | CommitOutcomeUnknownError):
        return "transient"
    if issubclass(cls, DeltaError):
        return "permanent"
    if issubclass(cls, OSError):  # TimeoutError, ConnectionError and throttled requests included
        return "permanent" if issubclass(cls, PERMANENT_OS_ERRORS) else "transient"
    if issubclass(cls, _PERMANENT_BUILTINS) or cls.__name__ in _PERMANENT_SPARK_NAMES:
        return "permanent"
    return "transient" if _has_transient_marker(message) else "unknown"


def classify(exc: BaseException | str, message: str = "") -> ErrorKind:
    """Whether a failure is a ``conflict``, ``transient``, ``permanent`` or ``unknown`` (see module docs).

    ``exc`` is the exception, or its class name as a job result reports it (then ``message`` is its
    text). A ``DeltaError`` caused by a transient I/O error (a data file read that timed out) is
    transient.

    Example:
        >>> classify("PredicateError"), classify("ConcurrentAppendException"), classify(ConnectionResetError())
        ('permanent', 'conflict', 'transient')
        >>> classify("Py4JJavaError", "... 503 Slow Down ..."), classify("Py4JJavaError", "executor lost")
        ('transient', 'unknown')
    """
    if isinstance(exc, str):
        name = exception_name(exc)
        cls = _named_class(name)
        if cls is not None:
            return _classify_class(cls, message)
        if name in CONFLICT_NAMES or name == _BASE_NAME:
            return "conflict"
        if name in _PERMANENT_SPARK_NAMES:
            return "permanent"
        return "transient" if _has_transient_marker(message) else "unknown"
    kind = _classify_class(type(exc), str(exc))
    if kind == "permanent" and isinstance(exc, DeltaError):
        cause = exc.__cause__ or exc.__context__
        if cause is not None and not isinstance(cause, DeltaError) and classify(cause) == "transient":
            return "transient"
    return kind


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
            as a key sets the action of every conflict not named itself; ``"transient"``,
            ``"permanent"`` and ``"unknown"`` set the action of a whole class of errors (:func:`classify`).
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

    def action_for(
        self, exc: BaseException | str, message: str = "", *, kind: ErrorKind | None = None
    ) -> ConflictAction:
        """The action for an exception, or for its class name as a job result reports it.

        Exceptions match by their own class first, then their base classes (so a subclass of a
        conflict follows its parent), then by their class of error (``kind``, default
        :func:`classify`): transient errors ``"retry"``, permanent ones ``"fail"``, unknown ones
        ``"airflow_retry"`` (Airflow's normal retry behaviour).
        """
        names = (
            [exception_name(exc)] if isinstance(exc, str) else [k.__name__ for k in type(exc).__mro__]
        )
        if isinstance(exc, str) and names[0] in CONFLICT_NAMES:
            names.append(_BASE_NAME)
        for name in names:
            if name in self.overrides:
                return self.overrides[name]
        kind = kind or classify(exc, message)
        if kind in self.overrides:
            return self.overrides[kind]
        for name in names:
            if name == ProtocolChangedException.__name__ and is_unwritable_protocol_change(exc, message):
                return "fail"
            if name in DEFAULT_ACTIONS:
                return DEFAULT_ACTIONS[name]
        return KIND_ACTIONS[kind]

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
    on_retry: Callable[[BaseException, int, float], object] | None = None,
) -> T:
    """Call ``fn`` until it succeeds, retrying the errors whose action is ``"retry"``.

    ``fn`` must start from a fresh snapshot each time (a commit that lost a race cannot be replayed
    as is). Any other action, or the last attempt, re-raises the exception with two attributes set:
    ``conflict_attempts`` (how many calls were made) and ``conflict_action``. ``on_retry(exc, attempt,
    delay)`` is called before each retry's wait (the jobs log it).

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
            delay = policy.backoff(attempt, rng=rng)
            if on_retry is not None:
                on_retry(exc, attempt, delay)
            sleep(delay)


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
        "kind": classify(exc),
    }

"""core.transaction.policy: which action each conflict gets, the JSON form, and the in-job retry loop."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.transaction.policy import (
    ConflictPolicy,
    classify,
    failure_record,
    run_with_conflict_policy,
)
from airflow_provider_delta.exceptions import (
    CommitOutcomeUnknownError,
    CommitRetriesExhaustedError,
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    DataFileError,
    DeltaError,
    ExecutorEnvironmentError,
    JobSpecError,
    MetadataChangedException,
    PredicateError,
    ProtocolChangedException,
    SchemaMismatchError,
    StorageAccessDeniedError,
    StorageUnavailableError,
    TableNotFoundError,
    UnsupportedFeatureError,
)


@pytest.mark.parametrize(
    ("exc", "action"),
    [
        (ConcurrentAppendException, "retry"),
        (ConcurrentDeleteReadException, "retry"),
        (ConcurrentDeleteDeleteException, "retry"),
        (MetadataChangedException, "retry"),
        (ProtocolChangedException, "retry"),
        (ConcurrentTransactionException, "fail"),
        (CommitRetriesExhaustedError, "airflow_retry"),
        (SchemaMismatchError, "fail"),  # permanent: a retry cannot fix it
        (OSError, "retry"),  # transient I/O
        (RuntimeError, "airflow_retry"),  # unknown: Airflow's usual retries
    ],
)
def test_default_action_per_exception(exc, action):
    policy = ConflictPolicy()
    assert policy.action_for(exc("x")) == action
    assert policy.action_for(exc.__name__) == action
    assert policy.action_for(f"io.delta.exceptions.{exc.__name__}") == action


def test_protocol_change_to_an_unwritable_protocol_fails_fast():
    def raise_unwritable() -> None:
        try:
            raise UnsupportedFeatureError("writer feature 'x' is unsupported")
        except UnsupportedFeatureError:
            # `from None` hides the cause; the context is still what makes it unwritable
            raise ProtocolChangedException("transaction 3 changed the protocol") from None

    with pytest.raises(ProtocolChangedException) as info:
        raise_unwritable()
    assert ConflictPolicy().action_for(info.value) == "fail"
    message = "Commit failed: transaction 3 (UPGRADE) upgraded the protocol to one this engine cannot write"
    assert ConflictPolicy().action_for("ProtocolChangedException", message) == "fail"
    assert ConflictPolicy().action_for("ProtocolChangedException", "changed the protocol") == "retry"


def test_overrides_win_and_the_base_class_name_covers_every_conflict():
    policy = ConflictPolicy(
        overrides={
            "ConcurrentAppendException": "skip",
            "DeltaConcurrentModificationException": "airflow_retry",
        }
    )
    assert policy.action_for("ConcurrentAppendException") == "skip"
    assert policy.action_for(MetadataChangedException("m")) == "airflow_retry"
    assert policy.action_for("ConcurrentTransactionException") == "airflow_retry"
    assert policy.action_for(SchemaMismatchError("s")) == "fail"  # not a conflict: the base does not cover it


def test_policy_round_trips_through_json():
    policy = ConflictPolicy(
        overrides={"MetadataChangedException": "fail"},
        max_attempts=7,
        base_backoff=0.1,
        max_backoff=2.0,
        jitter=0.25,
    )
    again = ConflictPolicy.from_dict(json.loads(json.dumps(policy.to_dict())))
    assert again == policy and hash(again) == hash(policy)
    assert ConflictPolicy.from_dict(None) == ConflictPolicy()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"overrides": {"ConcurrentAppendException": "maybe"}}, "Cannot use conflict action 'maybe'"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"jitter": 2.0}, "jitter"),
        ({"base_backoff": 5.0, "max_backoff": 1.0}, "base_backoff"),
    ],
)
def test_invalid_policy_is_rejected(kwargs, match):
    with pytest.raises(DeltaError, match=match):
        ConflictPolicy(**kwargs)
    with pytest.raises(DeltaError, match="unknown key"):
        ConflictPolicy.from_dict({"retries": 3})


def test_backoff_doubles_up_to_the_ceiling_with_bounded_jitter():
    policy = ConflictPolicy(base_backoff=1.0, max_backoff=4.0, jitter=0.5)
    rng = random.Random(7)
    for attempt, full in [(1, 1.0), (2, 2.0), (3, 4.0), (6, 4.0)]:
        waits = [policy.backoff(attempt, rng=rng) for _ in range(50)]
        assert all(full * 0.5 <= w <= full for w in waits)
        assert len(set(waits)) > 1  # jittered
    assert ConflictPolicy(jitter=0).backoff(2) == 1.0


def test_retry_loop_retries_a_real_conflict_with_a_fresh_snapshot(tmp_path):
    path = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64())])
    DeltaTable.create(path, schema)
    DeltaTable(path).append(pa.table({"id": [1, 2]}, schema=schema))
    stale = DeltaTable(path)  # read at version 1
    DeltaTable(path).delete("id = 1")  # a concurrent writer removes the file `stale` read
    attempts: list[int] = []

    def delete_everything() -> int | None:
        table = stale if not attempts else DeltaTable(path)  # first try: the stale snapshot
        attempts.append(table.version)
        txn = table.transaction(operation="DELETE", isolation_level="Serializable")
        txn.read_files()
        for f in table.files():
            txn.remove(f)
        return txn.commit()

    waits: list[float] = []
    version = run_with_conflict_policy(
        delete_everything, ConflictPolicy(base_backoff=0.01), sleep=waits.append
    )
    assert attempts == [1, 2] and len(waits) == 1
    assert version == 3 and DeltaTable(path).to_arrow().num_rows == 0


def test_fail_action_raises_at_once_with_attempts_recorded():
    calls = []

    def commit() -> None:
        calls.append(1)
        raise ConcurrentTransactionException("appId 'etl' already committed version 4")

    with pytest.raises(ConcurrentTransactionException) as info:
        run_with_conflict_policy(commit, sleep=lambda s: None)
    assert len(calls) == 1
    assert (info.value.conflict_attempts, info.value.conflict_action) == (1, "fail")
    record = failure_record(info.value)
    assert record == {
        "type": "ConcurrentTransactionException",
        "message": str(info.value),
        "action": "fail",
        "attempts": 1,
        "is_conflict": True,
        "kind": "conflict",
    }


def test_retries_stop_after_max_attempts_and_raise_the_last_conflict():
    calls = []

    def commit() -> None:
        calls.append(1)
        raise ConcurrentAppendException(f"lost race {len(calls)}")

    waits: list[float] = []
    with pytest.raises(ConcurrentAppendException, match="lost race 3") as info:
        run_with_conflict_policy(
            commit, ConflictPolicy(max_attempts=3, base_backoff=0.5, jitter=0), sleep=waits.append
        )
    assert waits == [0.5, 1.0]
    assert info.value.conflict_attempts == 3


@pytest.mark.parametrize(
    ("error", "kind", "action"),
    [
        # The errors the issue names: permanent, never a conflict, no retries.
        (PredicateError("Cannot parse predicate 'a >'"), "permanent", "fail"),
        (SchemaMismatchError("column 'channel' is not in the table schema"), "permanent", "fail"),
        (TableNotFoundError("no table at '/x'"), "permanent", "fail"),
        (JobSpecError("unknown option 'x'"), "permanent", "fail"),
        (UnsupportedFeatureError("reader feature 'variantType'"), "permanent", "fail"),
        (PermissionError(13, "Permission denied"), "permanent", "fail"),
        (KeyError("id"), "permanent", "fail"),
        # Transient I/O and storage throttling: retried.
        (TimeoutError("read timed out"), "transient", "retry"),
        (ConnectionResetError(104, "Connection reset by peer"), "transient", "retry"),
        (
            OSError("AWS Error SLOW_DOWN during PutObject operation: Please reduce your request rate."),
            "transient",
            "retry",
        ),
        # The object-store errors: a store that failed through its retries, a commit of unknown outcome.
        (StorageUnavailableError("s3://b/t: 503 through 5 attempts"), "transient", "retry"),
        (CommitOutcomeUnknownError("s3://b/t: PUT of version 3 timed out", version=3), "transient", "retry"),
        (StorageAccessDeniedError("s3://b/t: InvalidAccessKeyId"), "permanent", "fail"),
        (ExecutorEnvironmentError("A Spark executor's Python cannot import 'pyarrow'"), "permanent", "fail"),
        # Conflicts as before.
        (ConcurrentAppendException("x"), "conflict", "retry"),
        (ConcurrentTransactionException("x"), "conflict", "fail"),
        (RuntimeError("something else"), "unknown", "airflow_retry"),
    ],
)
def test_errors_are_classified_and_permanent_ones_fail_by_default(error, kind, action):
    assert classify(error) == kind
    assert classify(type(error).__name__, str(error)) == kind  # as a job result reports it
    assert ConflictPolicy().action_for(error) == action
    assert ConflictPolicy().action_for(type(error).__name__, str(error)) == action


def test_spark_errors_are_classified_by_name_and_text():
    assert classify("AnalysisException", "[PATH_NOT_FOUND] Path does not exist: /landing") == "permanent"
    assert classify("Py4JJavaError", "java.net.SocketTimeoutException: Read timed out") == "transient"
    assert classify("Py4JJavaError", "Job aborted: executor lost") == "unknown"


def test_a_delta_error_caused_by_a_transient_io_error_is_transient():
    def read() -> None:
        try:
            raise TimeoutError("read of part-0001.parquet timed out")
        except TimeoutError as io:
            raise DataFileError("Cannot read data file 'part-0001.parquet'") from io

    with pytest.raises(DataFileError) as info:
        read()
    assert classify(info.value) == "transient"
    assert classify(DataFileError("Cannot read data file 'x': missing")) == "permanent"


def test_a_whole_class_of_errors_can_be_overridden():
    policy = ConflictPolicy(overrides={"transient": "airflow_retry", "permanent": "skip"})
    assert policy.action_for(TimeoutError("t")) == "airflow_retry"
    assert policy.action_for("PredicateError") == "skip"
    assert policy.action_for("ConcurrentAppendException") == "retry"
    assert (
        ConflictPolicy(overrides={"PredicateError": "airflow_retry", "permanent": "skip"}).action_for(
            PredicateError("p")
        )
        == "airflow_retry"
    )  # a named exception wins over its class

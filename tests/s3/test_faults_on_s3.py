"""Faults on S3: wrong credentials, a missing bucket, a dead endpoint, throttled, failed and
unanswered PUTs (injected on the wire by the test proxy, so the client's real retries run).

Whatever happens, the error is typed and names the table, and a commit is never half written, never
reported as landed when it did not, and never landed twice.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.log.sensing import new_commits
from airflow_provider_delta.exceptions import (
    BucketNotFoundError,
    CommitOutcomeUnknownError,
    InvalidStorageOptionsError,
    StorageAccessDeniedError,
    StorageError,
    StorageUnavailableError,
)

if TYPE_CHECKING:
    from tests.s3_fixtures import S3Env

SCHEMA = pa.schema([("id", pa.int64())])
FAST_RETRIES = {"max_retries": "2", "retry_timeout": "5"}


def _ids(uri: str, options: dict[str, str]) -> list[int]:
    return sorted(DeltaTable(uri, storage_options=options).to_arrow().column("id").to_pylist())


def _commit_names(uri: str, options: dict[str, str]) -> list[str]:
    storage = DeltaTable(uri, storage_options=options).storage
    return [f.name for f in storage.list_dir("_delta_log") if f.name.endswith(".json")]


def test_wrong_credentials_are_access_denied_naming_the_table(s3: S3Env) -> None:
    DeltaTable.create(s3.uri, SCHEMA, storage_options=s3.options)
    wrong = {**s3.options, "AWS_SECRET_ACCESS_KEY": "not-the-secret"}
    with pytest.raises(StorageAccessDeniedError, match="access denied") as info:
        DeltaTable(s3.uri, storage_options=wrong)
    assert info.value.location == s3.uri and s3.uri in str(info.value)
    assert "not-the-secret" not in str(info.value)
    with pytest.raises(StorageAccessDeniedError):
        new_commits(s3.uri, 0, storage_options=wrong)


def test_missing_bucket_is_named(s3: S3Env) -> None:
    uri = "s3://no-such-bucket-here/events"
    with pytest.raises(BucketNotFoundError, match="'no-such-bucket-here' does not exist") as info:
        DeltaTable(uri, storage_options=s3.options)
    assert info.value.location == uri
    with pytest.raises(BucketNotFoundError):
        DeltaTable.create(uri, SCHEMA, storage_options=s3.options)


def test_endpoint_that_does_not_answer_is_unavailable_after_retries(s3: S3Env) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dead = {**s3.options, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", **FAST_RETRIES}
    with pytest.raises(StorageUnavailableError, match="did not answer") as info:
        DeltaTable(s3.uri, storage_options=dead)
    assert info.value.transient and s3.uri in str(info.value)


def test_unknown_option_is_refused_with_the_key(s3: S3Env) -> None:
    with pytest.raises(InvalidStorageOptionsError, match="AWS_ENDPOINTURL"):
        DeltaTable(s3.uri, storage_options={**s3.options, "AWS_ENDPOINTURL": "x"})
    with pytest.raises(InvalidStorageOptionsError, match="expected true or false"):
        DeltaTable(s3.uri, storage_options={**s3.options, "AWS_ALLOW_HTTP": "maybe"})


def test_throttled_commit_put_is_retried_and_lands_once(s3: S3Env) -> None:
    t = DeltaTable.create(s3.uri, SCHEMA, storage_options=s3.options)
    s3.proxy.reset()
    s3.proxy.fail(
        "PUT", status=503, code="SlowDown", times=2, key_contains="_delta_log/00000000000000000001.json"
    )
    assert t.append(pa.table({"id": [1, 2]})) == 1
    puts = [p for m, p in s3.proxy.log if m == "PUT" and "00000000000000000001.json" in p]
    assert len(puts) == 3, "two throttled attempts, then the one that landed"
    assert _commit_names(s3.uri, s3.options) == ["00000000000000000000.json", "00000000000000000001.json"]
    assert _ids(s3.uri, s3.options) == [1, 2]


def test_commit_whose_answer_was_lost_is_reported_landed_exactly_once(s3: S3Env) -> None:
    t = DeltaTable.create(s3.uri, SCHEMA, storage_options=s3.options)
    # The server stores commit 1, but the client never hears back; its retry then finds the key taken.
    s3.proxy.drop_after_forward("PUT", key_contains="_delta_log/00000000000000000001.json")
    assert t.append(pa.table({"id": [7]})) == 1
    assert t.append(pa.table({"id": [8]})) == 2
    assert _commit_names(s3.uri, s3.options) == [f"{v:020d}.json" for v in range(3)]
    assert _ids(s3.uri, s3.options) == [7, 8], "no duplicate commit of the same rows"


def test_commit_put_that_keeps_failing_raises_and_leaves_the_table_unchanged(s3: S3Env) -> None:
    options = {**s3.options, **FAST_RETRIES}
    t = DeltaTable.create(s3.uri, SCHEMA, storage_options=options)
    t.append(pa.table({"id": [1]}))
    s3.proxy.fail("PUT", status=500, code="InternalError", times=100, key_contains="_delta_log/")
    with pytest.raises(StorageUnavailableError) as info:
        t.append(pa.table({"id": [2]}))
    assert info.value.path == "_delta_log/00000000000000000002.json" and s3.uri in str(info.value)
    s3.proxy.reset()
    assert DeltaTable.latest_version(s3.uri, storage_options=options) == 1
    assert _ids(s3.uri, options) == [1]


def test_commit_whose_outcome_cannot_be_read_back_says_so(s3: S3Env) -> None:
    options = {**s3.options, **FAST_RETRIES}
    t = DeltaTable.create(s3.uri, SCHEMA, storage_options=options)
    # The PUT lands but its answer is lost, and then the store fails every request for a while.
    s3.proxy.drop_after_forward("PUT", times=3, key_contains="_delta_log/00000000000000000001.json")
    s3.proxy.fail("GET", status=503, times=100, key_contains="_delta_log/00000000000000000001.json")
    with pytest.raises(CommitOutcomeUnknownError, match="reload it") as info:
        t.append(pa.table({"id": [5]}))
    assert isinstance(info.value, StorageError) and info.value.location == s3.uri
    s3.proxy.reset()
    # The table is consistent: the commit is whole (it did land).
    assert DeltaTable.latest_version(s3.uri, storage_options=options) == 1
    assert _ids(s3.uri, options) == [5]

"""Malformed and hostile logs: real conformance tables, mutated by hypothesis (``log_mutations``).

Every example copies a table, applies one mutation, then loads the table, reads it, reads the
mutated version, its history, and (tables with a change data feed) its changes. Each mutation must
end in a ``DeltaError`` that names the table, a version and the file at fault -- never a KeyError,
IndexError, ArrowInvalid or any other exception, never a hang (each example has 20 s), and never
a file opened outside the table root (sentinel files beside the table are there to be reached).
Mutations the protocol calls valid must load and read (with the same rows where they change none);
the test log records which mutations were accepted and why (``hostile-logs.jsonl`` in pytest's
base temp dir, and the log of a failing test).
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import re
import shutil
import signal
import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.exceptions import DeltaError, TableNotFoundError
from tests.reliability.file_access import outside, record_file_access
from tests.reliability.log_mutations import MUTATORS, Mutation, checkpoints, version_of

if TYPE_CHECKING:
    from collections.abc import Iterator

log = logging.getLogger(__name__)

TABLES = [
    "extra/kernel-rs/with-short-dv",
    "extra/delta-kernel-java/basic-dv-no-checkpoint",
    "extra/delta-rs/simple_table_with_checkpoint",
    "golden/data-reader-partition-values",
    "peer/merge_cdf_partitioned",
    "extra/kernel-rs/app-txn-checkpoint",
    "golden/multi-part-checkpoint",
    "peer/column_mapping_name",
    "golden/dv-partitioned-with-checkpoint",
]
EXAMPLE_TIMEOUT_S = 20
_RESULTS: Counter[tuple[str, str]] = Counter()


@pytest.fixture(scope="module")
def originals(conformance_dir: Path) -> dict[str, Any]:
    return {name: _rows(DeltaTable(str(conformance_dir / "tables" / name))) for name in TABLES}


@pytest.fixture(scope="module")
def accepted_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where each tried mutation is logged; a summary (counts, reasons for accepting) is written at the end."""
    path = tmp_path_factory.getbasetemp() / "hostile-logs.jsonl"
    yield path
    summary: dict[str, Any] = {"tried": sum(_RESULTS.values()), "by_mutation": {}, "accepted_because": {}}
    for (mutation, outcome), n in sorted(_RESULTS.items()):
        summary["by_mutation"].setdefault(mutation, {})[outcome] = n
    if path.exists():
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry["outcome"] == "accepted":
                reasons = summary["accepted_because"].setdefault(entry["mutation"], [])
                if entry["reason"] not in reasons:
                    reasons.append(entry["reason"])
    (path.parent / "hostile-logs-summary.json").write_text(json.dumps(summary, indent=2))
    log.info("hostile logs: %d mutations tried: %s", summary["tried"], summary["by_mutation"])


def _rows(table: DeltaTable) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_arrow().to_pylist())


@contextlib.contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"hang: the example ran over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _sentinels(folder: Path) -> None:
    """Files outside the table that escaping paths point at; no read may open them."""
    folder.mkdir()
    pq.write_table(pa.table({"id": [-777], "secret": ["outside the table"]}), folder / "secret.parquet")
    (folder / "secret.bin").write_bytes(b"\x01" + b"\x00" * 64)


def _exercise(location: str, mutation: Mutation) -> list[str]:
    """Load, read, time-travel, history and changes; return the latest rows."""
    table = DeltaTable(location)
    rows = _rows(table)
    table.history()
    DeltaTable.latest_version(location)
    if mutation.version is not None and mutation.version <= table.version:
        _rows(DeltaTable(location, version=mutation.version))
    if table.configuration.get("delta.enableChangeDataFeed", "").lower() == "true":
        table.changes(0, table.version, allow_out_of_range=True)
    return rows


def _check_error(err: DeltaError, location: str, mutation: Mutation) -> None:
    message = str(err)
    assert location in message, f"the error does not name the table: {message}"
    if isinstance(err, TableNotFoundError):  # no version exists: the log folder is what is at fault
        assert "_delta_log" in message, message
        return
    assert re.search(r"\b(versions?|commit|checkpoint) \d+", message), (
        f"the error names no version: {message}"
    )
    names = [n.rsplit("/", 1)[-1] for n in mutation.names] + list(mutation.names)
    # The file at fault: the mutated one, or the file it names (a data file, a deletion vector).
    names_a_file = re.search(
        r"\d{20}\.(json|checkpoint)|(data|checkpoint) file '|deletion vector|\.parquet", message
    )
    assert any(n and n in message for n in names) or names_a_file, (
        f"the error does not name the file at fault ({mutation.names}): {message}"
    )


def _covered_by_checkpoint(location: Path, mutation: Mutation) -> None:
    """A change to the actions of a commit a checkpoint covers is never replayed: it may pass unseen."""
    if mutation.expect != "error" or mutation.version is None or not mutation.file.endswith(".json"):
        return
    covering = [c for c in checkpoints(location) if version_of(c) >= mutation.version]
    if covering and (location / "_delta_log" / mutation.file).exists():
        mutation.expect = "either"
        mutation.reason = (
            f"commit {mutation.version} is covered by checkpoint {version_of(covering[0])}: no reader replays "
            "its actions (only its commitInfo, for history)"
        )


def _record(accepted_log: Path, table: str, mutation: Mutation, outcome: str, detail: str) -> None:
    _RESULTS[(mutation.name, outcome)] += 1
    entry = {
        "table": table,
        "mutation": mutation.name,
        "file": mutation.file,
        "expect": mutation.expect,
        "outcome": outcome,
        "reason": mutation.reason if outcome == "accepted" else detail,
        "details": mutation.details,
    }
    with accepted_log.open("a") as fh:
        fh.write(json.dumps(entry, default=str) + "\n")


def _run_example(
    conformance_dir: Path, originals: dict[str, Any], accepted_log: Path, table: str, mutator: str, seed: int
) -> None:
    work = Path(tempfile.mkdtemp(prefix="hostile-"))
    try:
        location = work / "table"
        shutil.copytree(conformance_dir / "tables" / table, location)
        _sentinels(work / "outside")
        mutation = MUTATORS[mutator](location, random.Random(seed), work / "outside")
        if mutation is None:
            return  # not applicable to this table (no checkpoint, no deletion vector, ...)
        _covered_by_checkpoint(location, mutation)
        with record_file_access() as touched, _deadline(EXAMPLE_TIMEOUT_S):
            try:
                rows = _exercise(str(location), mutation)
            except DeltaError as err:
                assert mutation.expect != "valid", f"{mutation} was refused: {err!r}"  # noqa: PT017
                _check_error(err, str(location), mutation)
                _record(accepted_log, table, mutation, "refused", f"{type(err).__name__}: {err}")
            else:
                assert mutation.expect != "error", f"{mutation} was accepted"
                if mutation.same_rows:
                    assert rows == originals[table], f"{mutation} changed the rows"
                _record(accepted_log, table, mutation, "accepted", "")
        escaped = outside(touched, str(location))
        assert not escaped, f"{mutation} made the engine open files outside the table: {escaped}"
    finally:
        shutil.rmtree(work, ignore_errors=True)


_SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
}


# The default run replays the same 300 examples (a CI run must not fail on a case it happened to
# draw); the slow run below draws new ones every time.
@settings(max_examples=300, derandomize=True, **_SETTINGS)  # type: ignore[arg-type]
@given(table=st.sampled_from(TABLES), mutator=st.sampled_from(sorted(MUTATORS)), seed=st.integers(0, 2**32))
def test_a_mutated_log_reads_or_fails_with_a_typed_error_naming_table_version_and_file(
    conformance_dir: Path, originals: dict[str, Any], accepted_log: Path, table: str, mutator: str, seed: int
) -> None:
    _run_example(conformance_dir, originals, accepted_log, table, mutator, seed)


@pytest.mark.slow
@settings(max_examples=3000, **_SETTINGS)  # type: ignore[arg-type]
@given(table=st.sampled_from(TABLES), mutator=st.sampled_from(sorted(MUTATORS)), seed=st.integers(0, 2**32))
def test_many_mutated_logs_read_or_fail_with_typed_errors(
    conformance_dir: Path, originals: dict[str, Any], accepted_log: Path, table: str, mutator: str, seed: int
) -> None:
    _run_example(conformance_dir, originals, accepted_log, table, mutator, seed)


@pytest.mark.parametrize("mutator", sorted(MUTATORS))
def test_every_mutator_applies_to_some_corpus_table(
    conformance_dir: Path, tmp_path: Path, mutator: str
) -> None:
    applied = 0
    for i, table in enumerate(TABLES):
        location = tmp_path / f"t{i}"
        shutil.copytree(conformance_dir / "tables" / table, location)
        (tmp_path / f"o{i}").mkdir()
        applied += MUTATORS[mutator](location, random.Random(i), tmp_path / f"o{i}") is not None
    assert applied, f"{mutator} applies to none of the tables"

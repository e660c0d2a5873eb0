"""``delta-log`` against real tables from the conformance corpus."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_delta.cli import main
from airflow_provider_delta.core import DeltaTable

if TYPE_CHECKING:
    from collections.abc import Callable

# Partitioned by `part`, 5 commits (WRITE, MERGE, UPDATE, DELETE, WRITE), change data feed on.
MERGE_TABLE = "peer/merge_cdf_partitioned"
# In-commit timestamps on: time travel by timestamp does not depend on file modification times.
ICT_TABLE = "extra/delta-rs/cdc_ict_table"


@pytest.fixture
def table(copy_table: Callable[..., Path]) -> str:
    return str(copy_table(MERGE_TABLE))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run(capsys, *argv, "--json")
    assert (code, err) == (0, "")
    return json.loads(out)


def test_describe_shows_protocol_partitioning_schema_properties_and_size(
    capsys: pytest.CaptureFixture[str], table: str
) -> None:
    code, out, err = run(capsys, "describe", table)
    assert (code, err) == (0, "")
    expected = DeltaTable(table)
    total = sum(f.size for f in expected.files())
    assert f"Location           {table}" in out
    assert "Version            4" in out
    assert "Protocol           reader 1, writer 4" in out
    assert "Partition columns  part" in out
    assert f"Files              3 files, 4.6 KiB ({total:,} bytes)" in out
    assert "WRITE" in out.split("Last commit", 1)[1].splitlines()[0]
    assert "  delta.enableChangeDataFeed = true" in out
    assert "root\n |-- id: long (nullable = true)\n |-- name: string (nullable = true)" in out


def test_describe_json_matches_the_engine(capsys: pytest.CaptureFixture[str], table: str) -> None:
    doc = run_json(capsys, "describe", table)
    expected = DeltaTable(table)
    assert doc["version"] == 4
    assert doc["partition_columns"] == ["part"]
    assert doc["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 4}
    assert doc["num_files"] == len(expected.files())
    assert doc["size_bytes"] == sum(f.size for f in expected.files())
    assert doc["configuration"] == {"delta.enableChangeDataFeed": "true"}
    assert [f["name"] for f in doc["schema"]["fields"]] == ["id", "name", "value", "ts", "part"]
    assert doc["last_commit"]["operation"] == "WRITE"


def test_describe_renders_nested_types_as_a_tree(
    capsys: pytest.CaptureFixture[str], conformance_dir: Path
) -> None:
    code, out, _ = run(
        capsys, "describe", str(conformance_dir / "tables/golden/data-reader-array-primitives")
    )
    assert code == 0
    assert (
        " |-- as_array_int: array (nullable = true)\n |    |-- element: integer (containsNull = true)" in out
    )


def test_describe_at_an_old_version_shows_that_version(
    capsys: pytest.CaptureFixture[str], table: str
) -> None:
    doc = run_json(capsys, "describe", table, "--version", "1")
    assert doc["version"] == 1
    assert doc["last_commit"]["operation"] == "MERGE"


def test_history_lists_commits_newest_first(capsys: pytest.CaptureFixture[str], table: str) -> None:
    code, out, _ = run(capsys, "history", table)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["VERSION", "TIMESTAMP", "OPERATION", "PARAMETERS", "ENGINE"]
    operations = [line.split()[4] for line in lines[2:]]  # VERSION DATE TIME UTC OPERATION
    assert operations == ["WRITE", "DELETE", "UPDATE", "MERGE", "WRITE"]
    assert "predicate=id >= 25" in lines[3]


def test_history_limit_and_json(capsys: pytest.CaptureFixture[str], table: str) -> None:
    entries = run_json(capsys, "history", table, "--limit", "2")
    assert [e["version"] for e in entries] == [4, 3]
    assert entries[1]["operation"] == "DELETE"
    assert isinstance(entries[0]["timestamp"], int)


def test_history_from_an_old_version(capsys: pytest.CaptureFixture[str], table: str) -> None:
    entries = run_json(capsys, "history", table, "--version", "2")
    assert [e["version"] for e in entries] == [2, 1, 0]


def test_files_lists_every_active_file_with_partition_and_records(
    capsys: pytest.CaptureFixture[str], table: str
) -> None:
    code, out, _ = run(capsys, "files", table)
    assert code == 0
    expected = DeltaTable(table).files()
    for f in expected:
        line = next(line for line in out.splitlines() if line.startswith(f.path))
        assert f"{f.size:,}" in line
        assert line.endswith(f"part={f.partition_values['part']}")
    assert out.splitlines()[-1].startswith(f"{len(expected)} files, ")


def test_files_json_matches_the_engine_at_each_version(
    capsys: pytest.CaptureFixture[str], table: str
) -> None:
    for version in range(5):
        docs = run_json(capsys, "files", table, "--version", str(version))
        expected = DeltaTable(table, version=version).files()
        assert sorted(d["path"] for d in docs) == sorted(f.path for f in expected)
        assert sum(d["num_records"] for d in docs) == DeltaTable(table, version=version).to_arrow().num_rows


def test_files_json_reports_deleted_rows_of_deletion_vectors(
    capsys: pytest.CaptureFixture[str], conformance_dir: Path
) -> None:
    docs = run_json(capsys, "files", str(conformance_dir / "tables/golden/dv-partitioned-with-checkpoint"))
    assert any(d["deleted_rows"] for d in docs)


def test_version_is_the_latest_without_time_travel(capsys: pytest.CaptureFixture[str], table: str) -> None:
    assert run(capsys, "version", table) == (0, "4\n", "")
    assert run_json(capsys, "version", table) == {"location": table, "version": 4}
    assert run(capsys, "version", table, "--version", "2") == (0, "2\n", "")


def test_version_by_timestamp_uses_in_commit_timestamps(
    capsys: pytest.CaptureFixture[str], conformance_dir: Path
) -> None:
    location = str(conformance_dir / "tables" / ICT_TABLE)
    # v2 committed at 1783874212175 ms, v3 at 1783874213881 ms (commitInfo.inCommitTimestamp).
    assert run(capsys, "version", location, "--timestamp", "1783874212175") == (0, "2\n", "")
    assert run(capsys, "version", location, "--timestamp", "1783874213000") == (0, "2\n", "")
    assert run(capsys, "version", location, "--timestamp", "2026-07-12T16:36:53.881Z") == (0, "3\n", "")


def test_head_prints_the_first_rows_aligned(capsys: pytest.CaptureFixture[str], table: str) -> None:
    code, out, _ = run(capsys, "head", table, "-n", "3")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["id", "name", "value", "ts", "part"]
    assert len(lines) == 2 + 3 + 1
    assert lines[-1] == "3 of 23 rows at version 4"


def test_head_selects_columns_filters_and_time_travels(
    capsys: pytest.CaptureFixture[str], table: str
) -> None:
    rows = run_json(capsys, "head", table, "-n", "100", "--columns", "id,part", "--filter", "part = 'p1'")
    assert rows
    assert all(row.keys() == {"id", "part"} and row["part"] == "p1" for row in rows)
    expected = DeltaTable(table, version=1).to_arrow(columns=["id"]).column("id").to_pylist()
    rows = run_json(capsys, "head", table, "-n", "1000", "--columns", "id", "--version", "1")
    assert sorted(row["id"] for row in rows) == sorted(expected)


def test_head_json_renders_timestamps_as_iso_strings(capsys: pytest.CaptureFixture[str], table: str) -> None:
    rows = run_json(capsys, "head", table, "-n", "1", "--columns", "ts")
    assert rows[0]["ts"].startswith("2024-01-")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["describe", "{missing}"], "error: "),
        (["history", "{table}", "--version", "99"], "99"),
        (["head", "{table}", "--filter", "no_such_column = 1"], "no_such_column"),
        (["version", "{table}", "--timestamp", "1970-01-01"], "before"),
        (["files", "{gap}"], "commit 1 is missing"),
    ],
    ids=["no-table", "no-version", "bad-filter", "timestamp-before-first-commit", "log-gap"],
)
def test_engine_errors_exit_2_with_one_line_on_stderr(
    capsys: pytest.CaptureFixture[str],
    table: str,
    tmp_path: Path,
    conformance_dir: Path,
    argv: list[str],
    message: str,
) -> None:
    places = {
        "table": table,
        "missing": str(tmp_path / "missing"),
        "gap": str(conformance_dir / "tables/golden/versions-not-contiguous"),
    }
    code, out, err = run(capsys, *(a.format(**places) for a in argv))
    assert code == 2
    assert out == ""
    assert err.startswith("delta-log: error: ")
    assert message in err
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1


def test_version_and_timestamp_are_mutually_exclusive(capsys: pytest.CaptureFixture[str], table: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["version", table, "--version", "1", "--timestamp", "0"])
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "delta-log"
    if not script.exists():
        pytest.skip("the package is not installed in this interpreter's environment (run `make test`)")
    result = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=False)
    assert result.returncode == 0
    assert result.stdout.startswith("delta-log ")

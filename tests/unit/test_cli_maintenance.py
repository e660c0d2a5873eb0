"""``delta-log vacuum|optimize|reorg``: the maintenance commands from a shell, with --dry-run and --json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_delta.cli import main
from airflow_provider_delta.core import DeltaTable
from tests.maintenance_tables import disk_files, make_old, small_files_table, with_deletion_vector


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run(capsys, *argv, "--json")
    assert (code, err) == (0, "")
    return json.loads(out)


@pytest.fixture
def table(tmp_path: Path) -> DeltaTable:
    t = small_files_table(tmp_path / "t", appends=3, properties={"delta.enableDeletionVectors": "true"})
    with_deletion_vector(t, t.files()[0], [0, 1])
    return t.refresh()


def test_vacuum_dry_run_lists_the_files_and_commits_nothing(
    capsys: pytest.CaptureFixture[str], table: DeltaTable
) -> None:
    table.delete("p = 'b'")
    make_old(Path(table.location))
    version = DeltaTable.latest_version(table.location)
    code, out, err = run(
        capsys, "vacuum", table.location, "--retention-hours", "0", "--no-enforce-retention", "--dry-run"
    )
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) == 4 and all(line.startswith("p=") for line in lines[:3])  # p=b's 3 files
    assert "3 files and folders would be deleted" in lines[-1]
    assert DeltaTable.latest_version(table.location) == version


def test_vacuum_json_reports_files_metrics_and_the_history_versions(
    capsys: pytest.CaptureFixture[str], table: DeltaTable
) -> None:
    table.delete("p = 'b'")
    make_old(Path(table.location))
    out = run_json(capsys, "vacuum", table.location, "--retention-hours", "0", "--no-enforce-retention")
    assert out["numFiles"] == 3 and out["dryRun"] is False and out["mode"] == "FULL"
    assert out["metrics"]["numDeletedFiles"] == 3
    assert [h["operation"] for h in DeltaTable(table.location).history(2)] == ["VACUUM END", "VACUUM START"]
    assert out["endVersion"] == DeltaTable.latest_version(table.location)
    assert not any(p.startswith("p=b/") for p in disk_files(Path(table.location)))


def test_vacuum_lite(capsys: pytest.CaptureFixture[str], table: DeltaTable) -> None:
    out = run_json(capsys, "vacuum", table.location, "--lite", "--dry-run")
    assert out["mode"] == "LITE" and out["files"] == []


def test_optimize_dry_run_shows_the_bins_then_a_real_run_commits(
    capsys: pytest.CaptureFixture[str], table: DeltaTable
) -> None:
    plan = run_json(capsys, "optimize", table.location, "--dry-run")
    assert plan["dryRun"] is True and plan["numBins"] == 2 and plan["numFilesToRewrite"] == 6
    assert DeltaTable.latest_version(table.location) == table.version
    code, out, _ = run(capsys, "optimize", table.location, "--where", "p = 'a'", "--zorder-by", "x,id")
    assert code == 0 and "3 files rewritten into 1" in out and "1 deletion vectors removed" in out
    assert DeltaTable(table.location).history(1)[0]["operationParameters"]["zOrderBy"] == '["x","id"]'


def test_reorg_purges_deletion_vectors(capsys: pytest.CaptureFixture[str], table: DeltaTable) -> None:
    plan = run_json(capsys, "reorg", table.location, "--dry-run")
    assert plan["numDeletionVectorsToRemove"] == 1 and plan["numFilesToRewrite"] == 1
    out = run_json(capsys, "reorg", table.location)
    assert out["numDeletionVectorsRemoved"] == 1 and out["version"] == table.version + 1
    code, text, _ = run(capsys, "reorg", table.location)
    assert code == 0 and "nothing to rewrite" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["vacuum", "{t}", "--retention-hours", "1"], "DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT"),
        (
            ["vacuum", "{t}", "--retention-hours", "-1", "--no-enforce-retention"],
            "can't be less than 0 hours",
        ),
        (["vacuum", "{t}/p=a"], "is not a Delta table. VACUUM is only supported for Delta tables"),
        (["optimize", "{t}", "--where", "id > 1"], "DELTA_NON_PARTITION_COLUMN_REFERENCE"),
        (["optimize", "{t}", "--zorder-by", "p"], "DELTA_ZORDERING_ON_PARTITION_COLUMN"),
        (["optimize", "{t}", "--zorder-by", "nope"], "DELTA_ZORDERING_COLUMN_DOES_NOT_EXIST"),
        (["reorg", "{t}/nothing"], "REORG is only supported for Delta tables"),
    ],
)
def test_bad_input_exits_2_with_deltas_message(
    capsys: pytest.CaptureFixture[str], table: DeltaTable, argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *[a.replace("{t}", table.location) for a in argv])
    assert code == 2 and out == "" and message in err and err.startswith("delta-log: error:")
    assert DeltaTable.latest_version(table.location) == table.version


def test_the_installed_script_runs_vacuum(table: DeltaTable) -> None:
    script = Path(sys.executable).parent / "delta-log"
    proc = subprocess.run(
        [str(script), "vacuum", table.location, "--json"], capture_output=True, text=True, check=True
    )
    assert json.loads(proc.stdout)["metrics"]["numDeletedFiles"] == 0

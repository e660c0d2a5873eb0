"""The ``merge`` and ``schema_evolve`` jobs, run in-process (``runner.main(... --engine local)``).

Same code as under spark-submit (the Spark runs are in tests/airflow/test_merge_operators.py); here the
MERGE runs on the local executor. Checked: results, commits, idempotency on retry, bad input that
fails before anything is written, and a real conflict with a concurrent metadata change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.jobs.runner import main
from airflow_provider_delta.jobs.spec import JobResult, JobSpec
from tests.spark_jobs.helpers import ConcurrentWriter, barrier_hooks

if TYPE_CHECKING:
    from pathlib import Path

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("info", pa.struct([("a", pa.int32())])),
                    ("tags", pa.list_(pa.struct([("k", pa.string())])))])
ROWS = [{"id": 1, "name": "a", "info": {"a": 1}, "tags": []}, {"id": 2, "name": "b", "info": None, "tags": None}]


def run_local(spec: JobSpec, tmp_path: Path) -> tuple[int, JobResult]:
    result_path = tmp_path / f"result-{len(list(tmp_path.glob('result-*')))}.json"
    code = main(["--spec", spec.to_json(), "--result", str(result_path), "--engine", "local"])
    return code, JobResult.read(result_path)


def table(tmp_path: Path, **kwargs: Any) -> str:
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, **kwargs)
    t.append(pa.Table.from_pylist(ROWS, schema=SCHEMA))
    return t.location


def rows(location: str) -> list[dict[str, Any]]:
    return sorted(DeltaTable(location).to_arrow().to_pylist(), key=lambda r: r["id"])


UPSERT = {
    "source": {"rows": [{"id": 2, "name": "B", "tier": "gold", "op": "u"}, {"id": 3, "name": "c", "tier": "new",
                                                                             "op": "u"}]},
    "on": "target.id = source.id",
    "when_matched": [{"action": "delete", "condition": "source.op = 'd'"},
                     {"action": "update_all", "except": ["op"]}],
    "when_not_matched": [{"action": "insert_all", "except": ["op"]}],
}


def test_merge_job_upserts_with_schema_evolution_and_a_retry_is_a_no_op(tmp_path: Path) -> None:
    location = table(tmp_path)
    spec = JobSpec(job="merge", table=location, options=UPSERT, app_id="airflow:d:merge:run1", app_version=0)
    code, result = run_local(spec, tmp_path)
    assert code == 0, result
    assert (result.version, result.committed) == (2, True)
    assert result.metrics["numTargetRowsUpdated"] == result.metrics["numTargetRowsInserted"] == 1
    assert [(r["id"], r["name"], r["tier"]) for r in rows(location)] == [
        (1, "a", None), (2, "B", "gold"), (3, "c", "new")
    ]
    assert DeltaTable(location).snapshot.app_transaction_version("airflow:d:merge:run1") == 0

    code, again = run_local(spec, tmp_path)  # the Airflow retry after the commit landed
    assert code == 0, again
    assert (again.version, again.committed, again.metrics["alreadyCommitted"]) == (2, False, True)
    assert DeltaTable(location).version == 2


def test_merge_job_runs_a_merge_sql_statement_over_a_delta_source_at_a_version(tmp_path: Path) -> None:
    location = table(tmp_path)
    source = DeltaTable.create(str(tmp_path / "src"), pa.schema([("id", pa.int64()), ("name", pa.string())]))
    source.append(pa.table({"id": [1, 5], "name": ["one", "five"]}))
    source.append(pa.table({"id": [9], "name": ["later"]}))  # version 2: not read
    statement = ("MERGE INTO events t USING updates s ON t.id = s.id "
                 "WHEN MATCHED THEN UPDATE SET name = upper(s.name) WHEN NOT MATCHED THEN INSERT (id, name) "
                 "VALUES (s.id, s.name)")
    options = {"merge_sql": statement, "source": {"table": source.location, "version": 1}}
    code, result = run_local(JobSpec(job="merge", table=location, options=options), tmp_path)
    assert code == 0, result
    assert [(r["id"], r["name"]) for r in rows(location)] == [(1, "ONE"), (2, "b"), (5, "five")]


@pytest.mark.parametrize(
    ("options", "error", "fragment"),
    [
        ({"on": "target.id = source.id"}, "JobSpecError", "'on' needs at least one of 'when_matched'"),
        ({"when_matched": [{"action": "delete"}]}, "JobSpecError", "exactly one of 'on' (with clauses)"),
        ({"on": "target.id = source.id", "when_matched": [{"action": "update", "set": {"name": "source.name"},
                                                           "except": ["x"]}]},
         "JobSpecError", "does not take ['except']"),
        ({"on": "target.id = source.id", "when_matched": [{"action": "upsert"}]}, "JobSpecError", "action"),
        ({"merge_sql": "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", "on": "x"},
         "JobSpecError", "exactly one of 'on' (with clauses) and 'merge_sql'"),
        ({"merge_sql": "MERGE INTO t USING s ON t.id = WHEN MATCHED DELETE"}, "MergeError", "Cannot parse MERGE"),
        ({"on": "target.id = source.id", "when_matched": [{"action": "update", "set": {"nope": "source.name"}}]},
         "MergeError", "nope"),
        ({"on": "target.id = source.id", "when_matched": [{"action": "update", "set": {"id": "source.name"}}]},
         "MergeError", "'id'"),
        ({"on": "target.id = source.ghost", "when_matched": [{"action": "delete"}]}, "MergeError", "ghost"),
    ],
)
def test_bad_merge_options_fail_before_anything_is_written(
    tmp_path: Path, options: dict[str, Any], error: str, fragment: str
) -> None:
    location = table(tmp_path)
    code, result = run_local(JobSpec(job="merge", table=location,
                                     options={"source": {"rows": [{"id": 2, "name": "x"}]}, **options}), tmp_path)
    assert code == 2
    assert result.error is not None and result.error["type"] == error
    assert fragment in result.error["message"]
    assert DeltaTable(location).version == 1
    assert not list((tmp_path / "t").glob("*.parquet"))[1:]  # only the appended file


@pytest.mark.parametrize("source", [{"path": "/nonexistent/in.parquet"}, {"table": "/nonexistent/table"}])
def test_a_source_that_cannot_be_read_fails_naming_it(tmp_path: Path, source: dict[str, Any]) -> None:
    location = table(tmp_path)
    options = {"source": source, "on": "target.id = source.id", "when_not_matched": [{"action": "insert_all"}]}
    code, result = run_local(JobSpec(job="merge", table=location, options=options), tmp_path)
    assert code == 2
    assert result.error is not None and result.error["type"] in ("MergeError", "TableNotFoundError")
    assert "/nonexistent/" in result.error["message"]
    assert DeltaTable(location).version == 1


def test_merge_job_reads_a_parquet_source_path(tmp_path: Path) -> None:
    location = table(tmp_path)
    pq.write_table(pa.table({"id": [7], "name": ["seven"]}), tmp_path / "in.parquet")
    options = {"source": {"path": str(tmp_path / "in.parquet"), "format": "parquet"}, "on": "target.id = source.id",
               "when_not_matched": [{"action": "insert", "values": {"id": "source.id", "name": "source.name"}}]}
    code, result = run_local(JobSpec(job="merge", table=location, options=options), tmp_path)
    assert code == 0, result
    assert [r["id"] for r in rows(location)] == [1, 2, 7]


# ------------------------------------------------------------------------------------- schema_evolve


def test_schema_evolve_applies_every_statement_in_one_commit_and_a_retry_is_a_no_op(tmp_path: Path) -> None:
    location = table(tmp_path)
    statements = [
        "ALTER TABLE events ADD COLUMNS (info.b STRING AFTER a, note STRING COMMENT 'free text')",
        "ALTER TABLE events ALTER COLUMN note FIRST",
        "ALTER TABLE events SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'owner' = 'etl')",
        "ALTER TABLE events RENAME COLUMN name TO label",
        "ALTER TABLE events DROP COLUMNS (tags)",
    ]
    spec = JobSpec(job="schema_evolve", table=location, options={"statements": statements},
                   app_id="airflow:d:evolve:run1", app_version=0)
    code, result = run_local(spec, tmp_path)
    assert code == 0, result
    assert (result.version, result.committed, result.metrics["numOperations"]) == (2, True, 5)
    t = DeltaTable(location)
    assert t.schema.names == ("note", "id", "label", "info")
    assert t.configuration["owner"] == "etl"
    assert [f.name for f in t.schema.field("info").type.fields] == ["a", "b"]  # type: ignore[attr-defined]
    assert t.history(1)[0]["operation"] == "UPDATE SCHEMA"
    assert [(r["id"], r["label"]) for r in rows(location)] == [(1, "a"), (2, "b")]

    code, again = run_local(spec, tmp_path)  # would fail on "column already exists" if applied twice
    assert code == 0, again
    assert (again.committed, again.metrics["alreadyCommitted"], DeltaTable(location).version) == (False, True, 2)


def test_schema_evolve_applies_builder_steps(tmp_path: Path) -> None:
    location = table(tmp_path)
    changes = [
        {"op": "add_column", "path": "score", "type": "DOUBLE", "after": "id", "comment": "0..1"},
        {"op": "move_first", "path": "name"},
        {"op": "replace_columns", "columns": "name STRING, id BIGINT, score DOUBLE, info STRUCT<a: INT>, "
                                             "tags ARRAY<STRUCT<k: STRING>>, extra INT"},
        {"op": "set_properties", "properties": {"delta.enableChangeDataFeed": "true"}},
    ]
    code, result = run_local(JobSpec(job="schema_evolve", table=location, options={"changes": changes}), tmp_path)
    assert code == 0, result
    t = DeltaTable(location)
    assert (t.version, t.schema.names) == (2, ("name", "id", "score", "info", "tags", "extra"))
    assert t.configuration["delta.enableChangeDataFeed"] == "true"


@pytest.mark.parametrize(
    ("options", "error", "fragment"),
    [
        ({"statements": ["ADD COLUMNS (x INT)", "ALTER COLUMN ghost FIRST"]}, "SchemaEvolutionError",
         "statement 2 ('ALTER COLUMN ghost FIRST')"),
        ({"statements": ["ADD COLUMNS (tags.element.z INT)"]}, "SchemaEvolutionError", "tags"),
        ({"statements": ["ADD COLUMNS (name STRING)"]}, "SchemaEvolutionError", "already exists"),
        ({"statements": ["RENAME COLUMN name TO label"]}, "SchemaEvolutionError", "columnMapping"),
        ({"statements": ["ADD COLUMNS x INT,"]}, "DDLParseError", "ADD COLUMNS x INT,"),
        ({"changes": [{"op": "add_column", "path": "x", "type": "INT", "position": 1}]}, "JobSpecError",
         "position"),
        ({"changes": [{"op": "explode"}]}, "JobSpecError", "'op'"),
        ({"statements": ["ADD COLUMNS (x INT)"], "changes": [{"op": "move_first", "path": "x"}]}, "JobSpecError",
         "exactly one"),
    ],
)
def test_bad_schema_changes_fail_naming_the_statement_and_leave_the_table(
    tmp_path: Path, options: dict[str, Any], error: str, fragment: str
) -> None:
    location = table(tmp_path)
    code, result = run_local(JobSpec(job="schema_evolve", table=location, options=options), tmp_path)
    assert code == 2
    assert result.error is not None and result.error["type"] == error, result.error
    assert fragment in result.error["message"]
    assert DeltaTable(location).version == 1


def test_a_concurrent_metadata_change_conflicts_with_schema_evolve(tmp_path: Path) -> None:
    location = table(tmp_path)
    writer = ConcurrentWriter(tmp_path / "t", tmp_path, lambda t: t.alter("ADD COLUMNS (other INT)"))
    writer.start()
    spec = JobSpec(job="schema_evolve", table=location, options={"statements": ["ADD COLUMNS (mine INT)"]},
                   test_hooks=barrier_hooks(tmp_path),
                   conflict_policy={"overrides": {"MetadataChangedException": "fail"}})
    code, result = run_local(spec, tmp_path)
    assert writer.join_checked() == 2
    assert code == 2
    assert result.error is not None and result.error["type"] == "MetadataChangedException"
    assert DeltaTable(location).schema.names[-1] == "other"

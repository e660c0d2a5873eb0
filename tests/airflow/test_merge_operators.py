"""DeltaSchemaEvolveOperator and DeltaMergeWithEvolutionOperator in a real Airflow (``dag.test()``, SQLite).

The first test runs the jobs in the task process (no JVM): templated fields, XCom, and an Airflow retry
after a commit that landed (no second commit). The last one runs the example DAG
``dags/examples/example_delta_merge_with_evolution.py`` through real spark-submits on ``local[2]``,
the MERGE executed by Spark, with the same retry.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.core.table import DeltaTable
from tests.airflow.helpers import xcom_value
from tests.airflow_support import DAGS_FOLDER

pytestmark = pytest.mark.integration

CUSTOMERS = pa.schema([("id", pa.int64()), ("name", pa.string()), ("country", pa.string())])
BATCH = pa.table(
    {
        "id": pa.array([1, 2, 4], pa.int64()),
        "name": ["Ann", "Bob", "Dee"],
        "country": ["FR", "DE", "FR"],
        "op": ["U", "D", "U"],
        "signup_channel": ["web", "shop", "app"],
    }
)


def customers(location: Path) -> str:
    table = DeltaTable.create(str(location), CUSTOMERS, partition_by=["country"])
    table.append(
        pa.table(
            {"id": [1, 2, 3], "name": ["ann", "bob", "cy"], "country": ["FR", "DE", "DE"]}, schema=CUSTOMERS
        )
    )
    return table.location


def tries(run: Any) -> dict[str, int]:
    return {ti.task_id: ti.try_number for ti in run.get_task_instances()}


def table_rows(location: str) -> list[dict[str, Any]]:
    return sorted(DeltaTable(location).to_arrow().to_pylist(), key=lambda r: r["id"])


def test_operators_render_their_fields_and_a_retry_after_the_commit_landed_commits_nothing(
    airflow_db: Path, tmp_path: Path
) -> None:
    from tests.airflow.dags.delta_merge_operator_dags import merge_operators

    location = customers(tmp_path / "t")
    pq.write_table(
        BATCH.drop_columns(["country"]).select(["id", "name", "op", "signup_channel"]),
        tmp_path / "batch.parquet",
    )
    run = merge_operators.test(run_conf={"root": str(tmp_path), "min_id": 0})

    assert str(run.state) == "success"
    assert tries(run)["evolve"] == tries(run)["upsert"] == 2  # both first tries were lost after the commit
    table = DeltaTable(location)
    assert [c["operation"] for c in reversed(table.history())] == [
        "CREATE TABLE",
        "WRITE",
        "ADD COLUMNS",
        "MERGE",
    ]  # one schema change and one MERGE, although each ran twice
    assert table.schema.names == ("id", "name", "tier", "country", "signup_channel")
    assert [(r["id"], r["name"], r["signup_channel"]) for r in table_rows(location)] == [
        (1, "Ann", "web"),
        (2, "bob", None),
        (3, "cy", None),
        (4, "Dee", "app"),  # op 'D' takes no clause here
    ]
    report = xcom_value("delta_merge_operators", run.run_id, "report")
    assert (report["version"], report["committed"], report["alreadyCommitted"]) == (3, False, True)
    upsert = rendered_fields(run, "upsert")  # what the UI's "Rendered Template" shows, field by field
    assert upsert["on"] == "target.id = source.id AND source.id >= 0"
    assert upsert["source"] == {"path": f"{tmp_path}/batch.parquet", "format": "parquet"}
    assert "job_options" not in upsert
    assert rendered_fields(run, "evolve")["statements"] == [
        "ALTER TABLE t ADD COLUMNS (tier STRING AFTER name)"
    ]


def rendered_fields(run: Any, task_id: str) -> dict[str, Any]:
    from airflow.models.renderedtifields import RenderedTaskInstanceFields

    (ti,) = [ti for ti in run.get_task_instances() if ti.task_id == task_id]
    fields = RenderedTaskInstanceFields.get_templated_fields(ti)
    assert fields is not None, f"no rendered fields stored for {task_id}"
    return fields


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"source": {"path": "/x"}}, "exactly one of 'on'"),
        ({"source": {"path": "/x"}, "on": "t.id = s.id", "merge_sql": "MERGE ..."}, "exactly one of 'on'"),
        ({"source": {"path": "/x"}, "on": "t.id = s.id"}, "at least one of 'when_matched'"),
        ({"on": "t.id = s.id", "when_matched": [{"action": "delete"}]}, "pass 'source'"),
        (
            {"source": {"path": "/x", "table": "/y"}, "on": "a", "when_matched": [{"action": "delete"}]},
            "exactly one of ['path'",
        ),
    ],
)
def test_merge_operator_arguments_are_checked_when_the_dag_is_parsed(
    kwargs: dict[str, Any], fragment: str
) -> None:
    from airflow_provider_delta.operators.merge import DeltaMergeWithEvolutionOperator

    with pytest.raises(ValueError, match=fragment.replace("[", r"\[").replace("(", r"\(")):
        DeltaMergeWithEvolutionOperator(task_id="m", table="/t", **kwargs)


def test_schema_evolve_operator_needs_statements_or_changes() -> None:
    from airflow_provider_delta.operators.merge import DeltaSchemaEvolveOperator

    with pytest.raises(ValueError, match="exactly one of 'statements' and 'changes'"):
        DeltaSchemaEvolveOperator(task_id="e", table="/t")
    with pytest.raises(ValueError, match="exactly one of 'statements' and 'changes'"):
        DeltaSchemaEvolveOperator(
            task_id="e",
            table="/t",
            statements=["ADD COLUMNS (x INT)"],
            changes=[{"op": "move_first", "path": "x"}],
        )


def _load_example() -> Any:
    name = "example_delta_merge_with_evolution"
    spec = importlib.util.spec_from_file_location(name, DAGS_FOLDER / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.pop(name, None)
    spec.loader.exec_module(module)
    return module.dag


@pytest.mark.spark
@pytest.mark.system
def test_example_dag_evolves_and_upserts_on_spark_and_a_retry_after_the_landed_merge_commits_nothing(
    airflow_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk.exceptions import AirflowException

    from airflow_provider_delta.operators.merge import DeltaMergeWithEvolutionOperator

    location = customers(tmp_path / "customers")
    pq.write_table(BATCH, tmp_path / "batch.parquet")
    monkeypatch.setenv("DELTA_EXAMPLE_CUSTOMERS_TABLE", location)
    monkeypatch.setenv("DELTA_EXAMPLE_UPDATES", str(tmp_path / "batch.parquet"))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    real_execute = DeltaMergeWithEvolutionOperator.execute
    logs: list[dict[str, Any]] = []

    def lose_the_first_try(self: DeltaMergeWithEvolutionOperator, context: Any) -> dict[str, Any]:
        result = real_execute(self, context)
        logs.append(result)
        if context["ti"].try_number == 1:
            raise AirflowException("simulated: the worker was lost after the MERGE committed")
        return result

    monkeypatch.setattr(DeltaMergeWithEvolutionOperator, "execute", lose_the_first_try)
    dag = _load_example()
    for t in dag.tasks:
        t.retry_delay = timedelta(0)
    run = dag.test()

    assert str(run.state) == "success"
    assert tries(run)["upsert_batch"] == 2
    first, second = logs
    assert (first["committed"], first["version"], first["engine"]["name"]) == (True, 3, "spark")
    assert first["metrics"]["numTargetRowsDeleted"] == 1 and first["metrics"]["numTargetRowsInserted"] == 1
    assert (second["committed"], second["version"], second["metrics"]["alreadyCommitted"]) == (False, 3, True)
    table = DeltaTable(location)
    assert table.version == 3  # create, append, the schema change, one MERGE
    assert table.schema.names == ("id", "name", "tier", "country", "signup_channel")
    assert table.configuration["delta.enableChangeDataFeed"] == "true"
    assert [(r["id"], r["name"], r["signup_channel"]) for r in table_rows(location)] == [
        (1, "Ann", "web"),
        (3, "cy", None),
        (4, "Dee", "app"),
    ]
    changes = sorted((c["id"], c["_change_type"]) for c in table.changes(3).to_pylist())
    assert changes == [(1, "update_postimage"), (1, "update_preimage"), (2, "delete"), (4, "insert")]
    assert deltalake.DeltaTable(location).version() == 3
    assert xcom_value(dag.dag_id, run.run_id, "report")["version"] == 3

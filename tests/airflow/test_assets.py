"""Delta operators declare their tables as assets; ``delta://`` URIs are normalised (real Airflow)."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

import pytest

from tests.airflow_support import TEST_DAGS_FOLDER
from tests.spark_jobs.helpers import make_table

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration


NORMALISED = {
    "delta:///data/lake/events": "delta:///data/lake/events",
    "delta:///data/lake//events/": "delta:///data/lake/events",
    "delta:///data/lake/./events": "delta:///data/lake/events",
    "delta:///data/my table": "delta:///data/my%20table",
    "delta+s3a://bucket/lake/events/": "delta+s3://bucket/lake/events",
    "DELTA+GS://bucket/t": "delta+gs://bucket/t",
}


def test_delta_uris_are_normalised_by_the_registered_handler() -> None:
    """Without the handler Airflow turns ``delta:///x`` into ``delta:/x``. A fresh interpreter, so that
    nothing of this package is imported before Airflow looks the handler up through the provider."""
    import json
    import subprocess

    uris = list(NORMALISED)
    code = (
        f"import json; from airflow.sdk import Asset; print(json.dumps([Asset(uri=u).uri for u in {uris!r}]))"
    )
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == list(NORMALISED.values())


@pytest.mark.parametrize("bad", ["delta://host/data/t", "delta:///", "delta+s3:///no-bucket"])
def test_malformed_delta_uris_are_refused(bad: str) -> None:
    from airflow.sdk import Asset

    with pytest.raises(ValueError, match="Delta asset URI"):
        Asset(uri=bad)


def test_provider_registers_the_schemes_the_handler_knows() -> None:
    from airflow_provider_delta.assets import SCHEMES
    from airflow_provider_delta.get_provider_info import get_provider_info

    (entry,) = get_provider_info()["asset-uris"]
    assert tuple(entry["schemes"]) == SCHEMES


def test_operators_declare_their_tables_and_a_run_emits_asset_events(
    airflow_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk import Asset, AssetAlias

    monkeypatch.setenv("DELTA_TEST_ASSET_ROOT", str(tmp_path))
    monkeypatch.syspath_prepend(str(TEST_DAGS_FOLDER))
    sys.modules.pop("delta_assets_dags", None)
    dags = importlib.import_module("delta_assets_dags")
    for name in ("events", "orders", "joined"):
        make_table(tmp_path / name, commits=1)
    events = Asset(uri=f"delta://{tmp_path}/events")
    tasks = dags.producer.task_dict

    assert tasks["write_static"].outlets == [events]
    assert tasks["write_templated"].outlets == [
        AssetAlias(name="delta-table:delta_assets_producer.write_templated")
    ]
    assert tasks["merge_like"].inlets == [events]
    assert tasks["merge_like"].outlets == [Asset(uri=f"delta://{tmp_path}/joined")]
    assert tasks["checkpoint"].outlets == []  # a checkpoint changes no data

    run = dags.producer.test()
    assert str(run.state) == "success"
    uris = _asset_event_uris(run.run_id)
    assert uris == {f"delta://{tmp_path}/events", f"delta://{tmp_path}/orders", f"delta://{tmp_path}/joined"}
    # Data-aware scheduling: the consumer DAG is queued on both of its assets.
    assert _queued_uris("delta_assets_consumer") == {
        f"delta://{tmp_path}/events",
        f"delta://{tmp_path}/orders",
    }


def _asset_event_uris(run_id: str) -> set[str]:
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.execute(
            select(AssetModel.uri)
            .join(AssetEvent, AssetEvent.asset_id == AssetModel.id)
            .where(AssetEvent.source_run_id == run_id)
        ).all()
    return {r[0] for r in rows}


def _queued_uris(dag_id: str) -> set[str]:
    from airflow.models.asset import AssetDagRunQueue, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.execute(
            select(AssetModel.uri)
            .join(AssetDagRunQueue, AssetDagRunQueue.asset_id == AssetModel.id)
            .where(AssetDagRunQueue.target_dag_id == dag_id)
        ).all()
    return {r[0] for r in rows}

"""docker/: the image and the compose file, checked statically (no Docker engine runs in CI here).

What would break a `docker compose up` at once: a service without an image, a missing dependency,
clashing host ports, the Spark master's web UI on Airflow's 8080, a worker pointed at the wrong
master, connections that do not parse, COPY sources that do not exist, pins out of step with pyproject.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
IMAGE = "airflow-provider-delta:latest"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((DOCKER / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def dockerfile() -> str:
    return (DOCKER / "Dockerfile").read_text()


def pinned(name: str) -> str:
    match = re.search(rf'"{re.escape(name)}(?:\[[^\]]*\])?==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert match, name
    return match.group(1)


def test_every_service_has_an_image_and_the_project_image_is_built_from_the_dockerfile(compose: dict) -> None:
    services = compose["services"]
    assert {
        "postgres",
        "airflow-init",
        "airflow-apiserver",
        "airflow-scheduler",
        "airflow-dag-processor",
        "airflow-triggerer",
        "spark-master",
        "spark-worker",
    } <= set(services)
    for name, service in services.items():
        assert service.get("image"), name
        if service["image"] == IMAGE:
            assert service["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}, name
            assert (DOCKER / ".." / service["build"]["dockerfile"]).resolve().is_file()


def test_depends_on_names_existing_services_and_airflow_waits_for_the_migration(compose: dict) -> None:
    services = compose["services"]
    for name, service in services.items():
        assert set(service.get("depends_on") or []) <= set(services), name
    for name in ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer"):
        assert services[name]["depends_on"]["airflow-init"] == {"condition": "service_completed_successfully"}
    assert services["airflow-init"]["command"] == ["db", "migrate"]


def test_host_ports_do_not_clash_and_spark_uis_avoid_airflows_8080(compose: dict) -> None:
    host_ports = [p.split(":")[0] for s in compose["services"].values() for p in s.get("ports", [])]
    assert len(host_ports) == len(set(host_ports))
    assert "8080" in host_ports
    master = compose["services"]["spark-master"]["command"]
    worker = compose["services"]["spark-worker"]["command"]
    assert master[0] == "org.apache.spark.deploy.master.Master"
    assert master[master.index("--webui-port") + 1] == "18080"
    assert master[master.index("--port") + 1] == "7077"
    assert worker[0] == "org.apache.spark.deploy.worker.Worker"
    assert worker[worker.index("--webui-port") + 1] == "18081"
    assert worker[-1] == f"spark://{master[master.index('--host') + 1]}:7077"
    for name in ("spark-master", "spark-worker"):
        assert compose["services"][name]["entrypoint"] == ["spark-class"]


def test_airflow_connections_parse_and_point_jobs_at_the_standalone_master(compose: dict) -> None:
    env = compose["services"]["airflow-scheduler"]["environment"]
    spark = json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"])
    assert (spark["conn_type"], spark["host"], spark["port"]) == ("spark", "spark://spark-master", 7077)
    delta = json.loads(env["AIRFLOW_CONN_DELTA_DEFAULT"])
    assert delta["conn_type"] == "delta"
    assert delta["extra"]["spark_conf"]["spark.driver.host"] == "airflow-scheduler"
    assert compose["services"]["airflow-scheduler"]["hostname"] == "airflow-scheduler"
    # The tables' volume is mounted wherever the log is read or written.
    for name in ("airflow-scheduler", "airflow-triggerer", "airflow-dag-processor", "spark-worker"):
        assert "lake:/data/lake" in compose["services"][name]["volumes"], name
    assert delta["host"] == "/data/lake"
    assert set(compose["volumes"]) == {"lake", "postgres-db"}


def test_dockerfile_pins_match_pyproject_and_copy_sources_exist(dockerfile: str) -> None:
    assert re.search(r"^ARG AIRFLOW_VERSION=(\S+)$", dockerfile, re.M).group(1) == pinned("apache-airflow")
    assert "FROM apache/airflow:${AIRFLOW_VERSION}-python${PYTHON_VERSION}" in dockerfile
    assert f'"pyspark=={pinned("pyspark")}"' in dockerfile
    assert "openjdk-17-jre-headless" in dockerfile
    assert "pip uninstall -y pyspark-client" in dockerfile
    for line in re.findall(r"^COPY (?:--\S+ )*(.+)$", dockerfile, re.M):
        *sources, _target = line.split()
        for source in sources:
            assert (ROOT / source).exists(), source


def test_every_named_volume_mount_point_is_created_and_owned_by_airflow_in_the_image(
    compose: dict, dockerfile: str
) -> None:
    """A new named volume takes its owner from the image's folder: without it, /data/lake is root's
    and the airflow user (uid 50000) gets PermissionError on the first write."""
    targets = {
        mount.split(":")[1]
        for name, service in compose["services"].items()
        if service.get("image") == IMAGE
        for mount in service.get("volumes", [])
        if mount.split(":")[0] in compose["volumes"]
    }
    assert targets == {"/data/lake"}
    root_part, _, user_part = dockerfile.partition("USER airflow")
    assert user_part, "the image must switch to the airflow user"
    for target in targets:
        assert re.search(rf"mkdir -p {re.escape(target)}\b", root_part), target
        assert re.search(rf"chown -R airflow:root {re.escape(target)}\b", root_part), target
    # The images of the services that write tables run as the airflow user (the base image's default).
    for name in ("airflow-scheduler", "spark-worker"):
        assert "user" not in compose["services"][name], name


def test_the_maintenance_example_tolerates_a_table_that_does_not_exist_yet(compose: dict) -> None:
    """docker-compose lists `events` for maintenance before any DAG has written it."""
    env = compose["services"]["airflow-scheduler"]["environment"]
    assert env["DELTA_MAINTENANCE_TABLES"] == "events"
    example = (ROOT / "dags" / "examples" / "example_delta_maintenance.py").read_text()
    assert "skip_missing=True" in example

"""Provider metadata for Airflow's ``apache_airflow_provider`` entry point.

Imports nothing from Airflow: the providers manager calls this while it discovers providers.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_delta import __version__

_INTEGRATION = "Delta Lake"
#: The same as ``airflow_provider_delta.assets.SCHEMES`` (that module imports Airflow; this one must not).
ASSET_SCHEMES = (
    "delta",
    *(f"delta+{s}" for s in ("s3", "gs", "gcs", "abfs", "abfss", "az", "adl", "hdfs", "viewfs", "s3a", "s3n")),
)


def _connection_type() -> dict[str, Any]:
    """The ``delta`` connection form: relabelled standard fields plus extra fields."""
    return {
        "hook-class-name": "airflow_provider_delta.hooks.delta.DeltaHook",
        "hook-name": "Delta Lake",
        "connection-type": "delta",
        "ui-field-behaviour": {
            "hidden-fields": ["schema", "port", "login", "password"],
            "relabeling": {"host": "Base path or URI"},
            "placeholders": {
                "host": "s3://bucket/lake  or  /data/lake  (bare table names resolve under it)",
                "spark_conn_id": "spark_default",
                "storage_options": '{"AWS_REGION": "eu-west-1"}',
                "spark_conf": '{"spark.executor.memory": "2g"}',
            },
        },
        "conn-fields": {
            "base_path": {
                "label": "Base path (overrides host)",
                "description": "Where tables named by a bare name live; a table named by a full path or "
                "URI ignores it.",
                "schema": {"type": ["string", "null"]},
            },
            "storage_options": {
                "label": "Storage options",
                "description": "Object-store options (JSON object) used to read and write the tables.",
                "schema": {"type": ["object", "null"]},
            },
            "spark_conn_id": {
                "label": "Spark connection id",
                "description": "The Spark connection Delta jobs are submitted with.",
                "schema": {"type": ["string", "null"], "default": "spark_default"},
            },
            "spark_conf": {
                "label": "Spark conf",
                "description": "Spark configuration (JSON object) added to every Delta job.",
                "schema": {"type": ["object", "null"]},
            },
        },
    }


def get_provider_info() -> dict[str, Any]:
    """What ``airflow providers list`` and ``airflow providers hooks`` show about this provider.

    Example:
        >>> get_provider_info()["package-name"]
        'airflow-provider-delta'
    """
    return {
        "package-name": "airflow-provider-delta",
        "name": "Delta Lake",
        "description": "Delta tables on Spark from Airflow, built on a pure-Python Delta transaction-log engine.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": _INTEGRATION,
                "external-doc-url": "https://delta.io/",
                "tags": ["software"],
            }
        ],
        "hooks": [{"integration-name": _INTEGRATION, "python-modules": ["airflow_provider_delta.hooks.delta"]}],
        "operators": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": [
                    "airflow_provider_delta.operators.delta",
                    "airflow_provider_delta.operators.cdf_export",
                    "airflow_provider_delta.operators.maintenance",
                    "airflow_provider_delta.operators.merge",
                ],
            }
        ],
        "sensors": [{"integration-name": _INTEGRATION, "python-modules": ["airflow_provider_delta.sensors.delta"]}],
        "triggers": [
            {"integration-name": _INTEGRATION, "python-modules": ["airflow_provider_delta.triggers.delta"]}
        ],
        "connection-types": [_connection_type()],
        # Delta tables as assets: delta:///path and delta+<storage>://bucket/path (see assets.py).
        "asset-uris": [
            {
                "schemes": list(ASSET_SCHEMES),
                "handler": "airflow_provider_delta.assets.sanitize_uri",
                "factory": "airflow_provider_delta.assets.create_asset",
            }
        ],
    }

"""Provider metadata for Airflow's ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any

from airflow_provider_delta import __version__


def get_provider_info() -> dict[str, Any]:
    """What ``airflow providers list`` shows about this provider.

    Hooks, operators, sensors and triggers are registered here as they are added.
    """
    return {
        "package-name": "airflow-provider-delta",
        "name": "Delta Lake",
        "description": "Delta tables on Spark from Airflow, built on a pure-Python Delta transaction-log engine.",
        "versions": [__version__],
    }

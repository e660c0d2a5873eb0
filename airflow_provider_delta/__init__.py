"""Apache Airflow provider for Delta tables, with a pure-Python Delta transaction-log engine."""

from __future__ import annotations

__version__ = "0.1.0"

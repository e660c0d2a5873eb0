"""Airflow-side policies of airflow-provider-delta (conflict exceptions -> task outcomes)."""

from __future__ import annotations

"""Airflow operators of airflow-provider-delta."""

from __future__ import annotations

"""OPTIMIZE and ZORDER BY: bins (:mod:`.bins`), layouts (:mod:`.layout`), the commit (:mod:`.rewrite`)."""

from __future__ import annotations

from airflow_provider_delta.core.commands.optimize.command import optimize

__all__ = ["optimize"]

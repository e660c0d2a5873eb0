"""VACUUM: plan (:mod:`.plan`), protect (:mod:`.protect`), delete and record (:mod:`.command`)."""

from __future__ import annotations

from airflow_provider_delta.core.commands.vacuum.command import VacuumResult, vacuum
from airflow_provider_delta.core.commands.vacuum.protect import Protection, ProtectionSource

__all__ = ["Protection", "ProtectionSource", "VacuumResult", "vacuum"]

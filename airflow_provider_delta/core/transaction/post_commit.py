"""Post-commit maintenance: automatic checkpoints every ``delta.checkpointInterval`` commits."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from airflow_provider_delta.core.log.checkpoint_write import should_checkpoint, write_checkpoint
from airflow_provider_delta.core.snapshot import load_snapshot
from airflow_provider_delta.exceptions import DeltaError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_delta.core.snapshot import Snapshot
    from airflow_provider_delta.core.storage import Storage

log = logging.getLogger(__name__)


def auto_checkpoint(
    storage: Storage,
    location: str,
    version: int,
    configuration: Mapping[str, str],
    *,
    snapshot: Snapshot | None = None,
) -> bool:
    """Write a checkpoint at ``version`` when the interval says so; never fails the commit.

    A checkpoint is an optimisation: when writing one fails, the commit that triggered it has
    already landed, so the error is logged and the next interval tries again.
    """
    if not should_checkpoint(version, configuration):
        return False
    if configuration.get("delta.checkpointPolicy", "classic").lower() == "v2":
        return False  # V2 checkpoints are read, not written, by this engine
    try:
        # The committing transaction's snapshot advanced by the new commits: no replay from storage.
        state = snapshot.advance(version) if snapshot is not None else load_snapshot(storage, location, version)
        write_checkpoint(state)
    except (DeltaError, OSError) as err:
        log.warning("Checkpoint at version %d of %s failed: %s", version, location, err)
        return False
    return True

"""Snapshot state in a comparable form, shared by the checkpoint tests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_delta.core.snapshot import Snapshot


def _norm_dv(dv: Any) -> dict[str, Any] | None:
    return None if dv is None else {k: v for k, v in dict(dv).items() if v is not None}


def comparable_state(snapshot: Snapshot) -> dict[str, Any]:
    """The reconciled state, minus what a checkpoint legitimately changes (dataChange, remove stats/tags)."""
    files = {}
    for add in snapshot.files():
        d = add.to_dict()
        d.pop("dataChange")
        d["deletionVector"] = _norm_dv(add.deletion_vector)
        files[add.key] = d
    tombstones = {}
    for rm in snapshot.tombstones():
        d = rm.to_dict()
        for key in ("dataChange", "stats", "tags"):
            d.pop(key, None)
        d["deletionVector"] = _norm_dv(rm.deletion_vector)
        tombstones[rm.key] = d
    return {
        "version": snapshot.version,
        "protocol": snapshot.protocol,
        "metadata": snapshot.metadata.to_dict(),
        "files": files,
        "tombstones": tombstones,
        "txns": {k: v.to_dict() for k, v in snapshot.transactions.items()},
        "domains": {k: v.to_dict() for k, v in snapshot.domain_metadata.items()},
    }

"""Session-wide defaults for writes, like Delta Lake's Spark session confs.

Delta Lake reads ``spark.databricks.delta.schema.autoMerge.enabled`` and
``spark.databricks.delta.properties.defaults.<property>`` from the Spark session; this engine keeps
the same two knobs in one process-wide (context-local) place. A per-call option always wins over
the default.

Example:
    >>> from airflow_provider_delta.core.session import session_defaults, write_defaults
    >>> with session_defaults(auto_merge_schema=True):
    ...     write_defaults().auto_merge_schema
    True
    >>> write_defaults().auto_merge_schema
    False
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping


@dataclass(frozen=True)
class WriteDefaults:
    """Defaults applied when a call does not say otherwise.

    Attributes:
        auto_merge_schema: writes and MERGE evolve the schema as with ``schema_mode="merge"`` /
            ``schema_evolution=True`` (Delta's ``schema.autoMerge.enabled``).
        table_properties: properties every new table gets unless its creation sets them, e.g.
            ``{"delta.enableChangeDataFeed": "true"}`` (Delta's ``properties.defaults.*``).
    """

    auto_merge_schema: bool = False
    table_properties: Mapping[str, str] = field(default_factory=dict)


_BUILT_IN = WriteDefaults()
_DEFAULTS: contextvars.ContextVar[WriteDefaults | None] = contextvars.ContextVar(
    "airflow_provider_delta_write_defaults", default=None
)


def write_defaults() -> WriteDefaults:
    """The defaults in force in this context."""
    return _DEFAULTS.get() or _BUILT_IN


def set_write_defaults(**changes: Any) -> WriteDefaults:
    """Change the defaults for the rest of this context (process or task); returns the new defaults."""
    new = dataclasses.replace(write_defaults(), **changes)
    _DEFAULTS.set(new)
    return new


@contextlib.contextmanager
def session_defaults(**changes: Any) -> Iterator[WriteDefaults]:
    """Change the defaults inside a ``with`` block only."""
    new = dataclasses.replace(write_defaults(), **changes)
    token = _DEFAULTS.set(new)
    try:
        yield new
    finally:
        _DEFAULTS.reset(token)


__all__ = ["WriteDefaults", "session_defaults", "set_write_defaults", "write_defaults"]

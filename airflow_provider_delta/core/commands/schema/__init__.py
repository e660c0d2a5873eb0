"""Schema commands: the staged ``update_schema`` builder and ALTER TABLE, and schema evolution on writes."""

from __future__ import annotations

"""Optimistic transactions: stage actions, check winning commits for conflicts, commit; conflict policies."""

from __future__ import annotations

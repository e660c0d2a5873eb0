"""An immutable map of file key -> action that a new commit can extend cheaply.

A snapshot of 100,000 files must advance by one commit in well under a millisecond, so a new
index shares the old one's base dict and records only what changed (added entries and removed
keys); it folds the changes into a fresh base once they grow large.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

V = TypeVar("V")
K = tuple[str, "str | None"]

_COMPACT_AT = 4096


class FileIndex(Generic[V]):
    """Files keyed by (path, deletion vector id); never mutated after construction."""

    __slots__ = ("_added", "_base", "_removed")

    def __init__(self, base: dict[K, V], added: dict[K, V] | None = None, removed: frozenset[K] = frozenset()):
        self._base = base
        self._added: dict[K, V] = added or {}
        self._removed = removed

    def __len__(self) -> int:
        return len(self._base) - len(self._removed) + len(self._added)

    def __contains__(self, key: object) -> bool:
        return key in self._added or (key in self._base and key not in self._removed)

    def get(self, key: K) -> V | None:
        """The entry for ``key``, or None."""
        if key in self._added:
            return self._added[key]
        if key in self._removed:
            return None
        return self._base.get(key)

    def values(self) -> Iterator[V]:
        """Every entry, base first."""
        if not self._removed and not self._added:
            return iter(self._base.values())
        return self._merged_values()

    def _merged_values(self) -> Iterator[V]:
        removed, added = self._removed, self._added
        for k, v in self._base.items():
            if k not in removed and k not in added:
                yield v
        yield from added.values()

    def updated(self, puts: Iterable[tuple[K, V]], deletes: Iterable[K]) -> FileIndex[V]:
        """A new index with ``puts`` added and ``deletes`` removed (applied in that order per key)."""
        added = dict(self._added)
        removed = set(self._removed)
        for key in deletes:
            added.pop(key, None)
            if key in self._base:
                removed.add(key)
        for key, value in puts:
            added[key] = value
            removed.discard(key)
        if len(added) + len(removed) > _COMPACT_AT:
            base = {k: v for k, v in self._base.items() if k not in removed}
            base.update(added)
            return FileIndex(base)
        return FileIndex(self._base, added, frozenset(removed))

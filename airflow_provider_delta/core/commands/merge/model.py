"""The clause model of a MERGE: what the builder and the SQL parser both produce.

A :class:`MergeSpec` is the statement as the user wrote it (SQL text for conditions and values,
names as typed); :mod:`airflow_provider_delta.core.commands.merge.plan` resolves it against the target and
source schemas.

Example:
    >>> spec = MergeSpec(
    ...     condition="t.key = s.key", source_alias="s", target_alias="t",
    ...     clauses=(MergeClause("matched", "update"), MergeClause("not_matched", "insert")),
    ... )
    >>> [c.label(i) for i, c in enumerate(spec.clauses)]
    ['WHEN MATCHED clause 1 (UPDATE SET *)', 'WHEN NOT MATCHED clause 2 (INSERT *)']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ClauseKind = Literal["matched", "not_matched", "not_matched_by_source"]
ActionKind = Literal["update", "delete", "insert"]

_KIND_SQL = {
    "matched": "WHEN MATCHED",
    "not_matched": "WHEN NOT MATCHED",
    "not_matched_by_source": "WHEN NOT MATCHED BY SOURCE",
}
_ALLOWED: dict[str, tuple[str, ...]] = {
    "matched": ("update", "delete"),
    "not_matched": ("insert",),
    "not_matched_by_source": ("update", "delete"),
}

__all__ = ["ActionKind", "ClauseKind", "MergeClause", "MergeSpec"]


@dataclass(frozen=True)
class MergeClause:
    """One ``WHEN ... THEN ...`` clause.

    Attributes:
        kind: ``matched``, ``not_matched`` (by target) or ``not_matched_by_source``.
        action: ``update``, ``delete`` or ``insert``.
        condition: the clause's ``AND <condition>`` as SQL text, or None.
        assignments: ``(target column, SQL value)`` pairs; None means ``UPDATE SET *`` / ``INSERT *``.
        except_: columns left out of a ``*`` action (``EXCEPT (...)``).
    """

    kind: ClauseKind
    action: ActionKind
    condition: str | None = None
    assignments: tuple[tuple[str, str], ...] | None = None
    except_: tuple[str, ...] = ()

    @property
    def is_star(self) -> bool:
        """Whether the action is ``UPDATE SET *`` or ``INSERT *``."""
        return self.action != "delete" and self.assignments is None

    def label(self, index: int) -> str:
        """How messages name the clause: ``WHEN MATCHED clause 2 (DELETE)``."""
        if self.action == "delete":
            action = "DELETE"
        elif self.is_star:
            action = "UPDATE SET *" if self.action == "update" else "INSERT *"
        else:
            action = "UPDATE" if self.action == "update" else "INSERT"
        return f"{_KIND_SQL[self.kind]} clause {index + 1} ({action})"

    def is_valid_action(self) -> bool:
        """Whether ``action`` is allowed for ``kind`` (INSERT only when not matched, etc.)."""
        return self.action in _ALLOWED[self.kind]


@dataclass(frozen=True)
class MergeSpec:
    """A whole MERGE statement: join condition, aliases, clauses in order, schema evolution."""

    condition: str
    source_alias: str
    target_alias: str
    clauses: tuple[MergeClause, ...]
    schema_evolution: bool = False

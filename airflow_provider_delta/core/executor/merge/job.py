"""What a MERGE hands its executor (:class:`MergeJob`) and gets back (:class:`MergeOutcome`).

The command plans and commits (:mod:`~airflow_provider_delta.core.commands.merge.command`); between the
two, the row work -- read the candidate target files, join them with the source, run the clauses,
rewrite the touched files, write inserted rows and change data -- is the executor's merger
(``executor.merger().merge(job)``): the local pyarrow one
(:mod:`~airflow_provider_delta.core.executor.merge.local`) or Spark's. Both return the same outcome,
so metrics and the commit are one implementation. :class:`MergePlan` (built by the command's
planner, ``commands/merge/plan.py``) is the resolved statement both executors run.

Example:
    >>> outcome = MergeOutcome(counts=dict.fromkeys(CLAUSE_COUNTERS, 0))
    >>> outcome.counts["numTargetRowsInserted"], outcome.copied_rows
    (0, 0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.expressions import Expr

if TYPE_CHECKING:
    import pyarrow as pa

    from airflow_provider_delta.core.actions import AddCDCFile, AddFile
    from airflow_provider_delta.core.executor.merge.source import MergeSource
    from airflow_provider_delta.core.schema.types import StructType
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = [
    "CLAUSE_COUNTERS",
    "Assignment",
    "EngineExpr",
    "JoinKey",
    "MergeJob",
    "MergeOutcome",
    "MergePlan",
    "PlannedClause",
]

CLAUSE_COUNTERS = (
    "numTargetRowsMatchedUpdated",
    "numTargetRowsMatchedDeleted",
    "numTargetRowsNotMatchedBySourceUpdated",
    "numTargetRowsNotMatchedBySourceDeleted",
    "numTargetRowsInserted",
)
"""The row counters every executor reports, with Delta's names."""


@dataclass(frozen=True)
class EngineExpr(Expr):
    """SQL outside core's expression surface, typed by the executing engine (Spark) and run only there."""

    sql: str
    dtype: pa.DataType | None = None


@dataclass(frozen=True)
class Assignment:
    """``target path = value``: the path in the evolved schema's spelling, the value bound in the clause scope.

    ``sql`` is the value as Spark SQL over the clause's aliases (what the Spark executor evaluates).
    """

    path: tuple[str, ...]
    value: Expr
    sql: str


@dataclass(frozen=True)
class PlannedClause:
    """A resolved clause. ``assignments`` is empty for DELETE; ``condition_sql`` is the condition's text."""

    kind: str
    action: str
    label: str
    condition: Expr | None
    assignments: tuple[Assignment, ...]
    condition_sql: str | None = None


@dataclass(frozen=True)
class JoinKey:
    """An equality of the join condition: target field path = source field path."""

    target: tuple[str, ...]
    source: tuple[str, ...]
    target_type: pa.DataType
    source_type: pa.DataType

    def __str__(self) -> str:
        return f"{'.'.join(self.target)} = {'.'.join(self.source)}"


@dataclass(frozen=True)
class MergePlan:
    """Everything an executor needs. Expressions in the pair scope read struct columns named by the aliases."""

    target_alias: str
    source_alias: str
    current_schema: StructType
    schema: StructType
    keys: tuple[JoinKey, ...]
    target_filter: Expr | None  # target-only conjuncts of the condition, over plain target columns
    source_filter: Expr | None  # source-only conjuncts, over plain source columns
    residual: Expr | None  # the rest of the condition, in the pair scope
    matched: tuple[PlannedClause, ...]
    not_matched: tuple[PlannedClause, ...]
    not_matched_by_source: tuple[PlannedClause, ...]
    file_predicate: Expr | None  # target files that may hold affected rows; None: all of them
    duplicates_allowed: bool  # only an unconditional DELETE on match: several source rows may match
    operation_parameters: dict[str, Any]
    condition_sql: str = ""  # the ON condition as written (Spark SQL over both aliases)
    source_rows: int = 0  # rows in the source
    engine_only: tuple[str, ...] = ()  # labels of clauses with SQL only the engine's typer understood

    @property
    def evolved(self) -> bool:
        """Whether the merge changes the table schema."""
        return self.schema != self.current_schema

    @property
    def clauses(self) -> tuple[PlannedClause, ...]:
        """Every clause: matched, then not matched, then not matched by source (each kind in order)."""
        return self.matched + self.not_matched + self.not_matched_by_source


@dataclass(frozen=True)
class MergeJob:
    """The row work of one planned MERGE.

    Attributes:
        plan: the resolved statement (clauses, keys, the evolved schema).
        reader: the version the merge reads (the target files' layout).
        writer: the same version with the evolved schema: new files are written for it.
        files: the candidate target files (the transaction's read); outcomes name them by position.
        source: the source rows (an ``ArrowMergeSource`` for the local executor, a DataFrame for Spark).
        record_changes: whether the table records change data (``delta.enableChangeDataFeed``).
    """

    plan: MergePlan
    reader: Snapshot
    writer: Snapshot
    files: tuple[AddFile, ...]
    source: MergeSource
    record_changes: bool


@dataclass
class MergeOutcome:
    """What the row work did: files to remove and add, change files, counters.

    ``counts`` holds :data:`CLAUSE_COUNTERS`; ``copied_rows`` the unchanged rows of the removed files
    written again; ``scan_seconds`` the time spent finding the rows to change (Delta's ``scanTimeMs``).
    A target file is removed exactly when one of its rows is updated or deleted.
    """

    removed: list[AddFile] = field(default_factory=list)
    added: list[AddFile] = field(default_factory=list)
    cdc: list[AddCDCFile] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    copied_rows: int = 0
    scan_seconds: float = 0.0

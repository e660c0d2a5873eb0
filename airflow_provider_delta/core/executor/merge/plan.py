"""The resolved MERGE an executor runs: :class:`MergePlan` and its parts.

The command's planner (``core/commands/merge/plan.py``) resolves a statement against the target and
the source into a :class:`MergePlan`; a :class:`~airflow_provider_delta.core.executor.merge.job.MergeJob`
hands it to the executor's merger. Expressions are bound over rows laid out as one struct column per
alias, and carry their Spark SQL text for the Spark executor.

Example:
    >>> [str(key) for key in job.plan.keys], job.plan.evolved   # doctest: +SKIP
    (['id = id'], True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.expressions import Expr

if TYPE_CHECKING:
    import pyarrow as pa

    from airflow_provider_delta.core.schema.types import StructType

__all__ = ["Assignment", "EngineExpr", "JoinKey", "MergePlan", "PlannedClause"]


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
    preserve: bool = False  # fields of a struct value lacks keep the target row's values (UPDATE SET *)


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

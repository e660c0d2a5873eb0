"""What a MERGE hands its executor (:class:`MergeJob`) and gets back (:class:`MergeOutcome`).

The command plans and commits (:mod:`~airflow_provider_delta.core.commands.merge.command`); between the
two, the row work -- read the candidate target files, join them with the source, run the clauses,
rewrite the touched files, write inserted rows and change data -- is the executor's merger
(``executor.merger().merge(job)``): the local pyarrow one
(:mod:`~airflow_provider_delta.core.executor.merge.local`) or Spark's. Both return the same outcome,
so metrics and the commit are one implementation. The job's plan is a
:class:`~airflow_provider_delta.core.executor.merge.plan.MergePlan`.

Example:
    >>> outcome = MergeOutcome(counts=dict.fromkeys(CLAUSE_COUNTERS, 0))
    >>> outcome.counts["numTargetRowsInserted"], outcome.copied_rows
    (0, 0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from airflow_provider_delta.core.actions import AddCDCFile, AddFile
    from airflow_provider_delta.core.executor.merge.plan import MergePlan
    from airflow_provider_delta.core.executor.merge.source import MergeSource
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["CLAUSE_COUNTERS", "MergeJob", "MergeOutcome"]

CLAUSE_COUNTERS = (
    "numTargetRowsMatchedUpdated",
    "numTargetRowsMatchedDeleted",
    "numTargetRowsNotMatchedBySourceUpdated",
    "numTargetRowsNotMatchedBySourceDeleted",
    "numTargetRowsInserted",
)
"""The row counters every executor reports, with Delta's names."""


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

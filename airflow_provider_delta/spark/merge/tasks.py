"""The Spark tasks of MERGE: one call per group of joined rows, written with the engine's writer.

Spark joins the target rows with the source and evaluates the clause conditions and values as Spark
SQL (:mod:`airflow_provider_delta.spark.merge.execution`); the joined rows a clause acts on then reach
these tasks grouped: the rows updating or deleting rows of one target file in one group (each carries
its target row's position in the file and the clause's values), and the rows to insert in a few
groups of their own. A :class:`MergeGroupTask` turns a group into files with core's code, so the rows
written, their casts and the change data are those of the local executor:

- a target file's group: the task reads the file again with core's reader (so unchanged rows never
  travel through Spark); at most one clause acts on a target row (two matched source rows that would
  update or delete it raise ``MergeMultipleMatchError``, as locally); the file is rewritten (unchanged
  rows copied in their order, then the updated rows), the values cast with core's store assignment
  (:func:`~airflow_provider_delta.core.executor.merge.local.assign_values`), and, on a change-data-feed
  table, ``update_preimage``/``update_postimage``/``delete`` rows written;
- an insert group: the new rows built from null rows and the clause's values, written as new files,
  with ``insert`` change rows when the driver may need them (it drops them when no file is removed).

Each task yields one JSON record: the file's index, the ``add``/``cdc`` actions and the counters.

Example:
    >>> task = MergeGroupTask(target, clauses, duplicates_allowed=False, record_changes=True,
    ...                       insert_changes=True, on="t.id = s.id")          # doctest: +SKIP
    >>> frame.groupBy(SLOT, GROUP).applyInArrow(task, RECORD_SCHEMA)        # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.executor.merge.job import CLAUSE_COUNTERS
from airflow_provider_delta.core.executor.merge.local import assign_values
from airflow_provider_delta.core.read.scan import read_add_file
from airflow_provider_delta.core.schema.conform import null_table
from airflow_provider_delta.core.write.changes import tag_changes, write_change_files
from airflow_provider_delta.core.write.files import conform_to_table
from airflow_provider_delta.core.write.rows import write_rows
from airflow_provider_delta.exceptions import MergeMultipleMatchError
from airflow_provider_delta.spark.file_rows import FILE_INDEX, ROW_INDEX
from airflow_provider_delta.spark.tasks import delta_errors, records_batch

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from airflow_provider_delta.core.actions import AddCDCFile, AddFile
    from airflow_provider_delta.core.executor.merge.plan import PlannedClause
    from airflow_provider_delta.core.write.target import WriteTarget

__all__ = [
    "BY_SOURCE",
    "GROUP",
    "INSERT",
    "MATCHED",
    "MergeGroupTask",
    "TaskClause",
    "target_column",
    "value_column",
]

GROUP = "__delta_merge_group"
"""The group of a joined row: its target file's index, or a negative number for rows to insert."""
_KINDS = ("matched", "not_matched", "not_matched_by_source")
MATCHED = "__delta_merge_matched"
"""A matched pair's WHEN MATCHED clause (its index among them, -1: none); null for other rows."""
INSERT = "__delta_merge_insert"
"""An unmatched source row's WHEN NOT MATCHED clause (-1: none); null for other rows."""
BY_SOURCE = "__delta_merge_by_source"
"""An unmatched target row's WHEN NOT MATCHED BY SOURCE clause (-1: none); null for other rows."""


def target_column(index: int) -> str:
    """The column holding the target's ``index``-th column (evolved schema order) in the joined rows."""
    return f"__delta_merge_t{index}"


def value_column(clause: int, assignment: int) -> str:
    """The column holding clause ``clause``'s ``assignment``-th value (null on rows it does not reach)."""
    return f"__delta_merge_v{clause}_{assignment}"


@dataclass(frozen=True)
class TaskClause:
    """What a task needs of a clause: kind, action, label (for errors), the paths it assigns, the
    joined rows' columns holding the values (one per path) and whether each keeps the target's values of
    struct fields its value lacks (``UPDATE SET *`` with schema evolution)."""

    kind: str
    action: str
    label: str
    paths: tuple[tuple[str, ...], ...]
    columns: tuple[str, ...]
    preserve: tuple[bool, ...] = ()

    @classmethod
    def of(cls, clause: PlannedClause, columns: tuple[str, ...]) -> TaskClause:
        """The task's view of a planned clause whose values are in ``columns``."""
        return cls(clause.kind, clause.action, clause.label, tuple(a.path for a in clause.assignments), columns,
                   tuple(a.preserve for a in clause.assignments))


@dataclass(frozen=True)
class MergeGroupTask:
    """``applyInArrow`` function over the joined rows grouped by (slot, :data:`GROUP`) (see the module docstring).

    Attributes:
        reader: the table as the merge read it (the candidate files' layout).
        files: the candidate files (statistics dropped); a group's :data:`FILE_INDEX` points here.
        target: the table as writers see it (the evolved schema).
        clauses: every clause, matched then not matched then not matched by source (the plan's order);
            value columns are numbered by this position.
        duplicates_allowed: several matches per target row are allowed (a lone unconditional DELETE).
        record_changes: write change data for rewritten files.
        insert_changes: also write ``insert`` change rows for inserted rows (the driver keeps them
            only when the merge removes a file).
        on: the ON condition, for the multiple-match error.
        hook: called with the task's actions after it wrote its files (tests).
    """

    reader: WriteTarget
    files: tuple[AddFile, ...]
    target: WriteTarget
    clauses: tuple[TaskClause, ...]
    duplicates_allowed: bool
    record_changes: bool
    insert_changes: bool
    on: str
    hook: Callable[[Sequence[AddFile | AddCDCFile]], None] | None = None

    def __call__(self, key: tuple[Any, ...], table: pa.Table) -> pa.Table:
        record = None
        if table.num_rows:
            with delta_errors():
                record = self._file_group(table) if key[-1].as_py() >= 0 else self._insert_group(table)
        return pa.Table.from_batches([records_batch([record] if record is not None else [])])

    # ------------------------------------------------------------------------------- target files
    def _file_group(self, table: pa.Table) -> dict[str, Any] | None:
        index = int(table.column(FILE_INDEX)[0].as_py())
        original = read_add_file(self.reader, self.files[index])
        if self.target.schema != self.reader.schema:
            original = conform_to_table(original, self.target.schema)
        rows = table.column(ROW_INDEX).to_numpy()
        matched = _codes(table, MATCHED)
        by_source = _codes(table, BY_SOURCE)
        unique, first, counts = np.unique(rows, return_index=True, return_counts=True)
        if not self.duplicates_allowed and (counts > 1).any():
            raise MergeMultipleMatchError(
                "Cannot perform MERGE: multiple source rows matched the same target row and tried to update "
                f"or delete it (ON {self.on}). Help: deduplicate the source on the join keys, e.g. keep "
                "the latest change per key",
                clause="ON condition",
            )
        offsets = self._offsets()
        clause_of = np.full(original.num_rows, -1, dtype=np.int64)  # per target row, the clause acting on it
        by_kind = np.where(matched[first] >= 0, offsets["matched"] + matched[first], -1)
        clause_of[unique] = np.where(by_kind >= 0, by_kind, offsets["not_matched_by_source"] + by_source[first])
        value_row = np.zeros(original.num_rows, dtype=np.int64)  # per target row, its joined row (values)
        value_row[unique] = first
        counts_out = dict.fromkeys(CLAUSE_COUNTERS, 0)
        copied = np.flatnonzero(clause_of < 0)
        kept = [original.take(pa.array(copied))]
        before: list[pa.Table] = []
        after: list[pa.Table] = []
        deleted: list[np.ndarray] = []
        for c, clause in enumerate(self.clauses):
            picked = np.flatnonzero(clause_of == c)
            if not len(picked):
                continue
            kind = "Matched" if clause.kind == "matched" else "NotMatchedBySource"
            if clause.action == "delete":
                deleted.append(picked)
                counts_out[f"numTargetRows{kind}Deleted"] += len(picked)
                continue
            old = original.take(pa.array(picked))
            new = self._assign(old, table, value_row[picked], c)
            kept.append(new)
            before.append(old)
            after.append(new)
            counts_out[f"numTargetRows{kind}Updated"] += len(picked)
        rows_out = pa.concat_tables(kept)
        added = write_rows(self.target, rows_out) if rows_out.num_rows else []
        cdc: list[AddCDCFile] = []
        if self.record_changes:
            changes = [tag_changes(t, "update_preimage") for t in before]
            changes += [tag_changes(t, "update_postimage") for t in after]
            changes += [tag_changes(original.take(pa.array(d)), "delete") for d in deleted]
            cdc = write_change_files(self.target, pa.concat_tables(changes)) if changes else []
        self._after_write(added, cdc)
        return {
            "index": index,
            "added": [a.to_dict() for a in added],
            "cdc": [c.to_dict() for c in cdc],
            "counts": counts_out,
            "copied": len(copied),
        }

    # ------------------------------------------------------------------------------------ inserts
    def _insert_group(self, table: pa.Table) -> dict[str, Any] | None:
        chosen = _codes(table, INSERT)
        offset = self._offsets()["not_matched"]
        parts = []
        for c, clause in enumerate(self.clauses):
            if clause.kind != "not_matched":
                continue
            picked = np.flatnonzero(chosen == c - offset)
            if len(picked):
                parts.append(self._assign(null_table(self.target.schema, len(picked)), table, picked, c))
        if not parts:
            return None
        inserted = pa.concat_tables(parts)
        added = write_rows(self.target, inserted)
        cdc = write_change_files(self.target, tag_changes(inserted, "insert")) if self.insert_changes else []
        self._after_write(added, cdc)
        return {
            "index": None,
            "added": [a.to_dict() for a in added],
            "cdc": [c.to_dict() for c in cdc],
            "counts": {**dict.fromkeys(CLAUSE_COUNTERS, 0), "numTargetRowsInserted": inserted.num_rows},
            "copied": 0,
        }

    # ------------------------------------------------------------------------------------ helpers
    def _offsets(self) -> dict[str, int]:
        """The position of each kind's first clause in :attr:`clauses` (kinds come in this order)."""
        count = {kind: sum(c.kind == kind for c in self.clauses) for kind in _KINDS}
        return {
            "matched": 0,
            "not_matched": count["matched"],
            "not_matched_by_source": count["matched"] + count["not_matched"],
        }

    def _assign(self, base: pa.Table, table: pa.Table, rows: np.ndarray, clause: int) -> pa.Table:
        """``base`` with clause ``clause``'s values (taken at ``rows`` of ``table``) assigned."""
        spec = self.clauses[clause]
        index = pa.array(rows)
        for path, column, preserve in zip(spec.paths, spec.columns, spec.preserve, strict=True):
            values = table.column(column).take(index)
            base = assign_values(base, path, values, self.target.schema, spec.label, preserve=preserve)
        return base

    def _after_write(self, added: Sequence[AddFile], cdc: Sequence[AddCDCFile]) -> None:
        if self.hook is not None:
            self.hook([*added, *cdc])


def _codes(table: pa.Table, name: str) -> np.ndarray:
    """A clause-code column as integers (-1 where null or absent)."""
    if name not in table.column_names:
        return np.full(table.num_rows, -1, dtype=np.int64)
    return np.asarray(pc.fill_null(table.column(name), -1).to_numpy(), dtype=np.int64)

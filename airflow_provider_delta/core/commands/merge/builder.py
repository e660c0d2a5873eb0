"""The user-facing MERGE builder: ``table.merge(source, condition).when_...().execute()``.

Example:
    >>> (table.merge(updates, "t.id = s.id", source_alias="s", target_alias="t")   # doctest: +SKIP
    ...     .when_matched_update_all()
    ...     .when_not_matched_insert_all()
    ...     .execute())
    {'numSourceRows': 3, 'numTargetRowsInserted': 1, 'numTargetRowsUpdated': 2, ..., 'version': 4}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.commands.merge.command import execute_merge
from airflow_provider_delta.core.commands.merge.model import MergeClause, MergeSpec
from airflow_provider_delta.core.commands.merge.sql import parse_merge_sql
from airflow_provider_delta.core.executor.merge.source import as_merge_source
from airflow_provider_delta.core.session import write_defaults
from airflow_provider_delta.exceptions import MergeError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from airflow_provider_delta.core.commands.merge.model import ActionKind, ClauseKind
    from airflow_provider_delta.core.executor import Executor
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["MergeBuilder", "run_merge_sql"]


def _pairs(mapping: Mapping[str, str] | None, what: str) -> tuple[tuple[str, str], ...]:
    if not mapping:
        raise MergeError(f"Cannot build the MERGE clause: {what} needs at least one column")
    return tuple((str(k), str(v)) for k, v in mapping.items())


class MergeBuilder:
    """A MERGE into one table, built clause by clause; :meth:`execute` runs it and commits.

    Clauses of one kind run in the order added; a row takes the first clause whose condition holds.
    Only the last clause of each kind may omit its condition.

    Args:
        target: gives the snapshot to merge into when :meth:`execute` runs (the table's newest).
        source: the source rows (a pyarrow Table, RecordBatch, RecordBatchReader or dataset), or a
            ``MergeSource`` (``airflow_provider_delta.spark.merge_delta`` passes a Spark DataFrame's).
        condition: the join condition as SQL, e.g. ``"t.id = s.id"``.
        source_alias: how conditions and values name the source.
        target_alias: how they name the target.
        schema_evolution: evolve the table schema as Delta's ``MERGE WITH SCHEMA EVOLUTION`` does;
            None takes the session default (``session_defaults(auto_merge_schema=True)``).
        isolation_level: ``Serializable`` or ``WriteSerializable`` (the table's default when None).
        on_commit: called with the committed version (None when nothing changed).
        executor: where the data work runs (default: the local executor).

    Example:
        >>> metrics = (t.merge(src, "t.id = s.id", source_alias="s", target_alias="t")  # doctest: +SKIP
        ...              .when_matched_update(set={"v": "s.v"}).when_not_matched_insert_all().execute())
    """

    def __init__(
        self,
        target: Callable[[], Snapshot],
        source: Any,
        condition: str,
        *,
        source_alias: str = "source",
        target_alias: str = "target",
        schema_evolution: bool | None = None,
        isolation_level: Any = None,
        on_commit: Callable[[int | None], object] | None = None,
        executor: Executor | None = None,
    ) -> None:
        self._target = target
        self._on_commit = on_commit
        self._executor = executor
        self._source = source
        self._condition = condition
        self._source_alias = source_alias
        self._target_alias = target_alias
        self._schema_evolution = schema_evolution
        self._isolation_level = isolation_level
        self._clauses: list[MergeClause] = []

    @classmethod
    def from_spec(cls, target: Callable[[], Snapshot], source: Any, spec: MergeSpec, **options: Any) -> MergeBuilder:
        """A builder holding a parsed statement's clauses (``options`` as for the constructor).

        ``MERGE WITH SCHEMA EVOLUTION`` turns evolution on; without it the session default applies.
        """
        builder = cls(
            target, source, spec.condition, source_alias=spec.source_alias, target_alias=spec.target_alias,
            schema_evolution=spec.schema_evolution or None, **options,
        )
        builder._clauses.extend(spec.clauses)
        return builder

    def _add(
        self,
        kind: ClauseKind,
        action: ActionKind,
        condition: str | None,
        assignments: tuple[tuple[str, str], ...] | None = None,
        except_: Iterable[str] | None = None,
    ) -> MergeBuilder:
        if except_ is not None and isinstance(except_, str):
            except_ = [except_]
        self._clauses.append(MergeClause(kind, action, condition, assignments, tuple(except_ or ())))
        return self

    def when_matched_update(self, set: Mapping[str, str], condition: str | None = None) -> MergeBuilder:  # noqa: A002
        """Update matched target rows: ``set`` maps target columns to SQL values (``{"v": "s.v"}``)."""
        return self._add("matched", "update", condition, _pairs(set, "WHEN MATCHED UPDATE"))

    def when_matched_update_all(
        self, condition: str | None = None, except_: Iterable[str] | None = None
    ) -> MergeBuilder:
        """``UPDATE SET * [EXCEPT (...)]``: every column from the source column of the same name."""
        return self._add("matched", "update", condition, None, except_)

    def when_matched_delete(self, condition: str | None = None) -> MergeBuilder:
        """Delete matched target rows."""
        return self._add("matched", "delete", condition)

    def when_not_matched_insert(
        self, values: Mapping[str, str], condition: str | None = None
    ) -> MergeBuilder:
        """Insert a row for a source row no target row matches: ``values`` maps columns to SQL values."""
        return self._add("not_matched", "insert", condition, _pairs(values, "WHEN NOT MATCHED INSERT"))

    def when_not_matched_insert_all(
        self, condition: str | None = None, except_: Iterable[str] | None = None
    ) -> MergeBuilder:
        """``INSERT * [EXCEPT (...)]``: every column from the source column of the same name."""
        return self._add("not_matched", "insert", condition, None, except_)

    def when_not_matched_by_source_update(
        self,
        set: Mapping[str, str],
        condition: str | None = None,  # noqa: A002
    ) -> MergeBuilder:
        """Update target rows no source row matches (values may use target columns only)."""
        return self._add(
            "not_matched_by_source", "update", condition, _pairs(set, "NOT MATCHED BY SOURCE UPDATE")
        )

    def when_not_matched_by_source_delete(self, condition: str | None = None) -> MergeBuilder:
        """Delete target rows no source row matches."""
        return self._add("not_matched_by_source", "delete", condition)

    def spec(self) -> MergeSpec:
        """The statement built so far."""
        evolution = self._schema_evolution
        if evolution is None:
            evolution = write_defaults().auto_merge_schema
        return MergeSpec(
            self._condition, self._source_alias, self._target_alias, tuple(self._clauses), bool(evolution)
        )

    def execute(self) -> dict[str, Any]:
        """Run the merge and commit one ``MERGE`` version.

        Returns:
            Delta's merge metrics (``numTargetRowsInserted``, ``numTargetRowsUpdated``,
            ``numTargetRowsDeleted``, ``numTargetRowsCopied``, ``numTargetFilesAdded``,
            ``numTargetFilesRemoved``, ``numSourceRows``, ``numOutputRows``, ...) plus ``version``:
            the committed version, or None when the merge changed nothing.

        Raises:
            MergeError: an invalid clause, unknown or ambiguous column, or type conflict.
            MergeMultipleMatchError: several source rows matched one target row to update or delete.
            SchemaEvolutionError: a clause would add a column in a way schema evolution does not allow.
            DeltaConcurrentModificationException: a concurrent commit conflicts.
        """
        result = execute_merge(
            self._target(), self.spec(), as_merge_source(self._source), isolation_level=self._isolation_level,
            executor=self._executor,
        )
        if self._on_commit is not None:
            self._on_commit(result.get("version"))
        return result


def run_merge_sql(
    target: Callable[[], Snapshot],
    statement: str,
    source: Any,
    *,
    isolation_level: Any = None,
    on_commit: Callable[[int | None], object] | None = None,
    executor: Executor | None = None,
) -> dict[str, Any]:
    """Parse a MERGE statement and execute it on the table ``target`` gives (see ``DeltaTable.merge_sql``).

    Raises:
        MergeError: the statement does not parse, or ``source`` has no table of the name after USING.
    """
    parsed = parse_merge_sql(statement)
    if isinstance(source, Mapping):
        found = [v for k, v in source.items() if str(k).lower() == parsed.source_name.lower()]
        if not found:
            raise MergeError(
                f"Cannot run MERGE: no source named {parsed.source_name!r} (given: {', '.join(map(str, source))})",
                clause="USING",
            )
        source = found[0]
    builder = MergeBuilder.from_spec(
        target, source, parsed.spec, isolation_level=isolation_level, on_commit=on_commit, executor=executor
    )
    return builder.execute()

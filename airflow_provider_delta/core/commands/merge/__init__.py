"""MERGE INTO for Delta tables: a builder and a SQL form, planned in core and executed on pyarrow.

:mod:`~airflow_provider_delta.core.commands.merge.builder` and :mod:`~airflow_provider_delta.core.commands.merge.sql`
produce the same clause model (:mod:`~airflow_provider_delta.core.commands.merge.model`);
:mod:`~airflow_provider_delta.core.commands.merge.plan` resolves it (schema evolution, join keys, file pruning);
:mod:`~airflow_provider_delta.core.commands.merge.command` hands the plan to the executor's merger
(the local one joins with pyarrow, :mod:`~airflow_provider_delta.core.executor.merge.local`) and commits.

Example:
    >>> t.merge(src, "t.id = s.id", source_alias="s", target_alias="t") \\
    ...     .when_matched_update_all().when_not_matched_insert_all().execute()   # doctest: +SKIP
"""

from __future__ import annotations

from airflow_provider_delta.core.commands.merge.builder import MergeBuilder
from airflow_provider_delta.core.commands.merge.model import MergeClause, MergeSpec
from airflow_provider_delta.core.commands.merge.sql import MergeStatement, parse_merge_sql

__all__ = ["MergeBuilder", "MergeClause", "MergeSpec", "MergeStatement", "parse_merge_sql"]

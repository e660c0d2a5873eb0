"""The ``merge`` job: MERGE [WITH SCHEMA EVOLUTION] of a source into a table, run on Spark executors.

Options:
    source (object): the rows to merge, one of
        ``{"path": ..., "format": "parquet", "options": {...}}`` (read by Spark),
        ``{"table": <delta location>, "version": n}`` (read with ``read_delta``; ``version`` optional),
        ``{"sql": "SELECT ..."}`` (a Spark SQL query), or ``{"rows": [...]}`` (inline, small: tests).
        With ``merge_sql`` it may be left out: the name after ``USING`` is then a table, a view or a
        path (``delta.`/p```, ``parquet.`/p```).
    on (str): the join condition, e.g. ``"target.id = source.id"`` (with the clause options), or
    merge_sql (str): one ``MERGE [WITH SCHEMA EVOLUTION] INTO ... USING ... ON ... WHEN ...`` statement
        (the target after ``INTO`` is the job's table, whatever it is called there).
    when_matched, when_not_matched, when_not_matched_by_source (lists of clause objects):
        ``{"action": "update", "set": {"col": "<sql>"}, "condition": "<sql>"}``,
        ``{"action": "update_all", "except": ["col"]}``, ``{"action": "delete"}`` (matched and not
        matched by source), ``{"action": "insert", "values": {...}}``, ``{"action": "insert_all",
        "except": [...]}`` (not matched); in order: a row takes the first clause whose condition holds.
    schema_evolution (bool, default True): add the source's new columns (Delta's MERGE WITH SCHEMA
        EVOLUTION); with ``merge_sql`` the statement's own ``WITH SCHEMA EVOLUTION`` also turns it on.
    source_alias, target_alias (str, default "source" / "target"): the names conditions use.
    isolation_level ("Serializable" | "WriteSerializable", default: the table's).

Under spark-submit the MERGE runs on the Spark executors (``merge_delta``: the join in Spark, files
written by tasks, one commit from the driver); with ``--engine local`` it runs with pyarrow in this
process (sources ``rows``, ``table`` and ``path`` of Parquet/CSV/JSON only). With ``app_id`` in the spec
the commit records Delta's ``txn``: an Airflow retry after the commit landed does nothing
(``committed: false``, metric ``alreadyCommitted``). Bad options fail with ``JobSpecError`` before the
table is read; a bad clause with ``MergeError`` before anything is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core.commands.merge.command import execute_merge
from airflow_provider_delta.core.commands.merge.model import MergeClause, MergeSpec
from airflow_provider_delta.core.commands.merge.sql import parse_merge_sql
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import DeltaError, JobSpecError, MergeError
from airflow_provider_delta.jobs.context import JobOutput
from airflow_provider_delta.jobs.definition import JobDefinition, Option, isolation_level_option

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_delta.core.commands.merge.model import ActionKind, ClauseKind
    from airflow_provider_delta.jobs.context import JobContext

CLAUSE_OPTIONS: dict[str, ClauseKind] = {
    "when_matched": "matched",
    "when_not_matched": "not_matched",
    "when_not_matched_by_source": "not_matched_by_source",
}
_ACTIONS: dict[str, tuple[ActionKind, str | None]] = {  # action -> (kind of action, key of its assignments)
    "update": ("update", "set"),
    "update_all": ("update", None),
    "delete": ("delete", None),
    "insert": ("insert", "values"),
    "insert_all": ("insert", None),
}
_SOURCE_KEYS = ("path", "table", "sql", "rows")


def clauses_from_options(options: dict[str, Any]) -> tuple[MergeClause, ...]:
    """The clause objects of ``when_matched`` / ``when_not_matched`` / ``when_not_matched_by_source``.

    Raises:
        JobSpecError: a clause object is malformed or mixes options (naming the option and clause).

    Example:
        >>> clauses_from_options({"when_matched": [{"action": "update_all", "except": ["op"]}]})[0].except_
        ('op',)
    """
    clauses: list[MergeClause] = []
    for option, kind in CLAUSE_OPTIONS.items():
        items = options.get(option) or []
        if not isinstance(items, list):
            raise JobSpecError(f"option {option!r} must be a list of clauses, found {items!r}")
        for number, item in enumerate(items, start=1):
            clauses.append(_clause(kind, item, f"{option}[{number}]"))
    return tuple(clauses)


def _clause(kind: ClauseKind, item: Any, where: str) -> MergeClause:
    if not isinstance(item, dict) or item.get("action") not in _ACTIONS:
        raise JobSpecError(
            f"clause {where} needs an 'action' of {sorted(_ACTIONS)}, found {item!r}"
        )
    action, assign_key = _ACTIONS[item["action"]]
    allowed = {"action", "condition", *([assign_key] if assign_key else []),
               *(["except"] if item["action"].endswith("_all") else [])}
    extra = sorted(set(item) - allowed)
    if extra:
        raise JobSpecError(
            f"clause {where} ({item['action']}) does not take {extra} "
            f"(it takes {sorted(allowed)})"
        )
    condition = item.get("condition")
    if condition is not None and not isinstance(condition, str):
        raise JobSpecError(f"the condition of clause {where} must be SQL text")
    assignments = None
    if assign_key is not None:
        pairs = item.get(assign_key)
        if not isinstance(pairs, dict) or not pairs:
            raise JobSpecError(f"clause {where} needs {assign_key!r}: {{column: sql}}")
        assignments = tuple((str(k), str(v)) for k, v in pairs.items())
    except_ = item.get("except") or []
    if not isinstance(except_, list):
        raise JobSpecError(f"'except' of clause {where} must be a list of columns")
    return MergeClause(kind, action, condition, assignments, tuple(str(c) for c in except_))


def _check(options: Mapping[str, Any]) -> None:
    """Rules between options (the declaration checks each option's type)."""
    if (options["on"] is None) == (options["merge_sql"] is None):
        raise JobSpecError("pass exactly one of 'on' (with clauses) and 'merge_sql'")
    clause_options = [o for o in CLAUSE_OPTIONS if options.get(o)]
    if options["merge_sql"] is not None and clause_options:
        raise JobSpecError(f"'merge_sql' holds the clauses; do not pass {', '.join(clause_options)} with it")
    if options["on"] is not None:
        if not clause_options:
            raise JobSpecError(
                "'on' needs at least one of 'when_matched', 'when_not_matched' and 'when_not_matched_by_source'"
            )
        if options["source"] is None:
            raise JobSpecError("pass 'source' (path, table, sql or rows), or a 'merge_sql' whose USING names it")
        clauses_from_options(dict(options))  # malformed clause objects fail when the DAG is parsed
    source = options["source"]
    if source is not None and len([k for k in _SOURCE_KEYS if k in source]) != 1:
        raise JobSpecError(f"'source' needs exactly one of {list(_SOURCE_KEYS)}, found {source!r}")


_CLAUSE_DOC = (
    "A list of clause objects, tried in order: `{\"action\": \"update\", \"set\": {col: sql}}`, "
    "`{\"action\": \"update_all\", \"except\": [...]}`, `{\"action\": \"delete\"}`, "
    "`{\"action\": \"insert\", \"values\": {col: sql}}`, `{\"action\": \"insert_all\"}`, each with an "
    "optional `condition` (SQL)."
)
JOB = JobDefinition(
    name="merge",
    summary="MERGE [WITH SCHEMA EVOLUTION] of a source into the table, the join and rewrites on Spark executors.",
    options=(
        Option(
            "source", dict, None,
            "The rows to merge: `{\"path\": ..., \"format\": ..., \"options\": {...}}` (read by Spark), "
            "`{\"table\": <delta location>, \"version\": n}`, `{\"sql\": \"SELECT ...\"}` (Spark only) or "
            "`{\"rows\": [...]}` (inline, small). With `merge_sql` it may be left out: the name after USING is read.",
        ),
        Option("on", str, None, "The join condition over the aliases, e.g. `target.id = source.id`.",
               aliases=("condition", "predicate", "on_condition"), renderer="sql"),
        Option("merge_sql", str, None,
               "One `MERGE [WITH SCHEMA EVOLUTION] INTO ... USING ... ON ... WHEN ...` statement instead of "
               "`on` and the clause options (the table after INTO is the job's table).",
               aliases=("sql", "statement"), renderer="sql"),
        Option("when_matched", list, None, "Clauses for target rows with a matching source row. " + _CLAUSE_DOC,
               items=dict, aliases=("matched", "whenMatched")),
        Option("when_not_matched", list, None, "Clauses for source rows without a target row (insert).",
               items=dict, aliases=("not_matched", "whenNotMatched")),
        Option("when_not_matched_by_source", list, None,
               "Clauses for target rows without a source row (update or delete).",
               items=dict, aliases=("not_matched_by_source", "whenNotMatchedBySource")),
        Option("schema_evolution", bool, True,
               "Add the source's new columns to the table (MERGE WITH SCHEMA EVOLUTION).",
               aliases=("merge_schema", "mergeSchema", "with_schema_evolution")),
        Option("source_alias", str, "source", "How conditions and values name the source."),
        Option("target_alias", str, "target", "How conditions and values name the target."),
        isolation_level_option(),
    ),
    engines=("spark", "local"),
    default_engine="spark",
    app_transaction=True,
    outlet=True,
    check=_check,
)


def merge_spec(ctx: JobContext) -> tuple[MergeSpec, tuple[str, ...] | None]:
    """The statement the options describe, and the source a ``merge_sql`` statement names (its parts).

    Raises:
        JobSpecError: the options are missing, of the wrong type, or conflict.
    """
    sql = ctx.option("merge_sql")
    evolution = ctx.option("schema_evolution")
    if sql is not None:
        statement = parse_merge_sql(sql)
        spec = statement.spec
        if evolution and not spec.schema_evolution:
            spec = MergeSpec(spec.condition, spec.source_alias, spec.target_alias, spec.clauses, True)
        return spec, statement.source_parts
    on = ctx.option("on")
    clauses = clauses_from_options(ctx.options)
    source_alias = ctx.option("source_alias")
    target_alias = ctx.option("target_alias")
    return MergeSpec(on, source_alias, target_alias, clauses, evolution), None


def load_source(ctx: JobContext, source: dict[str, Any]) -> Any:
    """The source rows: a DataFrame under Spark (never collected), a pyarrow table with ``--engine local``."""
    if "source_data" in ctx.cache:
        return ctx.cache["source_data"]
    try:
        if "rows" in source:
            data: Any = pa.Table.from_pylist(source["rows"])
            if ctx.spark is not None:
                data = ctx.spark.createDataFrame(data)
        elif ctx.spark is not None:
            data = _spark_source(ctx.spark, source, ctx.spec.storage_options)
        else:
            data = _local_source(source, ctx.spec.storage_options)
    except (DeltaError, JobSpecError):
        raise
    except Exception as err:  # Spark's AnalysisException, pyarrow's and the OS's errors
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise MergeError(f"Cannot read the MERGE source {source!r}: {first}", clause="source") from err
    ctx.cache["source_data"] = data
    return data


def _spark_source(spark: Any, source: dict[str, Any], storage_options: dict[str, str]) -> Any:
    if "sql" in source:
        return spark.sql(str(source["sql"]))
    if "table" in source:
        from airflow_provider_delta.spark.read import read_delta  # lazy: imports pyspark

        return read_delta(spark, str(source["table"]), version=source.get("version"),
                          storage_options=source.get("storage_options") or storage_options)
    reader = spark.read.format(source.get("format", "parquet")).options(**source.get("options", {}))
    return reader.load(str(source["path"]))


def _local_source(source: dict[str, Any], storage_options: dict[str, str]) -> pa.Table:
    if "table" in source:
        table = DeltaTable(str(source["table"]), version=source.get("version"),
                           storage_options=source.get("storage_options") or storage_options)
        return table.to_arrow()
    if "path" in source:
        import pyarrow.dataset as ds

        return ds.dataset(str(source["path"]), format=source.get("format", "parquet")).to_table()
    raise JobSpecError("Cannot run job 'merge': a 'sql' source needs Spark (run it with spark-submit)")


def _merge_source(data: Any) -> Any:
    """A pyarrow table as it is; a DataFrame as the Spark executor's merge source."""
    if isinstance(data, pa.Table):
        return data
    from airflow_provider_delta.spark.merge.source import SparkMergeSource  # lazy: imports pyspark

    return SparkMergeSource(data)


def _sql_source(ctx: JobContext, parts: tuple[str, ...]) -> Any:
    """The source a ``merge_sql`` statement names after USING, when no ``source`` option is given."""
    spark = ctx.require_spark(f"reading the MERGE source {'.'.join(parts)!r} named in merge_sql")
    from airflow_provider_delta.spark.merge.command import statement_source  # lazy: imports pyspark

    return statement_source(spark, parts, storage_options=ctx.spec.storage_options)


def run(ctx: JobContext) -> JobOutput:
    """MERGE the job's source into its table (see the module docstring).

    Example:
        >>> spec = JobSpec(job="merge", table="/data/t", options={"source": {"rows": [{"id": 1}]},
        ...     "on": "target.id = source.id", "when_not_matched": [{"action": "insert_all"}]})
        >>> run(JobContext(spec)).metrics["numTargetRowsInserted"]               # doctest: +SKIP
        1
    """
    spec, sql_source = merge_spec(ctx)
    source_option = ctx.option("source")
    data = load_source(ctx, source_option) if source_option is not None else _sql_source(ctx, sql_source or ())
    snapshot = DeltaTable(ctx.spec.table, storage_options=ctx.spec.storage_options).snapshot
    ctx.progress(
        "MERGE on version %d (%d files, %d bytes) on %s", snapshot.version, snapshot.num_files,
        sum(a.size for a in snapshot.files()), spec.condition,
    )
    metrics = execute_merge(
        snapshot, spec, _merge_source(data), isolation_level=ctx.option("isolation_level"),
        executor=ctx.executor(data),
        before_commit=ctx.before_commit, app_id=ctx.spec.app_id, app_version=ctx.spec.app_version,
    )
    version = metrics.pop("version")
    if metrics.get("alreadyCommitted") or version is None:
        return JobOutput(version=snapshot.version, committed=False, metrics=metrics)
    return JobOutput(version=version, committed=True, metrics=metrics)

"""The ``schema_evolve`` job: Delta DDL statements or builder steps, applied as ONE metadata commit.

Options (exactly one of the two):
    statements (list of str): ``ALTER TABLE`` statements as in Delta's docs (``ADD COLUMNS (c.x STRING
        AFTER y)``, ``ALTER COLUMN c FIRST``, ``RENAME COLUMN a TO b``, ``DROP COLUMNS (c)``,
        ``REPLACE COLUMNS (...)``, ``SET TBLPROPERTIES (...)``, ``UNSET TBLPROPERTIES ...``); the
        ``ALTER TABLE <name>`` prefix is optional.
    changes (list of objects): builder steps, ``{"op": "add_column", "path": "c.x", "type": "STRING",
        "after": "y", "comment": "..."}``, ``{"op": "rename_column", "path": "a", "new_name": "b"}``,
        ``{"op": "drop_columns", "paths": ["c"], "if_exists": true}``, ``{"op": "move_first", "path": "c"}``,
        ``{"op": "move_after", "path": "c", "after": "a"}``, ``{"op": "update_comment", "path": "c",
        "comment": "..."}``, ``{"op": "drop_not_null", "path": "c"}``, ``{"op": "replace_columns",
        "columns": "a INT, b STRING"}``, ``{"op": "set_properties", "properties": {...}}``,
        ``{"op": "unset_properties", "keys": [...], "if_exists": true}``.
    isolation_level ("Serializable" | "WriteSerializable", default: the table's).

Every statement or step is staged on the table's latest version, then all of them are committed
together (one ``metaData`` action): either all land or none does. With ``app_id``/``app_version`` in
the spec the commit records Delta's ``txn``; a run that finds the table already records it does
nothing (``committed: false``, metric ``alreadyCommitted``), so an Airflow retry after the commit
landed does not fail on "column already exists". A statement that does not parse, names a missing
column or adds a field inside an array fails before anything is written, naming the statement.

The job changes metadata only, so it runs in the task's process by default (engine ``local``, no
JVM); engine ``spark`` runs the same code in a Spark driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.commands.schema.update import SchemaUpdate
from airflow_provider_delta.core.schema.ddl import parse_alter
from airflow_provider_delta.core.table import DeltaTable
from airflow_provider_delta.exceptions import DDLParseError, DeltaError, JobSpecError, SchemaEvolutionError
from airflow_provider_delta.jobs.context import JobOutput
from airflow_provider_delta.jobs.definition import JobDefinition, Option, isolation_level_option

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_delta.jobs.context import JobContext

OPERATIONS: dict[str, tuple[str, ...]] = {  # builder step -> the keys it takes ("type" is add_column's data type)
    "add_column": ("path", "type", "comment", "first", "after", "nullable"),
    "rename_column": ("path", "new_name"),
    "drop_column": ("path", "if_exists"),
    "drop_columns": ("paths", "if_exists"),
    "move_first": ("path",),
    "move_after": ("path", "after"),
    "update_comment": ("path", "comment"),
    "drop_not_null": ("path",),
    "replace_columns": ("columns",),
    "set_properties": ("properties",),
    "unset_properties": ("keys", "if_exists"),
}


def _check(options: Mapping[str, Any]) -> None:
    if bool(options["statements"]) == bool(options["changes"]):
        raise JobSpecError("pass exactly one of 'statements' and 'changes'")


JOB = JobDefinition(
    name="schema_evolve",
    summary="Apply Delta DDL statements or builder steps to the table's schema as one metadata commit.",
    options=(
        Option(
            "statements", (list, str), None,
            "`ALTER TABLE` statements: `ADD COLUMNS (c.x STRING AFTER y)`, `ALTER COLUMN c FIRST`, "
            "`RENAME COLUMN a TO b`, `DROP COLUMNS (c)`, `REPLACE COLUMNS (...)`, `SET`/`UNSET TBLPROPERTIES`; "
            "the `ALTER TABLE <name>` prefix is optional.",
            aliases=("statement", "ddl", "sql"),
        ),
        Option(
            "changes", list, None,
            "Builder steps instead of statements, e.g. `{\"op\": \"add_column\", \"path\": \"c.x\", "
            "\"type\": \"STRING\", \"after\": \"y\"}`; ops: " + ", ".join(f"`{op}`" for op in OPERATIONS) + ".",
            items=dict, aliases=("steps", "operations"),
        ),
        isolation_level_option(),
    ),
    engines=("spark", "local"),
    default_engine="local",
    app_transaction=True,
    outlet=True,
    check=_check,
)


def _step(update: SchemaUpdate, change: Any, where: str) -> None:
    if not isinstance(change, dict) or change.get("op") not in OPERATIONS:
        raise JobSpecError(
            f"Cannot run job 'schema_evolve': {where} needs an 'op' of {sorted(OPERATIONS)}, found {change!r}"
        )
    op = change["op"]
    extra = sorted(set(change) - {"op", *OPERATIONS[op]})
    if extra:
        raise JobSpecError(
            f"Cannot run job 'schema_evolve': {where} ({op}) does not take {extra} (it takes {list(OPERATIONS[op])})"
        )
    kwargs = {k: v for k, v in change.items() if k != "op"}
    if op == "add_column":
        kwargs["data_type"] = kwargs.pop("type", None)
    if op == "replace_columns":
        update.apply(parse_alter(f"REPLACE COLUMNS ({kwargs['columns']})"))
        return
    try:
        getattr(update, op)(**kwargs)
    except TypeError as err:  # a missing or misspelt key
        raise JobSpecError(f"Cannot run job 'schema_evolve': {where} ({op}): {err}") from err


def stage(update: SchemaUpdate, statements: list[Any] | None, changes: list[Any] | None) -> int:
    """Stage every statement or step on ``update``; returns how many were staged.

    Raises:
        DDLParseError: a statement does not parse (its message names the statement and position).
        SchemaEvolutionError: a change is not allowed; the message starts with the statement or step.
        JobSpecError: a step is malformed.
    """
    items: list[tuple[str, Any]] = [(f"statement {i} ({s!r})", s) for i, s in enumerate(statements or [], 1)]
    items += [(f"change {i}", c) for i, c in enumerate(changes or [], 1)]
    for where, item in items:
        try:
            if isinstance(item, str):
                update.apply(item)
            elif where.startswith("statement"):
                raise JobSpecError(f"Cannot run job 'schema_evolve': {where} must be SQL text")
            else:
                _step(update, item, where)
        except (DDLParseError, JobSpecError):
            raise
        except DeltaError as err:
            raise _naming(err, where) from err
    return len(items)


def _naming(err: DeltaError, where: str) -> DeltaError:
    """``err`` with ``where`` (the statement or step) in front of its message, same type when possible."""
    try:
        return type(err)(f"{where}: {err}")
    except TypeError:  # an error type with required keyword fields
        return SchemaEvolutionError(f"{where}: {err}")


def run(ctx: JobContext) -> JobOutput:
    """Apply the job's statements or changes as one commit, idempotently (see the module docstring).

    Example:
        >>> spec = JobSpec(job="schema_evolve", table="/data/t",
        ...                options={"statements": ["ADD COLUMNS (note STRING)"]}, app_id="a", app_version=0)
        >>> run(JobContext(spec)).metrics["numOperations"]                         # doctest: +SKIP
        1
    """
    statements = ctx.option("statements")
    changes = ctx.option("changes")
    if isinstance(statements, str):
        statements = [statements]
    isolation = ctx.option("isolation_level")
    snapshot = DeltaTable(ctx.spec.table, storage_options=ctx.spec.storage_options).snapshot
    app_id, app_version = ctx.spec.app_id, ctx.spec.app_version
    before = list(snapshot.schema.names)
    if app_id is not None and app_version is not None:
        done = snapshot.app_transaction_version(app_id)
        if done is not None and done >= app_version:
            ctx.progress("schema change already applied by %r (version %d): nothing to do", app_id, done)
            return JobOutput(version=snapshot.version, committed=False,
                             metrics={"alreadyCommitted": True, "columns": before})
    update = SchemaUpdate(snapshot, isolation_level=isolation)
    count = stage(update, statements, changes)
    ctx.before_commit()
    version = update.commit(app_id=app_id, app_version=app_version)
    after = list(update.schema.names)
    ctx.progress("%d schema change(s) committed as version %s; columns %s -> %s", count, version, before, after)
    metrics = {"numOperations": count, "columnsBefore": before, "columns": after,
               "properties": dict(update.configuration)}
    return JobOutput(version=version if version is not None else snapshot.version, committed=version is not None,
                     metrics=metrics)

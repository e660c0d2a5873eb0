"""Write rows of a table: the checks before any file is written, then data files with statistics.

:func:`write_rows` is the one "write these rows as data files" of the engine: the local executor
calls it on the machine running the command, the Spark executor in each task. It conforms the rows
to the table's schema, enforces the table's CHECK constraints and an optional predicate every row
must satisfy (Delta's replaceWhere), and writes the files. :func:`check_table_writable` holds the
checks that depend on the table alone; commands run it before any data work, so a refused write
leaves no file behind.

Example:
    >>> check_table_writable(snapshot)                                  # doctest: +SKIP
    >>> adds = write_rows(WriteTarget.of(snapshot), pa.table({"id": [1]}))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.protocol import check_writable
from airflow_provider_delta.core.schema.arrow import to_arrow_schema
from airflow_provider_delta.core.write.files import conform_to_table, write_data_files
from airflow_provider_delta.exceptions import SchemaMismatchError, UnsupportedFeatureError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_delta.core.actions import AddFile
    from airflow_provider_delta.core.expressions import Expr
    from airflow_provider_delta.core.snapshot import Snapshot
    from airflow_provider_delta.core.write.target import TableLayout, WriteTarget

__all__ = ["check_constraints", "check_table_writable", "count_true", "metrics_for_adds", "write_rows"]

#: The most rows a data file gets unless the caller says otherwise (``write_data_files``' default).
DEFAULT_FILE_ROWS = 1_000_000

_UNCOMPUTED = {
    "delta.generationExpression": "generated column",
    "delta.identity.start": "identity column",
    "delta.invariants": "column invariant",
}


def check_table_writable(snapshot: Snapshot) -> None:
    """Refuse a write this engine cannot do correctly on ``snapshot``'s table.

    Raises:
        UnsupportedFeatureError: a writer feature is unsupported, or a column is generated, an
            identity column or has an invariant (values this engine does not compute).
    """
    check_writable(snapshot.protocol, location=snapshot.location, version=snapshot.version)
    for path, f in snapshot.schema.walk():
        for key, kind in _UNCOMPUTED.items():
            if key in f.metadata:
                raise UnsupportedFeatureError(
                    f"Cannot write to table {snapshot.location!r}: column {'.'.join(path)!r} is a {kind}, which "
                    "this engine does not compute yet. Help: write through Delta Lake on Spark.",
                    features=(key,),
                )


def count_true(mask: pa.Array | pa.ChunkedArray) -> int:
    """How many values of a boolean array are true (nulls count as false)."""
    return int(pc.sum(pc.cast(pc.fill_null(mask, False), pa.int64())).as_py() or 0)


def check_constraints(table: TableLayout, data: pa.Table, configuration: Mapping[str, str] | None = None) -> None:
    """Enforce ``delta.constraints.*`` CHECK constraints on rows about to be written.

    Raises:
        SchemaMismatchError: a row violates a constraint (named in the message).
    """
    conf = configuration if configuration is not None else table.configuration
    constraints = {k[len("delta.constraints."):]: v for k, v in conf.items() if k.startswith("delta.constraints.")}
    if not constraints or data.num_rows == 0:
        return

    # lazy: only tables with CHECK constraints need the expression engine (sqlglot, ~0.2 s per process)
    from airflow_provider_delta.core.expressions import bind, evaluate, parse_predicate

    arrow_schema = to_arrow_schema(table.schema)
    for name, text in constraints.items():
        result = evaluate(bind(parse_predicate(text), arrow_schema), data)
        violations = pc.sum(pc.cast(pc.equal(result, False), pa.int64())).as_py() or 0
        if violations:
            raise SchemaMismatchError(
                f"Cannot write to table {table.location!r}: {violations} row(s) violate CHECK constraint "
                f"{name!r} ({text})"
            )


def _check_required(target: WriteTarget, data: pa.Table, require: Expr, text: str) -> None:
    from airflow_provider_delta.core.expressions import evaluate  # lazy: see check_constraints

    outside = data.num_rows - count_true(evaluate(require, data))
    if outside:
        raise SchemaMismatchError(
            f"Cannot overwrite table {target.location!r} where {text!r}: "
            f"{outside} row(s) of the new data do not match the predicate"
        )


def write_rows(
    target: WriteTarget,
    data: pa.Table,
    *,
    data_change: bool = True,
    require: Expr | None = None,
    require_text: str = "",
    target_file_rows: int | None = None,
) -> list[AddFile]:
    """Write ``data`` (logical columns) as data files of ``target``; return their ``add`` actions.

    Args:
        target: the table as writers see it.
        data: the rows; matched to the schema by name, ignoring case, and cast safely.
        data_change: ``dataChange`` of the actions (false for rewrites that change no data).
        require: a bound predicate every row must satisfy (replaceWhere), shown as ``require_text``.
        target_file_rows: the most rows a file gets (default: the writer's million rows).

    Raises:
        SchemaMismatchError: the rows do not fit the schema, violate a CHECK constraint, or a row
            does not satisfy ``require``. Nothing is written then.
    """
    data = conform_to_table(data, target.schema, location=target.location)
    check_constraints(target, data)
    if require is not None:
        _check_required(target, data, require, require_text)
    return write_data_files(
        data,
        storage=target.storage,
        schema=target.schema,
        partition_columns=target.partition_columns,
        configuration=target.configuration,
        data_change=data_change,
        target_file_rows=max(1, target_file_rows) if target_file_rows is not None else DEFAULT_FILE_ROWS,
    )


def metrics_for_adds(adds: Sequence[AddFile]) -> dict[str, int]:
    """Delta's write metrics for the files a write added."""
    return {
        "numFiles": len(adds),
        "numOutputRows": sum(a.num_records or 0 for a in adds),
        "numOutputBytes": sum(a.size for a in adds),
    }

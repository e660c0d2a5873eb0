"""``delta-log``: inspect a Delta table from a shell.

    delta-log describe /data/events
    delta-log history  /data/events --limit 5
    delta-log files    /data/events --version 3
    delta-log version  /data/events --timestamp "2024-01-01 00:00:00"
    delta-log head     /data/events -n 5 --columns id,name --filter "part = 'p1'"
    delta-log vacuum   /data/events --retention-hours 168 --dry-run
    delta-log optimize /data/events --where "date >= '2024-01-01'" --zorder-by id,ts
    delta-log reorg    /data/events --dry-run

The inspecting subcommands take the table location, ``--version N`` or ``--timestamp TS`` (epoch
milliseconds, ``yyyy-MM-dd[ HH:mm:ss[.SSS]]`` or ISO-8601; naive means UTC). The maintenance
subcommands (``vacuum``, ``optimize``, ``reorg``) work on the newest version and take ``--dry-run``
(plan only: nothing is deleted, written or committed). All take ``--json`` for machine-readable
output. Errors of the engine print ``delta-log: error: <message>`` and exit with status 2.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import decimal
import json
import math
import os
import sys
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta import __version__
from airflow_provider_delta.core import DeltaError, DeltaTable
from airflow_provider_delta.core.schema.types import ArrayType, DataType, MapType, StructType

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

PROG = "delta-log"
_MAX_CELL = 40


# --------------------------------------------------------------------------- formatting helpers
def _timestamp_text(ms: int | None) -> str:
    if ms is None:
        return "-"
    moment = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


def _size_text(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{size:,} bytes" if unit == "bytes" else f"{value:.1f} {unit} ({size:,} bytes)"
        value /= 1024
    raise AssertionError("unreachable")


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], right: Iterable[int] = ()) -> str:
    """Rows aligned under their headers; columns listed in ``right`` are right-aligned."""
    rows = [list(r) for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    aligned = set(right)

    def line(cells: Sequence[str]) -> str:
        out = [
            c.rjust(w) if i in aligned else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _cell(value: Any) -> str:
    if value is None:
        text = "null"
    elif isinstance(value, dict | list | tuple):
        text = json.dumps(_jsonable(value), ensure_ascii=False)
    elif isinstance(value, bytes):
        text = "0x" + value.hex()
    else:
        text = str(value)
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 3] + "..."


def _jsonable(value: Any) -> Any:
    """Arrow's Python values as JSON: times in ISO-8601, decimals as strings, binary as base64."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        # pyarrow returns maps as lists of (key, value) tuples
        return [_jsonable(v) for v in value]
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):  # NaN and infinities are not JSON
        return str(value)
    return value


def _schema_tree(schema: StructType) -> list[str]:
    """Spark's ``printSchema`` layout: ``root`` then `` |-- name: type (nullable = true)``."""
    lines = ["root"]

    def visit(data_type: DataType, depth: int) -> None:
        prefix = " |   " * depth + " |-- "
        if isinstance(data_type, StructType):
            for f in data_type:
                lines.append(f"{prefix}{f.name}: {_type_name(f.type)} (nullable = {str(f.nullable).lower()})")
                visit(f.type, depth + 1)
        elif isinstance(data_type, ArrayType):
            lines.append(
                f"{prefix}element: {_type_name(data_type.element_type)} "
                f"(containsNull = {str(data_type.contains_null).lower()})"
            )
            visit(data_type.element_type, depth + 1)
        elif isinstance(data_type, MapType):
            lines.append(f"{prefix}key: {_type_name(data_type.key_type)}")
            visit(data_type.key_type, depth + 1)
            lines.append(
                f"{prefix}value: {_type_name(data_type.value_type)} "
                f"(valueContainsNull = {str(data_type.value_contains_null).lower()})"
            )
            visit(data_type.value_type, depth + 1)

    visit(schema, 0)
    return lines


def _type_name(data_type: DataType) -> str:
    for nested, name in ((StructType, "struct"), (ArrayType, "array"), (MapType, "map")):
        if isinstance(data_type, nested):
            return name
    return data_type.simple_string()


def _emit(args: argparse.Namespace, payload: Any, human: Callable[[], str]) -> None:
    print(json.dumps(payload, indent=2, ensure_ascii=False) if args.json else human())


# --------------------------------------------------------------------------- subcommands
def _load(args: argparse.Namespace) -> DeltaTable:
    return DeltaTable(args.location, version=args.version, timestamp=args.timestamp)


def _last_commit(table: DeltaTable) -> dict[str, Any] | None:
    entries = table.history(limit=1)
    return entries[0] if entries and entries[0]["version"] == table.version else None


def _describe(args: argparse.Namespace) -> None:
    table = _load(args)
    files = table.files()
    size = sum(f.size for f in files)
    protocol, metadata = table.protocol, table.metadata
    commit = _last_commit(table)
    payload = {
        "location": table.location,
        "version": table.version,
        "id": metadata.id,
        "name": metadata.name,
        "description": metadata.description,
        "protocol": protocol.to_dict(),
        "partition_columns": list(table.partition_columns),
        "schema": table.schema.to_json_value(),
        "configuration": dict(table.configuration),
        "num_files": len(files),
        "size_bytes": size,
        "last_commit": commit,
    }

    def human() -> str:
        rows = [
            ("Location", table.location),
            ("Version", str(table.version)),
            ("Table id", metadata.id),
        ]
        rows += [("Name", metadata.name)] if metadata.name else []
        rows += [("Description", metadata.description)] if metadata.description else []
        rows.append(
            ("Protocol", f"reader {protocol.min_reader_version}, writer {protocol.min_writer_version}")
        )
        if protocol.reader_features is not None:
            rows.append(("Reader features", ", ".join(sorted(protocol.reader_features)) or "-"))
        if protocol.writer_features is not None:
            rows.append(("Writer features", ", ".join(sorted(protocol.writer_features)) or "-"))
        rows += [
            ("Partition columns", ", ".join(table.partition_columns) or "-"),
            ("Files", f"{len(files):,} files, {_size_text(size)}"),
            ("Last commit", _commit_summary(commit)),
        ]
        width = max(len(k) for k, _ in rows)
        lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
        lines.append("Table properties" if table.configuration else f"{'Table properties'.ljust(width)}  -")
        lines += [f"  {k} = {v}" for k, v in sorted(table.configuration.items())]
        lines += ["Schema", *_schema_tree(table.schema)]
        return "\n".join(lines)

    _emit(args, payload, human)


def _commit_summary(commit: dict[str, Any] | None) -> str:
    if commit is None:
        return "- (commit file cleaned up)"
    engine = commit.get("engineInfo") or commit.get("clientVersion")
    text = f"{_timestamp_text(commit.get('timestamp'))}  {commit.get('operation') or '-'}"
    return f"{text}  ({engine})" if engine else text


def _history(args: argparse.Namespace) -> None:
    entries = _load(args).history(limit=args.limit)

    def human() -> str:
        rows = [
            (
                str(e["version"]),
                _timestamp_text(e.get("timestamp")),
                str(e.get("operation") or "-"),
                _params_text(e.get("operationParameters")),
                str(e.get("engineInfo") or e.get("clientVersion") or "-"),
            )
            for e in entries
        ]
        return _table(("VERSION", "TIMESTAMP", "OPERATION", "PARAMETERS", "ENGINE"), rows, right=(0,))

    _emit(args, entries, human)


def _params_text(params: Any) -> str:
    if not params:
        return "-"
    text = ", ".join(f"{k}={v}" for k, v in params.items()) if isinstance(params, dict) else str(params)
    return text if len(text) <= 60 else text[:57] + "..."


def _files(args: argparse.Namespace) -> None:
    table = _load(args)
    files = sorted(table.files(), key=lambda f: f.path)
    payload = [
        {
            "path": f.path,
            "size": f.size,
            "modification_time": f.modification_time,
            "partition_values": dict(f.partition_values),
            "num_records": f.num_records,
            "deleted_rows": (f.deletion_vector or {}).get("cardinality"),
        }
        for f in files
    ]

    def count(value: int | None) -> str:
        return "-" if value is None else f"{value:,}"

    def human() -> str:
        rows = [
            (
                f.path,
                f"{f.size:,}",
                count(f.num_records),
                count((f.deletion_vector or {}).get("cardinality")),
                ", ".join(f"{k}={v}" for k, v in f.partition_values.items()) or "-",
            )
            for f in files
        ]
        total = f"{len(files):,} files, {_size_text(sum(f.size for f in files))} at version {table.version}"
        headers = ("PATH", "SIZE", "RECORDS", "DELETED", "PARTITION")
        return _table(headers, rows, right=(1, 2, 3)) + "\n" + total

    _emit(args, payload, human)


def _version(args: argparse.Namespace) -> None:
    if args.version is None and args.timestamp is None:
        version = DeltaTable.latest_version(args.location)
    else:
        version = _load(args).version
    _emit(args, {"location": args.location, "version": version}, lambda: str(version))


def _head(args: argparse.Namespace) -> None:
    table = _load(args)
    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    data = table.to_arrow(columns=columns, filter=args.filter)
    rows = data.slice(0, args.n).to_pylist()
    names = data.column_names

    def human() -> str:
        body = [[_cell(row[name]) for name in names] for row in rows]
        numeric = [
            i
            for i, f in enumerate(data.schema)
            if pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_decimal(f.type)
        ]
        shown = f"{len(rows)} of {data.num_rows:,} rows at version {table.version}"
        return (_table(names, body, right=numeric) + "\n" if names else "") + shown

    _emit(args, [{k: _jsonable(v) for k, v in row.items()} for row in rows], human)


# --------------------------------------------------------------------------- maintenance
def _maintained(args: argparse.Namespace, operation: str) -> DeltaTable:
    from airflow_provider_delta.core.commands.maintenance import load_table_for  # only these commands need it

    load_table_for(args.location, operation)  # Delta's error for a path that is not a table
    return DeltaTable(args.location)


def _vacuum(args: argparse.Namespace) -> None:
    table = _maintained(args, "VACUUM")
    result = table.vacuum(
        args.retention_hours, dry_run=args.dry_run, lite=args.lite,
        enforce_retention_duration=not args.no_enforce_retention,
    )
    metrics = result.metrics

    def human() -> str:
        size = _size_text(int(metrics["sizeOfDataToDelete"]))
        if result.dry_run:
            lines = [*result.files, f"VACUUM {result.mode} DRY RUN of {table.location}: {len(result.files):,} "
                     f"files and folders would be deleted ({size})"]
            return "\n".join(lines)
        return (
            f"VACUUM {result.mode} of {table.location}: deleted {metrics['numDeletedFiles']:,} files and "
            f"folders ({size}); history: VACUUM START at version {result.start_version}, VACUUM END at "
            f"version {result.end_version}"
        )

    _emit(args, {"location": table.location, **result.to_dict()}, human)


def _rewrite_summary(operation: str, location: str, result: dict[str, Any]) -> str:
    if result.get("version") is None:
        return f"{operation} of {location}: nothing to rewrite ({result['totalConsideredFiles']:,} files considered)"
    return (
        f"{operation} of {location}: {result['numRemovedFiles']:,} files rewritten into "
        f"{result['numAddedFiles']:,} ({_size_text(int(result['numRemovedBytes']))} -> "
        f"{_size_text(int(result['numAddedBytes']))}), {result['numDeletionVectorsRemoved']:,} deletion vectors "
        f"removed; committed version {result['version']}"
    )


def _dry_run_summary(operation: str, location: str, plan: dict[str, Any]) -> str:
    lines = [
        f"bin {i + 1}: " + ", ".join(paths) for i, paths in enumerate(plan["bins"])
    ]
    lines.append(
        f"{operation} DRY RUN of {location}: {plan['numFilesToRewrite']:,} of {plan['totalConsideredFiles']:,} "
        f"files ({_size_text(int(plan['sizeOfFilesToRewrite']))}) would be rewritten in {plan['numBins']:,} bins"
    )
    return "\n".join(lines)


def _optimize(args: argparse.Namespace) -> None:
    table = _maintained(args, "OPTIMIZE")
    zorder = [c.strip() for c in args.zorder_by.split(",") if c.strip()] if args.zorder_by else None
    if args.dry_run:
        from airflow_provider_delta.core.commands.optimize.command import plan_optimize
        from airflow_provider_delta.core.commands.optimize.rewrite import describe_request

        request = plan_optimize(table.snapshot, args.where, target_file_size=args.target_file_size, zorder_by=zorder)
        plan = {"location": table.location, "dryRun": True, **describe_request(request)}
        _emit(args, plan, lambda: _dry_run_summary("OPTIMIZE", table.location, plan))
        return
    result = table.optimize(args.where, target_file_size=args.target_file_size, zorder_by=zorder)
    _emit(args, {"location": table.location, **result}, lambda: _rewrite_summary("OPTIMIZE", table.location, result))


def _reorg(args: argparse.Namespace) -> None:
    table = _maintained(args, "REORG")
    if args.dry_run:
        from airflow_provider_delta.core.commands.optimize.rewrite import describe_request
        from airflow_provider_delta.core.commands.reorg import plan_reorg

        plan = {"location": table.location, "dryRun": True, **describe_request(plan_reorg(table.snapshot, args.where))}
        _emit(args, plan, lambda: _dry_run_summary("REORG", table.location, plan))
        return
    result = table.reorg(args.where)
    _emit(args, {"location": table.location, **result}, lambda: _rewrite_summary("REORG", table.location, result))


# --------------------------------------------------------------------------- argument parsing
def _timestamp_arg(text: str) -> int | str:
    """Epoch milliseconds when all digits, else a date/time string for the engine to parse."""
    return int(text) if text.isdigit() else text


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, found {text!r}")
    return value


def _hours(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of hours, found {text!r}") from None


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, found {text!r}")
    return value


def _maintenance_parsers(sub: Any) -> None:
    """``vacuum``, ``optimize`` and ``reorg``: the newest version, ``--dry-run``, ``--json``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("location", help="table path or URI (file:///..., /data/t)")
    common.add_argument("--dry-run", action="store_true", help="plan only: delete, write and commit nothing")
    common.add_argument("--json", action="store_true", help="print machine-readable JSON")
    vacuum = sub.add_parser("vacuum", parents=[common], help="delete files no version within the retention needs")
    vacuum.add_argument(
        "--retention-hours", type=_hours, metavar="H",
        help="keep files removed within H hours (default: delta.deletedFileRetentionDuration, 7 days)",
    )
    vacuum.add_argument("--lite", action="store_true", help="candidates from the log since the last VACUUM")
    vacuum.add_argument(
        "--no-enforce-retention", action="store_true",
        help="allow a retention below the table's (only when no writer is running)",
    )
    optimize = sub.add_parser("optimize", parents=[common], help="compact small files, or ZORDER BY columns")
    optimize.add_argument("--where", metavar="SQL", help="partition predicate, e.g. \"date >= '2024-01-01'\"")
    optimize.add_argument("--target-file-size", type=_positive, metavar="BYTES", help="default: 1 GiB")
    optimize.add_argument("--zorder-by", metavar="A,B", help="comma-separated data columns to cluster by")
    reorg = sub.add_parser("reorg", parents=[common], help="REORG ... APPLY (PURGE): drop soft-deleted rows")
    reorg.add_argument("--where", metavar="SQL", help="partition predicate")


def build_parser() -> argparse.ArgumentParser:
    """The ``delta-log`` argument parser."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("location", help="table path or URI (file:///..., /data/t)")
    travel = common.add_mutually_exclusive_group()
    travel.add_argument("--version", type=_non_negative, metavar="N", help="load version N")
    travel.add_argument(
        "--timestamp",
        type=_timestamp_arg,
        metavar="TS",
        help="load the version current at TS (epoch ms, 'yyyy-MM-dd[ HH:mm:ss]' or ISO-8601; naive = UTC)",
    )
    common.add_argument("--json", action="store_true", help="print machine-readable JSON")

    parser = argparse.ArgumentParser(prog=PROG, description="Inspect Delta tables from a shell.")
    parser.add_argument("-V", "--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("describe", parents=[common], help="protocol, schema, partitioning, properties, size")
    history = sub.add_parser("history", parents=[common], help="commits, newest first")
    history.add_argument("--limit", type=_non_negative, metavar="N", help="show at most N commits")
    sub.add_parser("files", parents=[common], help="active data files")
    sub.add_parser("version", parents=[common], help="the table's version (latest unless time travelling)")
    head = sub.add_parser("head", parents=[common], help="the first rows")
    head.add_argument("-n", type=_non_negative, default=10, metavar="N", help="number of rows (default 10)")
    head.add_argument("--columns", metavar="A,B", help="comma-separated columns to show")
    head.add_argument("--filter", metavar="SQL", help="SQL predicate, e.g. \"part = 'p1' AND id > 3\"")
    _maintenance_parsers(sub)
    return parser


_COMMANDS: dict[str, Callable[[argparse.Namespace], None]] = {
    "describe": _describe,
    "history": _history,
    "files": _files,
    "version": _version,
    "head": _head,
    "vacuum": _vacuum,
    "optimize": _optimize,
    "reorg": _reorg,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``delta-log``; returns the exit status (0 on success, 2 on an error)."""
    args = build_parser().parse_args(argv)
    try:
        _COMMANDS[args.command](args)
        sys.stdout.flush()
    except DeltaError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # `delta-log files t | head`: the reader went away. Point stdout at /dev/null so that the
        # interpreter's final flush does not fail again (Python docs, "Note on SIGPIPE").
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())

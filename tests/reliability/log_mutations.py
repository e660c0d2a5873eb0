"""Mutations of real Delta logs, each saying whether the mutated log is still valid and why.

A mutator takes a copy of a conformance table, a seeded ``random.Random`` and the folder beside the
table that holds the *sentinels* (a data file and a deletion-vector file outside the table, which
no read may open), changes one thing, and returns a :class:`Mutation`:

- ``expect="error"``: the log is malformed; loading and reading must end in a ``DeltaError`` that
  names the table, a version and the file at fault;
- ``expect="valid"``: the protocol says the log is still valid (``reason`` says why); the table must
  load and read, with the original rows when ``same_rows``;
- ``expect="either"``: the change may or may not be meaningful (a flipped digit, a cut that fell on
  a line boundary); a typed error and a successful read are both fine, and the test logs which one
  happened and why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    import random
    from collections.abc import Callable

Expect = Literal["error", "valid", "either"]
_COMMIT = re.compile(r"^(\d{20})\.json$")


@dataclass
class Mutation:
    """What a mutator did (``names``: file names an error message may cite as the file at fault)."""

    name: str
    file: str
    version: int | None
    expect: Expect
    reason: str = ""
    same_rows: bool = False
    names: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------ helpers


def log_dir(table: Path) -> Path:
    return table / "_delta_log"


def commits(table: Path) -> list[Path]:
    return sorted(p for p in log_dir(table).iterdir() if _COMMIT.match(p.name))


def checkpoints(table: Path) -> list[Path]:
    return sorted(p for p in log_dir(table).iterdir() if ".checkpoint." in p.name and p.suffix == ".parquet")


def version_of(path: Path) -> int:
    return int(path.name[:20])


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write_lines(path: Path, actions: list[Any]) -> None:
    path.write_text("".join(json.dumps(a) + "\n" for a in actions))


def _well_formed(data: bytes) -> bool:
    """Whether ``data`` is newline-delimited JSON objects (what a commit must be)."""
    try:
        return all(isinstance(json.loads(line), dict) for line in data.splitlines() if line.strip())
    except ValueError:
        return False


def _action_lines(path: Path, *kinds: str) -> list[int]:
    return [i for i, a in enumerate(_lines(path)) if any(k in a for k in kinds)]


def _commit_with(table: Path, rng: random.Random, *kinds: str) -> tuple[Path, int] | None:
    """A random commit holding an action of one of ``kinds``, and that action's line index."""
    candidates = [(c, i) for c in commits(table) for i in _action_lines(c, *kinds)]
    return rng.choice(candidates) if candidates else None


def _mutated_action(
    table: Path, rng: random.Random, kinds: tuple[str, ...], change: Callable[[dict[str, Any]], None]
) -> tuple[Path, str] | None:
    found = _commit_with(table, rng, *kinds)
    if found is None:
        return None
    path, index = found
    actions = _lines(path)
    kind = next(k for k in kinds if k in actions[index])
    change(actions[index][kind])
    _write_lines(path, actions)
    return path, kind


def _mutation(name: str, path: Path, expect: Expect, reason: str = "", **kwargs: Any) -> Mutation:
    version = version_of(path) if path.name[:1].isdigit() else None
    names = kwargs.pop("names", ())
    return Mutation(name, path.name, version, expect, reason, names=(path.name, *names), **kwargs)


# ----------------------------------------------------------------------------------- commit bytes


def truncate_commit(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    path = rng.choice(commits(table))
    data = path.read_bytes()
    cut = rng.randrange(1, len(data))
    path.write_bytes(data[:cut])
    if _well_formed(data[:cut]):
        return _mutation(
            "truncate-commit",
            path,
            "either",
            "the cut fell on a line boundary: a shorter, well-formed commit",
            details={"cut": cut},
        )
    return _mutation("truncate-commit", path, "error", details={"cut": cut})


def corrupt_commit_byte(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    path = rng.choice(commits(table))
    data = bytearray(path.read_bytes())
    at = rng.randrange(len(data))
    data[at] = rng.choice([0x00, 0xFF, 0xC3, ord("{"), ord('"'), ord("9"), ord("\n"), rng.randrange(256)])
    path.write_bytes(bytes(data))
    if _well_formed(bytes(data)):
        return _mutation(
            "corrupt-commit-byte",
            path,
            "either",
            "the changed byte left well-formed JSON: a different commit",
            details={"at": at},
        )
    return _mutation("corrupt-commit-byte", path, "error", details={"at": at})


def non_object_line(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    path = rng.choice(commits(table))
    lines = path.read_text().splitlines()
    lines.insert(rng.randrange(len(lines) + 1), rng.choice(["[1, 2]", '"add"', "42", "null", "true", "[]"]))
    path.write_text("\n".join(lines) + "\n")
    return _mutation("non-object-line", path, "error")


def unknown_action(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    path = rng.choice(commits(table))
    actions = _lines(path)
    name = rng.choice(["futureAction", "checkpointHint", "zOrderInfo", "x"])
    actions.insert(rng.randrange(len(actions) + 1), {name: {"a": 1, "nested": {"b": [1, 2]}}})
    _write_lines(path, actions)
    return _mutation(
        "unknown-action",
        path,
        "valid",
        "PROTOCOL.md: readers ignore actions they do not know",
        same_rows=True,
    )


def unknown_field(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    def change(action: dict[str, Any]) -> None:
        action[rng.choice(["futureField", "zz", "extendedFileMetadataV2"])] = {"x": [1, None, "y"]}

    kinds = ("add", "remove", "metaData", "protocol", "commitInfo", "txn", "cdc")
    done = _mutated_action(table, rng, kinds, change)
    if done is None:
        return None
    return _mutation(
        "unknown-field",
        done[0],
        "valid",
        f"PROTOCOL.md: readers ignore unknown fields ({done[1]})",
        same_rows=True,
    )


# ---------------------------------------------------------------------------------- action fields

_REQUIRED = {
    "add": ["path", "size", "partitionValues", "modificationTime", "dataChange"],
    "remove": ["path"],
    "metaData": ["id", "schemaString", "partitionColumns", "format"],
    "protocol": ["minReaderVersion", "minWriterVersion"],
    "cdc": ["path", "size", "partitionValues"],
}
_NEEDED_TO_READ = {
    "add.path",
    "remove.path",
    "cdc.path",
    "metaData.schemaString",
    "metaData.partitionColumns",
    "protocol.minReaderVersion",
}
_OPTIONAL = {
    "add": ["stats", "tags"],
    "remove": ["deletionTimestamp", "size", "extendedFileMetadata"],
    "metaData": ["name", "description", "createdTime"],
}
_WRONG_VALUES: list[Any] = [5, -1, "x", "", None, [], {}, True, 1.5, 2**70]


def missing_field(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    optional = rng.random() < 0.3
    fields_of = _OPTIONAL if optional else _REQUIRED
    found = _commit_with(table, rng, *fields_of)
    if found is None:
        return None
    path, index = found
    actions = _lines(path)
    kind = next(k for k in fields_of if k in actions[index])
    present = [f for f in fields_of[kind] if f in actions[index][kind]]
    if not present:
        return None
    key = rng.choice(present)
    del actions[index][kind][key]
    _write_lines(path, actions)
    if optional:
        return _mutation(
            "missing-optional-field",
            path,
            "valid",
            f"PROTOCOL.md: {kind}.{key} is optional",
            same_rows=True,
            details={"field": f"{kind}.{key}"},
        )
    if f"{kind}.{key}" not in _NEEDED_TO_READ:
        return _mutation(
            "missing-required-field",
            path,
            "either",
            f"PROTOCOL.md requires {kind}.{key}, but reading does not need it (a lenient reader defaults it)",
            details={"field": f"{kind}.{key}"},
        )
    return _mutation("missing-required-field", path, "error", details={"field": f"{kind}.{key}"})


def wrong_field_type(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    kinds = ("add", "remove", "metaData", "protocol")
    found = _commit_with(table, rng, *kinds)
    if found is None:
        return None
    path, index = found
    actions = _lines(path)
    kind = next(k for k in kinds if k in actions[index])
    key = rng.choice(_REQUIRED[kind] + ["deletionVector", "stats", "configuration", "readerFeatures"])
    current = actions[index][kind].get(key)
    value = rng.choice([v for v in _WRONG_VALUES if type(v) is not type(current) or v != current])
    actions[index][kind][key] = value
    _write_lines(path, actions)
    # Optional fields set to null, and values a lenient reader can take as they are, may be fine.
    return _mutation(
        "wrong-field-type",
        path,
        "either",
        f"{kind}.{key} = {value!r}: null or a coercible value can be read",
        details={"field": key},
    )


def absurd_number(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    choices = [
        ("add", "size", [-1, -(2**63), 2**63 - 1, 2**64]),
        ("add", "modificationTime", [-5, 2**63 - 1, 2**64]),
        ("protocol", "minReaderVersion", [-1, 0, 2**31, 2**64, 99]),
        ("protocol", "minWriterVersion", [-1, 2**64]),
        ("remove", "deletionTimestamp", [-1, 2**64]),
    ]
    kind, key, values = rng.choice(choices)

    def change(action: dict[str, Any]) -> None:
        action[key] = rng.choice(values)

    done = _mutated_action(table, rng, (kind,), change)
    if done is None:
        return None
    return _mutation(
        "absurd-number",
        done[0],
        "either",
        f"{kind}.{key}: sizes and times are not needed to read; versions are checked",
    )


def absurd_stats(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    def change(action: dict[str, Any]) -> None:
        action["stats"] = rng.choice(
            [
                json.dumps({"numRecords": -3}),
                json.dumps({"numRecords": 2**70, "minValues": {"nope": 1}}),
                json.dumps({"numRecords": "many", "nullCount": []}),
                "{not json",
                json.dumps([1, 2]),
            ]
        )

    done = _mutated_action(table, rng, ("add",), change)
    if done is None:
        return None
    return _mutation(
        "absurd-stats",
        done[0],
        "either",
        "statistics only skip files; unusable ones may be ignored (the file is then read)",
    )


# ------------------------------------------------------------------------------ partition values


def bad_partition_value(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    found = _commit_with(table, rng, "add")
    if found is None:
        return None
    path, index = found
    actions = _lines(path)
    add = actions[index]["add"]
    if not add.get("partitionValues"):
        return None
    key = rng.choice(sorted(add["partitionValues"]))
    add["partitionValues"][key] = rng.choice(["not-a-number", "2020-13-45", "1e999", "\x00", "9" * 60, "{}"])
    _write_lines(path, actions)
    return _mutation(
        "bad-partition-value",
        path,
        "either",
        "a string partition column takes any value; a typed one must refuse it",
        names=(add["path"],),
        details={"column": key},
    )


# --------------------------------------------------------------------------------- escaping paths


def _escaping_paths(table: Path, sentinels: Path) -> list[str]:
    secret = sentinels / "secret.parquet"
    rel = Path("..") / sentinels.name / "secret.parquet"
    return [
        rel.as_posix(),
        f"part/../{rel.as_posix()}",
        "%2E%2E/" + sentinels.name + "/secret.parquet",
        str(secret),
        secret.as_uri(),
        "file:" + str(secret),
        "s3://bucket/secret.parquet",
        "hdfs://namenode/secret.parquet",
        "abfss://c@a.dfs.core.windows.net/secret.parquet",
        "../../../../../../../../etc/hostname",
    ]


def escaping_data_path(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    target = rng.choice(_escaping_paths(table, sentinels))
    found = _commit_with(table, rng, "add")
    if found is None:
        return None
    path, index = found
    actions = _lines(path)
    original = actions[index]["add"]["path"]
    actions[index]["add"]["path"] = target
    # The matching removes of later commits would keep naming the old path: point them at it too.
    _write_lines(path, actions)
    for later in commits(table):
        if version_of(later) > version_of(path):
            lines = _lines(later)
            for a in lines:
                for kind in ("add", "remove"):
                    if kind in a and a[kind].get("path") == original:
                        a[kind]["path"] = target
            _write_lines(later, lines)
    return _mutation(
        "escaping-data-path",
        path,
        "either",
        "a removed file is never opened; an active one must be refused",
        names=(target,),
        details={"path": target},
    )


def escaping_change_path(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    target = rng.choice(_escaping_paths(table, sentinels))

    def change(action: dict[str, Any]) -> None:
        action["path"] = target

    done = _mutated_action(table, rng, ("cdc",), change)
    if done is None:
        return None
    return _mutation("escaping-change-path", done[0], "error", names=(target,), details={"path": target})


# ------------------------------------------------------------------------------ deletion vectors


def bad_deletion_vector(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    candidates = [
        (c, i)
        for c in commits(table)
        for i, a in enumerate(_lines(c))
        if (a.get("add") or {}).get("deletionVector")
    ]
    if not candidates:
        return None
    path, index = rng.choice(candidates)
    actions = _lines(path)
    dv = actions[index]["add"]["deletionVector"]
    secret = sentinels / "secret.bin"
    change = rng.choice(["offset", "size", "cardinality", "storage", "prefix", "absolute", "inline", "uuid"])
    if change == "offset":
        dv["offset"] = rng.choice([10**9, 2**31 - 1, 3])
    elif change == "size":
        dv["sizeInBytes"] = rng.choice([10**9, 2**31 - 1, 0, 3])
    elif change == "cardinality":
        dv["cardinality"] = dv["cardinality"] + rng.choice([1, 100, -1])
    elif change == "storage":
        dv["storageType"] = rng.choice(["x", "", "U"])
    elif change == "prefix" and dv["storageType"] == "u":
        dv["pathOrInlineDv"] = "../" + dv["pathOrInlineDv"]
    elif change == "absolute":
        dv.update(storageType="p", pathOrInlineDv=rng.choice([str(secret), secret.as_uri()]))
        dv.setdefault("offset", 1)
    elif change == "inline":
        dv.update(storageType="i", pathOrInlineDv=rng.choice(["abc", "HelloWorld", "~~~~~", "0" * 40]))
        dv.pop("offset", None)
    else:
        dv["pathOrInlineDv"] = rng.choice(["tooshort", "~" * 20, "0" * 20])
    _write_lines(path, actions)
    return _mutation(
        "bad-deletion-vector",
        path,
        "either",
        "a descriptor change that still decodes to the same rows is harmless",
        names=(actions[index]["add"]["path"], str(secret)),
        details={"change": change},
    )


# ---------------------------------------------------------------------------------- log structure


def drop_commit(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    all_commits = commits(table)
    path = rng.choice(all_commits)
    path.unlink()
    latest = version_of(all_commits[-1])
    covered = [version_of(c) for c in checkpoints(table) if version_of(c) >= version_of(path)]
    if version_of(path) == latest:
        return _mutation(
            "drop-commit", path, "either", "the newest commit gone: the table is a version older"
        )
    if covered:
        return _mutation(
            "drop-commit",
            path,
            "either",
            f"checkpoint {covered[0]} covers the missing commit for later versions",
        )
    return _mutation("drop-commit", path, "error")


def version_gap(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    latest = commits(table)[-1]
    target = log_dir(table) / f"{version_of(latest) + rng.choice([2, 3, 1000, 10**12]):020d}.json"
    target.write_bytes(latest.read_bytes())
    return _mutation("version-gap", target, "error", names=(latest.name,))


def huge_version(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    latest = commits(table)[-1]
    target = log_dir(table) / f"{rng.choice([10**19, 99999999999999999999, 2**63 - 1, 2**63]):020d}.json"
    target.write_bytes(latest.read_bytes())
    return _mutation("huge-version", target, "error")


def duplicate_commit(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    source = rng.choice(commits(table))
    target = log_dir(table) / f"{version_of(commits(table)[-1]) + 1:020d}.json"
    target.write_bytes(source.read_bytes())
    return _mutation(
        "duplicate-commit",
        target,
        "either",
        f"commit {version_of(source)} repeated as the next version: adds of live paths replace "
        "them, so a well-formed log may follow",
        names=(source.name,),
    )


def drop_protocol_and_metadata(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    if checkpoints(table):
        return None
    kind = rng.choice(["protocol", "metaData"])
    touched = None
    for path in commits(table):
        actions = _lines(path)
        kept = [a for a in actions if kind not in a]
        if len(kept) != len(actions):
            _write_lines(path, kept)
            touched = path
    if touched is None:
        return None
    return _mutation("drop-" + kind, touched, "error")


# ------------------------------------------------------------------------------ _last_checkpoint


def stale_last_checkpoint(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    hint = log_dir(table) / "_last_checkpoint"
    latest = version_of(commits(table)[-1])
    body = rng.choice(
        [
            {"version": rng.randrange(0, latest + 5), "size": 3},
            {"version": rng.randrange(0, latest + 5), "size": 3, "parts": rng.choice([2, 5, 10**6])},
            {"version": 10**30},
            {"version": -4},
            {"version": "7"},
            {"size": 3},
            [1, 2],
        ]
    )
    hint.write_text(json.dumps(body))
    return _mutation(
        "stale-last-checkpoint",
        hint,
        "valid",
        "PROTOCOL.md: _last_checkpoint is a hint; readers list the log when it is wrong",
        same_rows=True,
        details={"body": body},
    )


def garbage_last_checkpoint(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    hint = log_dir(table) / "_last_checkpoint"
    hint.write_bytes(rng.choice([b"", b"{", b"\x00\xff" * 10, b'{"version": 1', b"null"]))
    return _mutation(
        "garbage-last-checkpoint",
        hint,
        "valid",
        "PROTOCOL.md: _last_checkpoint is a hint; an unreadable one is ignored",
        same_rows=True,
    )


# ----------------------------------------------------------------------------------- checkpoints


def truncate_checkpoint(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    found = checkpoints(table)
    if not found:
        return None
    path = rng.choice(found)
    data = path.read_bytes()
    path.write_bytes(data[: rng.randrange(0, len(data))])
    return _mutation("truncate-checkpoint", path, "error")


def checkpoint_without_column(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    found = checkpoints(table)
    if not found:
        return None
    path = rng.choice(found)
    data = pq.read_table(path)
    column = rng.choice(data.column_names)
    pq.write_table(data.drop_columns([column]), path)
    if column in ("protocol", "metaData"):
        # The other part of a multi-part checkpoint may still hold it.
        return _mutation(
            "checkpoint-without-column",
            path,
            "either",
            "a multi-part checkpoint's other part may hold the action",
            details={"column": column},
        )
    if column in ("add",):
        return _mutation(
            "checkpoint-without-column",
            path,
            "either",
            "a checkpoint without add files describes an empty table",
            details={"column": column},
        )
    return _mutation(
        "checkpoint-without-column",
        path,
        "either",
        f"PROTOCOL.md: {column} rows are optional in a checkpoint",
        details={"column": column},
    )


def checkpoint_with_bad_values(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    found = checkpoints(table)
    if not found:
        return None
    path = rng.choice(found)
    data = pq.read_table(path)
    if "add" not in data.column_names:
        return None
    rows = data.to_pylist()
    adds = [r for r in rows if r.get("add")]
    if not adds:
        return None
    target = rng.choice(adds)["add"]
    change = rng.choice(["path", "size", "partition"])
    if change == "path":
        target["path"] = rng.choice(_escaping_paths(table, sentinels))
    elif change == "size":
        target["size"] = rng.choice([-1, -(2**63)])
    else:
        target["partitionValues"] = [("nope", "x")]
    pq.write_table(pa.Table.from_pylist(rows, schema=data.schema), path)
    return _mutation(
        "checkpoint-bad-values",
        path,
        "either",
        "sizes and unknown partition keys are not needed to read; an escaping path is refused",
        names=(str(target["path"]),),
        details={"change": change},
    )


def _stats_struct(stats: list[str | None]) -> pa.Array:
    """``stats_parsed`` from JSON stats: the same numbers as a struct (Arrow infers the field types)."""
    parsed = [json.loads(s) if s else None for s in stats]
    return pa.array([{k: v for k, v in p.items() if k in ("numRecords", "minValues", "maxValues", "nullCount")}
                     if p else None for p in parsed])


def _partitions_struct(values: list[Any], schema: dict[str, pa.DataType]) -> pa.Array:
    """``partitionValues_parsed`` from the ``partitionValues`` maps, typed by the partition columns."""
    columns = {name: [None if v is None else dict(v).get(name) for v in values] for name in schema}
    arrays = []
    for name, typ in schema.items():
        text = pa.array(columns[name], pa.string())
        try:
            arrays.append(text.cast(typ))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            arrays.append(text)
    return pa.StructArray.from_arrays(arrays, names=list(schema)) if arrays else pa.nulls(len(values), pa.struct([]))


def restat_checkpoint(
    path: Path, *, json_stats: bool, parsed_stats: bool, parsed_partitions: bool,
    partition_types: dict[str, pa.DataType],
) -> None:
    """Rewrite one checkpoint part's ``add`` column with the chosen stats and partition value forms.

    PROTOCOL.md "Checkpoint Schema": ``stats`` (JSON), ``stats_parsed`` and ``partitionValues_parsed``
    are each optional (``delta.checkpoint.writeStatsAsJson`` / ``writeStatsAsStruct``); a reader must
    take whichever is there.
    """
    data = pq.read_table(path)
    if "add" not in data.column_names:
        return
    add = data.column("add").combine_chunks()
    names = [f.name for f in add.type if f.name not in ("stats", "stats_parsed", "partitionValues_parsed")]
    arrays = [add.field(n) for n in names]
    stats = add.field("stats").to_pylist() if "stats" in {f.name for f in add.type} else [None] * len(add)
    if json_stats:
        names.append("stats")
        arrays.append(pa.array(stats, pa.string()))
    if parsed_stats and any(stats):
        names.append("stats_parsed")
        arrays.append(_stats_struct(stats))
    if parsed_partitions and partition_types:
        names.append("partitionValues_parsed")
        arrays.append(_partitions_struct(add.field("partitionValues").to_pylist(), partition_types))
    rebuilt = pa.StructArray.from_arrays(arrays, names=names, mask=add.is_null())
    pq.write_table(data.set_column(data.column_names.index("add"), "add", rebuilt), path)


def add_empty_checkpoint_part(table: Path) -> None:
    """Split the newest checkpoint into parts with one empty part (a part without row groups' rows)."""
    found = [p for p in checkpoints(table) if p.name.count(".") == 2]
    if not found:
        return
    single = found[-1]
    data = pq.read_table(single)
    version = version_of(single)
    single.unlink()
    parts = [data.slice(0, 0), data]
    for i, part in enumerate(parts, start=1):
        pq.write_table(part, log_dir(table) / f"{version:020d}.checkpoint.{i:010d}.{len(parts):010d}.parquet")
    hint = log_dir(table) / "_last_checkpoint"
    if hint.exists():
        info = json.loads(hint.read_text())
        info["parts"] = len(parts)
        hint.write_text(json.dumps(info))


def checkpoint_stats_forms(table: Path, rng: random.Random, sentinels: Path) -> Mutation | None:
    found = checkpoints(table)
    if not found:
        return None
    if rng.random() < 0.5:
        add_empty_checkpoint_part(table)
    json_stats, parsed_stats = rng.choice([(False, True), (True, True), (False, False)])
    for part in checkpoints(table):
        restat_checkpoint(part, json_stats=json_stats, parsed_stats=parsed_stats, parsed_partitions=False,
                          partition_types={})
    return _mutation("checkpoint-stats-forms", checkpoints(table)[0], "valid",
                     "PROTOCOL.md: stats, stats_parsed and empty checkpoint parts are all allowed", same_rows=True,
                     details={"json_stats": json_stats, "parsed_stats": parsed_stats})


MUTATORS: dict[str, Callable[[Path, random.Random, Path], Mutation | None]] = {
    f.__name__.replace("_", "-"): f
    for f in [
        truncate_commit,
        corrupt_commit_byte,
        non_object_line,
        unknown_action,
        unknown_field,
        missing_field,
        wrong_field_type,
        absurd_number,
        absurd_stats,
        bad_partition_value,
        escaping_data_path,
        escaping_change_path,
        bad_deletion_vector,
        drop_commit,
        version_gap,
        huge_version,
        duplicate_commit,
        drop_protocol_and_metadata,
        stale_last_checkpoint,
        garbage_last_checkpoint,
        truncate_checkpoint,
        checkpoint_without_column,
        checkpoint_with_bad_values,
        checkpoint_stats_forms,
    ]
}

"""What Delta Lake does with a MERGE over nested data: the expected schema, rows, metrics and change data,
or the expected refusal. Plain Python over the values of :mod:`.case`; nothing of the engine.

Each rule follows delta-spark 4.4.0 (``spark/src/main/scala/org/apache/spark/sql/delta/``), with its
default configuration (``resolveMergeUpdateStructsByName``, ``merge.preserveNullSourceStructs`` and
``...updateStar``, ``schemaEvolution.merge.fixNestedStructAlignment`` all on):

- **Resolution** (``ResolveDeltaMergeInto.resolveStar``, ``DeltaMergeActionResolver``): ``*`` without
  evolution assigns every target column from the same-named source column (a target column the
  source lacks is refused); with evolution ``INSERT *`` / ``UPDATE SET *`` assign every source column.
  An explicit assignment's column resolves against the target, and with evolution, in UPDATE (when
  matched) and INSERT clauses, against the source when the target lacks it; otherwise it is refused.
- **Evolution** (``computePostEvolutionTargetSchema`` + ``SchemaMergingUtils.mergeSchemas`` with
  implicit conversions): the source schema, kept to the fields some UPDATE/INSERT assignment names as
  its target (all of them with a ``*`` clause), is merged into the target's: new fields go last in
  their struct with the source's spelling; existing fields keep the target's name and type (a source
  type that casts to it implicitly); a ``void`` column takes the source's type.
- **Storing a value** (``UpdateExpressionsSupport.castIfNeeded``): structs by name, ignoring case; a
  value's field the column lacks is refused; without evolution a struct value must have all the
  column's fields (checked at analysis: a refusal). Fields the value lacks are NULL, except in
  ``UPDATE SET *`` with evolution (``TargetOnlyStructFieldBehavior.PRESERVE``), where they keep the
  target row's values through structs nested in structs (not in array elements or map values). A NULL
  struct stays NULL (``maybeWrapWithNullPreservation``), except there: it is NULL only when the
  target's struct is NULL too or the column has no field the value lacks
  (``hasExtraStructFieldsToPreserveValue``). Array elements and map values are stored one by one,
  without the target's; NULL elements stay NULL.
- **Rows** (``generateUpdateExpressions``, ``PreprocessTableMerge``): a column an UPDATE does not
  assign keeps its value (cast to the evolved type: new fields NULL, a NULL struct stays NULL); a
  nested assignment (``SET x.a = ...``) rebuilds the struct, which is then not NULL; a column an
  INSERT does not assign is NULL. The first clause of a kind whose condition holds acts on a row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.merge_model.case import Array, Clause, Map, MergeCase, Struct, Type, Value, field_of

__all__ = ["Expected", "Refused", "expected"]

NUMERIC = ("int", "bigint")


@dataclass(frozen=True)
class Refused:
    """Delta refuses the statement; ``columns``: the columns an error may name (any of them)."""

    reason: str
    columns: frozenset[str]


@dataclass
class Expected:
    schema: Struct
    rows: list[dict[str, Any]]
    metrics: dict[str, int]
    changes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


class _Refusal(Exception):
    def __init__(self, reason: str, *columns: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.columns = frozenset(columns)


# --------------------------------------------------------------------------------------- schemas


def _merge_types(current: Type, update: Type, path: str) -> Type:
    """``SchemaMergingUtils.mergeDataTypes`` (allowImplicitConversions = true)."""
    if isinstance(current, Struct) and isinstance(update, Struct):
        fields = []
        for name, t in current.fields:
            other = field_of(update, name)
            fields.append((name, t if other is None else _merge_types(t, other[1], f"{path}.{name}")))
        fields += [(n, t) for n, t in update.fields if field_of(current, n) is None]
        return Struct(tuple(fields))
    if isinstance(current, Array) and isinstance(update, Array):
        return Array(_merge_types(current.element, update.element, f"{path}.element"))
    if isinstance(current, Map) and isinstance(update, Map):
        return Map(
            _merge_types(current.key, update.key, f"{path}.key"),
            _merge_types(current.value, update.value, f"{path}.value"),
        )
    if current == update or update == "void":
        return current
    if current == "void":
        return update
    if current in NUMERIC and update in NUMERIC:
        return current  # the source's number casts to the column's implicitly
    raise _Refusal(f"cannot merge {current} with {update}", path)


def _prefix(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return len(a) <= len(b) and all(x.lower() == y.lower() for x, y in zip(a, b))


def _kept_source(schema: Struct, base: tuple[str, ...], targets: list[tuple[str, ...]], star: bool) -> Struct:
    """``computePostEvolutionTargetSchema``'s ``filterSchema``: the source fields assignments name."""
    out = []
    for name, t in schema.fields:
        path = (*base, name)
        if any(len(p) == len(path) and _prefix(p, path) for p in targets):
            out.append((name, t))
        elif isinstance(t, Struct) and (star or any(_prefix(path, p) for p in targets)):
            out.append((name, _kept_source(t, path, targets, star)))
        elif star:
            out.append((name, t))
    return Struct(tuple(out))


def _type_at(schema: Type, path: tuple[str, ...]) -> Type | None:
    t: Type = schema
    for name in path:
        if not isinstance(t, Struct):
            return None
        found = field_of(t, name)
        if found is None:
            return None
        t = found[1]
    return t


def _spelled(schema: Struct, path: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    t: Type = schema
    for name in path:
        assert isinstance(t, Struct)
        n, t = field_of(t, name)  # type: ignore[misc]
        out.append(n)
    return tuple(out)


# ---------------------------------------------------------------------------------- resolution


def _assignments(case: MergeCase, clause: Clause) -> list[tuple[tuple[str, ...], Value]]:
    """A clause's assignments with ``*`` expanded (``resolveStar``) and each column resolved."""
    if clause.action == "delete":
        return []
    target, source = case.target_schema, case.source_schema
    if clause.assignments is None:
        if case.evolution:
            return [((n,), Value("s", (n,))) for n in source.names]
        out: list[tuple[tuple[str, ...], Value]] = []
        for name in target.names:
            found = field_of(source, name)
            if found is None:
                raise _Refusal(f"the source has no column {name}", name)
            out.append(((name,), Value("s", (found[0],))))
        return out
    for path, _ in clause.assignments:
        in_target = _type_at(target, path) is not None
        can_evolve = case.evolution and clause.kind != "not_matched_by_source"
        if not in_target and not (can_evolve and _type_at(source, path) is not None):
            raise _Refusal("cannot resolve the assigned column", ".".join(path))
    return list(clause.assignments)


def _evolved(case: MergeCase, resolved: list[tuple[Clause, list[tuple[tuple[str, ...], Value]]]]) -> Struct:
    if not case.evolution:
        return case.target_schema
    named = [p for c, a in resolved if c.kind != "not_matched_by_source" for p, _ in a]
    star = any(c.is_star and c.kind != "not_matched_by_source" for c, _ in resolved)
    kept = _kept_source(case.source_schema, (), named, star)
    merged = _merge_types(case.target_schema, kept, "")
    assert isinstance(merged, Struct)
    return merged


def _value_type(case: MergeCase, value: Value) -> Type:
    if value.alias is None:
        return "void" if value.literal is None else "int"
    schema = case.source_schema if value.alias == "s" else case.target_schema
    t = _type_at(schema, value.path)
    assert t is not None, value
    return t


def _check_structs(value: Type, column: Type, evolution: bool, path: str) -> None:
    """The struct checks of ``castIfNeeded`` (refusals at analysis), from the outside in: a field of the
    value the column lacks; without evolution, a field of the column the value lacks; then the fields
    both have, in the column's order."""
    if isinstance(column, Struct) and isinstance(value, Struct):
        for name, _ in value.fields:
            if field_of(column, name) is None:
                raise _Refusal("the value has a field the column lacks", f"{path}.{name}")
        if not evolution and len(value.fields) != len(column.fields):
            missing = next(n for n, _ in column.fields if field_of(value, n) is None)
            raise _Refusal("without evolution the value must have every field", f"{path}.{missing}")
        for name, t in column.fields:
            found = field_of(value, name)
            if found is not None:
                _check_structs(found[1], t, evolution, f"{path}.{name}")
    elif isinstance(column, Array) and isinstance(value, Array):
        _check_structs(value.element, column.element, evolution, f"{path}.element")
    elif isinstance(column, Map) and isinstance(value, Map):
        _check_structs(value.key, column.key, evolution, f"{path}.key")
        _check_structs(value.value, column.value, evolution, f"{path}.value")


def _type_conflicts(value: Type, column: Type, path: str) -> list[str]:
    """Where a value's type cannot be cast to the column's (Spark's cast rules, for the model's types)."""
    if value == "void" or value == column or (value in NUMERIC and column in NUMERIC):
        return []
    if isinstance(column, Struct) and isinstance(value, Struct):
        out = []
        for name, t in column.fields:
            found = field_of(value, name)
            if found is not None:
                out += _type_conflicts(found[1], t, f"{path}.{name}")
        return out
    if isinstance(column, Array) and isinstance(value, Array):
        return _type_conflicts(value.element, column.element, f"{path}.element")
    if isinstance(column, Map) and isinstance(value, Map):
        return _type_conflicts(value.key, column.key, f"{path}.key") + _type_conflicts(
            value.value, column.value, f"{path}.value"
        )
    return [path]


def _check_store(value: Type, column: Type, evolution: bool, path: str) -> None:
    """``castIfNeeded``'s refusals: the structs first (thrown while the cast is built), then the casts."""
    _check_structs(value, column, evolution, path)
    conflicts = _type_conflicts(value, column, path)
    if conflicts:
        raise _Refusal(f"cannot store {value} into {column}", *conflicts)


# --------------------------------------------------------------------------------------- values


def _conform(value: Any, old: Type, new: Type) -> Any:
    """A target value in the evolved type (new fields NULL; a NULL struct stays NULL)."""
    if value is None:
        return None
    if isinstance(new, Struct) and isinstance(old, Struct):
        out = {}
        for name, t in new.fields:
            found = field_of(old, name)
            out[name] = None if found is None else _conform(_get(value, found[0]), found[1], t)
        return out
    if isinstance(new, Array) and isinstance(old, Array):
        return [_conform(v, old.element, new.element) for v in value]
    if isinstance(new, Map) and isinstance(old, Map):
        return [(_conform(k, old.key, new.key), _conform(v, old.value, new.value)) for k, v in value]
    return value


def _get(row: dict[str, Any], name: str) -> Any:
    for key, value in row.items():
        if key.lower() == name.lower():
            return value
    return None


def _has_fields_to_keep(value: Struct, column: Struct) -> bool:
    """``hasExtraStructFieldsToPreserveValue``: not through arrays or maps."""
    for name, t in column.fields:
        found = field_of(value, name)
        if found is None:
            return True
        if isinstance(t, Struct) and isinstance(found[1], Struct) and _has_fields_to_keep(found[1], t):
            return True
    return False


def _store(value: Any, vtype: Type, column: Type, original: Any = None, preserve: bool = False) -> Any:
    """``castIfNeeded`` at run time; ``original`` is the target's (evolved) value when ``preserve``."""
    if vtype == "void":
        return None
    if isinstance(column, Struct) and isinstance(vtype, Struct):
        keep = preserve and original is not None
        if value is None and not (keep and _has_fields_to_keep(vtype, column)):
            return None
        out = {}
        for name, t in column.fields:
            found = field_of(vtype, name)
            before = _get(original, name) if keep else None
            if found is None:
                out[name] = before
            else:
                inner = None if value is None else _get(value, found[0])
                out[name] = _store(inner, found[1], t, before, preserve and isinstance(t, Struct))
        return out
    if value is None:
        return None
    if isinstance(column, Array) and isinstance(vtype, Array):
        return [_store(v, vtype.element, column.element) for v in value]
    if isinstance(column, Map) and isinstance(vtype, Map):
        return [(_store(k, vtype.key, column.key), _store(v, vtype.value, column.value)) for k, v in value]
    return value


def _read(row: dict[str, Any] | None, path: tuple[str, ...]) -> Any:
    value: Any = row
    for name in path:
        if value is None:
            return None
        value = _get(value, name)
    return value


@dataclass(frozen=True)
class _Op:
    path: tuple[str, ...]  # the evolved schema's spelling
    value: Any
    vtype: Type
    preserve: bool


def _build(schema: Struct, default: dict[str, Any] | None, ops: list[_Op]) -> dict[str, Any]:
    """``generateUpdateExpressions``: each field from its assignment, nested ones rebuilt, else default."""
    out = {}
    for name, t in schema.fields:
        mine = [op for op in ops if op.path[0].lower() == name.lower()]
        before = None if default is None else default.get(name)
        full = [op for op in mine if len(op.path) == 1]
        if full:
            op = full[0]
            out[name] = _store(op.value, op.vtype, t, before, op.preserve)
        elif mine:
            assert isinstance(t, Struct)
            tail = [_Op(op.path[1:], op.value, op.vtype, op.preserve) for op in mine]
            out[name] = _build(t, before, tail)
        else:
            out[name] = before
    return out


# ------------------------------------------------------------------------------------------ entry


def _plan(case: MergeCase) -> tuple[Struct, list[list[tuple[tuple[str, ...], Value, Type]]]]:
    resolved = [(c, _assignments(case, c)) for c in case.clauses]
    schema = _evolved(case, resolved)
    planned = []
    for _clause, assignments in resolved:
        out = []
        for path, value in assignments:
            spelled = _spelled(schema, path)
            vtype = _value_type(case, value)
            column = _type_at(schema, spelled)
            assert column is not None
            _check_store(vtype, column, case.evolution, ".".join(spelled))
            out.append((spelled, value, vtype))
        planned.append(out)
    return schema, planned


def expected(case: MergeCase, *, changes: bool = False) -> Expected | Refused:
    """What Delta does with ``case`` (see the module docstring)."""
    try:
        schema, planned = _plan(case)
    except _Refusal as err:
        return Refused(err.reason, err.columns)
    target, source = case.target_schema, case.source_schema
    by_key = {r["k"]: r for r in case.source_rows}
    metrics = dict.fromkeys(("numTargetRowsUpdated", "numTargetRowsDeleted", "numTargetRowsInserted"), 0)
    rows: list[dict[str, Any]] = []
    log: list[tuple[str, dict[str, Any]]] = []
    matched_keys = set()

    def ops(i: int, s_row: dict[str, Any] | None, t_row: dict[str, Any] | None) -> list[_Op]:
        clause = case.clauses[i]
        preserve = case.evolution and clause.is_star and clause.action == "update"
        out = []
        for path, value, vtype in planned[i]:
            row = s_row if value.alias == "s" else t_row
            v = _read(row, value.path) if value.alias else value.literal
            out.append(_Op(path, v, vtype, preserve))
        return out

    for t_row in case.target_rows:
        s_row = by_key.get(t_row["k"])
        old = _conform(t_row, target, schema)
        kind = "matched" if s_row is not None else "not_matched_by_source"
        if s_row is not None:
            matched_keys.add(t_row["k"])
        chosen = _first(case, kind, t_row["k"])
        if chosen is None:
            rows.append(old)
            continue
        if case.clauses[chosen].action == "delete":
            metrics["numTargetRowsDeleted"] += 1
            log.append(("delete", old))
            continue
        new = _build(schema, old, ops(chosen, s_row, t_row))
        metrics["numTargetRowsUpdated"] += 1
        rows.append(new)
        log += [("update_preimage", old), ("update_postimage", new)]
    for s_row in case.source_rows:
        if s_row["k"] in matched_keys:
            continue
        chosen = _first(case, "not_matched", s_row["k"])
        if chosen is not None:
            new = _build(schema, None, ops(chosen, s_row, None))
            metrics["numTargetRowsInserted"] += 1
            rows.append(new)
            log.append(("insert", new))
    _ = source
    return Expected(schema, rows, metrics, log if changes else [])


def _first(case: MergeCase, kind: str, key: int) -> int | None:
    for i, clause in enumerate(case.clauses):
        if clause.kind == kind and (clause.condition is None or clause.condition.holds(key)):
            return i
    return None

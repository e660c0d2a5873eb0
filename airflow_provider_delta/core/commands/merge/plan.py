"""Plan a MERGE: resolve its clauses against the target and source, evolve the schema, prune files.

The plan is engine-neutral: bound expressions (evaluated over rows laid out as one struct column per
alias, see :func:`airflow_provider_delta.core.expressions.bind`) together with their Spark SQL text,
the schema the commit will have, the equi-join keys, and the predicate that selects the target files
that can hold affected rows. An executor turns it into files and actions: the local one with pyarrow
(:mod:`airflow_provider_delta.core.executor.merge.local`), Spark's with a Spark join over the SQL texts.
The source is a :class:`~airflow_provider_delta.core.executor.merge.source.MergeSource`: its schema, a
summary of its key values (computed by its engine), and for Spark a typer for SQL that core's
expressions do not cover (CASE, the Spark function library): such an expression is planned as an
:class:`EngineExpr`, typed by Spark's analyzer, and only the Spark executor can run the plan.

Schema evolution follows Delta Lake (``MERGE WITH SCHEMA EVOLUTION`` / ``autoMerge``):

- ``UPDATE SET *`` / ``INSERT *`` without evolution assign every *target* column from the source
  column of the same name (missing in the source: error; extra source columns: ignored);
  ``EXCEPT`` names target columns, which an update leaves unchanged and an insert sets to NULL.
- With evolution they assign every *source* column: new ones are added to the table (at the end,
  also inside structs and struct map values); target columns missing from the source stay unchanged
  (update) or NULL (insert); ``EXCEPT`` names source columns, and an excluded new column is not added.
- An UPDATE or INSERT assignment to a column (or nested field) the target lacks and the source has
  adds it with the source column's type, whatever value it assigns (``SET t.new = s.other + 1``);
  one the source lacks is an error, and so is one in NOT MATCHED BY SOURCE (Delta's
  ``computePostEvolutionTargetSchema``).
- Values are stored as Delta stores them (:mod:`~airflow_provider_delta.core.executor.merge.store`):
  structs by name; without evolution a struct value must have the column's fields.

Example:
    >>> plan = plan_merge(snapshot, spec, source_table)   # doctest: +SKIP
    >>> plan.schema.names, [str(k) for k in plan.keys]     # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.commands.merge.names import (
    find_path,
    insert_columns,
    name_parts,
    resolve_name,
)
from airflow_provider_delta.core.executor.merge.plan import (
    Assignment,
    EngineExpr,
    JoinKey,
    MergePlan,
    PlannedClause,
)
from airflow_provider_delta.core.executor.merge.source import (
    KeySummary,
    MergeSource,
    SourceSummary,
    as_merge_source,
)
from airflow_provider_delta.core.executor.merge.source import source_key_column as source_key_column
from airflow_provider_delta.core.executor.merge.store import struct_mismatch
from airflow_provider_delta.core.expressions import (
    And,
    Column,
    Comparison,
    Expr,
    Function,
    In,
    Literal,
    Or,
    _type_of,
    bind,
    conjuncts,
    parse_expression,
    parse_predicate,
    require_boolean,
)
from airflow_provider_delta.core.schema.arrow import (
    from_arrow_schema,
    to_arrow_schema,
    to_arrow_type,
)
from airflow_provider_delta.core.schema.evolution import as_nullable, merge_schemas
from airflow_provider_delta.core.schema.store_assignment import assignment_problem
from airflow_provider_delta.core.schema.types import DataType, StructField, StructType
from airflow_provider_delta.exceptions import MergeError, PredicateError, SchemaError, SchemaEvolutionError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from airflow_provider_delta.core.commands.merge.model import MergeClause, MergeSpec
    from airflow_provider_delta.core.executor.merge.source import SqlTyper
    from airflow_provider_delta.core.snapshot import Snapshot

__all__ = ["Assignment", "EngineExpr", "JoinKey", "MergePlan", "PlannedClause", "plan_merge"]


# --------------------------------------------------------------------------------------- helpers


def _walk(expr: Expr) -> Iterator[Expr]:
    yield expr
    for child in expr.children():
        yield from _walk(child)


def _map_columns(expr: Expr, fn: Callable[[Column], Expr]) -> Expr:
    """Rebuild ``expr`` with every column replaced by ``fn(column)``."""
    if isinstance(expr, Column):
        return fn(expr)
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(expr):
        value = getattr(expr, f.name)
        if isinstance(value, Expr):
            changes[f.name] = _map_columns(value, fn)
        elif isinstance(value, tuple) and any(isinstance(v, Expr) for v in value):
            changes[f.name] = tuple(_map_columns(v, fn) if isinstance(v, Expr) else v for v in value)
    return dataclasses.replace(expr, **changes) if changes else expr


_Raw = tuple[tuple[str, ...], Expr, "tuple[str, ...] | None", str]
"""(target path, parsed value, the source path when the value is a bare source column, value SQL)."""


def quote_sql(*parts: str) -> str:
    """A dotted Spark SQL name with every part back-quoted (a back-quote inside a part is doubled)."""
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def _qualifiers_of(expr: Expr) -> set[str | None]:
    return {node.qualifier for node in _walk(expr) if isinstance(node, Column)}


def _unqualified(expr: Expr) -> Expr:
    return _map_columns(expr, lambda c: Column(None, c.path, c.dtype))



def _field_at(struct: StructType, path: Sequence[str]) -> StructField:
    current: DataType = struct
    found: StructField | None = None
    for name in path:
        assert isinstance(current, StructType)
        found = current.field(name)
        current = found.type
    assert found is not None
    return found


def _kept_source(schema: StructType, base: tuple[str, ...], targets: set[tuple[str, ...]]) -> StructType:
    """The source fields whose path (lowercase) is in ``targets``, whole, and the structs leading to one
    (Delta's ``filterSchema``); nullable, as the columns schema evolution adds are."""
    fields = []
    for f in schema.fields:
        path = (*base, f.name.lower())
        if path in targets:
            fields.append(StructField(f.name, as_nullable(f.type), True, f.metadata))
        elif isinstance(f.type, StructType) and any(t[: len(path)] == path for t in targets):
            fields.append(StructField(f.name, _kept_source(f.type, path, targets), True, f.metadata))
    return StructType(tuple(fields))


# --------------------------------------------------------------------------------------- planner


class _Planner:
    def __init__(self, snapshot: Snapshot, spec: MergeSpec, source: MergeSource) -> None:
        self.location = snapshot.location
        self.spec = spec
        self.ta, self.sa = spec.target_alias, spec.source_alias
        if not self.ta or not self.sa or self.ta.lower() == self.sa.lower():
            raise MergeError(
                f"Cannot merge into table {self.location!r}: the source and target aliases must be distinct "
                f"and non-empty (found {self.sa!r} and {self.ta!r})",
                clause="aliases",
            )
        self.target = snapshot.schema
        self.partition_columns = {c.lower() for c in snapshot.partition_columns}
        self.source_rows = source
        self.typer: SqlTyper | None = source.sql_typer()
        self.engine_only: list[str] = []
        try:
            self.source = from_arrow_schema(source.schema)
        except SchemaError as err:
            raise MergeError(
                f"Cannot merge into table {self.location!r}: the source schema: {err}", clause="source"
            ) from err
        self.target_arrow = to_arrow_schema(self.target)
        self.source_arrow = source.schema
        self.evolution = spec.schema_evolution

    # -- binding
    def scope(self, *aliases: str) -> tuple[pa.Schema, dict[str, pa.Schema]]:
        schemas = {self.ta: self.target_arrow, self.sa: self.source_arrow}
        layout = pa.schema([pa.field(a, pa.struct(list(schemas[a]))) for a in aliases])
        return layout, {a: schemas[a] for a in aliases}

    def parse(self, text: str, where: str, *, predicate: bool, engine_ok: bool = True) -> Expr:
        """The parsed expression; SQL outside core's surface is an :class:`EngineExpr` when the source's
        engine can type it (``engine_ok``), else an error."""
        parse = parse_predicate if predicate else parse_expression
        try:
            expr = parse(text, qualifiers=(self.ta, self.sa))
        except PredicateError as err:
            if self.typer is not None and engine_ok:
                return EngineExpr(text)
            raise MergeError(f"{err} (in the {where})", clause=where) from err
        return expr

    def engine_typed(self, expr: EngineExpr, aliases: Sequence[str], where: str, *, predicate: bool) -> EngineExpr:
        """``expr`` with the type the engine's analyzer gives it over the clause's aliases."""
        assert self.typer is not None
        _layout, scope = self.scope(*aliases)
        dtype = self.typer.type_of(expr.sql, scope, where=where)
        if predicate and not (pa.types.is_boolean(dtype) or pa.types.is_null(dtype)):
            raise MergeError(
                f"Cannot use {expr.sql!r} as the {where}: it is of type {dtype}, not a condition",
                clause=where,
            )
        self.engine_only.append(where)
        return EngineExpr(expr.sql, dtype)

    def engine_may_type(self, expr: Expr, *, engine_ok: bool = True) -> bool:
        """Whether SQL with functions core's typing refused goes to the engine's analyzer (Spark's
        implicit casts are wider than the local engine's)."""
        return self.typer is not None and engine_ok and any(isinstance(n, Function) for n in _walk(expr))

    def qualify(self, expr: Expr, aliases: Sequence[str], where: str) -> Expr:
        def fix(c: Column) -> Column:
            original = c
            if c.qualifier is not None:
                if self.alias_has(c.qualifier, c.path[0]):
                    return c
                # Spark: without such a column under the alias, ``t.b`` reads as field ``b`` of a column ``t``.
                c = Column(None, (c.qualifier, *c.path), c.dtype)
            owners = []
            for alias in aliases:
                fields = self.target_arrow if alias == self.ta else self.source_arrow
                if any(n.lower() == c.path[0].lower() for n in fields.names):
                    owners.append(alias)
            if len(owners) > 1:
                raise MergeError(
                    f"Cannot resolve column {c.name!r} in the {where}: the reference is ambiguous, both the "
                    f"target and the source have it. Help: write {self.ta}.{c.name} or {self.sa}.{c.name}",
                    clause=where,
                    column=c.name,
                )
            return Column(owners[0], c.path, c.dtype) if owners else original

        return _map_columns(expr, fix)

    def alias_has(self, alias: str, name: str) -> bool:
        """Whether the relation called ``alias`` has a top-level column ``name`` (True for other qualifiers)."""
        if alias.lower() not in (self.ta.lower(), self.sa.lower()):
            return True
        fields = self.target_arrow if alias.lower() == self.ta.lower() else self.source_arrow
        return any(n.lower() == name.lower() for n in fields.names)

    def bind(
        self, text: str, aliases: Sequence[str], where: str, *, predicate: bool, engine_ok: bool = True
    ) -> Expr:
        parsed = self.parse(text, where, predicate=predicate, engine_ok=engine_ok)
        if isinstance(parsed, EngineExpr):
            return self.engine_typed(parsed, aliases, where, predicate=predicate)
        expr = self.qualify(parsed, aliases, where)
        layout, qualifiers = self.scope(*aliases)
        try:
            bound = bind(expr, layout, qualifiers=qualifiers)
        except PredicateError as err:
            if self.engine_may_type(expr, engine_ok=engine_ok):
                return self.engine_typed(EngineExpr(text), aliases, where, predicate=predicate)
            column = next((c.name for c in _walk(expr) if isinstance(c, Column)), None)
            raise MergeError(f"{err} (in the {where})", clause=where, column=column) from err
        if predicate:
            try:
                require_boolean(bound, text)
            except PredicateError as err:
                raise MergeError(f"{err} (in the {where})", clause=where) from err
        return bound

    def aliases_for(self, kind: str) -> tuple[str, ...]:
        # Delta: INSERT sees only the source, NOT MATCHED BY SOURCE only the target.
        return {
            "matched": (self.ta, self.sa),
            "not_matched": (self.sa,),
            "not_matched_by_source": (self.ta,),
        }[kind]

    # -- clause validation
    def check_clauses(self) -> None:
        clauses = self.spec.clauses
        if not clauses:
            raise MergeError(
                f"Cannot merge into table {self.location!r}: there must be at least one WHEN clause",
                clause="statement",
            )
        for i, c in enumerate(clauses):
            if not c.is_valid_action():
                raise MergeError(
                    f"Cannot merge into table {self.location!r}: {c.label(i)}: {c.action.upper()} "
                    "is not allowed in this kind of clause",
                    clause=c.label(i),
                )
            if c.except_ and not c.is_star:
                raise MergeError(
                    f"Cannot merge into table {self.location!r}: {c.label(i)}: EXCEPT needs "
                    "UPDATE SET * or INSERT *",
                    clause=c.label(i),
                )
            if c.kind == "not_matched_by_source" and c.is_star:
                raise MergeError(
                    f"Cannot merge into table {self.location!r}: {c.label(i)}: UPDATE SET * is "
                    "not allowed when not matched by source (there is no source row)",
                    clause=c.label(i),
                )
            later = [j for j in range(i + 1, len(clauses)) if clauses[j].kind == c.kind]
            if c.condition is None and later:
                raise MergeError(
                    f"Cannot merge into table {self.location!r}: {c.label(i)} has no condition but is followed "
                    f"by {clauses[later[0]].label(later[0])}; only the last clause of a kind may omit its "
                    "condition",
                    clause=c.label(i),
                )

    # -- assignments, pass 1: what the user wrote -> (target path, value, direct source path)
    def raw_assignments(self, c: MergeClause, where: str) -> list[_Raw]:
        aliases = self.aliases_for(c.kind)
        if c.action == "delete":
            return []
        if c.is_star:
            return self.star(c, where)
        out: list[_Raw] = []
        for column, value in c.assignments or ():
            path = self.target_path(column, where, c.kind)
            self.refuse_unknown_target(c, where, path)
            expr = self.qualify(self.parse(value, where, predicate=False), aliases, where)
            direct = expr.path if isinstance(expr, Column) and expr.qualifier == self.sa else None
            out.append((path, expr, direct, value))
        if c.action == "insert":  # Delta: top-level columns only; of case-different duplicates the first counts
            keep = insert_columns([r[0] for r in out], [column for column, _ in c.assignments or ()], where)
            out = [r for r, k in zip(out, keep, strict=True) if k]
        return out

    def target_path(self, column: str, where: str, kind: str) -> tuple[str, ...]:
        """The column an assignment writes (see :mod:`~airflow_provider_delta.core.commands.merge.names`)."""
        parts = name_parts(column, where)
        path = resolve_name(self.target, parts, self.ta)
        if path is None and self.evolution and kind != "not_matched_by_source":
            path = resolve_name(self.source, parts, self.sa)  # a column schema evolution adds
        if path is not None:
            return path
        side = "the target or the source" if self.evolution and kind != "not_matched_by_source" else "the target"
        help_ = "" if self.evolution else ". Help: enable schema evolution to add it"
        raise MergeError(
            f"Cannot resolve column {column!r} in {where}: no such column in {side} "
            f"(target columns: {', '.join(self.target.names)}){help_}",
            clause=where,
            column=column,
        )

    def star(self, c: MergeClause, where: str) -> list[_Raw]:
        excluded = {e.strip("`").lower() for e in c.except_}
        source_names = {n.lower() for n in self.source.names}
        target_names = {n.lower() for n in self.target.names}
        allowed = source_names | target_names if self.evolution else target_names
        for name in c.except_:
            if name.strip("`").lower() not in allowed:
                side = "the source or the target" if self.evolution else "the target table"
                raise MergeError(
                    f"Cannot resolve column {name!r} in the EXCEPT list of {where}: no such column in {side}",
                    clause=where,
                    column=name,
                )
        out: list[_Raw] = []
        names = self.source.names if self.evolution else self.target.names
        for name in names:
            if name.lower() in excluded:
                continue
            src = self.source.get(name, case_sensitive=False)
            if src is None:
                raise MergeError(
                    f"Cannot resolve column {name!r} in {where}: the source has no column {name!r} "
                    f"(source columns: {', '.join(self.source.names)}). Help: enable schema evolution, add "
                    f"EXCEPT ({name}), or assign the columns explicitly",
                    clause=where,
                    column=name,
                )
            out.append(((name,), Column(self.sa, (src.name,)), (src.name,), quote_sql(self.sa, src.name)))
        return out

    # -- schema evolution
    def evolve(self, raw: list[tuple[MergeClause, str, list[_Raw]]]) -> StructType:
        """The schema after evolution: Delta's ``ResolveDeltaMergeInto.computePostEvolutionTargetSchema``
        (delta-spark 4.4.0) keeps the source fields an UPDATE or INSERT assignment names as its *target*
        (whatever value it assigns), in the source's order, and merges them into the target's schema."""
        if not self.evolution:
            return self.target
        targets = {
            tuple(p.lower() for p in path)
            for clause, _where, assignments in raw
            if clause.kind != "not_matched_by_source"
            for path, _expr, _direct, _sql in assignments
        }
        incoming = _kept_source(self.source, (), targets)
        if not len(incoming):
            return self.target
        return self.merge(self.target, incoming, "schema evolution", merge_schemas, whole=True)

    def refuse_unknown_target(self, clause: MergeClause, where: str, path: tuple[str, ...]) -> None:
        """Refuse an assignment to a column the target lacks and schema evolution cannot add: evolution
        is off, the source has no column of that name, or the clause is NOT MATCHED BY SOURCE (it sees
        only the target)."""
        if find_path(self.target, path) is not None:
            return
        name = ".".join(path)
        if not self.evolution:
            help_ = "enable schema evolution to add it (the source must have a column of that name)"
        elif clause.kind == "not_matched_by_source":
            help_ = "a NOT MATCHED BY SOURCE clause sees only the target; add the column first"
        elif find_path(self.source, path) is None:
            help_ = (
                f"schema evolution adds only columns the source has ({self.sa}.{name} does not exist); "
                "add the column first"
            )
        else:
            return
        raise MergeError(
            f"Cannot resolve column {name!r} in {where}: no such column in the target table "
            f"(columns: {', '.join(self.target.names)}). Help: {help_}",
            clause=where,
            column=name,
        )

    def merge(
        self,
        current: StructType,
        incoming: StructType | StructField,
        where: str,
        merge_schemas: Any,
        *,
        whole: bool = False,
    ) -> StructType:
        other = incoming if isinstance(incoming, StructType) else StructType((incoming,))
        try:
            merged: StructType = merge_schemas(current, other, allow_implicit_conversions=True)
        except SchemaEvolutionError as err:
            raise SchemaEvolutionError(f"{err} (in the {where} of MERGE into {self.location!r})") from err
        return merged

    # -- assignments, pass 2: bind against the evolved schema
    def resolve(
        self,
        c: MergeClause,
        index: int,
        raw: list[_Raw],
        schema: StructType,
    ) -> PlannedClause:
        where = c.label(index)
        aliases = self.aliases_for(c.kind)
        layout, qualifiers = self.scope(*aliases)
        condition = (
            self.bind(c.condition, aliases, f"condition of {where}", predicate=True) if c.condition else None
        )
        out: list[Assignment] = []
        seen: list[tuple[str, ...]] = []
        for path, expr, _direct, sql in raw:
            canonical = find_path(schema, path)
            if canonical is None:  # a step is not a struct
                raise MergeError(
                    f"Cannot resolve column {'.'.join(path)!r} in {where}: nested assignments "
                    "reach into structs only",
                    clause=where,
                    column=".".join(path),
                )
            lowered = tuple(p.lower() for p in canonical)
            for other in seen:
                if other[: len(lowered)] == lowered or lowered[: len(other)] == other:
                    raise MergeError(
                        f"Cannot merge into table {self.location!r}: {where} assigns column "
                        f"{'.'.join(canonical)!r} more than once",
                        clause=where,
                        column=".".join(canonical),
                    )
            seen.append(lowered)
            bound: Expr
            if isinstance(expr, EngineExpr):
                bound = self.engine_typed(expr, aliases, f"{where}, assigning {'.'.join(canonical)!r}", predicate=False)
                value_type = bound.dtype
            else:
                try:
                    bound = bind(expr, layout, qualifiers=qualifiers)
                    value_type = _type_of(bound)
                except PredicateError as err:
                    if not self.engine_may_type(expr):
                        raise MergeError(
                            f"{err} (in {where}, assigning {'.'.join(canonical)!r})",
                            clause=where,
                            column=".".join(canonical),
                        ) from err
                    where_assigned = f"{where}, assigning {'.'.join(canonical)!r}"
                    engine = self.engine_typed(EngineExpr(sql), aliases, where_assigned, predicate=False)
                    bound, value_type = engine, engine.dtype
            column_type = _field_at(schema, canonical).type
            # Delta's by-name cast (castIfNeeded) checks the structs first, then the other types.
            reason = None if value_type is None else struct_mismatch(
                value_type, column_type, ".".join(canonical), allow_missing=self.evolution)
            if reason and not self.evolution and "has no field" in reason:
                reason += ". Help: enable schema evolution (missing fields are then NULL), or assign fields one by one"
            reason = reason or assignment_problem(
                value_type, column_type, ".".join(canonical), missing_fields=self.evolution)
            if reason:
                raise MergeError(
                    f"Cannot assign {sql!r} to column {'.'.join(canonical)!r} in {where}: {reason}",
                    clause=where,
                    column=".".join(canonical),
                )
            # UPDATE SET * with evolution keeps the target's values of struct fields the source lacks
            # (Delta's TargetOnlyStructFieldBehavior.PRESERVE); explicit assignments and inserts do not.
            preserve = self.evolution and c.is_star and c.action == "update"
            out.append(Assignment(canonical, bound, sql, preserve))
        return PlannedClause(c.kind, c.action, where, condition, tuple(out), c.condition)

    # -- the join condition
    def split_condition(self) -> tuple[list[JoinKey], Expr | None, Expr | None, Expr | None]:
        where = "ON condition"
        bound = self.bind(self.spec.condition, (self.ta, self.sa), where, predicate=True, engine_ok=False)
        keys: list[JoinKey] = []
        target_only: list[Expr] = []
        source_only: list[Expr] = []
        residual: list[Expr] = []
        for term in conjuncts(bound):
            owners = _qualifiers_of(term)
            key = self.as_key(term)
            if key is not None:
                keys.append(key)
            elif owners == {self.ta}:
                target_only.append(_unqualified(term))
            elif owners == {self.sa}:
                source_only.append(_unqualified(term))
            else:
                residual.append(term)
        return keys, _and(target_only), _and(source_only), _and(residual)

    def as_key(self, term: Expr) -> JoinKey | None:
        if not (
            isinstance(term, Comparison)
            and term.op == "="
            and isinstance(term.left, Column)
            and isinstance(term.right, Column)
        ):
            return None
        left, right = term.left, term.right
        if left.qualifier == self.sa and right.qualifier == self.ta:
            left, right = right, left
        if left.qualifier != self.ta or right.qualifier != self.sa:
            return None
        lt, rt = left.dtype, right.dtype
        if lt is None or rt is None or not _joinable(lt, rt):
            return None
        return JoinKey(left.path, right.path, lt, rt)


def _and(terms: Sequence[Expr]) -> Expr | None:
    if not terms:
        return None
    out = terms[0]
    for term in terms[1:]:
        out = And(out, term)
    return out


def _kind(t: pa.DataType) -> str | None:
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        return "exact"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return f"timestamp{t.tz is not None}"
    if pa.types.is_boolean(t):
        return "bool"
    return None


def _joinable(a: pa.DataType, b: pa.DataType) -> bool:
    ka, kb = _kind(a), _kind(b)
    return ka is not None and (ka == kb or {ka, kb} == {"exact", "float"})


# ------------------------------------------------------------------------------------ file pruning


def _key_range(key: JoinKey, summary: KeySummary, partition: bool) -> Expr | None:
    """``target BETWEEN min AND max`` of the source's key values (an IN list for partition columns)."""
    column = Column(None, key.target, key.target_type)
    if summary.non_null == 0:
        return Literal(False)
    try:
        if partition and summary.distinct is not None:
            cast = pc.cast(summary.distinct, key.target_type)
            return In(column, tuple(Literal(v, key.target_type) for v in cast.to_pylist()))
        if summary.bounds is None:
            return None
        pair = pc.cast(summary.bounds, key.target_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None  # the source range does not fit the target type: no pruning on this key
    low, high = pair.to_pylist()
    return And(
        Comparison(">=", column, Literal(low, key.target_type)),
        Comparison("<=", column, Literal(high, key.target_type)),
    )


def _prunes(key: JoinKey) -> bool:
    """Whether a key's source range can prune files (ordered types only; floats are not exact)."""
    return _kind(key.target_type) not in (None, "float", "bool", "binary")


def _file_predicate(
    planner: _Planner,
    keys: Sequence[JoinKey],
    target_filter: Expr | None,
    source_filter: Expr | None,
    by_source: Sequence[PlannedClause],
) -> tuple[Expr | None, SourceSummary]:
    """The predicate of the target files the merge reads, and the source summary it came from."""
    pruning = [k for k in keys if _prunes(k)]
    partition = [len(k.target) == 1 and k.target[0].lower() in planner.partition_columns for k in pruning]
    summary = planner.source_rows.summarize(
        source_filter, [(k.source, p) for k, p in zip(pruning, partition, strict=True)]
    )
    terms = [t for t in [target_filter] if t is not None]
    for key, is_partition, key_summary in zip(pruning, partition, summary.keys, strict=True):
        term = _key_range(key, key_summary, is_partition)
        if term is not None:
            terms.append(term)
    matching = _and(terms) if (terms or keys) else None
    if summary.matchable_rows == 0:
        matching = Literal(False)
    if not by_source:
        return matching, summary
    if any(c.condition is None or isinstance(c.condition, EngineExpr) for c in by_source):
        return None, summary
    nmbs: Expr = _unqualified(by_source[0].condition)  # type: ignore[arg-type]
    for c in by_source[1:]:
        nmbs = Or(nmbs, _unqualified(c.condition))  # type: ignore[arg-type]
    return (None if matching is None else Or(matching, nmbs)), summary


# ------------------------------------------------------------------------------------------ entry


def _operation_parameters(spec: MergeSpec) -> dict[str, Any]:
    """Delta's MERGE operationParameters: predicate, then the clause predicates as JSON lists."""

    def entries(kind: str) -> list[dict[str, str]]:
        out = []
        for c in spec.clauses:
            if c.kind == kind:
                entry = {"predicate": c.condition} if c.condition else {}
                entry["actionType"] = c.action
                out.append(entry)
        return out

    return {
        "predicate": spec.condition,
        "matchedPredicates": entries("matched"),
        "notMatchedPredicates": entries("not_matched"),
        "notMatchedBySourcePredicates": entries("not_matched_by_source"),
    }


def plan_merge(snapshot: Snapshot, spec: MergeSpec, source: MergeSource | pa.Table) -> MergePlan:
    """Resolve a MERGE against the snapshot's table and the source.

    Args:
        snapshot: the target table version the merge reads.
        spec: the statement.
        source: the source (its schema resolves source columns; its key values prune files), or its
            rows as a pyarrow Table.

    Returns:
        The plan.

    Raises:
        MergeError: invalid clauses, unknown or ambiguous columns, type conflicts (naming clause and column).
        SchemaEvolutionError: an assignment would add a column schema evolution does not allow.
    """
    planner = _Planner(snapshot, spec, as_merge_source(source))
    planner.check_clauses()
    keys, target_filter, source_filter, residual = planner.split_condition()
    raw = [(c, c.label(i), planner.raw_assignments(c, c.label(i))) for i, c in enumerate(spec.clauses)]
    schema = planner.evolve(raw)
    planned = [planner.resolve(c, i, raw[i][2], schema) for i, c in enumerate(spec.clauses)]
    matched = tuple(p for p in planned if p.kind == "matched")
    by_source = tuple(p for p in planned if p.kind == "not_matched_by_source")
    file_predicate, summary = _file_predicate(planner, keys, target_filter, source_filter, by_source)
    return MergePlan(
        target_alias=planner.ta,
        source_alias=planner.sa,
        current_schema=planner.target,
        schema=schema,
        keys=tuple(keys),
        target_filter=target_filter,
        source_filter=source_filter,
        residual=residual,
        matched=matched,
        not_matched=tuple(p for p in planned if p.kind == "not_matched"),
        not_matched_by_source=by_source,
        file_predicate=file_predicate,
        duplicates_allowed=len(matched) == 1
        and matched[0].action == "delete"
        and matched[0].condition is None,
        operation_parameters=_operation_parameters(spec),
        condition_sql=spec.condition,
        source_rows=summary.num_rows,
        engine_only=tuple(planner.engine_only),
    )


def arrow_target_type(schema: StructType, path: Sequence[str]) -> pa.DataType:
    """The Arrow type of the field at ``path``."""
    return to_arrow_type(_field_at(schema, path).type)


def field_at(schema: StructType, path: Sequence[str]) -> StructField:
    """The field at ``path`` (schema spelling)."""
    return _field_at(schema, path)

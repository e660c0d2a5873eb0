"""Hypothesis strategies for nested MERGE cases (:class:`~tests.merge_model.case.MergeCase`).

A case starts from one nested "universe" schema (structs in structs, arrays of structs, maps with
struct values); the target and the source each keep part of it (fields missing on either side),
the source may spell names in another case and use the other integer width, and values are NULL at
every level. Clauses of every kind follow, with or without conditions, ``*`` or explicit assignments
(whole columns, nested fields, new columns, NULLs and literals), with or without schema evolution.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.merge_model.case import Array, Clause, Condition, Map, MergeCase, Struct, Type, Value

__all__ = ["merge_cases", "values_of"]

_LEAVES = ("int", "bigint")
_KEYS = ("p", "q")


def _types(depth: int) -> st.SearchStrategy[Type]:
    leaf = st.sampled_from(_LEAVES)
    if depth == 0:
        return leaf
    inner = _types(depth - 1)
    return st.one_of(
        leaf,
        _structs(inner),
        _structs(inner).map(Array),
        st.one_of(leaf, _structs(inner)).map(lambda v: Map("string", v)),
    )


def _structs(inner: st.SearchStrategy[Type]) -> st.SearchStrategy[Struct]:
    fields = st.lists(
        st.tuples(st.sampled_from("abcd"), inner), min_size=1, max_size=3, unique_by=lambda f: f[0]
    )
    return fields.map(lambda fs: Struct(tuple(fs)))


@st.composite
def _side(draw: st.DrawFn, t: Type, *, recase: bool) -> Type:
    """The part of ``t`` one side has: struct fields dropped (one kept), names re-cased, widths swapped."""
    if isinstance(t, Struct):
        kept = [f for f in t.fields if draw(st.integers(0, 3)) > 0] or [
            t.fields[draw(st.integers(0, len(t.fields) - 1))]
        ]
        out = []
        for name, ft in kept:
            spelled = name.upper() if recase and draw(st.integers(0, 4)) == 0 else name
            out.append((spelled, draw(_side(ft, recase=recase))))
        return Struct(tuple(out))
    if isinstance(t, Array):
        return Array(draw(_side(t.element, recase=recase)))
    if isinstance(t, Map):
        return Map(t.key, draw(_side(t.value, recase=recase)))
    return t if draw(st.integers(0, 4)) else ("bigint" if t == "int" else "int")


def values_of(t: Type) -> st.SearchStrategy[Any]:
    """Values of ``t``, NULL at every level."""
    inner: st.SearchStrategy[Any]
    if isinstance(t, Struct):
        inner = st.fixed_dictionaries({n: values_of(ft) for n, ft in t.fields})
    elif isinstance(t, Array):
        inner = st.lists(values_of(t.element), max_size=2)
    elif isinstance(t, Map):
        inner = st.lists(st.sampled_from(_KEYS), max_size=2, unique=True).flatmap(
            lambda keys: st.tuples(*[st.tuples(st.just(k), values_of(t.value)) for k in keys]).map(
                lambda pairs: list(pairs)
            )
        )
    else:
        inner = st.integers(-5, 5)
    return st.one_of(st.none(), inner)


def _rows(draw: st.DrawFn, schema: Struct, keys: list[int]) -> tuple[dict[str, Any], ...]:
    rows = []
    for key in keys:
        row = {"k": key}
        for name, t in schema.fields[1:]:
            row[name] = draw(values_of(t))
        rows.append(row)
    return tuple(rows)


def _paths(t: Type, base: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Type]]:
    """Every column and nested struct field, with its type."""
    out: list[tuple[tuple[str, ...], Type]] = []
    if isinstance(t, Struct):
        for name, ft in t.fields:
            if base or name != "k":
                out.append(((*base, name), ft))
                out += _paths(ft, (*base, name))
    return out


@st.composite
def _assignment(
    draw: st.DrawFn, case: dict[str, Any], kind: str, top_level: bool
) -> tuple[tuple[str, ...], Value]:
    target, source = case["target"], case["source"]
    path = draw(st.sampled_from(_candidates(case, kind, top_level=top_level)))
    if kind == "not_matched_by_source":
        same = [p for p, _ in _paths(target) if [x.lower() for x in p] == [x.lower() for x in path]]
        values = [Value(), Value(literal=3), *(Value("t", p) for p in same)]
        return path, draw(st.sampled_from(values))
    source_paths = [p for p, _ in _paths(source)]
    same = [p for p in source_paths if [x.lower() for x in p] == [x.lower() for x in path]]
    choice = draw(st.integers(0, 5))
    if same and choice < 3:
        return path, Value("s", same[0])
    if choice == 3:
        return path, Value()
    if choice == 4:
        return path, Value(literal=2)
    return path, (Value("s", draw(st.sampled_from(source_paths))) if source_paths else Value())


def _candidates(case: dict[str, Any], kind: str, *, top_level: bool) -> list[tuple[str, ...]]:
    """The columns a clause may assign: the target's, and with NOT MATCHED BY SOURCE aside the source's."""
    paths = (
        _paths(case["target"])
        if kind == "not_matched_by_source"
        else _paths(case["target"]) + _paths(case["source"])
    )
    return [p for p, _ in paths if len(p) == 1 or not top_level]


def _distinct(assignments: list[tuple[tuple[str, ...], Value]]) -> tuple[tuple[tuple[str, ...], Value], ...]:
    """No column twice, none inside another assigned one (Delta refuses such conflicts)."""
    out: list[tuple[tuple[str, ...], Value]] = []
    for path, value in assignments:
        lowered = [p.lower() for p in path]
        if not any([p.lower() for p in q[: len(lowered)]] == lowered[: len(q)] for q, _ in out):
            out.append((path, value))
    return tuple(out)


@st.composite
def _clauses_of(draw: st.DrawFn, case: dict[str, Any], kind: str) -> list[Clause]:
    count = draw(st.integers(0, 2))
    actions = {
        "matched": ("update", "delete"),
        "not_matched": ("insert",),
        "not_matched_by_source": ("update", "delete"),
    }[kind]
    out = []
    for i in range(count):
        condition = None
        if i < count - 1 or draw(st.booleans()):
            alias = "t" if kind == "not_matched_by_source" else "s"
            condition = Condition(alias, draw(st.sampled_from([">", "<"])), draw(st.integers(0, 6)))
        action = draw(st.sampled_from(actions))
        assignments = None
        if action != "delete" and (kind == "not_matched_by_source" or draw(st.booleans())):
            if not _candidates(case, kind, top_level=action == "insert"):
                action = "delete" if kind == "not_matched_by_source" else action  # nothing to assign
            else:
                drawn = draw(st.lists(_assignment(case, kind, action == "insert"), min_size=1, max_size=3))
                assignments = _distinct(drawn)
        out.append(Clause(kind, action, condition, assignments if action != "delete" else None))  # type: ignore[arg-type]
    return out


@st.composite
def merge_cases(draw: st.DrawFn, *, max_depth: int = 2) -> MergeCase:
    """A MERGE case over nested schemas (see the module docstring)."""
    columns = draw(
        st.lists(
            st.tuples(st.sampled_from(["x", "y", "z"]), _types(max_depth)),
            min_size=1,
            max_size=3,
            unique_by=lambda c: c[0],
        )
    )
    universe = Struct((("k", "bigint"), *columns))
    target = draw(_side(universe, recase=False))
    source = draw(_side(universe, recase=True))
    # `k` is the join key on both sides, never re-cased or re-typed.
    target = Struct((("k", "bigint"), *[f for f in target.fields if f[0].lower() != "k"]))  # type: ignore[union-attr]
    source = Struct((("k", "bigint"), *[f for f in source.fields if f[0].lower() != "k"]))  # type: ignore[union-attr]
    target_keys = draw(st.lists(st.integers(0, 7), max_size=4, unique=True))
    source_keys = draw(st.lists(st.integers(0, 7), max_size=4, unique=True))
    parts = {"target": target, "source": source}
    clauses = [
        c
        for kind in ("matched", "not_matched", "not_matched_by_source")
        for c in draw(_clauses_of(parts, kind))
    ]
    if not clauses:
        clauses = [Clause("matched", "update")]
    return MergeCase(
        target,
        _rows(draw, target, target_keys),
        source,
        _rows(draw, source, source_keys),
        tuple(clauses),
        draw(st.booleans()),
    )

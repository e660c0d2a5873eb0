"""Every Arrow type that maps to a Delta type is accepted by every command, as source and as target data.

Hypothesis builds a column type out of Arrow's variants (view, large, list-view, fixed-size, dictionary
columns, timestamps of every unit and zone, date64, small unsigned integers, float16) nested in
structs, lists and maps, values with nulls at every level, and runs a command with them: CREATE from
the Arrow schema, then append, overwrite, replaceWhere or MERGE (update + insert). Checked: no untyped
exception; the rows read back equal the input *logically* (each value as its Delta type holds it,
computed here from the generated value, not by the engine); delta-rs reads the table identically.
"""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_delta.core import DeltaTable
from tests.interop import rs_table

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


@dataclass(frozen=True)
class Kind:
    """An Arrow type as handed over (``given``) and as Delta holds it (``logical``), with values for both."""

    given: pa.DataType
    logical: pa.DataType
    values: st.SearchStrategy[Any]  # a value of ``given`` (never None: nulls are added by the caller)
    to_logical: Callable[[Any], Any]
    strict: bool = False  # a struct somewhere inside has a NOT NULL field


def _same(v: Any) -> Any:
    return v


def _ints(bits: int, signed: bool) -> st.SearchStrategy[int]:
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else st.integers(0, 2**bits - 1)


_TEXT = st.text(max_size=6)
_BYTES = st.binary(max_size=6)
_DAYS = st.integers(-30_000, 30_000)
_EPOCH = dt.date(1970, 1, 1)
_UNIT = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 1}


def _timestamp(unit: str, tz: str | None) -> Kind:
    # micros in the range every unit holds; ns values are whole micros plus sub-micro digits (truncated).
    micros = st.integers(-(2**52), 2**52)
    if unit == "ns":
        values = st.tuples(micros, st.integers(0, 999)).map(lambda p: p[0] * 1000 + p[1])
        # sub-microsecond digits are dropped toward zero, as Arrow's cast and delta-rs do
        to_logical: Callable[[Any], Any] = lambda v: -(-v // 1000) if v < 0 else v // 1000  # noqa: E731
    elif unit == "us":
        values, to_logical = micros, _same
    else:
        values = micros.map(lambda m, f=_UNIT[unit]: m // f)
        to_logical = lambda v, f=_UNIT[unit]: v * f  # noqa: E731
    logical = pa.timestamp("us", tz="UTC" if tz is not None else None)
    return Kind(pa.timestamp(unit, tz=tz), logical, values, to_logical)


LEAVES: list[Kind] = [
    Kind(pa.int8(), pa.int8(), _ints(8, True), _same),
    Kind(pa.int64(), pa.int64(), _ints(64, True), _same),
    Kind(pa.uint8(), pa.int16(), _ints(8, False), _same),
    Kind(pa.uint16(), pa.int32(), _ints(16, False), _same),
    Kind(pa.uint32(), pa.int64(), _ints(32, False), _same),
    Kind(pa.float16(), pa.float32(), st.sampled_from([0.0, -1.5, 2.25, 1024.0]), _same),
    Kind(pa.float64(), pa.float64(), st.floats(allow_nan=False, width=64), _same),
    Kind(pa.bool_(), pa.bool_(), st.booleans(), _same),
    Kind(pa.string(), pa.string(), _TEXT, _same),
    Kind(pa.large_string(), pa.string(), _TEXT, _same),
    Kind(pa.string_view(), pa.string(), _TEXT, _same),
    Kind(pa.dictionary(pa.int8(), pa.string()), pa.string(), st.sampled_from(["a", "b", ""]), _same),
    Kind(pa.binary(), pa.binary(), _BYTES, _same),
    Kind(pa.large_binary(), pa.binary(), _BYTES, _same),
    Kind(pa.binary_view(), pa.binary(), _BYTES, _same),
    Kind(pa.binary(3), pa.binary(), st.binary(min_size=3, max_size=3), _same),
    Kind(pa.date32(), pa.date32(), _DAYS.map(lambda d: _EPOCH + dt.timedelta(days=d)), _same),
    Kind(pa.date64(), pa.date32(), _DAYS.map(lambda d: _EPOCH + dt.timedelta(days=d)), _same),
    Kind(pa.decimal128(9, 2), pa.decimal128(9, 2), st.decimals(-9999999, 9999999, places=2, allow_nan=False,
                                                                   allow_infinity=False), _same),
    *(_timestamp(unit, tz) for unit in ("s", "ms", "us", "ns") for tz in (None, "UTC", "Asia/Kolkata")),
]


def _nullable(kind: Kind, nullable: bool) -> st.SearchStrategy[Any]:
    return st.none() | kind.values if nullable else kind.values


def _struct(children: list[Kind], nullable: list[bool]) -> Kind:
    names = [f"f{i}" for i in range(len(children))]
    given = pa.struct([pa.field(n, c.given, nb) for n, c, nb in zip(names, children, nullable, strict=True)])
    logical = pa.struct([pa.field(n, c.logical, nb) for n, c, nb in zip(names, children, nullable, strict=True)])
    values = st.fixed_dictionaries({n: _nullable(c, nb) for n, c, nb in zip(names, children, nullable, strict=True)})

    def to_logical(v: dict[str, Any]) -> dict[str, Any]:
        return {n: None if v[n] is None else c.to_logical(v[n]) for n, c in zip(names, children, strict=True)}

    strict = not all(nullable) or any(c.strict for c in children)
    return Kind(given, logical, values, to_logical, strict)


def _list(child: Kind, form: str, contains_null: bool) -> Kind:
    contains_null = contains_null and not child.strict  # (pyarrow cannot build null strict structs in lists)
    item = pa.field("item", child.given, contains_null)
    given = {"list": pa.list_(item), "large_list": pa.large_list(item), "list_view": pa.list_view(item),
             "large_list_view": pa.large_list_view(item), "fixed_size_list": pa.list_(item, 2)}[form]
    logical = pa.list_(pa.field("element", child.logical, contains_null))
    size = {"min_size": 2, "max_size": 2} if form == "fixed_size_list" else {"max_size": 3}
    values = st.lists(_nullable(child, contains_null), **size)
    return Kind(given, logical, values, lambda v: [None if x is None else child.to_logical(x) for x in v],
                child.strict)


def _map(value: Kind, key_view: bool, value_nullable: bool) -> Kind:
    value_nullable = value_nullable and not value.strict
    key = pa.string_view() if key_view else pa.string()
    given = pa.map_(key, pa.field("value", value.given, value_nullable))
    logical = pa.map_(pa.string(), pa.field("value", value.logical, value_nullable))
    values = st.dictionaries(_TEXT, _nullable(value, value_nullable), max_size=3).map(lambda d: list(d.items()))
    return Kind(given, logical, values,
                lambda v: [(k, None if x is None else value.to_logical(x)) for k, x in v], value.strict)


def _kinds() -> st.SearchStrategy[Kind]:
    leaves = st.sampled_from(LEAVES)
    forms = st.sampled_from(["list", "large_list", "list_view", "large_list_view", "fixed_size_list"])

    def extend(inner: st.SearchStrategy[Kind]) -> st.SearchStrategy[Kind]:
        structs = st.lists(st.tuples(inner, st.booleans()), min_size=1, max_size=3).map(
            lambda cs: _struct([c for c, _ in cs], [n for _, n in cs]))
        lists = st.builds(_list, inner, forms, st.booleans())
        maps = st.builds(_map, inner, st.booleans(), st.booleans())
        return structs | lists | maps

    return st.recursive(leaves, extend, max_leaves=4)


@st.composite
def columns(draw: st.DrawFn) -> tuple[Kind, list[Any]]:
    kind = draw(_kinds())
    return kind, draw(st.lists(_nullable(kind, True), min_size=1, max_size=6))


def _build(values: list[Any], typ: pa.DataType) -> pa.Array:
    """``pa.array(values, typ)``, except that a null struct may have NOT NULL fields (valid Arrow and Delta)."""
    if not pa.types.is_struct(typ):
        return pa.array(values, typ)
    fields = [typ.field(i) for i in range(typ.num_fields)]
    children = [_build([None if v is None else v[f.name] for v in values], f.type) for f in fields]
    return pa.StructArray.from_arrays(children, fields=fields, mask=pa.array([v is None for v in values]))


def _as_given(kind: Kind, values: list[Any], keys: list[int]) -> pa.Table:
    """The rows in two chunks (a chunked column) when there are at least two."""
    table = pa.table({"k": pa.array(keys, pa.int64()), "c": _build(values, kind.given)})
    return pa.concat_tables([table.slice(0, 1), table.slice(1)]) if table.num_rows > 1 else table


def _expected(kind: Kind, values: list[Any], keys: list[int]) -> list[dict[str, Any]]:
    logical = _build([None if v is None else kind.to_logical(v) for v in values], kind.logical)
    return sorted(({"k": k, "c": c} for k, c in zip(keys, logical.to_pylist(), strict=True)), key=lambda r: r["k"])


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.select(["k", "c"]).to_pylist(), key=lambda r: r["k"])


_COUNTER = itertools.count()
COMMANDS = ["append", "append_stream", "overwrite", "replace_where", "merge", "merge_stream"]


def _run(command: str, location: str, data: pa.Table) -> DeltaTable:
    t = DeltaTable.create(location, data.schema)  # the Arrow schema as handed over
    half = data.slice(0, data.num_rows // 2)
    if command == "append":
        t.append(data)
    elif command == "append_stream":
        t.append(data.to_reader(max_chunksize=2))
    elif command == "overwrite":
        t.append(half)
        t.overwrite(data)
    elif command == "replace_where":
        t.append(half)
        t.overwrite(data, "k >= 0")
    else:
        t.append(half)
        source: Any = data.to_reader() if command == "merge_stream" else data
        (t.merge(source, "t.k = s.k", source_alias="s", target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())
    return DeltaTable(location)


@pytest.mark.parametrize("command", COMMANDS)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(column=columns())
def test_every_arrow_type_round_trips_through_every_command(
    tmp_path: Path, command: str, column: tuple[Kind, list[Any]]
) -> None:
    kind, values = column
    keys = list(range(len(values)))
    data = _as_given(kind, values, keys)
    location = str(tmp_path / f"t{next(_COUNTER)}")
    table = _run(command, location, data)
    expected = _expected(kind, values, keys)
    assert _rows(table.to_arrow()) == expected
    assert table.schema.to_json() == DeltaTable.create(location + "-logical", pa.schema(
        [pa.field("k", pa.int64()), pa.field("c", kind.logical)])).schema.to_json()
    assert _rows(rs_table(location).to_pyarrow_table()) == expected

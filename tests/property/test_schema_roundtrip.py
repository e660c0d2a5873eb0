"""Random nested Delta schemas survive JSON and Arrow round trips, and conform_table recovers random
data of those schemas from files written under column mapping."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_delta.core.schema.arrow import from_arrow_schema, to_arrow_schema
from airflow_provider_delta.core.schema.conform import conform_table
from airflow_provider_delta.core.schema.mapping import (
    assign_column_mapping,
    field_id,
    logical_to_physical_paths,
    physical_name,
    physical_schema,
)
from airflow_provider_delta.core.schema.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNtzType,
    TimestampType,
    schema_from_json,
)

SCHEMA_PROFILE = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DATA_PROFILE = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ---------------------------------------------------------------------------------------------- schemas

primitive_types = st.sampled_from(
    [
        StringType(),
        LongType(),
        IntegerType(),
        ShortType(),
        ByteType(),
        FloatType(),
        DoubleType(),
        BooleanType(),
        BinaryType(),
        DateType(),
        TimestampType(),
        TimestampNtzType(),
        NullType(),
    ]
) | st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: DecimalType(p, s)))

field_names = st.text(min_size=1, max_size=8)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=5,
)
metadata_maps = st.dictionaries(st.text(max_size=12), json_values, max_size=3)


def _nullable(flag: bool, data_type: DataType) -> bool:
    # Arrow has no non-nullable null type: `void` is always nullable (as Spark writes it).
    return flag or isinstance(data_type, NullType)


def _structs(
    element: st.SearchStrategy[DataType], metadata: st.SearchStrategy[dict[str, Any]], *, min_size: int = 0
) -> st.SearchStrategy[StructType]:
    return st.lists(
        st.tuples(field_names, element, st.booleans(), metadata),
        min_size=min_size,
        max_size=4,
        unique_by=lambda t: t[0],
    ).map(lambda items: StructType(tuple(StructField(n, t, _nullable(b, t), m) for n, t, b, m in items)))


def _types(
    metadata: st.SearchStrategy[dict[str, Any]], *, min_struct: int = 0
) -> st.SearchStrategy[DataType]:
    return st.recursive(
        primitive_types,
        lambda children: (
            st.builds(lambda t, b: ArrayType(t, _nullable(b, t)), children, st.booleans())
            | st.builds(
                lambda k, v, b: MapType(k, v, _nullable(b, v)),
                children.filter(lambda k: not isinstance(k, NullType)),
                children,
                st.booleans(),
            )
            | _structs(children, metadata, min_size=min_struct)
        ),
        max_leaves=8,
    )


schemas_with_metadata = _structs(_types(metadata_maps), metadata_maps)
schemas_without_metadata = _structs(_types(st.just({})), st.just({}))
# Parquet cannot store a struct without fields.
parquet_schemas = _structs(_types(st.just({}), min_struct=1), st.just({}), min_size=1)

# ------------------------------------------------------------------------------------------------- data

_INT_BOUNDS = {ByteType: 7, ShortType: 15, IntegerType: 31, LongType: 63}


def _values(data_type: DataType) -> st.SearchStrategy[Any]:
    if isinstance(data_type, (ByteType, ShortType, IntegerType, LongType)):
        bits = _INT_BOUNDS[type(data_type)]
        return st.integers(-(2**bits), 2**bits - 1)
    if isinstance(data_type, FloatType):
        return st.floats(width=32, allow_nan=False)
    if isinstance(data_type, DoubleType):
        return st.floats(allow_nan=False)
    if isinstance(data_type, StringType):
        return st.text(max_size=5)
    if isinstance(data_type, BinaryType):
        return st.binary(max_size=5)
    if isinstance(data_type, BooleanType):
        return st.booleans()
    if isinstance(data_type, DateType):
        return st.dates()
    if isinstance(data_type, TimestampType):
        return st.datetimes(timezones=st.just(dt.timezone.utc))
    if isinstance(data_type, TimestampNtzType):
        return st.datetimes()
    if isinstance(data_type, DecimalType):
        # Unscaled integers turned into text: Decimal arithmetic (and st.decimals) round to 28 digits.
        limit, scale = 10**data_type.precision - 1, data_type.scale
        return st.integers(-limit, limit).map(lambda n: decimal.Decimal(f"{n}E-{scale}"))
    if isinstance(data_type, NullType):
        return st.none()
    if isinstance(data_type, ArrayType):
        return st.lists(_maybe_null(data_type.element_type, data_type.contains_null), max_size=3)
    if isinstance(data_type, MapType):
        pairs = st.tuples(
            _values(data_type.key_type), _maybe_null(data_type.value_type, data_type.value_contains_null)
        )
        return st.lists(pairs, max_size=3, unique_by=lambda kv: repr(kv[0]))
    assert isinstance(data_type, StructType)
    return st.fixed_dictionaries({f.name: _maybe_null(f.type, f.nullable) for f in data_type})


def _maybe_null(data_type: DataType, nullable: bool) -> st.SearchStrategy[Any]:
    return st.none() | _values(data_type) if nullable else _values(data_type)


@st.composite
def schemas_and_rows(draw: st.DrawFn) -> tuple[StructType, list[dict[str, Any]]]:
    schema = draw(parquet_schemas)
    rows = draw(st.lists(_values(schema), max_size=4))
    return schema, rows


def _physical_value(value: Any, data_type: DataType) -> Any:
    """A Python value of the logical schema, re-keyed by physical names."""
    if value is None:
        return None
    if isinstance(data_type, StructType):
        return {physical_name(f): _physical_value(value[f.name], f.type) for f in data_type}
    if isinstance(data_type, ArrayType):
        return [_physical_value(v, data_type.element_type) for v in value]
    if isinstance(data_type, MapType):
        return [
            (_physical_value(k, data_type.key_type), _physical_value(v, data_type.value_type))
            for k, v in value
        ]
    return value


def _physical_file(rows: list[dict[str, Any]], mapped: StructType) -> pa.Table:
    """The rows as a writer under column mapping stores them: physical names, field ids, reversed order."""
    physical = to_arrow_schema(mapped, physical=True)
    physical_rows = [_physical_value(row, mapped) for row in rows]
    reordered = pa.schema(list(reversed(list(physical))))
    return pa.Table.from_pylist(physical_rows, schema=reordered)


def _through_parquet(table: pa.Table) -> pa.Table:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return pq.read_table(pa.BufferReader(buffer.getvalue()))


# ------------------------------------------------------------------------------------------------ tests


@SCHEMA_PROFILE
@given(schemas_with_metadata)
def test_any_schema_round_trips_through_json_text(schema: StructType) -> None:
    text = schema.to_json()
    assert schema_from_json(text) == schema
    assert schema_from_json(json.loads(text)).to_json() == text


@SCHEMA_PROFILE
@given(schemas_with_metadata)
def test_a_parsed_copy_of_a_schema_is_equal_and_hashes_equally(schema: StructType) -> None:
    copy = schema_from_json(schema.to_json())
    assert copy == schema
    assert hash(copy) == hash(schema)


@SCHEMA_PROFILE
@given(schemas_without_metadata)
def test_any_schema_round_trips_through_arrow(schema: StructType) -> None:
    assert from_arrow_schema(to_arrow_schema(schema)) == schema


@SCHEMA_PROFILE
@given(schemas_without_metadata)
def test_column_mapping_gives_unique_ids_and_names_that_physical_arrow_uses(schema: StructType) -> None:
    mapped, max_id = assign_column_mapping(schema, 1)
    fields = [f for _, f in mapped.walk()]
    assert sorted(field_id(f) or 0 for f in fields) == list(range(1, max_id + 1))
    assert len({physical_name(f) for f in fields}) == len(fields)
    assert to_arrow_schema(mapped, physical=True).names == list(physical_schema(mapped).names)
    assert set(logical_to_physical_paths(mapped)) == set(logical_to_physical_paths(schema))
    assert from_arrow_schema(to_arrow_schema(mapped)) == schema


@DATA_PROFILE
@given(schemas_and_rows())
def test_conform_table_is_the_identity_on_data_of_the_logical_schema(
    case: tuple[StructType, list[dict[str, Any]]],
) -> None:
    schema, rows = case
    table = pa.Table.from_pylist(rows, schema=to_arrow_schema(schema))
    result = conform_table(table, schema, mode="none")
    assert result.schema == table.schema
    assert result.to_pylist() == rows


@DATA_PROFILE
@given(schemas_and_rows(), st.sampled_from(["name", "id"]))
def test_conform_table_reads_back_data_written_under_column_mapping_through_parquet(
    case: tuple[StructType, list[dict[str, Any]]], mode: Literal["name", "id"]
) -> None:
    schema, rows = case
    mapped, _ = assign_column_mapping(schema, 1)
    file_table = _through_parquet(_physical_file(rows, mapped))
    result = conform_table(file_table, mapped, mode=mode)
    assert result.schema == to_arrow_schema(mapped)
    assert result.to_pylist() == rows

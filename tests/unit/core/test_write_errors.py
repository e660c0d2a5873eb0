"""Bad input on the write side: each mistake is a typed error naming the fault, and the table is unchanged.

Every case snapshots the table (latest version, rows, active files) before the bad call and checks it
is exactly the same afterwards: a failed write never leaves a commit behind.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from airflow_provider_delta.core import (
    CommitError,
    DeltaError,
    DeltaTable,
    PredicateError,
    ProtocolError,
    SchemaError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
)
from airflow_provider_delta.core.properties import InvalidPropertyError

if TYPE_CHECKING:
    from collections.abc import Callable

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("small", pa.int32()),
        ("amount", pa.decimal128(5, 2)),
        ("p", pa.string()),
    ]
)


def _rows(**columns: list[Any]) -> pa.Table:
    n = len(next(iter(columns.values())))
    full = {
        "id": list(range(100, 100 + n)),
        "small": [1] * n,
        "amount": [Decimal("1.00")] * n,
        "p": ["a"] * n,
    }
    full.update(columns)
    return pa.Table.from_pydict(full, schema=SCHEMA)


@pytest.fixture
def table(tmp_path) -> DeltaTable:
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"])
    t.append(
        pa.Table.from_pydict(
            {
                "id": [1, 2, 3],
                "small": [1, 2, None],
                "amount": [Decimal("1.50"), None, Decimal("3.00")],
                "p": ["a", "b", None],
            },
            schema=SCHEMA,
        )
    )
    return t


State = tuple[int, list[tuple[Any, ...]], list[str], list[str]]


def _state(location: str) -> State:
    """Version, rows, active files, and every file on disk outside the log (a refused write writes none)."""
    t = DeltaTable(location)
    rows = sorted(tuple(r.values()) for r in t.to_arrow().to_pylist())
    on_disk = sorted(
        str(p.relative_to(location))
        for p in Path(location).rglob("*")
        if p.is_file() and "_delta_log" not in p.parts
    )
    return DeltaTable.latest_version(location), rows, sorted(f.path for f in t.files()), on_disk


def _assert_unchanged(location: str, before: State) -> None:
    assert _state(location) == before
    log = Path(location) / "_delta_log"
    assert not (log / f"{before[0] + 1:020d}.json").exists()


def _fails(table: DeltaTable, call: Callable[[DeltaTable], Any], error: type[Exception], match: str) -> None:
    before = _state(table.location)
    with pytest.raises(error, match=match):
        call(table)
    _assert_unchanged(table.location, before)


# -- wrong schema on append ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "error", "match"),
    [
        pytest.param(
            pa.table({"id": ["x"], "p": ["a"]}),
            SchemaMismatchError,
            r"'id'.*string.*expected long",
            id="wrong-type",
        ),
        pytest.param(
            pa.table({"id": pa.array([1], pa.int64()), "extra": [1]}),
            SchemaMismatchError,
            r"'extra' is not in the table schema",
            id="unknown-column",
        ),
        pytest.param(
            pa.table({"small": pa.array([1], pa.int32())}),
            SchemaMismatchError,
            r"'id' is missing and not nullable",
            id="missing-required-column",
        ),
        pytest.param(
            pa.table({"id": pa.array([None], pa.int64())}),
            SchemaMismatchError,
            r"'id' is not nullable but has 1 null",
            id="null-in-not-null-column",
        ),
        pytest.param(
            pa.table({"id": pa.array([1], pa.int64()), "small": pa.array([2**40], pa.int64())}),
            SchemaMismatchError,
            r"'small' cannot be cast to integer",
            id="integer-overflow",
        ),
        pytest.param(
            pa.table(
                {
                    "id": pa.array([1], pa.int64()),
                    "amount": pa.array([Decimal("12345.67")], pa.decimal128(7, 2)),
                }
            ),
            SchemaMismatchError,
            r"'amount' cannot be cast to decimal\(5,2\)",
            id="decimal-overflow",
        ),
    ],
)
def test_append_with_wrong_schema_raises_schema_mismatch_naming_the_column(table, data, error, match):
    _fails(table, lambda t: t.append(data), error, match)


def test_schema_mismatch_is_also_a_value_error_and_a_delta_error(table):
    with pytest.raises(ValueError, match="'id'") as info:
        table.append(pa.table({"id": ["x"]}))
    assert isinstance(info.value, DeltaError)
    assert isinstance(info.value, SchemaError)


def test_overwrite_with_wrong_schema_keeps_the_old_rows(table):
    _fails(table, lambda t: t.overwrite(pa.table({"id": ["x"]})), SchemaMismatchError, "'id'")


def test_update_to_a_value_that_does_not_fit_the_column_raises_schema_mismatch(table):
    _fails(table, lambda t: t.update("id = 1", {"small": "'abc'"}), SchemaMismatchError, "'small'")


@pytest.fixture
def constrained(tmp_path) -> DeltaTable:
    t = DeltaTable.create(
        str(tmp_path / "c"),
        SCHEMA,
        partition_by=["p"],
        properties={"delta.constraints.small_positive": "small > 0"},
    )
    t.append(_rows(id=[1, 2], small=[1, None]))
    return t


def test_append_that_violates_a_check_constraint_raises_naming_it(constrained):
    _fails(
        constrained,
        lambda t: t.append(_rows(small=[5, -1])),
        SchemaMismatchError,
        r"1 row\(s\) violate CHECK constraint 'small_positive' \(small > 0\)",
    )


def test_update_that_violates_a_check_constraint_raises_and_changes_nothing(constrained):
    _fails(constrained, lambda t: t.update("id = 1", {"small": "-5"}), SchemaMismatchError, "small_positive")


def test_wrong_type_on_a_table_with_check_constraints_is_still_a_schema_mismatch(constrained):
    _fails(
        constrained, lambda t: t.append(pa.table({"id": ["x"], "small": ["y"]})), SchemaMismatchError, "'id'"
    )


def test_append_without_a_nullable_column_a_check_constraint_reads_passes_the_check(constrained):
    # The missing column is null-filled; NULL does not violate a CHECK constraint (SQL semantics).
    assert constrained.append(pa.table({"id": pa.array([9], pa.int64()), "p": ["a"]})) == 2
    assert DeltaTable(constrained.location).to_arrow(filter="id = 9")["small"].to_pylist() == [None]


def test_check_constraint_sees_columns_matched_case_insensitively(constrained):
    data = pa.table({"ID": pa.array([9], pa.int64()), "SMALL": pa.array([3], pa.int32())})
    assert constrained.append(data) == 2


# -- predicates -----------------------------------------------------------------------------------

OPERATIONS: dict[str, Callable[[DeltaTable, Any], Any]] = {
    "delete": lambda t, pred: t.delete(pred),
    "update": lambda t, pred: t.update(pred, {"small": "small + 1"}),
    "overwrite": lambda t, pred: t.overwrite(_rows(id=[9], p=["a"]).slice(0, 0), pred),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
@pytest.mark.parametrize(
    ("predicate", "match"),
    [
        pytest.param(
            "nope = 1",
            r"Cannot resolve column 'nope'.*available columns id, small, amount, p",
            id="unknown-column",
        ),
        pytest.param(
            "p = 'a' AND nested.x > 1", r"Cannot resolve column 'nested", id="unknown-nested-column"
        ),
        pytest.param([("nope", "=", 1)], r"'nope'", id="unknown-column-in-dnf"),
    ],
)
def test_unknown_column_in_a_predicate_raises_predicate_error_naming_it(table, operation, predicate, match):
    _fails(table, lambda t: OPERATIONS[operation](t, predicate), PredicateError, match)


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
@pytest.mark.parametrize(
    "predicate",
    [
        pytest.param("id = = 1", id="double-operator"),
        pytest.param("id IN (1,", id="unclosed-paren"),
        pytest.param("id =", id="missing-operand"),
        pytest.param("id + 1", id="not-a-condition"),
        pytest.param(42, id="not-sql-text"),
    ],
)
def test_unparsable_predicate_raises_predicate_error(table, operation, predicate):
    _fails(table, lambda t: OPERATIONS[operation](t, predicate), PredicateError, "Cannot parse")


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
@pytest.mark.parametrize("predicate", ["id", "p"])
def test_a_bare_non_boolean_column_as_predicate_raises_predicate_error(table, operation, predicate):
    # "WHERE id" is not a condition: Spark rejects it at analysis ("must be boolean").
    _fails(table, lambda t: OPERATIONS[operation](t, predicate), PredicateError, repr(predicate))


def test_predicate_comparing_incompatible_types_raises_predicate_error(table):
    _fails(table, lambda t: t.delete("id = 'abc'"), PredicateError, "cannot compare 'id'")


def test_partition_predicate_that_cannot_be_evaluated_deletes_nothing(table):
    # 'a' cannot be cast to INT, so "p > 3" has no answer for partition 'a'. Reading with it raises;
    # deleting with it must raise too, not drop every file whose partition could not be evaluated.
    with pytest.raises(PredicateError):
        table.to_arrow(filter="p > 3")
    _fails(table, lambda t: t.delete("p > 3"), PredicateError, "p")


def test_overwrite_with_rows_outside_the_predicate_raises_schema_mismatch(table):
    data = _rows(id=[7, 8], p=["a", "b"])
    _fails(
        table,
        lambda t: t.overwrite(data, "p = 'a'"),
        SchemaMismatchError,
        r"1 row\(s\) of the new data do not match the predicate",
    )


def test_update_of_an_unknown_column_raises_predicate_error(table):
    _fails(table, lambda t: t.update("id = 1", {"nope": "1"}), PredicateError, "Cannot update column 'nope'")


def test_update_with_an_unparsable_assignment_raises_predicate_error(table):
    _fails(table, lambda t: t.update("id = 1", {"small": "small +"}), PredicateError, r"small \+")


def test_update_without_assignments_raises(table):
    _fails(table, lambda t: t.update("id = 1", {}), DeltaError, "no assignments")


def test_append_with_app_id_but_no_version_raises(table):
    _fails(
        table, lambda t: t.append(_rows(id=[9]), app_id="job"), DeltaError, "app_id and app_version together"
    )


# -- table properties -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("properties", "match"),
    [
        ({"delta.checkpointInterval": "0"}, r"'delta.checkpointInterval' to '0': expected an integer >= 1"),
        ({"delta.checkpointInterval": "ten"}, r"'delta.checkpointInterval' to 'ten'"),
        ({"delta.appendOnly": "maybe"}, r"'delta.appendOnly' to 'maybe': expected true or false"),
        ({"delta.logRetentionDuration": "forever"}, r"'delta.logRetentionDuration' to 'forever'"),
        ({"delta.columnMapping.mode": "position"}, r"expected one of none, name, id"),
        ({"delta.isolationLevel": "ReadCommitted"}, r"'delta.isolationLevel'"),
        ({"delta.feature.columnMapping": "on"}, r"'delta.feature.columnMapping' to 'on'"),
        (
            {"delta.enableChangeDataFeeds": "true"},
            r"'delta.enableChangeDataFeeds': unknown delta.\* property",
        ),
    ],
)
def test_invalid_property_on_create_raises_invalid_property_and_creates_nothing(tmp_path, properties, match):
    location = tmp_path / "t"
    with pytest.raises(InvalidPropertyError, match=match) as info:
        DeltaTable.create(str(location), SCHEMA, properties=properties)
    assert info.value.key == next(iter(properties))
    assert isinstance(info.value, (DeltaError, ValueError))
    assert not (location / "_delta_log").exists()


def test_unknown_table_feature_on_create_is_refused(tmp_path):
    # Delta Lake refuses delta.feature.<name> for a feature it does not know; creating a table this
    # engine could then never write to is worse than an error.
    location = tmp_path / "t"
    with pytest.raises((InvalidPropertyError, UnsupportedFeatureError), match="someFutureFeature"):
        DeltaTable.create(str(location), SCHEMA, properties={"delta.feature.someFutureFeature": "supported"})
    assert not (location / "_delta_log").exists()


def test_enabling_row_tracking_on_create_is_refused(tmp_path):
    # delta.enableRowTracking=true needs the rowTracking writer feature (PROTOCOL.md "Row Tracking"),
    # which this engine cannot honour (it would have to assign baseRowId/defaultRowCommitVersion).
    # Creating a (1, 2) table that silently ignores the property misleads every later reader.
    location = tmp_path / "t"
    with pytest.raises((InvalidPropertyError, UnsupportedFeatureError), match=r"(?i)row ?tracking"):
        DeltaTable.create(str(location), SCHEMA, properties={"delta.enableRowTracking": "true"})
    assert not (location / "_delta_log").exists()


def test_invalid_property_in_a_metadata_update_is_refused(table):
    md = table.metadata
    bad = dataclasses.replace(md, configuration={**md.configuration, "delta.checkpointInterval": "abc"})

    def commit(t: DeltaTable) -> None:
        with t.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.update_metadata(bad)

    _fails(table, commit, InvalidPropertyError, "delta.checkpointInterval")


def test_enabling_a_feature_property_in_a_metadata_update_needs_a_protocol_that_supports_it(table):
    # PROTOCOL.md "Change Data Files": writer version 4 (or the changeDataFeed feature) is required
    # before delta.enableChangeDataFeed may be true. Either the engine upgrades the protocol in the same
    # commit, or it refuses the commit; committing the property on a (1, 2) table is a protocol violation.
    md = table.metadata
    cdf = dataclasses.replace(md, configuration={**md.configuration, "delta.enableChangeDataFeed": "true"})
    try:
        with table.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.update_metadata(cdf)
    except (ProtocolError, InvalidPropertyError):
        assert DeltaTable.latest_version(table.location) == table.version
        return
    protocol = DeltaTable(table.location).protocol
    assert protocol.min_writer_version >= 4
    if protocol.min_writer_version == 7:
        assert "changeDataFeed" in (protocol.writer_features or ())


# -- tables this engine cannot write ----------------------------------------------------------------


def _handmade_table(
    location: Path,
    protocol: dict[str, Any],
    schema_fields: list[dict[str, Any]] | None = None,
    configuration: dict[str, str] | None = None,
) -> str:
    """Write version 0 by hand: commitInfo, protocol, metaData (as another engine would)."""
    fields = schema_fields or [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "p", "type": "string", "nullable": True, "metadata": {}},
    ]
    log = location / "_delta_log"
    log.mkdir(parents=True)
    actions = [
        {
            "commitInfo": {
                "timestamp": 1_700_000_000_000,
                "operation": "CREATE TABLE",
                "engineInfo": "handmade",
            }
        },
        {"protocol": protocol},
        {
            "metaData": {
                "id": str(uuid.uuid4()),
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps({"type": "struct", "fields": fields}),
                "partitionColumns": [],
                "configuration": configuration or {},
                "createdTime": 1_700_000_000_000,
            }
        },
    ]
    (log / "00000000000000000000.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return str(location)


def _upgraded_by_another_engine(location: Path, protocol: dict[str, Any]) -> DeltaTable:
    """A table with rows whose protocol another engine then upgraded beyond what we can write."""
    t = DeltaTable.create(str(location), pa.schema([("id", pa.int64()), ("p", pa.string())]))
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["a", "b"]}))
    actions = [
        {"commitInfo": {"timestamp": 1_700_000_000_000, "operation": "UPGRADE PROTOCOL"}},
        {"protocol": protocol},
    ]
    (location / "_delta_log" / "00000000000000000002.json").write_text(
        "\n".join(json.dumps(a) for a in actions) + "\n"
    )
    return DeltaTable(str(location))


UNWRITABLE = [
    pytest.param(
        {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["rowTracking", "domainMetadata"]},
        "rowTracking",
        id="row-tracking",
    ),
    pytest.param(
        {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "someFutureFeature"]},
        "someFutureFeature",
        id="future-writer-feature",
    ),
    pytest.param({"minReaderVersion": 1, "minWriterVersion": 8}, "writer version 8", id="writer-version-8"),
    pytest.param(
        {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["clustering", "domainMetadata"]},
        "clustering",
        id="liquid-clustering",
    ),
]

WRITES: dict[str, Callable[[DeltaTable], Any]] = {
    "append": lambda t: t.append(pa.table({"id": pa.array([3], pa.int64()), "p": ["a"]})),
    "idempotent-append": lambda t: t.append(pa.table({"id": pa.array([3], pa.int64())}), "job", 1),
    "overwrite": lambda t: t.overwrite(pa.table({"id": pa.array([3], pa.int64()), "p": ["a"]})),
    "overwrite-where": lambda t: t.overwrite(
        pa.table({"id": pa.array([3], pa.int64()), "p": ["a"]}), "p = 'a'"
    ),
    "delete": lambda t: t.delete("id = 1"),
    "delete-all": lambda t: t.delete(),
    "update": lambda t: t.update("id = 1", {"id": "10"}),
    "transaction": lambda t: t.transaction().commit(),
    "merge": lambda t: (
        t.merge(
            pa.table({"id": pa.array([1, 7], pa.int64()), "p": ["a", "a"]}),
            "s.id = t.id",
            source_alias="s",
            target_alias="t",
        )
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    ),
}


@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize(("protocol", "fault"), UNWRITABLE)
def test_writing_to_a_table_whose_protocol_we_cannot_write_raises_unsupported_feature(
    tmp_path, protocol, fault, write
):
    t = _upgraded_by_another_engine(tmp_path / "t", protocol)
    assert t.to_arrow().num_rows == 2  # reading is fine: no reader feature is missing
    before = _state(t.location)
    with pytest.raises(UnsupportedFeatureError, match=fault) as info:
        WRITES[write](t)
    assert isinstance(info.value, ProtocolError)
    assert "Cannot write to table" in str(info.value)
    _assert_unchanged(t.location, before)


def test_unsupported_writer_feature_error_lists_the_missing_and_supported_features(tmp_path):
    t = _upgraded_by_another_engine(
        tmp_path / "t",
        {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["rowTracking", "domainMetadata"]},
    )
    with pytest.raises(UnsupportedFeatureError) as info:
        t.append(pa.table({"id": pa.array([1], pa.int64())}))
    assert info.value.features == ("rowTracking",)
    assert "columnMapping" in info.value.supported
    assert "at version 2" in str(info.value)


def test_handmade_table_with_an_unwritable_protocol_refuses_the_first_write(tmp_path):
    location = _handmade_table(
        tmp_path / "t",
        {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["someFutureFeature"]},
    )
    with pytest.raises(UnsupportedFeatureError, match="someFutureFeature"):
        DeltaTable(location).append(pa.table({"id": pa.array([1], pa.int64())}))
    assert sorted(p.name for p in (tmp_path / "t" / "_delta_log").iterdir()) == ["00000000000000000000.json"]


def test_table_with_an_unknown_reader_feature_is_refused_on_load(tmp_path):
    location = _handmade_table(
        tmp_path / "t",
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["someFutureReaderFeature"],
            "writerFeatures": ["someFutureReaderFeature"],
        },
    )
    with pytest.raises(UnsupportedFeatureError, match="someFutureReaderFeature"):
        DeltaTable(location)


def test_generated_column_table_refuses_writes_it_cannot_compute(tmp_path):
    fields = [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {
            "name": "id_x2",
            "type": "long",
            "nullable": True,
            "metadata": {"delta.generationExpression": "id * 2"},
        },
    ]
    location = _handmade_table(tmp_path / "t", {"minReaderVersion": 1, "minWriterVersion": 4}, fields)
    t = DeltaTable(location)
    _fails(
        t,
        lambda t: t.append(pa.table({"id": pa.array([1], pa.int64())})),
        UnsupportedFeatureError,
        "'id_x2' is a generated column",
    )


def test_append_only_table_refuses_delete_and_overwrite(tmp_path):
    t = DeltaTable.create(
        str(tmp_path / "t"), pa.schema([("id", pa.int64())]), properties={"delta.appendOnly": "true"}
    )
    t.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    _fails(t, lambda t: t.delete("id = 1"), CommitError, r"append-only \(delta.appendOnly=true\)")
    _fails(t, lambda t: t.overwrite(pa.table({"id": pa.array([3], pa.int64())})), CommitError, "append-only")
    _fails(t, lambda t: t.update("id = 1", {"id": "5"}), CommitError, "append-only")
    upsert = pa.table({"id": pa.array([1, 9], pa.int64())})
    _fails(
        t,
        lambda t: (
            t.merge(upsert, "s.id = t.id", source_alias="s", target_alias="t")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        ),
        CommitError,
        r"MERGE .*append-only",
    )
    assert t.append(pa.table({"id": pa.array([3], pa.int64())})) == 2
    inserted = (
        t.merge(upsert, "s.id = t.id", source_alias="s", target_alias="t")
        .when_not_matched_insert_all()
        .execute()
    )
    assert inserted["version"] == 3
    assert sorted(t.refresh().to_arrow()["id"].to_pylist()) == [1, 2, 3, 9]


# -- creation --------------------------------------------------------------------------------------


def test_creating_over_an_existing_table_raises_table_already_exists(table):
    _fails(table, lambda t: DeltaTable.create(t.location, SCHEMA), TableAlreadyExistsError, "already exists")


@pytest.mark.parametrize(
    ("schema", "partition_by", "properties", "match"),
    [
        (SCHEMA, ["nope"], {}, r"Cannot partition table .* by 'nope': no such column"),
        (pa.schema([("id", pa.int64()), ("ID", pa.int64())]), [], {}, "duplicate column names"),
        (
            pa.schema([("_change_type", pa.string())]),
            [],
            {"delta.enableChangeDataFeed": "true"},
            "'_change_type' uses a name reserved",
        ),
    ],
)
def test_invalid_schema_on_create_raises_schema_error_and_creates_nothing(
    tmp_path, schema, partition_by, properties, match
):
    location = tmp_path / "t"
    with pytest.raises(SchemaError, match=match):
        DeltaTable.create(str(location), schema, partition_by=partition_by, properties=properties)
    assert not (location / "_delta_log").exists()

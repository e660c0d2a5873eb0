"""The per-file join on one integer key pairs exactly the rows Arrow's hash join pairs."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.executor.merge.probe import SortedKeys


def _hash_join_pairs(target: pa.Array, source: pa.Array, rows: np.ndarray | None) -> set[tuple[int, int]]:
    t_rows = np.arange(len(target)) if rows is None else rows
    left = pa.table({"k": target.take(pa.array(t_rows)).cast(pa.int64()), "t": pa.array(t_rows, pa.int64())})
    right = pa.table({"k": source.cast(pa.int64()), "s": pa.array(np.arange(len(source)), pa.int64())})
    joined = left.join(right, keys=["k"], join_type="inner")
    return set(zip(joined.column("t").to_pylist(), joined.column("s").to_pylist(), strict=True))


def _keys(
    rng: np.random.Generator, n: int, high: int, arrow_type: pa.DataType, null_share: float
) -> pa.Array:
    values = rng.integers(0 if pa.types.is_unsigned_integer(arrow_type) else -high, high, n)
    return pa.array(values, arrow_type, mask=rng.random(n) < null_share)


@pytest.mark.parametrize("seed", range(12))
def test_probe_pairs_equal_the_hash_join_pairs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    types = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint32()]
    high = 100 if seed % 3 else 5_000  # few distinct values: duplicates on both sides
    s_type, t_type = types[seed % len(types)], types[(seed * 7 + 1) % len(types)]
    if 8 in (s_type.bit_width, t_type.bit_width):
        high = 100
    source = _keys(rng, int(rng.integers(0, 400)), high, s_type, 0.1 if seed % 2 else 0.0)
    target = _keys(rng, int(rng.integers(0, 400)), high, t_type, 0.2 if seed % 4 else 0.0)
    rows = (
        np.sort(rng.choice(len(target), len(target) // 2, replace=False))
        if seed % 5 == 0 and len(target)
        else None
    )
    keys = SortedKeys.build(source, np.arange(len(source)))
    t, s = keys.probe(
        pa.chunked_array([target.slice(0, len(target) // 2), target.slice(len(target) // 2)]), rows
    )
    assert len(t) == len(set(zip(t.tolist(), s.tolist(), strict=True)))  # no pair twice
    assert set(zip(t.tolist(), s.tolist(), strict=True)) == _hash_join_pairs(target, source, rows)
    assert list(t) == sorted(t)  # in target row order


def test_a_source_holding_only_nulls_or_nothing_pairs_nothing() -> None:
    for source in (pa.nulls(3, pa.int64()), pa.array([], pa.int64())):
        t, s = SortedKeys.build(source, np.arange(len(source))).probe(pa.array([1, None, 2]), None)
        assert (len(t), len(s)) == (0, 0)


def test_merge_on_an_int_key_with_a_long_source_key_null_keys_and_a_filter(tmp_path) -> None:
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("k", pa.int32()), ("v", pa.string())]))
    t.append(pa.table({"k": pa.array([1, 2, None, 4], pa.int32()), "v": ["a", "b", "n", "d"]}))
    t.append(pa.table({"k": pa.array([5, 6], pa.int32()), "v": ["e", "f"]}))
    source = pa.table({"k": pa.array([2, None, 5, 6, 7], pa.int64()), "v": ["B", "N", "E", "F", "G"]})
    metrics = (
        t.merge(source, "t.k = s.k AND t.v <> 'f'", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    got = sorted(
        (r["k"] if r["k"] is not None else -1, r["v"]) for r in DeltaTable(t.location).to_arrow().to_pylist()
    )
    # 6 does not match (t.v = 'f'), so it is inserted; the null keys never match.
    assert got == [(-1, "N"), (-1, "n"), (1, "a"), (2, "B"), (4, "d"), (5, "E"), (6, "F"), (6, "f"), (7, "G")]
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == (2, 3)

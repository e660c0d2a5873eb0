"""Deletion vectors: Z85, descriptors, the RoaringBitmapArray format, DV files, masks.

Oracles: PROTOCOL.md's examples, delta-kernel-rs' published test vectors, CRoaring's own 64-bit portable
serializer (pyroaring ``BitMap64``), the conformance corpus written by Delta Lake on Spark (rows per
version, as read by delta-rs and Spark) and delta-rs reading DVs this module writes.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import uuid
import zlib
from collections import Counter
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap64

from airflow_provider_delta.core.read.deletion_vectors import (
    PORTABLE_MAGIC,
    DeletionVectorDescriptor,
    deletion_mask,
    deserialize_roaring_array,
    inline_descriptor,
    read_deleted_rows,
    serialize_roaring_array,
    write_deletion_vector_file,
    z85_decode,
    z85_encode,
)
from airflow_provider_delta.exceptions import DataFileError, LogCorruptedError

CORPUS = Path(os.environ.get("DELTA_CONFORMANCE", "/work/shared/conformance"))
DV_TABLES = [
    "golden/dv-partitioned-with-checkpoint",
    "extra/delta-kernel-java/basic-dv-no-checkpoint",
    "extra/kernel-rs/with-short-dv",
]
# Tables the protocol features list as DV-capable; every descriptor they hold (if any) must decode.
DV_CAPABLE_TABLES = [
    *DV_TABLES,
    "extra/kernel-rs/v1-multi-part-partitioned-struct-stats-only",
    "extra/kernel-rs/timestamp-partitioned-table",
    "extra/kernel-rs/cdf-column-mapping-name-mode-3-7",
]
needs_corpus = pytest.mark.skipif(not (CORPUS / "tables").is_dir(), reason="conformance corpus not found")

# delta-kernel-rs' corrected inline example (portable format) for PROTOCOL.md's rows 3, 4, 7, 11, 18, 29.
KERNEL_RS_INLINE = "^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"
PROTOCOL_ROWS = [3, 4, 7, 11, 18, 29]


# ---------------------------------------------------------------------------------------------- Z85


def test_z85_matches_the_zeromq_spec_vector() -> None:
    raw = bytes.fromhex("864FD26FB559F75B")
    assert z85_encode(raw) == "HelloWorld"
    assert z85_decode("HelloWorld") == raw


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rsTVZ&*Sl-RXRWjryu/!", "550e8400-e29b-41d4-a716-446655440000"),
        ("5<w-%>:JjlQ/G/]6C<1m", "123e4567-e89b-12d3-a456-426614174000"),
        ("^-aqEH.-t@S}K{vb[*k^", "d2c639aa-8816-431a-aaf6-d3fe2512ff61"),
    ],
)
def test_z85_uuid_vectors_decode_to_canonical_uuids(text: str, expected: str) -> None:
    assert str(uuid.UUID(bytes=z85_decode(text))) == expected
    assert z85_encode(uuid.UUID(expected).bytes) == text


@given(st.binary(max_size=200))
def test_z85_round_trips_any_bytes_with_delta_zero_padding(data: bytes) -> None:
    text = z85_encode(data)
    assert len(text) % 5 == 0
    assert len(text) == 5 * -(-len(data) // 4)
    decoded = z85_decode(text)
    assert decoded[: len(data)] == data
    assert set(decoded[len(data) :]) <= {0}
    assert z85_decode(text, length=len(data)) == data


@given(st.binary(min_size=1, max_size=40).filter(lambda b: len(b) % 4 != 0))
def test_z85_decodes_unpadded_trailing_groups(data: bytes) -> None:
    # Writers that skip the zero pad emit n + 1 characters for a trailing group of n bytes.
    full = z85_encode(data)
    unpadded = full[: len(full) - (4 - len(data) % 4)]
    assert z85_decode(unpadded) == data


@pytest.mark.parametrize("text", ["Hello~orld", "HelloW", "Hello\u00e9orld"])
def test_z85_rejects_invalid_text(text: str) -> None:
    with pytest.raises(ValueError, match="Z85"):
        z85_decode(text)


_Z85_CHARS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def _reference_z85_decode(text: str) -> bytes:
    # Delta kernel's Base85Codec.decodeBlocks: each group summed in a long, stored as (int) sum.
    out = b""
    for i in range(0, len(text), 5):
        total = 0
        for ch in text[i : i + 5]:
            total = total * 85 + _Z85_CHARS.index(ch)
        out += (total % 2**32).to_bytes(4, "big")
    return out


@pytest.mark.parametrize("text", ["%%%%%", "#####", "HelloWorld#####", "^Bg9^0rr91"])
def test_z85_groups_over_32_bits_wrap_as_in_delta_reference_decoder(text: str) -> None:
    assert z85_decode(text) == _reference_z85_decode(text)
    assert z85_decode("#####") == (85**5 - 1 - 2**32).to_bytes(4, "big")


@given(st.lists(st.sampled_from(_Z85_CHARS), min_size=5, max_size=60).map("".join))
def test_z85_decode_equals_the_reference_decoder_on_any_aligned_text(text: str) -> None:
    text = text[: len(text) - len(text) % 5]
    assert z85_decode(text) == _reference_z85_decode(text)


def _overflowing_last_group(data: bytes) -> str:
    """Z85 of ``data`` whose last group is written as its value + 2**32 (what the reference wraps back)."""
    padded = data + b"\x00" * (-len(data) % 4)
    value = int.from_bytes(padded[-4:], "big") + 2**32
    assert value < 85**5, "the test needs a last group that can overflow"
    digits = "".join(_Z85_CHARS[value // 85**k % 85] for k in range(4, -1, -1))
    return z85_encode(padded[:-4]) + digits


def test_z85_length_beyond_the_data_is_rejected() -> None:
    with pytest.raises(ValueError, match="expected at least 9"):
        z85_decode("HelloWorld", length=9)


# ------------------------------------------------------------------------------------- descriptors


def test_descriptor_json_round_trip_and_unique_id() -> None:
    d = {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 4,
        "sizeInBytes": 40,
        "cardinality": 6,
    }
    descriptor = DeletionVectorDescriptor.from_dict(d)
    assert descriptor.to_dict() == d
    assert list(descriptor.to_dict()) == list(d)
    assert descriptor.unique_id == "uab^-aqEH.-t@S}K{vb[*k^@4"


def test_inline_descriptor_unique_id_has_no_offset() -> None:
    d = DeletionVectorDescriptor.from_dict(
        {"storageType": "i", "pathOrInlineDv": KERNEL_RS_INLINE, "sizeInBytes": 44, "cardinality": 6}
    )
    assert d.unique_id == "i" + KERNEL_RS_INLINE
    assert "offset" not in d.to_dict()


def test_descriptor_accepts_numpy_integers_from_arrow() -> None:
    d = DeletionVectorDescriptor.from_dict(
        {
            "storageType": "u",
            "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA",
            "offset": np.int32(1),
            "sizeInBytes": np.int32(36),
            "cardinality": np.int64(2),
        }
    )
    assert d == DeletionVectorDescriptor("u", "vBn[lx{q8@P<9BNH/isA", 1, 36, 2)
    assert type(d.offset) is int


def test_checkpoint_struct_form_with_null_optionals_parses() -> None:
    d = DeletionVectorDescriptor.from_dict(
        {
            "storageType": "u",
            "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA",
            "offset": 1,
            "sizeInBytes": 36,
            "cardinality": 2,
            "maxRowIndex": None,
        }
    )
    assert d.max_row_index is None
    assert "maxRowIndex" not in d.to_dict()
    with_max = DeletionVectorDescriptor.from_dict({**d.to_dict(), "maxRowIndex": 9})
    assert with_max.to_dict()["maxRowIndex"] == 9


@pytest.mark.parametrize(
    ("d", "fragment"),
    [
        (
            {"storageType": "x", "pathOrInlineDv": "a" * 20, "offset": 1, "sizeInBytes": 1, "cardinality": 1},
            "storageType",
        ),
        (
            {"storageType": "u", "pathOrInlineDv": "short", "offset": 1, "sizeInBytes": 1, "cardinality": 1},
            "20-character",
        ),
        (
            {"storageType": "i", "pathOrInlineDv": "00000", "offset": 1, "sizeInBytes": 4, "cardinality": 1},
            "no offset",
        ),
        ({"storageType": "u", "pathOrInlineDv": "a" * 20, "sizeInBytes": 1}, "missing field"),
        (
            {"storageType": "u", "pathOrInlineDv": "a" * 20, "sizeInBytes": "1", "cardinality": 1},
            "wrong field types",
        ),
        ({"storageType": "u", "pathOrInlineDv": "a" * 20, "sizeInBytes": 1, "cardinality": -1}, "negative"),
    ],
)
def test_malformed_descriptor_is_a_log_error(d: dict[str, Any], fragment: str) -> None:
    with pytest.raises(LogCorruptedError, match=fragment):
        DeletionVectorDescriptor.from_dict(d)


def test_relative_path_with_random_prefix_resolves_per_protocol_example() -> None:
    d = DeletionVectorDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", 4, 40, 6)
    expected = "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    assert d.absolute_path("s3://mytable/") == f"s3://mytable/{expected}"
    assert d.absolute_path("s3://mytable") == f"s3://mytable/{expected}"
    assert d.absolute_path("/data/t") == os.path.join("/data/t", "ab", expected.split("/")[1])
    assert d.absolute_path("file:///data/my%20t") == os.path.join("/data/my t", "ab", expected.split("/")[1])


def test_relative_path_without_prefix_sits_in_the_table_root() -> None:
    d = DeletionVectorDescriptor("u", "vBn[lx{q8@P<9BNH/isA", 1, 36, 2)
    assert d.absolute_path("/t") == "/t/deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"


@pytest.mark.parametrize(
    ("root", "path", "expected"),
    [
        (
            "s3://mytable",
            "s3://mytable/deletion_vector_d2c639aa.bin",
            "s3://mytable/deletion_vector_d2c639aa.bin",
        ),
        ("/data/my table", "file:///data/my%20table/dv.bin", "/data/my table/dv.bin"),
        ("/data/t", "file:/data/t/dv.bin", "/data/t/dv.bin"),
        ("/data/my table", "/data/my%20table/dv.bin", "/data/my table/dv.bin"),
        ("/root", "sub/dv%3A1.bin", "/root/sub/dv:1.bin"),
    ],
)
def test_absolute_path_descriptor_decodes_uris(root: str, path: str, expected: str) -> None:
    assert DeletionVectorDescriptor("p", path, 1, 34, 1).absolute_path(root) == expected


@pytest.mark.parametrize(
    ("storage", "path"),
    [
        ("p", "/etc/dv.bin"),
        ("p", "file:///data/other/dv.bin"),
        ("p", "../other/dv.bin"),
        ("p", "s3://mytable/dv.bin"),
        ("u", "../../" + "vBn[lx{q8@P<9BNH/isA"),
    ],
)
def test_a_descriptor_outside_the_table_root_is_refused(storage: str, path: str) -> None:
    d = DeletionVectorDescriptor(storage, path, 1, 34, 1)  # type: ignore[arg-type]
    with pytest.raises(DataFileError, match="outside the table root"):
        d.absolute_path("/data/t")


def test_inline_descriptor_has_no_path() -> None:
    d = DeletionVectorDescriptor("i", KERNEL_RS_INLINE, None, 44, 6)
    with pytest.raises(ValueError, match="inline"):
        d.absolute_path("/t")


def test_invalid_encoded_uuid_is_a_data_file_error() -> None:
    d = DeletionVectorDescriptor("u", "~" * 20, 1, 34, 1)
    with pytest.raises(DataFileError, match="invalid encoded UUID"):
        d.absolute_path("/t")


# ---------------------------------------------------------------------------------------- inline


def test_inline_kernel_rs_vector_reads_protocol_rows() -> None:
    d = DeletionVectorDescriptor.from_dict(
        {"storageType": "i", "pathOrInlineDv": KERNEL_RS_INLINE, "sizeInBytes": 44, "cardinality": 6}
    )
    rows = read_deleted_rows(d, "/not/used")
    assert rows.dtype == np.uint64
    assert rows.tolist() == PROTOCOL_ROWS


def test_inline_writer_reproduces_the_kernel_rs_bytes() -> None:
    d = inline_descriptor([29, 3, 4, 7, 11, 18, 3])
    assert (d.storage_type, d.path_or_inline_dv, d.size_in_bytes, d.cardinality, d.offset) == (
        "i",
        KERNEL_RS_INLINE,
        44,
        6,
        None,
    )


def test_protocol_example_three_in_native_layout_is_refused_cleanly() -> None:
    # PROTOCOL.md's inline example holds a big-endian "native" layout that no reader accepts.
    d = DeletionVectorDescriptor("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", None, 40, 6)
    with pytest.raises(DataFileError, match=r"Cannot read deletion vector 'iwi5b.*big-endian magic") as info:
        read_deleted_rows(d, "/t")
    assert info.value.path is None


@given(st.lists(st.integers(0, 2**40), max_size=50))
def test_inline_round_trips_any_row_set(rows: list[int]) -> None:
    d = inline_descriptor(rows)
    assert len(d.path_or_inline_dv) % 5 == 0
    assert len(z85_decode(d.path_or_inline_dv)) - d.size_in_bytes in range(4)
    assert read_deleted_rows(d, "/t").tolist() == sorted(set(rows))


def test_inline_with_odd_size_is_zero_padded_and_trimmed() -> None:
    odd = serialize_roaring_array([5])  # 4 + 8 + 4 + 18 = 34 bytes: not a multiple of 4
    assert len(odd) % 4 != 0
    d = DeletionVectorDescriptor("i", z85_encode(odd), None, len(odd), 1)
    assert read_deleted_rows(d, "/t").tolist() == [5]


@pytest.mark.parametrize("rows", [[1, 4], [0, 2, 3], [5]])
def test_inline_dv_whose_last_group_exceeds_32_bits_reads_as_delta_reads_it(rows: list[int]) -> None:
    data = serialize_roaring_array(rows)
    d = DeletionVectorDescriptor("i", _overflowing_last_group(data), None, len(data), len(rows))
    assert d.path_or_inline_dv != z85_encode(data)
    assert read_deleted_rows(d, "/t").tolist() == rows


def test_inline_cardinality_mismatch_is_an_error() -> None:
    d = inline_descriptor([1, 2, 3])
    wrong = DeletionVectorDescriptor("i", d.path_or_inline_dv, None, d.size_in_bytes, 4)
    with pytest.raises(DataFileError, match="expected cardinality 4, found 3"):
        read_deleted_rows(wrong, "/t")


# ------------------------------------------------------------------------------------ roaring array

_row_sets = st.one_of(
    st.lists(st.integers(0, 2**63 - 1), max_size=40),
    st.lists(st.integers(0, 70_000), max_size=300),
    # Dense ranges, spread over a few high keys: run and bitset containers, > 4 containers per bucket.
    st.lists(
        st.tuples(
            st.integers(0, 3), st.integers(0, 2**32 - 70_000), st.integers(1, 70_000), st.integers(1, 3)
        ),
        max_size=4,
    ).map(lambda spans: [(k << 32) + s + i for k, s, n, step in spans for i in range(0, n, step)]),
)


@settings(max_examples=150, deadline=None)
@given(_row_sets)
def test_roaring_array_round_trips(rows: list[int]) -> None:
    data = serialize_roaring_array(rows)
    assert struct.unpack_from("<I", data)[0] == PORTABLE_MAGIC
    expected = sorted(set(rows))
    assert deserialize_roaring_array(data).tolist() == expected
    assert (
        deserialize_roaring_array(serialize_roaring_array(np.array(rows, dtype=np.uint64))).tolist()
        == expected
    )
    # Independent oracle: CRoaring's own 64-bit portable reader and writer.
    assert list(BitMap64.deserialize(data[4:])) == expected
    croaring = BitMap64(rows)
    croaring.run_optimize()
    native = struct.pack("<I", PORTABLE_MAGIC) + croaring.serialize()
    assert deserialize_roaring_array(native).tolist() == expected


def test_roaring_array_of_nothing_is_an_empty_bucket_list() -> None:
    data = serialize_roaring_array([])
    assert data == struct.pack("<IQ", PORTABLE_MAGIC, 0)
    assert deserialize_roaring_array(data).size == 0


@pytest.mark.parametrize(
    "bad", [[-1], [2**63], [2**70], np.array([-1, 3]), np.array([2**63], dtype=np.uint64)], ids=repr
)
def test_roaring_array_rejects_rows_outside_the_protocol_range(bad: Any) -> None:
    with pytest.raises(ValueError, match="row index"):
        serialize_roaring_array(bad)


def test_roaring_array_rejects_non_integer_rows() -> None:
    with pytest.raises(ValueError, match="integers"):
        serialize_roaring_array(np.array([1.5]))
    with pytest.raises(TypeError):
        serialize_roaring_array([1.5])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda b: b[:-1], "truncated|trailing|deserialize"),
        (lambda b: b + b"\0", "trailing"),
        (lambda b: struct.pack("<I", 1) + b[4:], "bad magic number"),
        (lambda b: b[:4] + struct.pack("<Q", 10**9) + b[12:], "buckets"),
        (lambda b: b[:12] + struct.pack("<I", 2**31) + b[16:], "2\\*\\*31"),
        (lambda b: b[:16] + struct.pack("<I", 999) + b[20:], "cookie"),
    ],
)
def test_corrupt_roaring_array_is_rejected(mutate: Any, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        deserialize_roaring_array(mutate(serialize_roaring_array([1, 2, 3, 100_000])))


# ------------------------------------------------------------------------------------------- files


def test_dv_file_round_trip_with_several_vectors_and_a_prefix(tmp_path: Path) -> None:
    sets = [[0, 9], list(range(0, 200_000, 3)), [2**33 + 1], []]
    descriptors = write_deletion_vector_file(str(tmp_path), sets, prefix="ab")
    assert descriptors[0].offset == 1
    assert len({d.path_or_inline_dv for d in descriptors}) == 1
    path = descriptors[0].absolute_path(str(tmp_path))
    assert Path(path).parent == tmp_path / "ab"
    assert Path(path).read_bytes()[0] == 1
    for rows, d in zip(sets, descriptors, strict=True):
        assert d.cardinality == len(rows)
        assert read_deleted_rows(d, str(tmp_path)).tolist() == rows
        assert read_deleted_rows(d, tmp_path.as_uri()).tolist() == rows


def test_dv_file_can_go_through_a_custom_opener(tmp_path: Path) -> None:
    store: dict[str, bytes] = {}

    class _Sink(io.BytesIO):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

        def close(self) -> None:
            store[self.name] = self.getvalue()
            super().close()

    def create(path: str) -> BinaryIO:
        return _Sink(path)

    def open_file(path: str) -> BinaryIO:
        return io.BytesIO(store[path])

    [d] = write_deletion_vector_file("s3://bucket/t", [[4, 5]], create_file=create)
    assert next(iter(store)).startswith("s3://bucket/t/deletion_vector_")
    assert read_deleted_rows(d, "s3://bucket/t", open_file=open_file).tolist() == [4, 5]
    with pytest.raises(DataFileError, match="no file opener for 's3'"):
        read_deleted_rows(d, "s3://bucket/t")


def _one_dv_file(tmp_path: Path, rows: list[int]) -> tuple[DeletionVectorDescriptor, Path]:
    [d] = write_deletion_vector_file(str(tmp_path), [rows])
    return d, Path(d.absolute_path(str(tmp_path)))


def test_missing_dv_file_is_a_data_file_error(tmp_path: Path) -> None:
    d, path = _one_dv_file(tmp_path, [1])
    path.unlink()
    with pytest.raises(DataFileError, match=r"Cannot read deletion vector .*file not found") as info:
        read_deleted_rows(d, str(tmp_path))
    assert info.value.path == str(path)


def test_wrong_checksum_is_a_data_file_error(tmp_path: Path) -> None:
    d, path = _one_dv_file(tmp_path, [1, 2])
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(DataFileError, match="checksum mismatch") as info:
        read_deleted_rows(d, str(tmp_path))
    assert info.value.path == str(path)


def test_corrupt_bitmap_with_matching_checksum_is_a_data_file_error(tmp_path: Path) -> None:
    d, path = _one_dv_file(tmp_path, [1, 2])
    raw = bytearray(path.read_bytes())
    raw[5:9] = struct.pack("<I", 12345)  # the magic number
    body = bytes(raw[5 : 5 + d.size_in_bytes])
    raw[5 + d.size_in_bytes :] = struct.pack(">I", zlib.crc32(body))
    path.write_bytes(bytes(raw))
    with pytest.raises(DataFileError, match="bad magic number"):
        read_deleted_rows(d, str(tmp_path))


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"size_in_bytes": 1}, "expected 1 bytes of bitmap"),
        ({"cardinality": 7}, "expected cardinality 7, found 2"),
        ({"offset": 10_000}, "file ends inside the size field"),
    ],
)
def test_descriptor_inconsistent_with_file_is_a_data_file_error(
    tmp_path: Path, change: dict[str, int], fragment: str
) -> None:
    d, _ = _one_dv_file(tmp_path, [1, 2])
    fields = {**d.to_dict(), **{_camel(k): v for k, v in change.items()}}
    with pytest.raises(DataFileError, match=fragment):
        read_deleted_rows(DeletionVectorDescriptor.from_dict(fields), str(tmp_path))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def test_unknown_file_format_version_is_refused(tmp_path: Path) -> None:
    d, path = _one_dv_file(tmp_path, [1])
    path.write_bytes(b"\x02" + path.read_bytes()[1:])
    with pytest.raises(DataFileError, match="format version 2"):
        read_deleted_rows(d, str(tmp_path))


def test_row_index_beyond_num_records_is_refused(tmp_path: Path) -> None:
    d, _ = _one_dv_file(tmp_path, [0, 5])
    assert read_deleted_rows(d, str(tmp_path), num_records=6).tolist() == [0, 5]
    with pytest.raises(DataFileError, match="row index 5 is beyond the data file's 5 rows"):
        read_deleted_rows(d, str(tmp_path), num_records=5)


def test_writer_never_overwrites_an_existing_dv_file(tmp_path: Path) -> None:
    first = write_deletion_vector_file(str(tmp_path), [[1]])
    second = write_deletion_vector_file(str(tmp_path), [[2]])
    assert first[0].path_or_inline_dv != second[0].path_or_inline_dv
    with pytest.raises(ValueError, match="alphanumeric"):
        write_deletion_vector_file(str(tmp_path), [[1]], prefix="../x")


# -------------------------------------------------------------------------------------------- mask


def test_mask_keeps_rows_not_deleted() -> None:
    mask = deletion_mask(np.array([1, 3], dtype=np.uint64), 5)
    assert isinstance(mask, pa.BooleanArray)
    assert mask.to_pylist() == [True, False, True, False, True]
    assert deletion_mask(np.empty(0, dtype=np.uint64), 3).to_pylist() == [True] * 3
    assert len(deletion_mask(np.array([0], dtype=np.uint64), 0)) == 0


def test_mask_for_a_batch_uses_file_row_positions() -> None:
    deleted = np.array([0, 4, 5, 9, 12], dtype=np.uint64)
    assert deletion_mask(deleted, 5, first_row=5).to_pylist() == [False, True, True, True, False]


@given(st.sets(st.integers(0, 999)), st.integers(0, 1000), st.integers(0, 1000))
def test_mask_matches_a_row_by_row_definition(deleted: set[int], first: int, n: int) -> None:
    arr = np.array(sorted(deleted), dtype=np.uint64)
    expected = [first + i not in deleted for i in range(n)]
    assert deletion_mask(arr, n, first_row=first).to_pylist() == expected


def test_mask_is_vectorised_for_large_files() -> None:
    deleted = np.arange(0, 5_000_000, 2, dtype=np.uint64)
    mask = deletion_mask(deleted, 5_000_000)
    assert mask.true_count == 2_500_000


# ------------------------------------------------------------------------- conformance corpus (real)


def _commits(table: Path) -> list[tuple[int, list[dict[str, Any]]]]:
    out = []
    for f in sorted((table / "_delta_log").glob("[0-9]*.json")):  # skips "._" AppleDouble files
        actions = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        out.append((int(f.name.split(".")[0]), actions))
    return out


def _json_descriptors(table: Path) -> list[dict[str, Any]]:
    return [
        a[kind]["deletionVector"]
        for _, actions in _commits(table)
        for a in actions
        for kind in ("add", "remove")
        if kind in a and a[kind].get("deletionVector")
    ]


def _checkpoint_descriptors(table: Path) -> list[dict[str, Any]]:
    out = []
    for f in sorted((table / "_delta_log").glob("[0-9]*.checkpoint*.parquet")):
        schema = pq.read_schema(f)
        if "add" not in schema.names:
            continue
        add_type = schema.field("add").type
        if add_type.get_field_index("deletionVector") < 0:
            continue
        adds = pq.read_table(f, columns=["add"]).column("add").to_pylist()
        out += [a["deletionVector"] for a in adds if a and a.get("deletionVector")]
    return out


@needs_corpus
@pytest.mark.parametrize("name", DV_CAPABLE_TABLES)
def test_every_corpus_descriptor_decodes_with_its_cardinality(name: str) -> None:
    table = CORPUS / "tables" / name
    found = _json_descriptors(table) + _checkpoint_descriptors(table)
    if name in DV_TABLES:
        assert found, f"{name} should hold deletion vectors"
    for raw in found:
        d = DeletionVectorDescriptor.from_dict(raw)
        rows = read_deleted_rows(d, str(table))
        assert rows.size == d.cardinality
        assert np.all(np.diff(rows.astype(np.int64)) > 0)
        assert d.to_dict() == {k: v for k, v in raw.items() if v is not None}


@needs_corpus
def test_checkpoint_descriptors_equal_the_json_ones() -> None:
    table = CORPUS / "tables" / "golden/dv-partitioned-with-checkpoint"
    from_json = {DeletionVectorDescriptor.from_dict(d).unique_id for d in _json_descriptors(table)}
    from_checkpoint = {DeletionVectorDescriptor.from_dict(d) for d in _checkpoint_descriptors(table)}
    assert from_checkpoint
    assert {d.unique_id for d in from_checkpoint} <= from_json


def _live_rows(table: Path, version: int, columns: list[str]) -> Counter[tuple[Any, ...]]:
    """Rows of ``table`` at ``version``: a plain JSON replay plus this module's DVs (test-only replay)."""

    def key(action: dict[str, Any]) -> tuple[str, str | None]:
        # PROTOCOL.md "Action Reconciliation": a logical file is (path, deletionVector.uniqueId); a DV update
        # commits the new add next to the remove of the old (path, DV) pair, in either order.
        dv = action.get("deletionVector")
        return action["path"], DeletionVectorDescriptor.from_dict(dv).unique_id if dv else None

    live: dict[tuple[str, str | None], dict[str, Any]] = {}
    for v, actions in _commits(table):
        if v > version:
            break
        for a in actions:
            if "add" in a:
                live[key(a["add"])] = a["add"]
            elif "remove" in a:
                live.pop(key(a["remove"]), None)
    rows: Counter[tuple[Any, ...]] = Counter()
    for add in live.values():
        data = pq.read_table(table / add["path"], columns=columns)
        if add.get("deletionVector"):
            d = DeletionVectorDescriptor.from_dict(add["deletionVector"])
            num_records = json.loads(add["stats"])["numRecords"]
            assert data.num_rows == num_records
            deleted = read_deleted_rows(d, str(table), num_records=num_records)
            data = data.filter(deletion_mask(deleted, data.num_rows))
            assert data.num_rows == num_records - d.cardinality
        rows.update(zip(*(data.column(c).to_pylist() for c in columns), strict=True))
    return rows


def _expected_rows(path: Path, columns: list[str]) -> Counter[tuple[Any, ...]]:
    t = pq.read_table(path, columns=columns)
    return Counter(zip(*(t.column(c).to_pylist() for c in columns), strict=True))


@needs_corpus
@pytest.mark.parametrize("version", range(16))
def test_golden_partitioned_table_rows_match_every_version(version: int) -> None:
    name = "golden/dv-partitioned-with-checkpoint"
    table = CORPUS / "tables" / name
    expected = CORPUS / "expected" / name / "versions" / f"v{version}.parquet"
    assert _live_rows(table, version, ["col1", "col2"]) == _expected_rows(expected, ["col1", "col2"])


@needs_corpus
@pytest.mark.parametrize(
    ("name", "columns"),
    [
        ("extra/kernel-rs/with-short-dv", ["id", "value", "rand"]),
        ("extra/delta-kernel-java/basic-dv-no-checkpoint", ["id"]),
    ],
)
def test_latest_rows_match_the_oracle(name: str, columns: list[str]) -> None:
    table = CORPUS / "tables" / name
    expected = CORPUS / "expected" / name / "table.parquet"
    assert _live_rows(table, 10**9, columns) == _expected_rows(expected, columns)


# --------------------------------------------------------------------------- interop: delta-rs reads


@needs_corpus
@pytest.mark.interop
@pytest.mark.parametrize("storage", ["file", "prefixed-file", "inline"])
def test_delta_rs_reads_deletion_vectors_this_module_writes(tmp_path: Path, storage: str) -> None:
    deltalake = pytest.importorskip("deltalake")
    table = tmp_path / "t"
    shutil.copytree(CORPUS / "tables" / "extra/kernel-rs/with-short-dv", table)
    [(_, actions)] = _commits(table)
    adds = [a["add"] for a in actions if "add" in a]
    # New DVs: file 0 (ids 0..4) loses rows 1 and 4; file 1 (ids 5..9) loses rows 0, 2, 3.
    new_sets = [[1, 4], [0, 2, 3]]
    if storage == "inline":
        descriptors = [inline_descriptor(rows) for rows in new_sets]
    else:
        prefix = "q7" if storage == "prefixed-file" else ""
        descriptors = write_deletion_vector_file(str(table), new_sets, prefix=prefix)
    commit = []
    for add, d in zip(adds, descriptors, strict=True):
        remove = {
            "path": add["path"],
            "deletionTimestamp": 1,
            "dataChange": True,
            "extendedFileMetadata": True,
            "partitionValues": {},
            "size": add["size"],
        }
        if add.get("deletionVector"):
            remove["deletionVector"] = add["deletionVector"]
        commit.append({"remove": remove})
        commit.append({"add": {**add, "deletionVector": d.to_dict()}})
    (table / "_delta_log" / "00000000000000000001.json").write_text("\n".join(map(json.dumps, commit)) + "\n")

    dt = deltalake.DeltaTable(str(table))
    ids = deltalake.QueryBuilder().register("t", dt).execute("select id from t").read_all().column("id")
    assert sorted(ids.to_pylist()) == [0, 2, 3, 6, 9]
    assert sorted(k[0] for k in _live_rows(table, 1, ["id"]).elements()) == [0, 2, 3, 6, 9]


@needs_corpus
def test_table_with_inline_dvs_whose_last_group_exceeds_32_bits_reads(tmp_path: Path) -> None:
    from airflow_provider_delta.core import DeltaTable

    table = tmp_path / "t"
    shutil.copytree(CORPUS / "tables" / "extra/kernel-rs/with-short-dv", table)
    [(_, actions)] = _commits(table)
    adds = [a["add"] for a in actions if "add" in a]
    commit = []
    for add, rows in zip(adds, [[1, 4], [0, 2, 3]], strict=True):
        data = serialize_roaring_array(rows)
        dv = {"storageType": "i", "pathOrInlineDv": _overflowing_last_group(data)}
        dv |= {"sizeInBytes": len(data), "cardinality": len(rows)}
        remove = {"path": add["path"], "deletionTimestamp": 1, "dataChange": True, "size": add["size"]}
        if add.get("deletionVector"):
            remove["deletionVector"] = add["deletionVector"]
        commit += [{"remove": remove}, {"add": {**add, "deletionVector": dv}}]
    (table / "_delta_log" / "00000000000000000001.json").write_text("\n".join(map(json.dumps, commit)) + "\n")
    assert sorted(DeltaTable(str(table)).to_arrow(columns=["id"]).column("id").to_pylist()) == [0, 2, 3, 6, 9]

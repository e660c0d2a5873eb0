"""Deletion vectors: descriptors, Z85, the RoaringBitmapArray format and DV files.

PROTOCOL.md "Deletion Vectors" and appendix "Deletion Vector Format". A deletion vector (DV) is the set
of row indexes (0-based positions in a data file) that are soft-deleted. An ``add``/``remove`` action
points at one through a :class:`DeletionVectorDescriptor`; the bitmap itself is stored inline in the log
(``storageType = 'i'``) or in a ``deletion_vector_<uuid>.bin`` file (``'u'``: relative, ``'p'``: absolute).

Byte layouts (the protocol mixes byte orders; both are reproduced here):

- ``RoaringBitmapArray`` (little endian): ``magic u32 = 1681511377``, ``numBuckets u64``, then per bucket
  ``key u32`` (high 32 bits of the row index) + a portable 32-bit roaring bitmap (low 32 bits).
- DV file (big endian framing): ``version u8 = 1``, then per DV ``dataSize u32``, ``dataSize`` bytes of
  ``RoaringBitmapArray`` and ``crc32 u32`` over those bytes. A descriptor's ``offset`` points at
  ``dataSize``; ``sizeInBytes`` equals ``dataSize``.

Example:
    >>> d = DeletionVectorDescriptor.from_dict(
    ...     {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4,
    ...      "sizeInBytes": 40, "cardinality": 6})
    >>> d.absolute_path("s3://mytable")
    's3://mytable/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin'
"""

from __future__ import annotations

import array
import operator
import os
import struct
import uuid
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, cast
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from airflow_provider_delta.core.storage import is_inside
from airflow_provider_delta.core.storage.local import LocalStorage
from airflow_provider_delta.exceptions import DataFileError, LogCorruptedError

if TYPE_CHECKING:
    import numpy.typing as npt

    from airflow_provider_delta.core.storage.base import Storage

StorageType = Literal["u", "i", "p"]
OpenFile = Callable[[str], BinaryIO]

#: PROTOCOL.md "Deletion Vector Format": magic of the portable RoaringBitmapArray serialization.
PORTABLE_MAGIC = 1681511377
#: Magic of delta-spark's "native" RoaringBitmapArray format; not in PROTOCOL.md, rejected with a clear error.
NATIVE_MAGIC = 1681511376
#: PROTOCOL.md "Deletion Vector File Storage Format": first byte of every DV file.
DV_FILE_FORMAT_VERSION = 1

_STORAGE_TYPES: tuple[str, ...] = ("u", "i", "p")
_UUID_Z85_LENGTH = 20  # 16 bytes of UUID -> 20 Z85 characters
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_BE_U32 = struct.Struct(">I")

# Roaring format spec (github.com/RoaringBitmap/RoaringFormatSpec).
_SERIAL_COOKIE_NO_RUN = 12346
_SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX_CARDINALITY = 4096
_BITSET_BYTES = 8192

# Z85 (rfc.zeromq.org/spec/32): the concrete Base85 variant PROTOCOL.md prescribes, JSON-friendly.
_Z85_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_ENCODE = np.frombuffer(_Z85_ALPHABET.encode("ascii"), dtype=np.uint8)
_Z85_DECODE = np.full(256, 255, dtype=np.uint8)
_Z85_DECODE[_Z85_ENCODE] = np.arange(85, dtype=np.uint8)
_Z85_POWERS = np.array([85**4, 85**3, 85**2, 85, 1], dtype=np.uint64)


# --------------------------------------------------------------------------------------------- Z85


def z85_encode(data: bytes) -> str:
    """Encode bytes as Z85, zero-padding the input to a multiple of 4 bytes as Delta does.

    Delta's codec pads inline bitmaps whose length is not a multiple of 4 with zero bytes; the real
    length travels separately in ``sizeInBytes``. Decode with ``z85_decode(s, length=n)`` to drop the pad.

    Args:
        data: The bytes to encode.

    Returns:
        A string of ``5 * ceil(len(data) / 4)`` characters from the Z85 alphabet.

    Example:
        >>> z85_encode(bytes.fromhex("864FD26FB559F75B"))
        'HelloWorld'
    """
    pad = -len(data) % 4
    words = np.frombuffer(bytes(data) + b"\x00" * pad, dtype=">u4").astype(np.uint64)
    digits = (words[:, None] // _Z85_POWERS[None, :]) % 85
    return _Z85_ENCODE[digits.astype(np.intp)].tobytes().decode("ascii")


def z85_decode(text: str, *, length: int | None = None) -> bytes:
    """Decode a Z85 string (Delta's Base85 variant).

    Strings are normally a multiple of 5 characters. A shorter trailing group of 2-4 characters (the
    padding-free variant some writers use) decodes to 1-3 bytes, as in Ascii85. A group worth more
    than 32 bits wraps modulo 2**32, as in Delta's reference decoder.

    Args:
        text: The Z85 text.
        length: Keep only the first ``length`` bytes (the ``sizeInBytes`` of an inline DV whose raw size
            is not a multiple of 4); ``None`` keeps everything.

    Returns:
        The decoded bytes.

    Raises:
        ValueError: A character outside the Z85 alphabet, a lone trailing character, or fewer bytes
            than ``length``.

    Example:
        >>> z85_decode("HelloWorld").hex()
        '864fd26fb559f75b'
    """
    try:
        raw = text.encode("ascii")
    except UnicodeEncodeError as err:  # not errors="replace": its '?' is itself a Z85 digit
        raise ValueError(f"invalid Z85 character {text[err.start]!r} at position {err.start}") from None
    tail = len(raw) % 5
    if tail == 1:
        raise ValueError(f"Z85 text of length {len(raw)} has a lone trailing character")
    if tail:
        raw += b"#" * (5 - tail)  # '#' is digit 84: pads a partial group so it truncates correctly
    codes = _Z85_DECODE[np.frombuffer(raw, dtype=np.uint8)]
    bad = np.flatnonzero(codes == 255)
    if bad.size:
        raise ValueError(f"invalid Z85 character {text[int(bad[0])]!r} at position {int(bad[0])}")
    # Delta's reference decoder (kernel's Base85Codec.decodeBlocks) sums each group in a 64-bit long
    # and stores it as a 32-bit int: a group worth more than 2**32 - 1 wraps modulo 2**32. Tables
    # written by the Delta ecosystem carry such groups (in an inline DV's padding), so do the same.
    values = (codes.reshape(-1, 5).astype(np.uint64) @ _Z85_POWERS) & np.uint64(0xFFFFFFFF)
    out = values.astype(">u4").tobytes()
    if tail:
        out = out[: len(out) - (5 - tail)]
    if length is not None:
        if length > len(out):
            raise ValueError(f"Z85 text holds {len(out)} bytes, expected at least {length}")
        out = out[:length]
    return out


# ----------------------------------------------------------------------------------------- descriptor


@dataclass(frozen=True, slots=True)
class DeletionVectorDescriptor:
    """PROTOCOL.md "Deletion Vector Descriptor Schema": where a DV lives and how many rows it deletes.

    Attributes:
        storage_type: ``'u'`` relative path (optional random prefix + Z85 UUID), ``'i'`` inline Z85
            bitmap, ``'p'`` absolute path or URI.
        path_or_inline_dv: The prefix + encoded UUID, the Z85 bitmap, or the path, per ``storage_type``.
        offset: Byte offset of the DV's ``dataSize`` field in its file; ``None`` when inline.
        size_in_bytes: Size of the serialized bitmap (before Z85 encoding when inline).
        cardinality: Number of rows the DV deletes.
        max_row_index: Optional largest deleted row index (written by some engines; not in PROTOCOL.md).

    Example:
        >>> d = DeletionVectorDescriptor("u", "vBn[lx{q8@P<9BNH/isA", 1, 36, 2)
        >>> d.unique_id
        'uvBn[lx{q8@P<9BNH/isA@1'
    """

    storage_type: StorageType
    path_or_inline_dv: str
    offset: int | None
    size_in_bytes: int
    cardinality: int
    max_row_index: int | None = None

    def __post_init__(self) -> None:
        """Reject descriptors that cannot locate a DV."""
        problem: str | None = None
        if self.storage_type not in _STORAGE_TYPES:
            problem = f"storageType must be one of 'u', 'i', 'p', found {self.storage_type!r}"
        elif self.storage_type == "u" and len(self.path_or_inline_dv) < _UUID_Z85_LENGTH:
            problem = (
                f"'u' pathOrInlineDv must end with a 20-character UUID, found {self.path_or_inline_dv!r}"
            )
        elif self.storage_type == "i" and self.offset is not None:
            problem = f"an inline DV has no offset, found {self.offset}"
        elif self.size_in_bytes < 0 or self.cardinality < 0 or (self.offset is not None and self.offset < 0):
            problem = "offset, sizeInBytes and cardinality must not be negative"
        if problem is not None:
            raise LogCorruptedError(f"Cannot parse deletion vector descriptor: {problem}")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DeletionVectorDescriptor:
        """Build a descriptor from its JSON / checkpoint-struct form.

        Args:
            d: Mapping with ``storageType``, ``pathOrInlineDv``, ``sizeInBytes``, ``cardinality`` and the
                optional ``offset`` and ``maxRowIndex`` (``None`` or absent when not set).

        Returns:
            The descriptor.

        Raises:
            LogCorruptedError: A required field is missing or has the wrong type.

        Example:
            >>> DeletionVectorDescriptor.from_dict({"storageType": "i", "pathOrInlineDv": "0000000000",
            ...     "sizeInBytes": 8, "cardinality": 0}).offset is None
            True
        """
        try:
            storage_type = d["storageType"]
            path = d["pathOrInlineDv"]
            size = d["sizeInBytes"]
            cardinality = d["cardinality"]
        except KeyError as err:
            raise LogCorruptedError(f"Cannot parse deletion vector descriptor: missing field {err}") from err
        offset = d.get("offset")
        max_row_index = d.get("maxRowIndex")
        numbers = (size, cardinality, *(x for x in (offset, max_row_index) if x is not None))
        if not isinstance(path, str) or not all(
            isinstance(v, Integral) and not isinstance(v, bool) for v in numbers
        ):
            raise LogCorruptedError(
                f"Cannot parse deletion vector descriptor: wrong field types in {dict(d)!r}"
            )
        return cls(
            storage_type,
            path,
            None if offset is None else int(offset),
            int(size),
            int(cardinality),
            None if max_row_index is None else int(max_row_index),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, omitting ``offset`` and ``maxRowIndex`` when unset (as Delta writers do).

        Returns:
            A dict with camelCase keys.
        """
        out: dict[str, Any] = {"storageType": self.storage_type, "pathOrInlineDv": self.path_or_inline_dv}
        if self.offset is not None:
            out["offset"] = self.offset
        out["sizeInBytes"] = self.size_in_bytes
        out["cardinality"] = self.cardinality
        if self.max_row_index is not None:
            out["maxRowIndex"] = self.max_row_index
        return out

    @property
    def unique_id(self) -> str:
        """PROTOCOL.md derived field ``uniqueId``: ``<storageType><pathOrInlineDv>[@<offset>]``.

        Together with the data file path it keys add/remove reconciliation.
        """
        base = f"{self.storage_type}{self.path_or_inline_dv}"
        return base if self.offset is None else f"{base}@{self.offset}"

    @property
    def is_inline(self) -> bool:
        """Whether the bitmap is stored in the log itself."""
        return self.storage_type == "i"

    def absolute_path(self, table_root: str) -> str:
        """PROTOCOL.md derived field ``absolutePath``: the file holding this DV.

        Local roots and ``file:`` URIs give a local path; other URIs (``s3://...``) stay URIs.

        Args:
            table_root: The table's root directory or URI.

        Returns:
            ``<root>/<prefix>/deletion_vector_<uuid>.bin`` for ``'u'``; the (decoded) path for ``'p'``.

        Raises:
            ValueError: The DV is inline and has no file.
            DataFileError: The encoded UUID is not valid Z85, or the path is outside the table root.
        """
        if self.storage_type == "i":
            raise ValueError("Cannot resolve the path of an inline deletion vector: it is stored in the log")
        if self.storage_type == "p":
            path = _resolve_path_uri(self.path_or_inline_dv, table_root)
        else:
            prefix = self.path_or_inline_dv[:-_UUID_Z85_LENGTH]
            try:
                dv_uuid = uuid.UUID(bytes=z85_decode(self.path_or_inline_dv[-_UUID_Z85_LENGTH:]))
            except ValueError as err:
                raise DataFileError(
                    f"Cannot read deletion vector {self.unique_id!r}: invalid encoded UUID ({err})"
                ) from err
            name = f"deletion_vector_{dv_uuid}.bin"
            path = _join(table_root, f"{prefix}/{name}" if prefix else name)
        if not _inside_table(table_root, path):
            raise DataFileError(
                f"Cannot read deletion vector {_short_id(self)}: {path!r} is outside the table root "
                f"{table_root!r}",
                path=path,
            )
        return path

    @property
    def inline_data(self) -> bytes:
        """The serialized RoaringBitmapArray of an inline DV (Z85-decoded, trimmed to ``sizeInBytes``).

        Raises:
            ValueError: The DV is not inline.
            DataFileError: The inline text is not valid Z85.
        """
        if self.storage_type != "i":
            raise ValueError(f"Cannot decode deletion vector {self.unique_id!r}: it is not inline")
        try:
            return z85_decode(self.path_or_inline_dv, length=self.size_in_bytes)
        except ValueError as err:
            raise DataFileError(f"Cannot read deletion vector {_short_id(self)}: {err}") from err


# ---------------------------------------------------------------------------------------------- paths


def _has_uri_scheme(path: str) -> bool:
    scheme = urlsplit(path).scheme
    return len(scheme) > 1  # a one-letter "scheme" is a Windows drive


def _to_local(path: str) -> str:
    """``file:`` URI -> local path; anything else unchanged."""
    parts = urlsplit(path)
    if parts.scheme == "file":
        return url2pathname(parts.path)
    return path


def _join(table_root: str, relative: str) -> str:
    root = _to_local(table_root)
    if _has_uri_scheme(root):
        return f"{root.rstrip('/')}/{relative}"
    return os.path.join(root, *relative.split("/"))


def _inside_table(table_root: str, path: str) -> bool:
    root = _to_local(table_root)
    if not _has_uri_scheme(root):
        return not _has_uri_scheme(path) and is_inside(root, path)
    r, p = urlsplit(root), urlsplit(path)
    return (r.scheme, r.netloc) == (p.scheme, p.netloc) and is_inside(r.path or "/", p.path or "/")


def _resolve_path_uri(path: str, table_root: str) -> str:
    # PROTOCOL.md: a 'p' path "has the same format as the path field in the add/remove actions", i.e. an
    # RFC 2396 URI whose special characters are percent-encoded.
    if _has_uri_scheme(path):
        return _to_local(path)
    decoded = unquote(path)
    if os.path.isabs(decoded) or decoded.startswith("/"):
        return decoded
    return _join(table_root, decoded)


def _short_id(descriptor: DeletionVectorDescriptor) -> str:
    uid = descriptor.unique_id
    return repr(uid if len(uid) <= 48 else f"{uid[:45]}...")


# ------------------------------------------------------------------------------------- roaring format


def _roaring32_length(data: bytes | memoryview, start: int) -> int:
    """Byte length of the portable 32-bit roaring bitmap starting at ``start`` (RoaringFormatSpec)."""
    pos = start
    (cookie,) = _U32.unpack_from(data, pos)
    pos += 4
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        size = (cookie >> 16) + 1
        run_flags = bytes(data[pos : pos + (size + 7) // 8])
        if len(run_flags) != (size + 7) // 8:
            raise ValueError("bitmap is truncated")
        pos += (size + 7) // 8
    elif cookie == _SERIAL_COOKIE_NO_RUN:
        (size,) = _U32.unpack_from(data, pos)
        pos += 4
        run_flags = b""
    else:
        raise ValueError(f"bad roaring cookie {cookie}")
    if size > 65536:
        raise ValueError(f"roaring bitmap claims {size} containers")
    header = np.frombuffer(data, dtype="<u2", count=2 * size, offset=pos).reshape(size, 2)
    cardinalities = header[:, 1].astype(np.int64) + 1
    pos += 4 * size
    has_offsets = not run_flags or size >= _NO_OFFSET_THRESHOLD
    if has_offsets:
        offsets = np.frombuffer(data, dtype="<u4", count=size, offset=pos)
        pos += 4 * size
    if size == 0:
        return pos - start

    def is_run(i: int) -> bool:
        return bool(run_flags) and bool(run_flags[i // 8] >> (i % 8) & 1)

    def container_bytes(i: int, at: int) -> int:
        if is_run(i):
            (n_runs,) = struct.unpack_from("<H", data, at)
            return 2 + 4 * n_runs
        card = int(cardinalities[i])
        return 2 * card if card <= _ARRAY_MAX_CARDINALITY else _BITSET_BYTES

    if has_offsets:
        # The offset header locates every container: only the last one's size is needed.
        last_at = start + int(offsets[-1])
        if last_at < pos:
            raise ValueError("roaring container offset points into the header")
        return last_at + container_bytes(size - 1, last_at) - start
    for i in range(size):  # at most 3 containers without an offset header
        pos += container_bytes(i, pos)
    return pos - start


def _swapped(magic: int) -> bool:
    swapped = int.from_bytes(magic.to_bytes(4, "little"), "big")
    return swapped in (PORTABLE_MAGIC, NATIVE_MAGIC)


def _deserialize_roaring_array(data: bytes) -> npt.NDArray[np.uint64]:
    """Parse a serialized RoaringBitmapArray (with magic) into sorted row indexes."""
    if len(data) < 12:
        raise ValueError(f"serialized bitmap is {len(data)} bytes, too short for a header")
    (magic,) = _U32.unpack_from(data, 0)
    if magic == NATIVE_MAGIC:
        raise ValueError(f"the native RoaringBitmapArray format (magic {NATIVE_MAGIC}) is not supported")
    if magic != PORTABLE_MAGIC:
        hint = " (a big-endian magic: not the PROTOCOL.md layout)" if _swapped(magic) else ""
        raise ValueError(f"bad magic number, expected {PORTABLE_MAGIC}, found {magic}{hint}")
    (num_buckets,) = _U64.unpack_from(data, 4)
    if num_buckets > (len(data) - 12) // 12:
        raise ValueError(f"header claims {num_buckets} buckets in {len(data)} bytes")
    view = memoryview(data)
    pos = 12
    previous_key = -1
    chunks: list[npt.NDArray[np.uint64]] = []
    for _ in range(num_buckets):
        (key,) = _U32.unpack_from(data, pos)
        pos += 4
        if key <= previous_key or key >= 1 << 31:
            # PROTOCOL.md: keys ascend and have a 0 most significant bit (Java reads them signed).
            raise ValueError(f"bucket key {key} out of order or above 2**31 - 1")
        previous_key = key
        length = _roaring32_length(view, pos)
        if pos + length > len(data):
            raise ValueError("bitmap is truncated")
        low = np.frombuffer(BitMap.deserialize(bytes(view[pos : pos + length])).to_array(), dtype=np.uint32)
        chunks.append(low.astype(np.uint64) | np.uint64(key << 32))
        pos += length
    if pos != len(data):
        raise ValueError(f"{len(data) - pos} unexpected trailing bytes after the bitmap")
    if not chunks:
        return np.empty(0, dtype=np.uint64)
    return np.concatenate(chunks)


def _normalise_rows(rows: Iterable[int] | npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    """Distinct sorted ``uint64`` row indexes, checked against PROTOCOL.md's range ``[0, 2**63)``."""
    if isinstance(rows, np.ndarray):
        if rows.dtype.kind not in "iu":
            raise ValueError(f"row indexes must be integers, found dtype {rows.dtype}")
        if rows.size and rows.dtype.kind == "i" and int(rows.min()) < 0:
            raise ValueError(f"row index {int(rows.min())} is negative")
        out = np.unique(rows.astype(np.uint64))
    else:
        values = [operator.index(v) for v in rows]
        if values and min(values) < 0:
            raise ValueError(f"row index {min(values)} is negative")
        if values and max(values) >= 1 << 63:
            raise ValueError(f"row index {max(values)} is above 2**63 - 1")
        out = np.unique(np.array(values, dtype=np.uint64))
    # Bucket keys must keep their most significant bit 0 (PROTOCOL.md "Deletion Vector Format").
    if out.size and int(out[-1]) >= 1 << 63:
        raise ValueError(f"row index {int(out[-1])} is above 2**63 - 1")
    return out


def serialize_roaring_array(rows: Iterable[int] | npt.NDArray[Any]) -> bytes:
    """Serialize row indexes as a portable RoaringBitmapArray (PROTOCOL.md "Deletion Vector Format").

    Duplicates are dropped; containers are run-length optimised where that is smaller.

    Args:
        rows: Row indexes (any order) in ``[0, 2**63)``.

    Returns:
        ``magic`` + ``numBuckets`` + buckets, all little endian: the bytes stored inline or in DV files.

    Raises:
        ValueError: A negative or too large row index, or a non-integer array dtype.
        TypeError: A non-integer value in a Python iterable.

    Example:
        >>> len(serialize_roaring_array([3, 4, 7, 11, 18, 29]))
        44
    """
    values = _normalise_rows(rows)
    keys = (values >> np.uint64(32)).astype(np.uint32)
    unique_keys, starts = np.unique(keys, return_index=True)
    bounds = [*starts.tolist(), values.size]
    parts = [_U32.pack(PORTABLE_MAGIC), _U64.pack(unique_keys.size)]
    for i, key in enumerate(unique_keys.tolist()):
        low = array.array("I")  # array('I') is pyroaring's fast path; numpy input iterates per value
        low.frombytes((values[bounds[i] : bounds[i + 1]] & np.uint64(0xFFFFFFFF)).astype(np.uint32).tobytes())
        bitmap = BitMap(low)
        bitmap.run_optimize()
        parts += [_U32.pack(key), bitmap.serialize()]
    return b"".join(parts)


def deserialize_roaring_array(data: bytes) -> npt.NDArray[np.uint64]:
    """Parse a serialized RoaringBitmapArray (magic included) into sorted row indexes.

    Args:
        data: Exactly one serialized bitmap.

    Returns:
        Sorted ``uint64`` row indexes.

    Raises:
        ValueError: Bad magic, malformed or truncated bitmap, trailing bytes.

    Example:
        >>> deserialize_roaring_array(serialize_roaring_array([29, 3])).tolist()
        [3, 29]
    """
    try:
        return _deserialize_roaring_array(data)
    except struct.error as err:
        raise ValueError(f"bitmap is truncated ({err})") from err


# ---------------------------------------------------------------------------------------------- read


def _default_open(path: str) -> BinaryIO:
    if _has_uri_scheme(path):
        raise DataFileError(
            f"Cannot read deletion vector {path}: no file opener for {urlsplit(path).scheme!r} URIs "
            "(pass open_file=)",
            path=path,
        )
    return open(path, "rb")


def deletion_vector_opener(storage: Storage) -> OpenFile | None:
    """How to open a table's DV files: None (plain ``open``) on a local disk, else through ``storage``."""
    if isinstance(storage, LocalStorage):
        return None
    return lambda path: cast("BinaryIO", storage.open_input_file(path))


def _read_exact(f: BinaryIO, n: int, what: str) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise ValueError(f"file ends inside the {what} (wanted {n} bytes, found {len(data)})")
    return data


def _read_framed(f: BinaryIO, descriptor: DeletionVectorDescriptor) -> bytes:
    """PROTOCOL.md "Deletion Vector File Storage Format": version byte, then size / data / CRC-32."""
    version = _read_exact(f, 1, "format version")[0]
    if version != DV_FILE_FORMAT_VERSION:
        raise ValueError(f"unknown file format version {version}, expected {DV_FILE_FORMAT_VERSION}")
    # Delta writes the first DV right after the version byte; an absent offset means that one.
    f.seek(1 if descriptor.offset is None else descriptor.offset)
    (size,) = _BE_U32.unpack(_read_exact(f, 4, "size field"))
    if size != descriptor.size_in_bytes:
        raise ValueError(f"expected {descriptor.size_in_bytes} bytes of bitmap, file says {size}")
    data = _read_exact(f, size, "bitmap")
    (checksum,) = _BE_U32.unpack(_read_exact(f, 4, "checksum"))
    actual = zlib.crc32(data)
    if checksum != actual:
        raise ValueError(f"checksum mismatch, expected {checksum:#010x}, found {actual:#010x}")
    return data


def read_deleted_rows(
    descriptor: DeletionVectorDescriptor,
    table_root: str,
    *,
    open_file: OpenFile | None = None,
    num_records: int | None = None,
) -> npt.NDArray[np.uint64]:
    """Read the row indexes a deletion vector deletes.

    Checks the file format version, the size field, the CRC-32, the magic number, the cardinality
    recorded in the descriptor and, when ``num_records`` is given, that every index is inside the file.

    Args:
        descriptor: The DV of an ``add`` (or ``remove``) action.
        table_root: Table root directory or URI; ``'u'`` paths are relative to it.
        open_file: Opens a path/URI for binary reading (seekable); default: the local file system.
        num_records: Rows in the data file (``stats.numRecords``), to reject out-of-range indexes.

    Returns:
        Sorted, distinct ``uint64`` row indexes.

    Raises:
        DataFileError: The DV file is missing or unreadable, or the DV is corrupt or inconsistent with
            its descriptor. ``path`` is the DV file (``None`` when inline).

    Example:
        >>> d = DeletionVectorDescriptor.from_dict({"storageType": "i", "sizeInBytes": 44, "cardinality": 6,
        ...     "pathOrInlineDv": "^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"})
        >>> read_deleted_rows(d, "/unused").tolist()
        [3, 4, 7, 11, 18, 29]
    """
    path: str | None = None
    label = _short_id(descriptor)
    try:
        if descriptor.is_inline:
            data = descriptor.inline_data
        else:
            path = descriptor.absolute_path(table_root)
            label = path
            with (open_file or _default_open)(path) as f:
                data = _read_framed(f, descriptor)
        rows = deserialize_roaring_array(data)
        if rows.size != descriptor.cardinality:
            raise ValueError(f"expected cardinality {descriptor.cardinality}, found {rows.size}")
        if num_records is not None and rows.size and int(rows[-1]) >= num_records:
            raise ValueError(f"row index {int(rows[-1])} is beyond the data file's {num_records} rows")
    except DataFileError:
        raise
    except FileNotFoundError as err:
        raise DataFileError(f"Cannot read deletion vector {label}: file not found", path=path) from err
    except (OSError, ValueError) as err:
        raise DataFileError(f"Cannot read deletion vector {label}: {err}", path=path) from err
    return rows


def deletion_mask(deleted: npt.NDArray[np.uint64], num_rows: int, *, first_row: int = 0) -> pa.BooleanArray:
    """Selection mask for a data file (or a slice of it): ``True`` for rows to keep.

    Args:
        deleted: Sorted or unsorted deleted row indexes, as from :func:`read_deleted_rows`.
        num_rows: Length of the mask.
        first_row: File row index of the mask's first entry, for reading a file in batches. Indexes
            outside ``[first_row, first_row + num_rows)`` are ignored.

    Returns:
        A ``BooleanArray`` of ``num_rows`` entries, for ``Table.filter``.

    Example:
        >>> deletion_mask(np.array([1, 3], dtype=np.uint64), 4).to_pylist()
        [True, False, True, False]
    """
    keep = np.ones(num_rows, dtype=np.bool_)
    idx = np.asarray(deleted, dtype=np.uint64)
    if first_row:
        idx = idx[idx >= np.uint64(first_row)] - np.uint64(first_row)
    keep[idx[idx < np.uint64(num_rows)].astype(np.intp)] = False
    return pa.array(keep, type=pa.bool_())


# --------------------------------------------------------------------------------------------- write


def inline_descriptor(rows: Iterable[int] | npt.NDArray[Any]) -> DeletionVectorDescriptor:
    """A ``storageType = 'i'`` descriptor holding ``rows`` in the log itself.

    Args:
        rows: Deleted row indexes.

    Returns:
        The descriptor (Z85 text zero-padded to whole groups, ``sizeInBytes`` the raw size).

    Example:
        >>> inline_descriptor([3, 4, 7, 11, 18, 29]).path_or_inline_dv
        '^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L'
    """
    values = _normalise_rows(rows)
    data = serialize_roaring_array(values)
    return DeletionVectorDescriptor("i", z85_encode(data), None, len(data), int(values.size))


def _default_create(path: str) -> BinaryIO:
    if _has_uri_scheme(path):
        raise DataFileError(
            f"Cannot write deletion vector {path}: no file opener for {urlsplit(path).scheme!r} URIs "
            "(pass create_file=)",
            path=path,
        )
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    return open(path, "xb")  # 'x': never overwrite another DV


def write_deletion_vector_file(
    table_root: str,
    deleted_rows: Sequence[Iterable[int] | npt.NDArray[Any]],
    *,
    prefix: str = "",
    create_file: OpenFile | None = None,
) -> list[DeletionVectorDescriptor]:
    """Write one DV file holding several deletion vectors; return their ``'u'`` descriptors.

    Args:
        table_root: Table root directory or URI; the file is
            ``<root>/<prefix>/deletion_vector_<uuid>.bin``.
        deleted_rows: One collection of deleted row indexes per data file.
        prefix: Optional random-prefix directory (alphanumerics), kept in ``pathOrInlineDv``.
        create_file: Creates a new file for binary writing; default: the local file system, refusing to
            overwrite.

    Returns:
        One descriptor per entry of ``deleted_rows``, in order, each with ``offset`` and ``sizeInBytes``.

    Raises:
        ValueError: A bad row index or a prefix that is not alphanumeric.
        DataFileError: The file cannot be written.

    Example:
        >>> import tempfile
        >>> root = tempfile.mkdtemp()
        >>> [d] = write_deletion_vector_file(root, [[0, 9]])
        >>> read_deleted_rows(d, root).tolist()
        [0, 9]
    """
    if prefix and not prefix.isalnum():
        raise ValueError(f"Cannot write deletion vector: prefix {prefix!r} must be alphanumeric")
    dv_uuid = uuid.uuid4()
    encoded = prefix + z85_encode(dv_uuid.bytes)
    descriptors: list[DeletionVectorDescriptor] = []
    payload = [bytes([DV_FILE_FORMAT_VERSION])]
    offset = 1
    for rows in deleted_rows:
        values = _normalise_rows(rows)
        blob = serialize_roaring_array(values)
        descriptors.append(DeletionVectorDescriptor("u", encoded, offset, len(blob), int(values.size)))
        payload += [_BE_U32.pack(len(blob)), blob, _BE_U32.pack(zlib.crc32(blob))]
        offset += len(blob) + 8
    name = f"deletion_vector_{dv_uuid}.bin"
    path = _join(table_root, f"{prefix}/{name}" if prefix else name)
    try:
        with (create_file or _default_create)(path) as f:
            f.write(b"".join(payload))
    except OSError as err:
        raise DataFileError(f"Cannot write deletion vector {path}: {err}", path=path) from err
    return descriptors


__all__ = [
    "DV_FILE_FORMAT_VERSION",
    "PORTABLE_MAGIC",
    "DeletionVectorDescriptor",
    "StorageType",
    "deletion_mask",
    "deletion_vector_opener",
    "deserialize_roaring_array",
    "inline_descriptor",
    "read_deleted_rows",
    "serialize_roaring_array",
    "write_deletion_vector_file",
    "z85_decode",
    "z85_encode",
]

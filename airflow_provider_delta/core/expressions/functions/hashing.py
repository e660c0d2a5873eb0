"""Spark's hash functions ``md5``, ``sha1`` (``sha``), ``sha2`` and ``crc32``, computed row by row with hashlib.

Strings are hashed as their UTF-8 bytes; digests are lower-case hex text, ``crc32`` a ``bigint``;
``sha2`` takes 224, 256 (or 0), 384 or 512 bits, and is NULL for any other length, as in Spark.

Example:
    >>> from airflow_provider_delta.core.expressions import bind, evaluate, parse_expression
    >>> t = pa.table({"s": ["abc"]})
    >>> evaluate(bind(parse_expression("md5(s)"), t.schema), t).to_pylist()
    ['900150983cd24fb0d6963f7d28e17f72']
"""

from __future__ import annotations

import hashlib
import zlib
from typing import TYPE_CHECKING

import pyarrow as pa

from airflow_provider_delta.core.expressions.functions.registry import (
    ArgValue,
    Kernel,
    as_array,
    cast_to,
    per_row,
    register,
    require,
    type_of,
)
from airflow_provider_delta.core.expressions.values import _is_binary_type, _is_string_type

if TYPE_CHECKING:
    from airflow_provider_delta.core.expressions.nodes import Expr


def _bytes_in(args: list[Expr], name: str, result: pa.DataType) -> tuple[list[Expr], pa.DataType]:
    t = type_of(args[0])
    require(
        _is_binary_type(t) or _is_string_type(t) or pa.types.is_null(t),
        f"{name} needs a string or binary, found {t}",
    )
    return [cast_to(args[0], pa.binary()), *[cast_to(a, pa.int32()) for a in args[1:]]], result


def _digest(algorithm: str) -> Kernel:
    def kernel(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
        column = as_array(args[0], n)
        return per_row([column], n, lambda b: hashlib.new(algorithm, b).hexdigest(), pa.string())

    return kernel


_SHA2 = {0: "sha256", 224: "sha224", 256: "sha256", 384: "sha384", 512: "sha512"}


def _sha2(args: list[ArgValue], result: pa.DataType, n: int) -> pa.Array:
    def one(data: bytes, bits: int) -> str | None:
        algorithm = _SHA2.get(bits)
        return None if algorithm is None else hashlib.new(algorithm, data).hexdigest()

    return per_row(args, n, one, pa.string())


register("md5", "hash", (1, 1), lambda a: _bytes_in(a, "md5", pa.string()), _digest("md5"))
register(
    "sha1", "hash", (1, 1), lambda a: _bytes_in(a, "sha1", pa.string()), _digest("sha1"), aliases=("sha",)
)
register("sha2", "hash", (2, 2), lambda a: _bytes_in(a, "sha2", pa.string()), _sha2)
register(
    "crc32",
    "hash",
    (1, 1),
    lambda a: _bytes_in(a, "crc32", pa.int64()),
    lambda a, r, n: per_row([as_array(a[0], n)], n, zlib.crc32, pa.int64()),
)

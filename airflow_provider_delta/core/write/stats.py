"""Per-file statistics in the protocol's JSON form (PROTOCOL.md "Per-file Statistics").

``add.stats`` holds ``numRecords`` plus ``minValues``, ``maxValues`` and ``nullCount`` objects that
mirror the table schema (nested structs as nested objects, keys are physical names under column
mapping). The rules follow delta-spark's ``StatisticsCollection`` so that Spark, delta-rs and this
engine skip files alike:

- Which columns: the first ``delta.dataSkippingNumIndexedCols`` (default 32, ``-1`` = all) leaf
  columns of the data schema in schema order (a struct counts its leaves, an array or map counts as
  one; partition columns are not counted), or exactly the columns listed in
  ``delta.dataSkippingStatsColumns`` (a struct named there brings all its leaves).
- ``nullCount`` for every chosen leaf (arrays, maps and booleans too; a leaf inside a null struct is
  null). ``minValues``/``maxValues`` only for byte, short, int, long, float, double, decimal, date,
  timestamp, timestamp_ntz and string (Spark's ``SkippingEligibleDataType``: no boolean, no binary).
- An all-null column has no bounds. Strings keep their first 32 characters
  (``delta.dataSkippingStringPrefixLength``); a truncated max gets the tie-breaker U+FFFD so it
  stays an upper bound. Timestamps are ISO-8601 truncated to milliseconds (``...T10:20:30.123Z``;
  readers widen a max by 1 ms), ``timestamp_ntz`` without zone; dates ``yyyy-MM-dd``; decimals exact
  JSON numbers.
- Floats: NaN sorts above every number in Spark, so a file holding NaN gets no max (a finite max
  would wrongly skip it for ``x > c``); its min is the smallest non-NaN value. JSON has no
  infinities, so an infinite bound is left out. Both omissions only cost skipping, never results.

Example:
    >>> import pyarrow as pa
    >>> from airflow_provider_delta.core.schema.types import LongType, StructField, StructType
    >>> schema = StructType((StructField("id", LongType()),))
    >>> collect_stats(pa.table({"id": [3, None, 1]}), schema, configuration={}, partition_columns=())
    '{"numRecords":3,"minValues":{"id":1},"maxValues":{"id":3},"nullCount":{"id":1}}'
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_delta.core.schema.mapping import column_mapping_mode, physical_name
from airflow_provider_delta.core.schema.types import (
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNtzType,
    TimestampType,
)
from airflow_provider_delta.exceptions import SchemaError

if TYPE_CHECKING:
    import decimal
    from collections.abc import Mapping, Sequence

    from airflow_provider_delta.core.schema.mapping import ColumnMappingMode

__all__ = [
    "DEFAULT_NUM_INDEXED_COLS",
    "DEFAULT_STRING_PREFIX_LENGTH",
    "NUM_INDEXED_COLS_KEY",
    "STATS_COLUMNS_KEY",
    "STRING_PREFIX_LENGTH_KEY",
    "collect_stats",
    "parse_stats_columns",
    "stats_leaf_paths",
]

NUM_INDEXED_COLS_KEY = "delta.dataSkippingNumIndexedCols"
STATS_COLUMNS_KEY = "delta.dataSkippingStatsColumns"
STRING_PREFIX_LENGTH_KEY = "delta.dataSkippingStringPrefixLength"
DEFAULT_NUM_INDEXED_COLS = 32
DEFAULT_STRING_PREFIX_LENGTH = 32

# delta-spark StatisticsCollection.truncateMaxStringAgg: appended to a truncated max string.
_TIE_BREAKER = "\ufffd"
_ELIGIBLE = (
    ByteType,
    ShortType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    DateType,
    TimestampType,
    TimestampNtzType,
    StringType,
)
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)
_MICROS_PER_UNIT = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": None}

Path = tuple[str, ...]


def collect_stats(
    table: pa.Table,
    schema: StructType,
    *,
    configuration: Mapping[str, str],
    partition_columns: Sequence[str],
) -> str:
    """Return the ``add.stats`` JSON of one data file's rows (see the module docstring for the rules).

    Args:
        table: the file's rows. Columns (and nested struct fields) are found by logical name, then by
            physical name, then ignoring case; a column the table lacks counts as all null.
            Partition columns may be present; they are ignored.
        schema: the table's logical schema.
        configuration: the table properties (column mapping mode, stats column settings).
        partition_columns: the table's partition columns.

    Returns:
        Compact JSON with ``numRecords``, ``minValues``, ``maxValues`` and ``nullCount``.

    Raises:
        SchemaError: a stats setting in ``configuration`` is malformed.
    """
    mode = column_mapping_mode(configuration)
    selected = stats_leaf_paths(schema, configuration=configuration, partition_columns=partition_columns)
    collector = _Collector(schema, table.num_rows, selected, mode, _string_prefix_length(configuration))
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for f in schema.fields:
        if (f.name,) in collector.selected_prefixes:
            column = _find_column(table.schema, f, mode)
            data = table.column(column) if column is not None else None
            collector.visit(f, data, (f.name,), (mins, maxs, nulls))
    stats: dict[str, Any] = {"numRecords": table.num_rows}
    if collector.eligible_prefixes:
        stats["minValues"] = mins
        stats["maxValues"] = maxs
    if selected:
        stats["nullCount"] = nulls
    return orjson.dumps(stats).decode()


def stats_leaf_paths(
    schema: StructType, *, configuration: Mapping[str, str], partition_columns: Sequence[str]
) -> list[Path]:
    """Return the logical paths of the leaf columns that get statistics, in schema order.

    Args:
        schema: the table's logical schema.
        configuration: the table properties (``delta.dataSkippingNumIndexedCols``,
            ``delta.dataSkippingStatsColumns``; the latter wins when both are set).
        partition_columns: the table's partition columns (never get statistics).

    Raises:
        SchemaError: a setting is malformed.

    Example:
        >>> from airflow_provider_delta.core.schema.types import LongType, StructField, StructType
        >>> s = StructType((StructField("a", LongType()), StructField("b", LongType())))
        >>> stats_leaf_paths(s, configuration={NUM_INDEXED_COLS_KEY: "1"}, partition_columns=())
        [('a',)]
    """
    partitions = {c.casefold() for c in partition_columns}
    leaves = [p for p in _leaf_paths(schema, ()) if p[0].casefold() not in partitions]
    listed = configuration.get(STATS_COLUMNS_KEY)
    if listed is not None:
        wanted = [tuple(part.casefold() for part in p) for p in parse_stats_columns(listed)]
        return [leaf for leaf in leaves if any(_is_prefix(w, leaf) for w in wanted)]
    limit = _num_indexed_cols(configuration)
    return leaves if limit < 0 else leaves[:limit]


def _is_prefix(wanted: Path, leaf: Path) -> bool:
    return len(wanted) <= len(leaf) and all(w == p.casefold() for w, p in zip(wanted, leaf, strict=False))


def _leaf_paths(struct: StructType, parent: Path) -> list[Path]:
    # delta-spark truncateSchema: only structs are descended into; arrays and maps are one leaf each.
    out: list[Path] = []
    for f in struct.fields:
        path = (*parent, f.name)
        if isinstance(f.type, StructType):
            out.extend(_leaf_paths(f.type, path))
        else:
            out.append(path)
    return out


def _num_indexed_cols(configuration: Mapping[str, str]) -> int:
    raw = configuration.get(NUM_INDEXED_COLS_KEY)
    if raw is None:
        return DEFAULT_NUM_INDEXED_COLS
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = -2
    if value < -1:
        raise SchemaError(
            f"Cannot collect statistics: {NUM_INDEXED_COLS_KEY} is {raw!r}, expected an integer >= -1"
        )
    return value


def _string_prefix_length(configuration: Mapping[str, str]) -> int:
    raw = configuration.get(STRING_PREFIX_LENGTH_KEY)
    if raw is None:
        return DEFAULT_STRING_PREFIX_LENGTH
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = -1
    if value < 0:
        raise SchemaError(
            f"Cannot collect statistics: {STRING_PREFIX_LENGTH_KEY} is {raw!r}, expected an integer >= 0"
        )
    return value


def parse_stats_columns(text: str) -> list[Path]:
    """Parse ``delta.dataSkippingStatsColumns``: comma-separated, dotted, optionally back-quoted names.

    Args:
        text: the property value, e.g. ``"id, `a.b`.c"``.

    Returns:
        One tuple of name parts per listed column.

    Raises:
        SchemaError: the text is malformed (empty name part, unterminated back quote).

    Example:
        >>> parse_stats_columns("id, `a.b`.c")
        [('id',), ('a.b', 'c')]
    """
    if not text.strip():
        return []
    columns: list[Path] = []
    parts: list[str] = []
    plain: list[str] = []  # characters of an unquoted part
    quoted: str | None = None  # the text of a back-quoted part
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "`":
            if quoted is not None or "".join(plain).strip():
                raise SchemaError(f"Cannot parse {STATS_COLUMNS_KEY} {text!r}: misplaced back quote at {i}")
            end = _closing_quote(text, i + 1)
            quoted, plain = text[i + 1 : end].replace("``", "`"), []
            i = end + 1
            continue
        if ch in ",.":
            parts.append(_finish_part(text, plain, quoted))
            plain, quoted = [], None
            if ch == ",":
                columns.append(tuple(parts))
                parts = []
        else:
            plain.append(ch)
        i += 1
    parts.append(_finish_part(text, plain, quoted))
    columns.append(tuple(parts))
    return columns


def _closing_quote(text: str, start: int) -> int:
    i = start
    while i < len(text):
        if text[i] == "`":
            if text[i + 1 : i + 2] == "`":
                i += 2
                continue
            return i
        i += 1
    raise SchemaError(f"Cannot parse {STATS_COLUMNS_KEY} {text!r}: unterminated back quote")


def _finish_part(text: str, plain: list[str], quoted: str | None) -> str:
    rest = "".join(plain).strip()
    if quoted is not None:
        if rest:
            raise SchemaError(f"Cannot parse {STATS_COLUMNS_KEY} {text!r}: text after a back-quoted name")
        return quoted
    if not rest:
        raise SchemaError(f"Cannot parse {STATS_COLUMNS_KEY} {text!r}: empty column name")
    return rest


def _prefixes(paths: Sequence[Path]) -> frozenset[Path]:
    return frozenset(p[:i] for p in paths for i in range(1, len(p) + 1))


def _find_column(
    arrow_schema: pa.Schema | pa.StructType, f: StructField, mode: ColumnMappingMode
) -> int | None:
    """Index of the Arrow field holding ``f``: logical name, physical name, then ignoring case."""
    names = [arrow_schema.field(i).name for i in range(len(arrow_schema))]
    for candidate in (f.name, physical_name(f, mode=mode)):
        if candidate in names:
            return names.index(candidate)
    folded = [i for i, n in enumerate(names) if n.casefold() == f.name.casefold()]
    return folded[0] if len(folded) == 1 else None


class _Collector:
    """Walks the schema next to the data and fills the three stats objects."""

    def __init__(
        self,
        schema: StructType,
        num_rows: int,
        selected: Sequence[Path],
        mode: ColumnMappingMode,
        prefix_length: int,
    ) -> None:
        self.num_rows = num_rows
        self.mode = mode
        self.prefix_length = prefix_length
        selected_set = frozenset(selected)
        self.selected_prefixes = _prefixes(selected)
        # Leaves that get min/max, and the structs on their way (Spark's getMinMaxStatsSchema).
        eligible = [p for p, f in schema.walk() if p in selected_set and isinstance(f.type, _ELIGIBLE)]
        self.eligible_leaves = frozenset(eligible)
        self.eligible_prefixes = _prefixes(eligible)

    def visit(
        self,
        f: StructField,
        data: pa.ChunkedArray | None,
        path: Path,
        out: tuple[dict[str, Any], dict[str, Any], dict[str, Any]],
    ) -> None:
        """Add the stats of field ``f`` (at ``path``) to ``out`` = (mins, maxs, nulls)."""
        mins, maxs, nulls = out
        key = physical_name(f, mode=self.mode)
        if isinstance(f.type, StructType):
            children: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] = ({}, {}, {})
            for child in f.type.fields:
                child_path = (*path, child.name)
                if child_path in self.selected_prefixes:
                    self.visit(child, self._child(data, child), child_path, children)
            if path in self.eligible_prefixes:
                mins[key], maxs[key] = children[0], children[1]
            nulls[key] = children[2]
            return
        nulls[key] = self.num_rows if data is None else data.null_count
        if path not in self.eligible_leaves or data is None or data.null_count == len(data):
            return
        low, high = _bounds(data, f.type, self.prefix_length)
        if low is not None:
            mins[key] = low
        if high is not None:
            maxs[key] = high

    def _child(self, data: pa.ChunkedArray | None, child: StructField) -> pa.ChunkedArray | None:
        if data is None or not pa.types.is_struct(data.type):
            return None
        index = _find_column(data.type, child, self.mode)
        if index is None:
            return None
        # struct_field folds the parent's validity in: a leaf of a null struct counts as null.
        result: pa.ChunkedArray = pc.struct_field(data, [index])
        return result


def _bounds(data: pa.ChunkedArray, data_type: DataType, prefix_length: int) -> tuple[Any, Any]:
    """(min, max) as JSON-ready values; ``None`` where no bound can be written."""
    if pa.types.is_dictionary(data.type):
        data = data.cast(data.type.value_type)
    if isinstance(data_type, (FloatType, DoubleType)):
        return _float_bounds(data)
    if isinstance(data_type, DecimalType):
        low, high = _min_max(data)
        return _decimal_literal(low), _decimal_literal(high)
    if isinstance(data_type, DateType):
        low, high = _min_max(data.cast(pa.date32()).cast(pa.int32()))
        return _format_date(low), _format_date(high)
    if isinstance(data_type, (TimestampType, TimestampNtzType)):
        return _timestamp_bounds(data, zoned=isinstance(data_type, TimestampType))
    if isinstance(data_type, StringType):
        if not (pa.types.is_string(data.type) or pa.types.is_large_string(data.type)):
            data = data.cast(pa.string())
        low, high = _min_max(data)
        return _truncate_min(low, prefix_length), _truncate_max(high, prefix_length)
    return _min_max(data)


def _min_max(data: pa.ChunkedArray) -> tuple[Any, Any]:
    result = pc.min_max(data)
    return result["min"].as_py(), result["max"].as_py()


def _float_bounds(data: pa.ChunkedArray) -> tuple[float | None, float | None]:
    # min_max skips NaN unless every value is NaN; then both come back NaN and are dropped below.
    low, high = _min_max(data)
    has_nan = bool(pc.any(pc.is_nan(data)).as_py())
    low = low if low is not None and math.isfinite(low) else None
    high = high if high is not None and math.isfinite(high) and not has_nan else None
    return low, high


def _decimal_literal(value: decimal.Decimal | None) -> orjson.Fragment | None:
    # orjson cannot serialise Decimal; a raw JSON number keeps every digit (Spark writes a number).
    if value is None:
        return None
    return orjson.Fragment(format(value, "f").encode())


def _format_date(days: int | None) -> str | None:
    if days is None:
        return None
    try:
        value = _EPOCH_DATE + dt.timedelta(days=days)
    except OverflowError:
        return None
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"


def _timestamp_bounds(data: pa.ChunkedArray, *, zoned: bool) -> tuple[str | None, str | None]:
    unit = data.type.unit
    low, high = _min_max(data.cast(pa.int64()))
    factor = _MICROS_PER_UNIT[unit]
    if factor is None:  # nanoseconds: floor to microseconds (floor keeps the min a lower bound)
        low, high = low // 1000, high // 1000
    else:
        low, high = low * factor, high * factor
    # Spark formats stats with millisecond precision: both bounds are truncated down.
    return _format_timestamp(low // 1000, zoned=zoned), _format_timestamp(high // 1000, zoned=zoned)


def _format_timestamp(millis: int, *, zoned: bool) -> str | None:
    try:
        value = _EPOCH + dt.timedelta(milliseconds=millis)
    except OverflowError:
        return None
    text = (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}T"
        f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond // 1000:03d}"
    )
    return f"{text}Z" if zoned else text


def _truncate_min(value: str | None, prefix_length: int) -> str | None:
    # A prefix is never greater than the string, so it stays a lower bound.
    if value is None:
        return None
    return value[:prefix_length]


def _truncate_max(value: str | None, prefix_length: int) -> str | None:
    """Truncate a max string so it stays an upper bound (delta-spark's ``truncateMaxStringAgg``).

    After the prefix, U+FFFD is appended; it exceeds the cut-off character only when that one is
    smaller, so characters >= U+FFFD are kept until a smaller one (or the end) is reached. Python
    compares code points, which is the UTF-8 byte order Spark, Arrow and Parquet use, so characters
    beyond the BMP (> U+FFFD) are kept too (delta-spark compares UTF-16 units there).
    """
    if value is None or len(value) <= prefix_length:
        return value
    end = prefix_length
    while end < len(value) and value[end] >= _TIE_BREAKER:
        end += 1
    return value[:end] + _TIE_BREAKER

"""Table properties (``delta.*``): validation, defaults, and the smallest protocol they need."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING

from airflow_provider_delta.core.actions import Protocol
from airflow_provider_delta.core.protocol import (
    READER_WRITER_FEATURES,
    SUPPORTED_READER_FEATURES,
    SUPPORTED_WRITER_FEATURES,
    reader_features,
    writer_features,
)
from airflow_provider_delta.core.schema.types import TimestampNtzType
from airflow_provider_delta.exceptions import DeltaError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from airflow_provider_delta.core.schema.types import StructType


class InvalidPropertyError(DeltaError, ValueError):
    """A ``delta.*`` table property is unknown or has an invalid value."""

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


_INTERVAL = re.compile(
    r"^\s*(?:interval\s+)?(\d+)\s*(microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?)\s*$",
    re.IGNORECASE,
)
_UNIT_SECONDS = {
    "microsecond": 1e-6, "millisecond": 1e-3, "second": 1, "minute": 60, "hour": 3600, "day": 86400,
    "week": 604800,
}


def parse_interval(text: str) -> timedelta:
    """Parse Delta's calendar interval strings (``interval 30 days``, ``1 week``, ``168 hours``).

    Raises:
        ValueError: the text is not an interval.
    """
    m = _INTERVAL.match(text)
    if m is None:
        raise ValueError(f"not an interval: {text!r}")
    unit = m.group(2).lower().rstrip("s")
    return timedelta(seconds=int(m.group(1)) * _UNIT_SECONDS[unit])


def _bool(v: str) -> None:
    if v.lower() not in ("true", "false"):
        raise ValueError("expected true or false")


def _int_at_least(low: int) -> Callable[[str], None]:
    def check(v: str) -> None:
        if int(v) < low:
            raise ValueError(f"expected an integer >= {low}")

    return check


def _one_of(*choices: str) -> Callable[[str], None]:
    def check(v: str) -> None:
        if v not in choices and v.lower() not in {c.lower() for c in choices}:
            raise ValueError(f"expected one of {', '.join(choices)}")

    return check


def _interval(v: str) -> None:
    parse_interval(v)


def _any(v: str) -> None:
    del v


_VALIDATORS: dict[str, Callable[[str], None]] = {
    "delta.appendOnly": _bool,
    "delta.checkpointInterval": _int_at_least(1),
    "delta.logRetentionDuration": _interval,
    "delta.deletedFileRetentionDuration": _interval,
    "delta.setTransactionRetentionDuration": _interval,
    "delta.enableExpiredLogCleanup": _bool,
    "delta.enableChangeDataFeed": _bool,
    "delta.columnMapping.mode": _one_of("none", "name", "id"),
    "delta.columnMapping.maxColumnId": _int_at_least(0),
    "delta.dataSkippingNumIndexedCols": _int_at_least(-1),
    "delta.dataSkippingStatsColumns": _any,
    "delta.dataSkippingStringPrefixLength": _int_at_least(0),
    "delta.isolationLevel": _one_of("Serializable", "WriteSerializable"),
    "delta.enableDeletionVectors": _bool,
    "delta.enableInCommitTimestamps": _bool,
    "delta.inCommitTimestampEnablementVersion": _int_at_least(0),
    "delta.inCommitTimestampEnablementTimestamp": _int_at_least(0),
    "delta.checkpoint.writeStatsAsJson": _bool,
    "delta.checkpoint.writeStatsAsStruct": _bool,
    "delta.checkpointPolicy": _one_of("classic", "v2"),
    "delta.minReaderVersion": _int_at_least(1),
    "delta.minWriterVersion": _int_at_least(1),
    "delta.randomizeFilePrefixes": _bool,
    "delta.randomPrefixLength": _int_at_least(1),
    "delta.targetFileSize": _any,
    "delta.tuneFileSizesForRewrites": _bool,
    "delta.autoOptimize.autoCompact": _any,
    "delta.autoOptimize.optimizeWrite": _bool,
    "delta.compatibility.symlinkFormatManifest.enabled": _bool,
    "delta.enableRowTracking": _bool,
    "delta.enableTypeWidening": _bool,
    "delta.universalFormat.enabledFormats": _any,
}

_FEATURE_VALUES = ("supported", "enabled")


def validate_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """Check ``delta.*`` keys and values; return the properties as strings.

    Non-``delta.`` keys are user properties and pass through. ``delta.feature.<name>`` accepts
    ``supported``/``enabled``; ``delta.constraints.<name>`` holds a CHECK constraint expression.

    Raises:
        InvalidPropertyError: an unknown ``delta.*`` key or an invalid value.
    """
    out: dict[str, str] = {}
    for key, raw in properties.items():
        value = str(raw).lower() if isinstance(raw, bool) else str(raw)
        if key.lower().startswith("delta."):
            if key.startswith("delta.feature."):
                feature = key[len("delta.feature."):]
                known = SUPPORTED_READER_FEATURES | SUPPORTED_WRITER_FEATURES
                if feature not in known:
                    raise InvalidPropertyError(
                        f"Cannot set table property {key!r}: unknown or unsupported table feature {feature!r} "
                        f"(supported: {', '.join(sorted(known))})",
                        key=key,
                    )
                if value.lower() not in _FEATURE_VALUES:
                    raise InvalidPropertyError(
                        f"Cannot set table property {key!r} to {value!r}: expected 'supported'", key=key
                    )
            elif key.startswith("delta.constraints."):
                pass
            else:
                validator = _VALIDATORS.get(key)
                if validator is None:
                    raise InvalidPropertyError(
                        f"Cannot set table property {key!r}: unknown delta.* property "
                        f"(known: {', '.join(sorted(_VALIDATORS))})",
                        key=key,
                    )
                try:
                    validator(value)
                except ValueError as err:
                    raise InvalidPropertyError(
                        f"Cannot set table property {key!r} to {value!r}: {err}", key=key
                    ) from None
        out[key] = value
    return out


def is_enabled(configuration: Mapping[str, str], key: str, default: bool = False) -> bool:
    """A boolean table property."""
    value = configuration.get(key)
    return default if value is None else value.lower() == "true"


def _needs_timestamp_ntz(schema: StructType) -> bool:
    return any(isinstance(f.type, TimestampNtzType) for _, f in schema.walk()) or "timestamp_ntz" in (
        schema.to_json()
    )


def required_features(schema: StructType, configuration: Mapping[str, str]) -> set[str]:
    """The table features a schema and properties need."""
    features = {k[len("delta.feature."):] for k in configuration if k.startswith("delta.feature.")}
    if configuration.get("delta.columnMapping.mode", "none").lower() != "none":
        features.add("columnMapping")
    if is_enabled(configuration, "delta.enableChangeDataFeed"):
        features.add("changeDataFeed")
    if is_enabled(configuration, "delta.appendOnly"):
        features.add("appendOnly")
    if is_enabled(configuration, "delta.enableDeletionVectors"):
        features.add("deletionVectors")
    if is_enabled(configuration, "delta.enableInCommitTimestamps"):
        features.add("inCommitTimestamp")
    if configuration.get("delta.checkpointPolicy", "classic").lower() == "v2":
        features.add("v2Checkpoint")
    if any(k.startswith("delta.constraints.") for k in configuration):
        features.add("checkConstraints")
    if is_enabled(configuration, "delta.enableTypeWidening"):
        features.add("typeWidening")
    if is_enabled(configuration, "delta.enableRowTracking"):
        features.add("rowTracking")
    if _needs_timestamp_ntz(schema):
        features.add("timestampNtz")
    # Delta's GeneratedColumn/IdentityColumn/Invariants features: enabled by the schema's metadata.
    for key, feature in _METADATA_FEATURES.items():
        if any(key in f.metadata for _, f in schema.walk()):
            features.add(feature)
    return features


_METADATA_FEATURES = {"delta.generationExpression": "generatedColumns", "delta.identity.start": "identityColumns",
                      "delta.invariants": "invariants"}


_LEGACY_WRITER: tuple[tuple[int, frozenset[str]], ...] = (
    (2, frozenset({"appendOnly", "invariants"})),
    (3, frozenset({"appendOnly", "invariants", "checkConstraints"})),
    (4, frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"})),
    (5, frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
                   "columnMapping"})),
)


def minimal_protocol(features: Iterable[str], *, base: Protocol | None = None) -> Protocol:
    """The smallest protocol that supports ``features`` (and everything ``base`` already had).

    Legacy versions are used while they suffice (writer 2 to 5, reader 1 or 2); otherwise table
    features: writer 7 (with every legacy feature the old version implied), and reader 3 when a
    reader-writer feature is needed.
    """
    wanted = set(features)
    if base is not None:
        wanted |= set(writer_features(base)) | set(reader_features(base))
    reader_needed = wanted & READER_WRITER_FEATURES
    if reader_needed <= {"columnMapping"}:
        for version, implied in _LEGACY_WRITER:
            if wanted <= implied and (base is None or base.min_writer_version <= version):
                reader = 2 if "columnMapping" in wanted else 1
                if base is not None:
                    reader = max(reader, base.min_reader_version)
                if reader <= 2:
                    return Protocol(reader, version)
    writer_set = frozenset(wanted)
    if reader_needed - {"columnMapping"} or (base is not None and base.min_reader_version >= 3):
        return Protocol(3, 7, frozenset(reader_needed), writer_set)
    return Protocol(2 if "columnMapping" in wanted else 1, 7, None, writer_set)


def protocol_for_metadata(
    protocol: Protocol, schema: StructType, configuration: Mapping[str, str], previous: Mapping[str, str]
) -> Protocol | None:
    """The upgraded protocol a metadata change needs, or None when ``protocol`` already suffices.

    Only properties whose value changed are validated: a table may carry ``delta.*`` keys written by
    newer engines that this one does not know.

    Raises:
        InvalidPropertyError: a changed ``delta.*`` property is unknown or invalid.
    """
    validate_properties({k: v for k, v in configuration.items() if previous.get(k) != v})
    needed = required_features(schema, configuration)
    have = set(writer_features(protocol)) | set(reader_features(protocol))
    if needed <= have:
        return None
    return minimal_protocol(needed, base=protocol)


#: (reader, writer) versions of each legacy feature (PROTOCOL.md "Table Features"); a table feature
#: that is not legacy needs (3, 7) when it is a reader-writer feature, (1, 7) otherwise.
_LEGACY_FEATURE_VERSIONS: dict[str, tuple[int, int]] = {
    "appendOnly": (1, 2), "invariants": (1, 2), "checkConstraints": (1, 3), "changeDataFeed": (1, 4),
    "generatedColumns": (1, 4), "columnMapping": (2, 5), "identityColumns": (1, 6),
}


def _legacy_implied(reader: int, writer: int) -> frozenset[str]:
    """The features a legacy protocol (writer below 7) implies: those its two versions both reach."""
    return frozenset(f for f, (r, w) in _LEGACY_FEATURE_VERSIONS.items() if r <= reader and w <= writer)


def _feature_versions(feature: str) -> tuple[int, int]:
    if feature in _LEGACY_FEATURE_VERSIONS:
        return _LEGACY_FEATURE_VERSIONS[feature]
    return (3, 7) if feature in READER_WRITER_FEATURES else (1, 7)


def normalized_protocol(features: Iterable[str]) -> Protocol:
    """The weakest protocol that lists exactly ``features`` (Delta's ``Protocol.normalized``).

    The versions are the largest each feature needs; when the legacy protocol of those versions implies
    exactly ``features`` it is that legacy protocol, otherwise writer 7 with the features listed (and
    reader 3 with the reader-writer features listed when one of them is not legacy).
    """
    wanted = frozenset(features)
    reader = max([1, *(_feature_versions(f)[0] for f in wanted)])
    writer = max([1, *(_feature_versions(f)[1] for f in wanted)])
    if writer < 7 and _legacy_implied(reader, writer) == wanted:
        return Protocol(reader, writer)
    readers = frozenset(f for f in wanted if f in READER_WRITER_FEATURES) if reader >= 3 else None
    return Protocol(reader, 7, readers, wanted)


def protocol_for_versions(current: Protocol, reader: int, writer: int, *, location: str = "") -> Protocol | None:
    """The protocol ``SET TBLPROPERTIES ('delta.minReaderVersion' = r, 'delta.minWriterVersion' = w)`` leads to.

    Delta merges the requested versions into the current protocol (``Protocol.merge``): the features the
    table has plus those the requested legacy versions imply, written in the weakest form
    (:func:`normalized_protocol`). Asking for reader 3 / writer 7 therefore adds no feature: a legacy table
    keeps its protocol (delta-spark 4.4 commits no protocol action then), and features are added by name
    (``delta.feature.<name>``) or by the property that needs them. None means the protocol stays as is.

    Raises:
        InvalidPropertyError: reader version 3 without writer version 7 (Delta's
            ``DELTA_READ_FEATURE_PROTOCOL_REQUIRES_WRITE``).
    """
    reader, writer = max(reader, current.min_reader_version), max(writer, current.min_writer_version)
    if reader >= 3 and writer < 7:
        where = f" of table {location!r}" if location else ""
        raise InvalidPropertyError(
            f"Cannot upgrade the reader version{where} to {reader}: reader version 3 (table features) needs "
            f"writer version 7, found {writer}. Help: also set 'delta.minWriterVersion' = '7'.",
            key="delta.minReaderVersion",
        )
    have = (writer_features(current) | reader_features(current) if current.min_writer_version >= 7
            else _legacy_implied(current.min_reader_version, current.min_writer_version))
    implied = _legacy_implied(min(reader, 2), writer) if writer < 7 else frozenset()
    if implied <= have:
        return None
    return normalized_protocol(have | implied)


def protocol_for_new_table(features: Iterable[str], reader: int, writer: int) -> Protocol:
    """The protocol of a new table created with ``delta.minReaderVersion``/``delta.minWriterVersion``.

    Delta (``Protocol.minProtocolComponentsFromMetadata``): the features the table needs plus those the
    requested legacy versions imply, in the weakest form (a reader version of 3 counts only with writer 7).
    """
    implied = _legacy_implied(min(reader, 2), writer) if writer < 7 else frozenset()
    return normalized_protocol(set(features) | implied)

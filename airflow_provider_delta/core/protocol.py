"""Protocol and table-feature gates (PROTOCOL.md "Protocol Evolution", "Table Features").

A table whose protocol needs something this engine does not honour is refused with a typed error
that lists what is and is not supported: never wrong data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_delta.exceptions import UnsupportedFeatureError

if TYPE_CHECKING:
    from airflow_provider_delta.core.actions import Protocol

MAX_READER_VERSION = 3

#: Reader features whose data the engine reads correctly.
SUPPORTED_READER_FEATURES: frozenset[str] = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "typeWidening",
        "typeWidening-preview",
    }
)

#: Reader features implied by legacy reader versions (PROTOCOL.md "Table Features" table).
_LEGACY_READER_FEATURES: dict[int, frozenset[str]] = {
    1: frozenset(),
    2: frozenset({"columnMapping"}),
}


def reader_features(protocol: Protocol) -> frozenset[str]:
    """The reader features a protocol requires (explicit for v3, implied for v1/v2)."""
    if protocol.min_reader_version >= 3:
        return protocol.reader_features or frozenset()
    return _LEGACY_READER_FEATURES.get(protocol.min_reader_version, frozenset())


def check_readable(protocol: Protocol, *, location: str = "", version: int | None = None) -> None:
    """Raise unless this engine can read a table with ``protocol``.

    Raises:
        UnsupportedFeatureError: the reader version is too new or a reader feature is unsupported.
    """
    where = f"table {location!r}" if location else "table"
    at = f" at version {version}" if version is not None else ""
    if protocol.min_reader_version > MAX_READER_VERSION or protocol.min_reader_version < 1:
        raise UnsupportedFeatureError(
            f"Cannot read {where}{at}: reader version {protocol.min_reader_version} is unsupported "
            f"(supported: 1 to {MAX_READER_VERSION})",
            supported=tuple(sorted(SUPPORTED_READER_FEATURES)),
        )
    missing = sorted(reader_features(protocol) - SUPPORTED_READER_FEATURES)
    if missing:
        names = ", ".join(missing)
        raise UnsupportedFeatureError(
            f"Cannot read {where}{at}: reader feature{'s' if len(missing) > 1 else ''} {names} "
            f"{'are' if len(missing) > 1 else 'is'} unsupported "
            f"(supported: {', '.join(sorted(SUPPORTED_READER_FEATURES))})",
            features=tuple(missing),
            supported=tuple(sorted(SUPPORTED_READER_FEATURES)),
        )


#: Writer features this engine honours when it commits.
SUPPORTED_WRITER_FEATURES: frozenset[str] = frozenset(
    {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "columnMapping",
        "timestampNtz",
        "deletionVectors",
        "domainMetadata",
        "inCommitTimestamp",
        "vacuumProtocolCheck",
        "v2Checkpoint",
        "generatedColumns",
        "identityColumns",
        "typeWidening",
        "typeWidening-preview",
    }
)

#: Writer features implied by legacy writer versions (PROTOCOL.md "Table Features" table).
_LEGACY_WRITER_FEATURES: dict[int, frozenset[str]] = {
    1: frozenset(),
    2: frozenset({"appendOnly", "invariants"}),
    3: frozenset({"appendOnly", "invariants", "checkConstraints"}),
    4: frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"}),
    5: frozenset(
        {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping"}
    ),
    6: frozenset(
        {
            "appendOnly",
            "invariants",
            "checkConstraints",
            "changeDataFeed",
            "generatedColumns",
            "columnMapping",
            "identityColumns",
        }
    ),
}

#: Features that need at least reader version 3 (table features) when listed explicitly.
READER_WRITER_FEATURES: frozenset[str] = frozenset(
    {"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck",
     "typeWidening", "typeWidening-preview", "variantType", "variantType-preview", "geospatial"}
)


def writer_features(protocol: Protocol) -> frozenset[str]:
    """The writer features a protocol requires (explicit for v7, implied for v1-v6)."""
    if protocol.min_writer_version >= 7:
        return protocol.writer_features or frozenset()
    return _LEGACY_WRITER_FEATURES.get(protocol.min_writer_version, frozenset())


def check_writable(protocol: Protocol, *, location: str = "", version: int | None = None) -> None:
    """Raise unless this engine can commit to a table with ``protocol``.

    Raises:
        UnsupportedFeatureError: the writer version is too new or a writer feature is unsupported.
    """
    check_readable(protocol, location=location, version=version)
    where = f"table {location!r}" if location else "table"
    at = f" at version {version}" if version is not None else ""
    if protocol.min_writer_version > 7 or protocol.min_writer_version < 1:
        raise UnsupportedFeatureError(
            f"Cannot write to {where}{at}: writer version {protocol.min_writer_version} is unsupported "
            "(supported: 1 to 7)",
            supported=tuple(sorted(SUPPORTED_WRITER_FEATURES)),
        )
    missing = sorted(writer_features(protocol) - SUPPORTED_WRITER_FEATURES)
    if missing:
        raise UnsupportedFeatureError(
            f"Cannot write to {where}{at}: writer feature{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)} {'are' if len(missing) > 1 else 'is'} unsupported "
            f"(supported: {', '.join(sorted(SUPPORTED_WRITER_FEATURES))})",
            features=tuple(missing),
            supported=tuple(sorted(SUPPORTED_WRITER_FEATURES)),
        )

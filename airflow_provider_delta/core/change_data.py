"""The change data feed's vocabulary (PROTOCOL.md "Change Data Feed"): its property, columns and types.

Example:
    >>> cdf_enabled({"delta.enableChangeDataFeed": "TRUE"})
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from airflow_provider_delta.core.properties import is_enabled
from airflow_provider_delta.exceptions import SchemaError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_delta.core.schema.types import StructType

__all__ = [
    "CDF_METADATA_COLUMNS",
    "CDF_PROPERTY",
    "CHANGE_TYPE",
    "CHANGE_TYPES",
    "ChangeType",
    "cdf_enabled",
    "check_cdf_columns",
]

CDF_PROPERTY = "delta.enableChangeDataFeed"
CHANGE_TYPE = "_change_type"
CDF_METADATA_COLUMNS = (CHANGE_TYPE, "_commit_version", "_commit_timestamp")
ChangeType = Literal["insert", "delete", "update_preimage", "update_postimage"]
CHANGE_TYPES: tuple[ChangeType, ...] = ("insert", "delete", "update_preimage", "update_postimage")


def cdf_enabled(configuration: Mapping[str, str]) -> bool:
    """Whether table properties ``configuration`` record changes (``delta.enableChangeDataFeed=true``)."""
    return is_enabled(configuration, CDF_PROPERTY)


def check_cdf_columns(schema: StructType, configuration: Mapping[str, str]) -> None:
    """Refuse change data feed on a schema that uses its reserved column names.

    Raises:
        SchemaError: a column is named like one of the feed's metadata columns.
    """
    if not cdf_enabled(configuration):
        return
    clash = [n for n in schema.names if n.lower() in CDF_METADATA_COLUMNS]
    if clash:
        raise SchemaError(
            f"Cannot enable change data feed: column {clash[0]!r} uses a name reserved for the change feed "
            f"({', '.join(CDF_METADATA_COLUMNS)}). Help: rename the column first."
        )

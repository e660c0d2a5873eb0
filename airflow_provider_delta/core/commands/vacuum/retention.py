"""VACUUM's retention: the cutoff before which unreferenced files may go, and the safety check.

Delta's rules (``VacuumCommand.checkRetentionPeriodSafety``): the table keeps removed files for
``delta.deletedFileRetentionDuration`` (default ``interval 1 week``); ``retention_hours`` (``RETAIN n
HOURS``, rounded half up to whole hours) overrides it for one run. A negative retention is always
refused; a retention shorter than the table's is refused while the safety check is on, and the
message quotes the table's retention rounded up to whole hours.

Delta 4.1 and later ignore any ``RETAIN`` other than 0 (``spark.databricks.delta.vacuum.
retentionWindowIgnore.enabled``); this engine honours it, like Delta 4.0 and delta-rs.

Example:
    >>> Retention.of({}, 200, now_ms=10**12).cutoff_ms
    999280000000
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from airflow_provider_delta.core.log.checkpoint_write import retention_property
from airflow_provider_delta.exceptions import RetentionPeriodError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["DEFAULT_DELETED_FILE_RETENTION", "Retention", "table_retention_ms"]

DEFAULT_DELETED_FILE_RETENTION = timedelta(weeks=1)
_HOUR_MS = 3_600_000


def table_retention_ms(configuration: Mapping[str, str]) -> int:
    """``delta.deletedFileRetentionDuration`` in milliseconds (one week when unset)."""
    duration = retention_property(
        configuration, "delta.deletedFileRetentionDuration", DEFAULT_DELETED_FILE_RETENTION
    )
    return int(duration.total_seconds() * 1000)


@dataclass(frozen=True)
class Retention:
    """One VACUUM's retention: the table's, the one asked for, and the resulting cutoff.

    Attributes:
        table_ms: the table's retention (``delta.deletedFileRetentionDuration``).
        specified_ms: the retention asked for (``retention_hours`` in ms), None when not given.
        check_enabled: whether the safety check was on.
        now_ms: the moment the cutoff is measured from.
    """

    table_ms: int
    specified_ms: int | None
    check_enabled: bool
    now_ms: int

    @property
    def effective_ms(self) -> int:
        """The retention that applies: the specified one, else the table's."""
        return self.table_ms if self.specified_ms is None else self.specified_ms

    @property
    def cutoff_ms(self) -> int:
        """Files (and tombstones) older than this may be deleted."""
        return self.now_ms - self.effective_ms

    @classmethod
    def of(
        cls,
        configuration: Mapping[str, str],
        retention_hours: float | None,
        *,
        enforce_retention_duration: bool = True,
        now_ms: int | None = None,
        location: str = "",
    ) -> Retention:
        """Check ``retention_hours`` against the table's retention and build the cutoff.

        Raises:
            RetentionPeriodError: negative (always), or shorter than the table's with the check on.
            InvalidPropertyError: ``delta.deletedFileRetentionDuration`` is not an interval.
        """
        table_ms = table_retention_ms(configuration)
        specified_ms = None
        if retention_hours is not None:
            if isinstance(retention_hours, bool) or not isinstance(retention_hours, int | float):
                raise RetentionPeriodError(
                    f"Cannot vacuum table {location!r}: retention_hours must be a number of hours, "
                    f"found {retention_hours!r}",
                    retention_hours=None,
                )
            if math.isnan(retention_hours) or retention_hours < 0:
                raise RetentionPeriodError(
                    "[DELTA_VACUUM_RETENTION_PERIOD_NEGATIVE] Retention period for Vacuum can't be less than "
                    f"0 hours (table {location!r}, retention_hours={retention_hours!r}).",
                    retention_hours=float(retention_hours),
                )
            # Scala's math.round: half up.
            specified_ms = math.floor(float(retention_hours) + 0.5) * _HOUR_MS
        if enforce_retention_duration and specified_ms is not None and specified_ms < table_ms:
            table_hours = math.ceil(table_ms / _HOUR_MS)
            raise RetentionPeriodError(
                "[DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT] The specified VACUUM retention period is too low "
                "and may corrupt this Delta table if any writes are in progress. If no operations (insert, "
                "upsert, delete, optimize) are running, you can disable this safety check by setting: "
                "delta.retentionDurationCheck.enabled = false (here: enforce_retention_duration=False, or "
                "--no-enforce-retention on the command line). "
                f"Otherwise, use a retention period of at least {table_hours} hours "
                f"(table {location!r}, retention_hours={retention_hours!r}).",
                retention_hours=float(retention_hours) if retention_hours is not None else None,
                table_hours=table_hours,
            )
        return cls(
            table_ms=table_ms,
            specified_ms=specified_ms,
            check_enabled=enforce_retention_duration,
            now_ms=int(time.time() * 1000) if now_ms is None else now_ms,
        )

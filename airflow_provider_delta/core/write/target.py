"""What writing data files of one table needs, without its log: small, immutable and picklable.

A command plans on a :class:`~airflow_provider_delta.core.snapshot.Snapshot` (the whole replayed log);
the data work only needs the table's location, storage, schema, partitioning and properties. A
:class:`WriteTarget` carries exactly that, so an executor can ship it to other processes (Spark
executors) where the snapshot would be too big to send.

Example:
    >>> target = WriteTarget.of(snapshot)              # doctest: +SKIP
    >>> write_rows(target, pa.table({"id": [1, 2]}))  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_delta.core.schema.types import StructType
    from airflow_provider_delta.core.snapshot import Snapshot
    from airflow_provider_delta.core.storage import Storage

__all__ = ["TableLayout", "WriteTarget"]


class TableLayout(Protocol):
    """The attributes file writers read: a :class:`WriteTarget` or a ``Snapshot``."""

    @property
    def location(self) -> str: ...
    @property
    def storage(self) -> Storage: ...
    @property
    def schema(self) -> StructType: ...
    @property
    def partition_columns(self) -> tuple[str, ...]: ...
    @property
    def configuration(self) -> Mapping[str, str]: ...
    @property
    def version(self) -> int: ...


@dataclass(frozen=True)
class WriteTarget:
    """One table version as data-file writers see it.

    Attributes:
        location: the table's location, for messages.
        storage: where the files go.
        schema: the logical schema rows are conformed to (the evolved one when the write evolves it).
        partition_columns: the partition columns, in order.
        configuration: the table properties (column mapping, statistics, CHECK constraints).
        version: the version the write reads (for messages).
    """

    location: str
    storage: Storage
    schema: StructType
    partition_columns: tuple[str, ...]
    configuration: Mapping[str, str]
    version: int

    @classmethod
    def of(cls, snapshot: Snapshot) -> WriteTarget:
        """The target of writes into ``snapshot``'s table (with its schema and properties)."""
        return cls(
            location=snapshot.location,
            storage=snapshot.storage,
            schema=snapshot.schema,
            partition_columns=tuple(snapshot.partition_columns),
            configuration=dict(snapshot.configuration),
            version=snapshot.version,
        )

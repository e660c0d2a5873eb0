"""Where an export's data work runs: the local engine here, the Spark one in ``spark/cdf_export.py``.

The planning, the preflight and the sink's commit stay in the caller (the driver); an engine only
turns :class:`~.units.ExportUnit` s into output: files of a Parquet/JSON Lines sink
(:meth:`ExportEngine.write_files`, one ``write_unit`` per unit, records back) or data files of the
Delta sink (:meth:`ExportEngine.write_delta`, ``add`` actions back).

Example:
    >>> LocalExportEngine().write_files(job, units)  # doctest: +SKIP
    [{'version': 3, 'seq': 0, 'path': '_commit_version=3/part-00000.parquet', 'rows': 10, ...}]
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core.executor import LocalExecutor
from airflow_provider_delta.core.executor.export.units import row_counts, unit_rows, write_unit
from airflow_provider_delta.core.parallel import MAX_THREADS, run_parallel

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_delta.core.actions import AddFile
    from airflow_provider_delta.core.executor.export.units import ExportUnit, UnitJob
    from airflow_provider_delta.core.write.target import WriteTarget

__all__ = ["DeltaOutput", "ExportEngine", "LocalExportEngine"]

#: Rows buffered before the Delta sink writes a data file (the engine's target file size).
DELTA_FILE_ROWS = 1_000_000


class DeltaOutput:
    """What ``write_delta`` wrote: the ``add`` actions and the rows per change type."""

    def __init__(self) -> None:
        self.adds: list[AddFile] = []
        self.rows = 0
        self.counts: dict[str, int] = {}

    def count(self, counts: dict[str, Any]) -> None:
        """Add one unit's rows per change type."""
        for k, n in counts.items():
            self.counts[k] = self.counts.get(k, 0) + int(n)
            self.rows += int(n)


class ExportEngine(ABC):
    """Runs the data work of exports (see the module docstring)."""

    name = "engine"

    @abstractmethod
    def write_files(self, job: UnitJob, units: Sequence[ExportUnit]) -> list[dict[str, Any]]:
        """Write each unit's output file to ``job.sink``; one record per unit, in the order of ``units``."""

    @abstractmethod
    def write_delta(self, target: WriteTarget, work: Sequence[tuple[UnitJob, Sequence[ExportUnit]]]) -> DeltaOutput:
        """Write the rows of every unit (conformed to ``target.schema``) as data files of ``target``."""


class LocalExportEngine(ExportEngine):
    """Export work in this process, on the engine's thread pool."""

    name = "local"

    def __init__(self) -> None:
        self.executor = LocalExecutor()

    def write_files(self, job: UnitJob, units: Sequence[ExportUnit]) -> list[dict[str, Any]]:
        """Units in parallel (each reads its files and writes one output file)."""
        return run_parallel(partial(write_unit, job), units)

    def write_delta(self, target: WriteTarget, work: Sequence[tuple[UnitJob, Sequence[ExportUnit]]]) -> DeltaOutput:
        """Read units a window at a time; write up to :data:`DELTA_FILE_ROWS` rows of one segment per call."""
        out = DeltaOutput()
        for job, units in work:
            buffered: list[pa.Table] = []
            size = 0
            read = partial(unit_rows, job)
            for i in range(0, len(units), MAX_THREADS):
                for rows in run_parallel(read, units[i:i + MAX_THREADS]):
                    out.count(row_counts(rows))
                    if rows.num_rows:
                        buffered.append(rows)
                        size += rows.num_rows
                    if size >= DELTA_FILE_ROWS:
                        out.adds += self.executor.write_files(target, pa.concat_tables(buffered))
                        buffered, size = [], 0
            if buffered:
                # The executor conforms the segment's rows to the sink's (evolved) schema.
                out.adds += self.executor.write_files(target, pa.concat_tables(buffered))
        return out

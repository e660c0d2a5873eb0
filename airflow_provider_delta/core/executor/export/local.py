"""The local executor's change exporter: an export's data work in this process, on the engine's pool.

The planning, the preflight and the sink's commit stay with the command (the driver); the exporter
only turns :class:`~.units.ExportUnit` s into output: files of a Parquet/JSON Lines sink
(:meth:`LocalChangeExporter.write_files`, one ``write_unit`` per unit, records back) or data files of
the Delta sink (:meth:`LocalChangeExporter.write_delta`, ``add`` actions back). The Spark executor's
exporter is in ``spark/cdf_export.py``.

Example:
    >>> LocalChangeExporter().write_files(job, units)  # doctest: +SKIP
    [{'version': 3, 'seq': 0, 'path': '_commit_version=3/part-00000.parquet', 'rows': 10, ...}]
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_delta.core.executor.export.units import DeltaOutput, row_counts, unit_rows, write_unit
from airflow_provider_delta.core.parallel import MAX_THREADS, run_parallel
from airflow_provider_delta.core.write.rows import write_rows

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_delta.core.executor.export.units import ExportUnit, UnitJob
    from airflow_provider_delta.core.write.target import WriteTarget

__all__ = ["DELTA_FILE_ROWS", "LocalChangeExporter"]

#: Rows buffered before the Delta sink writes a data file (the engine's target file size).
DELTA_FILE_ROWS = 1_000_000


class LocalChangeExporter:
    """Export work in this process, on the engine's thread pool (a :class:`~..base.ChangeExporter`)."""

    name = "local"

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
                        out.adds += write_rows(target, pa.concat_tables(buffered))
                        buffered, size = [], 0
            if buffered:
                # write_rows conforms the segment's rows to the sink's (evolved) schema, as LocalExecutor does.
                out.adds += write_rows(target, pa.concat_tables(buffered))
        return out

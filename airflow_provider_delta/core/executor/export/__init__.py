"""Change data export behind the executor seam: the units of work and the local exporter.

:mod:`.units` holds the work types (:class:`~.units.ExportUnit`, :class:`~.units.UnitJob`) and the
work of one unit (read its change files, shape the rows, write one output file); :mod:`.envelope`
the Debezium shape; :mod:`.local` the local executor's exporter.
"""

from __future__ import annotations

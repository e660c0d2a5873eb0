"""MERGE behind the executor seam: the work a command hands over and the local executor's join.

:mod:`.job` holds the work types (:class:`~.job.MergeJob` in, :class:`~.job.MergeOutcome` out), :mod:`.plan`
the resolved :class:`~.plan.MergePlan` the job carries, :mod:`.source` the source rows as an engine holds
them; :mod:`.local` (with :mod:`.join`, :mod:`.probe` and :mod:`.clauses`) is the local executor's merge
with pyarrow.
"""

from __future__ import annotations

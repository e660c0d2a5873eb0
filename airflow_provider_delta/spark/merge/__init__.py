"""MERGE on Spark: :mod:`.command` (``merge_delta``, ``merge_delta_sql``), :mod:`.execution` (the Spark job),
:mod:`.source` (a DataFrame as a MERGE source) and :mod:`.tasks` (the writing tasks).

No imports here: :mod:`.execution` is loaded by the Spark executor, which :mod:`.command` imports.
"""

"""An executable model of Delta Lake's MERGE rules for nested data, written apart from the engine.

:mod:`.model` says, in plain Python over Python values, what Delta Lake (delta-spark 4.4.0) does with a
MERGE (its schema, rows, metrics and change data, or that it refuses); :mod:`.cases` generates MERGE
cases over nested schemas (a case is the target schema and rows, the source schema and rows, the MERGE
statement as Spark SQL, and the evolution flag) so that the engine's executors, and delta-spark itself,
can be run on the same cases and compared with the model.
"""

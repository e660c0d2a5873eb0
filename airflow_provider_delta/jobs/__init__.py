"""The job framework: a job spec in, a job result out, on engine ``spark`` or ``local``.

- :mod:`.definition`: ``JobDefinition`` and ``Option``, what a job declares (its options, engines,
  default engine); the operators take their arguments from it.
- :mod:`.registry`: job name -> module (:data:`~.registry.JOBS`), the declarations, the runner's path.
- :mod:`.spec`: ``JobSpec`` and ``JobResult``, the JSON exchanged with the runner.
- :mod:`.context`: ``JobContext`` (what ``run(ctx)`` gets) and ``JobOutput`` (what it returns).
- :mod:`.runner`: runs a spec under its conflict policy, with a SparkSession (engine ``spark``) or
  without (engine ``local``); ``python -m airflow_provider_delta.jobs`` is its command line, and the
  file spark-submit runs.
- one module per job: ``checkpoint``, ``write``, ``merge``, ``schema_evolve``, ``vacuum``,
  ``optimize``, ``reorg``, ``cdf_export``.

Imports: ``core/`` at module level, ``spark/`` only inside functions (the Spark data plane, when a
job runs on engine ``spark``); never airflow. Importing this package or a job module loads no pyspark.
"""

"""Helpers shared by the job-protocol tests (in-process, spark-submit and Airflow)."""

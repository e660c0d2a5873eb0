"""Is pyspark installed as this package needs it? Checked without importing pyspark (no JVM, fast).

apache-airflow-providers-apache-spark depends on ``pyspark-client``, which installs its files into
the same ``pyspark/`` folder as ``pyspark``. Installed with pip after pyspark, it replaces pyspark's
Python files with another version's: ``pyspark.__version__`` then disagrees with the jars, and Spark
jobs fail in confusing ways. :func:`pyspark_install_problem` tells, and says how to repair it.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import re
from pathlib import Path

#: The pyspark version the jobs are built and tested with (``pyproject.toml``'s ``spark`` extra).
PYSPARK_VERSION = "4.3.0"

REPAIR = (
    "pip uninstall -y pyspark-client && "
    f'pip install --no-deps --force-reinstall "pyspark=={PYSPARK_VERSION}"'
)


def _files_version() -> str | None:
    """``__version__`` of the ``pyspark`` package files Python would import, or None if there is none."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    version_file = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        match = re.search(r"__version__[^=]*=\s*['\"]([^'\"]+)['\"]", version_file.read_text(encoding="utf-8"))
    except OSError:
        return None
    return match.group(1) if match else None


def _distribution(name: str) -> str | None:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


def pyspark_install_problem() -> str | None:
    """What is wrong with the installed pyspark for Spark jobs (with the fix), or None if nothing.

    Example:
        >>> pyspark_install_problem() is None  # doctest: +SKIP
        True
    """
    files = _files_version()
    installed = _distribution("pyspark")
    client = _distribution("pyspark-client")
    if files is None or installed is None:
        return (
            "pyspark is not installed: install airflow-provider-delta[spark] into this environment "
            f"(pyspark=={PYSPARK_VERSION})"
        )
    if files != installed:
        source = f"pyspark-client {client}" if client else "another package"
        return (
            f"the pyspark files are version {files} but pyspark {installed} is installed: {source} wrote over "
            f"them (apache-airflow-providers-apache-spark pulls pyspark-client in). Repair: {REPAIR}"
        )
    return None

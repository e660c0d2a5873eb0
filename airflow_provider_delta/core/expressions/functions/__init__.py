"""The Spark SQL functions the local engine evaluates, grouped by family (see :mod:`.registry`).

Importing this package registers every family. :func:`lookup` finds a function by any of its Spark
names; :func:`supported_functions` lists them per family (the README's table comes from it).

Example:
    >>> sorted(supported_functions())[:3]
    ['array', 'conditional', 'datetime']
"""

from __future__ import annotations

from airflow_provider_delta.core.expressions.functions import (  # noqa: F401 - registers the families
    arrays,
    conditional,
    datetimes,
    hashing,
    maps,
    math,
    strings,
)
from airflow_provider_delta.core.expressions.functions.registry import (
    ALIASES,
    REGISTRY,
    FunctionRuntimeError,
    FunctionSpec,
    FunctionTypeError,
    check_arity,
    lookup,
)

__all__ = [
    "FunctionRuntimeError",
    "FunctionSpec",
    "FunctionTypeError",
    "check_arity",
    "lookup",
    "supported_functions",
]


def supported_functions() -> dict[str, list[str]]:
    """Every function name Spark users can write (aliases included), per family, sorted."""
    families: dict[str, list[str]] = {}
    for name, spec in REGISTRY.items():
        if name not in ("case", "[]"):  # syntax (CASE WHEN, x[i]), not calls
            families.setdefault(spec.family, []).append(name)
    for alias, name in ALIASES.items():
        families[REGISTRY[name].family].append(alias)
    return {family: sorted(names) for family, names in families.items()}

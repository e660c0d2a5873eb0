"""Filters as users give them (SQL text, DNF tuples or expressions), bound to a table's schema.

Example:
    >>> import pyarrow as pa
    >>> str(bind_filter("id > 1", pa.schema([("id", pa.int64())])))
    'id > 1L'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_delta.core.expressions.bind import bind, require_boolean
from airflow_provider_delta.core.expressions.parse import parse_filter

if TYPE_CHECKING:
    import pyarrow as pa

    from airflow_provider_delta.core.expressions.nodes import Expr


def bind_filter(predicate: Any, schema: pa.Schema) -> Expr:
    """Parse ``predicate`` and bind it to ``schema``; it must yield booleans.

    Raises:
        PredicateError: it does not parse, names an unknown column or is not a predicate.
    """
    bound = bind(parse_filter(predicate), schema)
    require_boolean(bound, predicate)
    return bound


def predicate_text(predicate: Any) -> str:
    """The predicate as recorded in ``operationParameters`` and shown in messages."""
    return predicate if isinstance(predicate, str) else str(predicate)


__all__ = ["bind_filter", "predicate_text"]

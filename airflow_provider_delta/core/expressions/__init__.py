"""Predicates and value expressions as Delta users write them: parsing, binding, evaluation, file skipping.

Text is parsed with sqlglot (Spark dialect) into a small immutable AST; DNF filter tuples as pyarrow and
delta-rs accept them map onto the same AST. :func:`bind` resolves columns against an Arrow schema and
coerces literals to the column types the way Spark does; bound expressions evaluate over Arrow tables
with SQL three-valued logic and decide, from partition values and per-file statistics, whether a data
file may hold matching rows.

Modules, each importing only those above it (``nodes`` renders through ``render`` lazily):

- ``values``: Python values against Arrow types (a literal's Spark type, Spark-style CAST of values).
- ``nodes``: the immutable AST, :func:`col`/:func:`lit`, and structural queries.
- ``render``: :func:`to_sql`, Spark SQL that parses back to the same tree.
- ``parse``: SQL text (sqlglot) and DNF filter tuples to nodes.
- ``bind``: column resolution, qualifiers and Spark's literal coercion.
- ``arrow``: :func:`to_arrow_expression` and :func:`evaluate` over Arrow tables (each operand of
  AND, OR and coalesce on the rows that reach it, as in Spark).
- ``scalar``: SQL evaluation over one row of partition values.
- ``functions``: the Spark SQL function library (a module per family: typing and vectorised kernels).
- ``skipping``: :func:`file_may_match` from partition values and per-file statistics.

Example:
    >>> import pyarrow as pa
    >>> schema = pa.schema([("d", pa.date32()), ("n", pa.int64())])
    >>> pred = bind(parse_predicate("d >= '2020-01-02' AND n IN (1, 2)"), schema)
    >>> table = pa.table({"d": pa.array([18262, 18263], pa.date32()), "n": [1, 2]})
    >>> evaluate(pred, table).to_pylist()
    [False, True]
    >>> file_may_match(pred, partition_values={}, stats={"numRecords": 2, "minValues": {"n": 5}})
    False
"""

from __future__ import annotations

from airflow_provider_delta.core.expressions.arrow import evaluate, spread, to_arrow_expression
from airflow_provider_delta.core.expressions.bind import bind, require_boolean
from airflow_provider_delta.core.expressions.filters import bind_filter, predicate_text
from airflow_provider_delta.core.expressions.functions import supported_functions
from airflow_provider_delta.core.expressions.nodes import (
    And,
    Arithmetic,
    ArithmeticOp,
    Between,
    Cast,
    Column,
    Comparison,
    ComparisonOp,
    Expr,
    Function,
    In,
    IsNotNull,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    col,
    conjuncts,
    is_partition_only,
    lit,
    referenced_columns,
)

# Private, re-exported for core.commands.write and core.commands.merge.plan (result type of a bound expression).
from airflow_provider_delta.core.expressions.nodes import _type_of as _type_of
from airflow_provider_delta.core.expressions.parse import parse_expression, parse_filter, parse_predicate
from airflow_provider_delta.core.expressions.render import to_sql
from airflow_provider_delta.core.expressions.skipping import file_may_match

#: Every Spark SQL function name the engine evaluates (aliases included); see ``expressions.functions``.
FUNCTIONS = frozenset(name for names in supported_functions().values() for name in names)

__all__ = [
    "FUNCTIONS",
    "And",
    "Arithmetic",
    "ArithmeticOp",
    "Between",
    "Cast",
    "Column",
    "Comparison",
    "ComparisonOp",
    "Expr",
    "Function",
    "In",
    "IsNotNull",
    "IsNull",
    "Like",
    "Literal",
    "Not",
    "Or",
    "bind",
    "bind_filter",
    "col",
    "conjuncts",
    "evaluate",
    "file_may_match",
    "is_partition_only",
    "lit",
    "parse_expression",
    "parse_filter",
    "parse_predicate",
    "predicate_text",
    "referenced_columns",
    "require_boolean",
    "spread",
    "to_arrow_expression",
    "to_sql",
]

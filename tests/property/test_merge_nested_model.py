"""MERGE over generated nested schemas on the local executor agrees with the model of Delta's rules.

Cases (:mod:`tests.merge_model.strategies`): structs in structs, arrays of structs, maps with struct
values, NULL structs at every level, fields missing on either side, names in another case, ``int``
against ``bigint``; ``UPDATE SET *``, ``INSERT *``, explicit assignments of columns and nested fields
(new ones too), NOT MATCHED BY SOURCE, with and without schema evolution. The model
(:mod:`tests.merge_model.model`) gives Delta's schema, rows, row counters and change data, or its
refusal (then a typed error naming the column, and the table unchanged).
"""

from __future__ import annotations

import tempfile
from typing import TYPE_CHECKING

from hypothesis import HealthCheck, given, settings

from airflow_provider_delta.core.table import DeltaTable
from tests.merge_model.run import arrow_table, check, make_target
from tests.merge_model.strategies import merge_cases

if TYPE_CHECKING:
    from tests.merge_model.case import MergeCase


def run_local(case: MergeCase) -> None:
    with tempfile.TemporaryDirectory() as root:
        location = f"{root}/target"
        make_target(case, location)
        source = arrow_table(case.source_schema, case.source_rows)
        check(case, location, lambda: DeltaTable(location).merge_sql(case.statement(), source))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(merge_cases())
def test_local_merge_of_nested_data_follows_delta(case: MergeCase) -> None:
    run_local(case)

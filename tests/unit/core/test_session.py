from __future__ import annotations

import threading

from airflow_provider_delta.core.session import session_defaults, set_write_defaults, write_defaults


def test_built_in_defaults_merge_nothing_and_add_no_properties() -> None:
    assert write_defaults().auto_merge_schema is False
    assert dict(write_defaults().table_properties) == {}


def test_session_defaults_apply_inside_the_block_only() -> None:
    with session_defaults(
        auto_merge_schema=True, table_properties={"delta.enableChangeDataFeed": "true"}
    ) as d:
        assert d.auto_merge_schema is True
        assert write_defaults() == d
        with session_defaults(auto_merge_schema=False):
            assert write_defaults().auto_merge_schema is False
            assert write_defaults().table_properties == {"delta.enableChangeDataFeed": "true"}
        assert write_defaults().auto_merge_schema is True
    assert write_defaults().auto_merge_schema is False


def test_set_write_defaults_does_not_leak_into_other_threads() -> None:
    seen: list[bool] = []

    def worker() -> None:
        set_write_defaults(auto_merge_schema=True)
        seen.append(write_defaults().auto_merge_schema)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [True]
    assert write_defaults().auto_merge_schema is False

"""Fixtures for tables on a real S3-compatible server (SeaweedFS ``weed server`` on 127.0.0.1).

A pytest plugin (``pytest_plugins`` in tests/conftest.py), so every test folder can use them:

- ``s3_server``: one server for the whole test session (about 1 s to start), stopped at the end and
  killed with the test process if it dies (tests/s3_server.py);
- ``s3``: per test, the server behind a fresh counting, fault-injecting proxy (tests/s3_proxy.py),
  with a new table location and the storage options that point at the proxy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from tests.s3_proxy import S3Proxy
from tests.s3_server import SeaweedS3

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedS3]:
    """The session's S3 server."""
    server = SeaweedS3(tmp_path_factory.mktemp("seaweedfs"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def _s3_proxy(s3_server: SeaweedS3) -> Iterator[S3Proxy]:
    proxy = S3Proxy(s3_server.endpoint).start()
    try:
        yield proxy
    finally:
        proxy.stop()


@dataclass
class S3Env:
    """What a test needs: a fresh table URI, options through the proxy, the proxy and the server."""

    server: SeaweedS3
    proxy: S3Proxy
    uri: str

    @property
    def options(self) -> dict[str, str]:
        """Storage options whose endpoint is the proxy (requests counted, faults injectable)."""
        return {**self.server.storage_options, "AWS_ENDPOINT_URL": self.proxy.endpoint}

    @property
    def direct_options(self) -> dict[str, str]:
        """Storage options straight to the server (no proxy)."""
        return self.server.storage_options

    def new_uri(self, name: str = "t") -> str:
        """Another fresh table location."""
        return self.server.new_table_uri(name)


@pytest.fixture
def s3(s3_server: SeaweedS3, _s3_proxy: S3Proxy) -> Iterator[S3Env]:
    """A fresh table location on the server, and a reset proxy."""
    _s3_proxy.reset()
    yield S3Env(s3_server, _s3_proxy, s3_server.new_table_uri())
    _s3_proxy.reset()

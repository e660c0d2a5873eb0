"""``DeltaHook``: a ``delta`` connection says where tables live and how Spark jobs should run.

The connection (type ``delta``, default id ``delta_default``) holds:

- the base path or URI of the tables, in ``host`` or in the extra ``base_path``;
- ``storage_options`` (extra, a dict) for object stores, with delta-rs's keys
  (``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID`` ...); ``aws_conn_id`` there (or as an
  extra of its own) takes the credentials from an Airflow AWS connection (``hooks/aws_credentials.py``);
- ``spark_conn_id`` (extra, default ``spark_default``): the Spark connection jobs are submitted with;
- ``spark_conf`` (extra, a dict): Spark configuration added to every job.

A table named by a full path or URI needs no connection at all; a bare name is joined to the base
path. Nothing is read in ``__init__``: the connection is fetched on first use and cached.
"""

from __future__ import annotations

import json
import os
import posixpath
from functools import cached_property
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowException, AirflowNotFoundException

from airflow_provider_delta.core.log import history as _history
from airflow_provider_delta.core.log.segment import latest_version as _latest_version
from airflow_provider_delta.core.storage import storage_for
from airflow_provider_delta.exceptions import DeltaError
from airflow_provider_delta.hooks.aws_credentials import with_aws_connection

if TYPE_CHECKING:
    from airflow.sdk import Connection

DEFAULT_SPARK_CONN_ID = "spark_default"


def is_full_location(table: str) -> bool:
    """Whether ``table`` is a full path or URI (used as is) rather than a bare name.

    Example:
        >>> is_full_location("s3://bucket/events"), is_full_location("/data/events"), is_full_location("events")
        (True, True, False)
    """
    if "://" in table or table.startswith(("/", "file:", "~")):
        return True
    # C:\data\t or C:/data/t on Windows
    return len(table) > 2 and table[1] == ":" and table[0].isalpha() and table[2] in "\\/"


class DeltaHook(BaseHook):
    """Resolve table names and read a table's log cheaply; carries the settings Spark jobs need.

    Args:
        delta_conn_id: the ``delta`` connection. When it is the default id and does not exist,
            tables named by full path still work (storage options and Spark conf are then empty).

    Example:
        >>> hook = DeltaHook()                            # no connection is read yet
        >>> hook.resolve_table("/data/events")           # a full path needs no connection
        '/data/events'
        >>> DeltaHook("lake").resolve_table("events")   # doctest: +SKIP
        's3://bucket/lake/events'
    """

    conn_name_attr = "delta_conn_id"
    default_conn_name = "delta_default"
    conn_type = "delta"
    hook_name = "Delta Lake"

    def __init__(self, delta_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.delta_conn_id = delta_conn_id

    # -- connection -------------------------------------------------------------------------------
    @cached_property
    def connection(self) -> Connection | None:
        """The connection, or None when the default connection id is not defined."""
        try:
            return self.get_connection(self.delta_conn_id)
        except AirflowNotFoundException:
            if self.delta_conn_id == self.default_conn_name:
                return None
            raise

    @cached_property
    def extras(self) -> dict[str, Any]:
        """The connection's extra as a dict (``extra__delta__<key>`` names are accepted too)."""
        conn = self.connection
        if conn is None:
            return {}
        raw = conn.extra_dejson
        prefix = f"extra__{self.conn_type}__"
        return {(k[len(prefix):] if k.startswith(prefix) else k): v for k, v in raw.items()}

    def _dict_extra(self, key: str) -> dict[str, Any]:
        value = self.extras.get(key)
        if value in (None, ""):
            return {}
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                value = None
        if not isinstance(value, dict):
            raise AirflowException(
                f"Cannot read connection {self.delta_conn_id!r}: extra {key!r} must be a JSON object, "
                f"found {self.extras.get(key)!r}"
            )
        return value

    @property
    def base_path(self) -> str | None:
        """Where bare table names live: the connection's ``host`` or its extra ``base_path``."""
        base = self.extras.get("base_path") or (self.connection.host if self.connection is not None else None)
        return str(base) if base else None

    @property
    def storage_options(self) -> dict[str, str]:
        """Object-store options from the extra ``storage_options`` (empty without a connection).

        ``aws_conn_id`` (in ``storage_options`` or as an extra) is replaced by that AWS connection's
        credentials, region and endpoint; explicit keys win. The result holds secrets: never log it
        (``core.storage.options.redacted`` masks them).
        """
        options = {str(k): str(v) for k, v in self._dict_extra("storage_options").items()}
        return with_aws_connection(options, self.extras.get("aws_conn_id"))

    @property
    def spark_conn_id(self) -> str:
        """The Spark connection jobs are submitted with (extra ``spark_conn_id``, default ``spark_default``)."""
        return str(self.extras.get("spark_conn_id") or DEFAULT_SPARK_CONN_ID)

    @property
    def spark_conf(self) -> dict[str, str]:
        """Spark configuration for every job, from the extra ``spark_conf``."""
        return {str(k): str(v) for k, v in self._dict_extra("spark_conf").items()}

    # -- tables -----------------------------------------------------------------------------------
    def resolve_table(self, table: str) -> str:
        """The location of ``table``: a full path/URI as is, a bare name joined to the base path.

        Raises:
            AirflowException: a bare name with no connection, or a connection without a base path.
        """
        table = str(table).strip()
        if not table:
            raise AirflowException("Cannot resolve table: the name is empty")
        if is_full_location(table):
            return table
        base = self.base_path
        if base is None:
            where = (
                f"connection {self.delta_conn_id!r} does not exist"
                if self.connection is None
                else f"connection {self.delta_conn_id!r} has no base path (set host or extra 'base_path')"
            )
            raise AirflowException(
                f"Cannot resolve table {table!r}: a bare name needs a base path, but {where}. "
                "Name the table by its full path or URI, or define the connection."
            )
        if "://" in base:
            parsed = urlparse(base)
            return f"{parsed.scheme}://{parsed.netloc}{posixpath.join(parsed.path or '/', table)}"
        return posixpath.join(base, table)

    def latest_version(self, table: str) -> int:
        """The table's newest version: a few file probes, no replay.

        Raises:
            TableNotFoundError: no Delta table at the location.
        """
        location = self.resolve_table(table)
        return _latest_version(storage_for(location, self.storage_options), location=location)

    def history(self, table: str, limit: int | None = 10) -> list[dict[str, Any]]:
        """commitInfo of the newest ``limit`` versions, newest first (``version`` and ``timestamp`` in ms)."""
        location = self.resolve_table(table)
        storage = storage_for(location, self.storage_options)
        return _history.history(storage, _latest_version(storage, location=location), limit)

    def test_connection(self) -> tuple[bool, str]:
        """Check the connection (the UI's *Test* button): its extras parse and its base path exists.

        A local base path must be an existing folder; on an object store, the bucket (or container)
        must be reachable with the connection's storage options.
        """
        try:
            if self.connection is None:
                return False, f"Connection {self.delta_conn_id!r} does not exist"
            base = self.base_path
            self._dict_extra("storage_options")
            self._dict_extra("spark_conf")
        except AirflowException as err:
            return False, str(err)
        if base is None:
            return True, "Connection is valid; tables must be named by full path (no base path set)"
        problem = self._base_path_problem(base)
        if problem is not None:
            return False, problem
        return True, f"Connection is valid; bare table names resolve under {base!r}"

    def _base_path_problem(self, base: str) -> str | None:
        """Why ``base`` cannot hold tables (missing folder, unreachable bucket), or None."""
        try:
            storage = storage_for(base, self.storage_options)
            root = getattr(storage, "root", None)
            if isinstance(root, str) and "://" not in base:
                if os.path.isfile(root):
                    return f"Cannot use base path {base!r}: it is a file, not a folder"
                if not os.path.isdir(root):
                    return f"Cannot use base path {base!r}: the folder {root!r} does not exist"
                return None
            storage.list_dir("")  # a missing bucket or wrong credentials fail here
        except (DeltaError, OSError, ValueError) as err:
            return f"Cannot use base path {base!r}: {err}"
        return None

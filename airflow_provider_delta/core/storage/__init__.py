"""Where a table's files live: the ``Storage`` protocol and its implementations.

- ``LocalStorage``: a local (or mounted) file system; commits are a hard link of a complete file.
- ``ObjectStoreStorage``: ``s3://`` (and S3-compatible servers), ``gs://``, ``az://``/``abfss://``
  through obstore; commits are one conditional PUT.
- ``ArrowFileSystemStorage``: other ``pyarrow.fs`` schemes (HDFS, ...), read-only.

``storage_for(location, storage_options)`` picks one for a location. obstore is imported only when a
table on an object store is opened.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from airflow_provider_delta.core.storage.base import LOG_DIR, FileInfo, Storage, decode_relative, is_inside
from airflow_provider_delta.core.storage.local import LocalStorage, is_temporary_name
from airflow_provider_delta.core.storage.options import SCHEMES
from airflow_provider_delta.exceptions import InvalidStorageOptionsError, TableNotFoundError

if TYPE_CHECKING:
    from collections.abc import Mapping


def storage_for(location: str, storage_options: Mapping[str, Any] | None = None) -> Storage:
    """Storage for a table location: a path, a ``file://`` URI, or an object-store or pyarrow URI.

    Args:
        location: ``/data/t``, ``file:///data/t``, ``s3://bucket/t`` (``s3a://`` too), ``gs://...``,
            ``az://container/t``, ``abfss://container@account.dfs.core.windows.net/t``, ``hdfs://...``.
        storage_options: delta-rs style options for object stores (endpoint, region, credentials,
            ``allow_http``, timeouts, retries); see ``core.storage.options``.

    Raises:
        TableNotFoundError: the location is empty or its scheme has no file system here.
        InvalidStorageOptionsError: options that do not fit the location (unknown keys, bad values).
    """
    if not location:
        raise TableNotFoundError("Cannot open table: the location is empty", location=location)
    parsed = urlparse(location)
    scheme = parsed.scheme.lower()
    if scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        # Object-store options do not apply to a local path (a connection's options may be shared).
        path = unquote(parsed.path) if scheme == "file" else location
        return LocalStorage(path)
    if scheme in SCHEMES:
        from airflow_provider_delta.core.storage.object_store import ObjectStoreStorage  # lazy: obstore

        return ObjectStoreStorage(location, storage_options)
    return _arrow_storage(location, scheme, storage_options)


def _arrow_storage(location: str, scheme: str, storage_options: Mapping[str, Any] | None) -> Storage:
    import pyarrow.fs as pafs  # lazy: only for schemes without an object store

    from airflow_provider_delta.core.storage.arrow import ArrowFileSystemStorage  # lazy: rare schemes

    try:
        fs, root = pafs.FileSystem.from_uri(location)
    except (ValueError, OSError) as err:
        raise TableNotFoundError(
            f"Cannot open table {location!r}: no file system for scheme {scheme!r} ({err})",
            location=location,
        ) from err
    if storage_options:
        raise InvalidStorageOptionsError(
            f"Cannot open table {location!r}: storage options are not supported for {scheme}:// "
            "(pyarrow reads its configuration from the environment)"
        )
    return ArrowFileSystemStorage(fs, root, scheme=scheme)


__all__ = [
    "LOG_DIR",
    "FileInfo",
    "LocalStorage",
    "Storage",
    "decode_relative",
    "is_inside",
    "is_temporary_name",
    "storage_for",
]

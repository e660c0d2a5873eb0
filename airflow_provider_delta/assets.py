"""Delta tables as Airflow assets: the ``delta`` URI form, its normaliser, and the asset of a table.

URI form (one asset per table location):

- a table on the local file system: ``delta:///data/lake/events`` (three slashes: no host, an
  absolute path), like ``file:///``;
- a table on an object store or HDFS: the location with ``delta+`` before its scheme:
  ``delta+s3://bucket/lake/events``, ``delta+gs://bucket/t``, ``delta+abfss://container@account.dfs.core.windows.net/t``,
  ``delta+hdfs://namenode/t`` (``s3a``/``s3n`` are spelt ``s3``).

:func:`sanitize_uri` is registered for these schemes (``asset-uris`` in ``get_provider_info``), so
``Asset("delta:///data/lake/events/")`` and ``Asset("delta:///data/lake//events")`` are the same
asset as the URI the operators declare, and ``delta:///x`` stays ``delta:///x`` (without the
normaliser Airflow makes it ``delta:/x``). :func:`asset_uri` turns a table location into its URI.

Example:
    >>> asset_uri("/data/lake/events/"), asset_uri("s3a://bucket/lake/events")
    ('delta:///data/lake/events', 'delta+s3://bucket/lake/events')
"""

from __future__ import annotations

import posixpath
import urllib.parse
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset

if TYPE_CHECKING:
    from urllib.parse import SplitResult

#: The storage schemes a table location may have, as they appear after ``delta+``.
STORAGE_SCHEMES = ("s3", "gs", "gcs", "abfs", "abfss", "az", "adl", "hdfs", "viewfs")
_ALIASES = {"s3a": "s3", "s3n": "s3"}
SCHEMES = ("delta", *(f"delta+{s}" for s in (*STORAGE_SCHEMES, *_ALIASES)))

# urlunsplit writes "//" before an empty host only for schemes it knows to have one; without this,
# Airflow's normalisation turns delta:///data/t into delta:/data/t.
for _scheme in SCHEMES:
    if _scheme not in urllib.parse.uses_netloc:
        urllib.parse.uses_netloc.append(_scheme)


def _normal_path(path: str) -> str:
    """Decoded, normalised (no ``//``, ``.``, ``..``, trailing ``/``), then percent-encoded once."""
    normal = posixpath.normpath(urllib.parse.unquote(path)) if path else "/"
    normal = "/" + normal.lstrip("/") if normal != "." else "/"
    return urllib.parse.quote(normal, safe="/@:+,;=-._~!$&'()*")


def sanitize_uri(uri: SplitResult) -> SplitResult:
    """Normalise a ``delta`` / ``delta+<scheme>`` asset URI (Airflow calls it for every such asset).

    Raises:
        ValueError: ``delta://host/...`` (a local table has no host: ``delta:///path``), a relative
            or empty path, or an unknown storage scheme.
    """
    scheme = uri.scheme.lower()
    if scheme == "delta":
        if uri.netloc:
            raise ValueError(
                f"Delta asset URI {urllib.parse.urlunsplit(uri)!r} names a host; a local table is "
                "delta:///absolute/path (three slashes), a table on an object store delta+s3://bucket/path"
            )
        path = _normal_path(uri.path)
        if path == "/":
            raise ValueError("Delta asset URI 'delta:///' needs the table's absolute path")
        return uri._replace(path=path)
    storage = scheme.removeprefix("delta+")
    storage = _ALIASES.get(storage, storage)
    if storage not in STORAGE_SCHEMES:
        known = "delta, " + ", ".join(f"delta+{s}" for s in STORAGE_SCHEMES)
        raise ValueError(f"Delta asset URI scheme {scheme!r} is unknown (known: {known})")
    if not uri.netloc:
        raise ValueError(f"Delta asset URI {urllib.parse.urlunsplit(uri)!r} needs a bucket or host")
    return uri._replace(scheme=f"delta+{storage}", path=_normal_path(uri.path).rstrip("/") or "/")


def asset_uri(location: str) -> str:
    """The asset URI of the table at ``location`` (a path, ``file://`` URI or object-store URI).

    Raises:
        ValueError: a relative path, or a storage scheme with no ``delta+`` form.
    """
    parsed = urllib.parse.urlsplit(location)
    if parsed.scheme in ("", "file"):
        path = parsed.path if parsed.scheme == "file" else location
        if not path.startswith("/"):
            raise ValueError(f"Cannot name table {location!r} as an asset: the path is not absolute")
        split = urllib.parse.SplitResult("delta", "", path, "", "")
        return urllib.parse.urlunsplit(sanitize_uri(split))
    storage = _ALIASES.get(parsed.scheme.lower(), parsed.scheme.lower())
    split = sanitize_uri(parsed._replace(scheme=f"delta+{storage}", query="", fragment=""))
    return urllib.parse.urlunsplit(split)


def create_asset(*, path: str, extra: dict[str, Any] | None = None) -> Asset:
    """The asset of the table at ``path`` (the factory Airflow's lineage uses for ``delta`` URIs).

    Example:
        >>> create_asset(path="/data/lake/events").uri
        'delta:///data/lake/events'
    """
    return Asset(uri=asset_uri(path), extra=extra or {})

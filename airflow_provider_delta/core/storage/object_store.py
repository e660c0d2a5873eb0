"""Tables on object stores (S3 and S3-compatible servers, GCS, Azure) through ``obstore``.

``obstore`` is the Python binding of the Rust ``object_store`` crate, the one delta-rs uses, so both
engines send the same requests with the same option keys. What the engine needs maps onto single
requests:

- ``write_if_absent`` (every commit, table creation): one conditional PUT (``If-None-Match: *`` on
  S3 and Azure, a generation-0 precondition on GCS); the store answers 412 when the key exists, so
  exactly one of several racing writers wins a version.
- ``list_dir(..., start_after=...)``: one LIST from a key on (``StartAfter``), so finding the commits
  after a known version costs one request however long the history.
- ``open_input_file``: ranged GETs for Parquet (the footer, then column chunks); files up to
  ``WHOLE_FILE_READ`` bytes are fetched in one GET.
- ``write``/``write_stream``: one PUT (multipart above 5 MiB); an object appears whole or not at all.

obstore retries transient failures (5xx, throttling, connection errors) with exponential backoff
(``max_retries``, ``retry_timeout`` in ``storage_options``). What still fails is raised as a typed
``StorageError`` naming the table, the file and the cause. A conditional PUT whose answer was lost
(a retry then finds the key taken) is settled by reading the key back: the bytes are this commit's
own (they carry its unique ``txnId``) or another writer's, so a commit is never reported as landed
when it did not, nor as lost when it landed.
"""

from __future__ import annotations

import io
import posixpath
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import pyarrow as pa

from airflow_provider_delta.core.storage.base import FileInfo, decode_relative, is_inside, outside_table_error
from airflow_provider_delta.core.storage.options import parse_options, redacted
from airflow_provider_delta.exceptions import (
    BucketNotFoundError,
    CommitOutcomeUnknownError,
    InvalidStorageOptionsError,
    StorageAccessDeniedError,
    StorageError,
    StorageUnavailableError,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from datetime import datetime

    import pyarrow.fs as pafs

#: Files up to this size are read with one GET instead of a footer read plus ranged reads.
WHOLE_FILE_READ = 8 * 1024 * 1024
#: Concurrent GETs of ``read_many`` (log replay): requests to an object store wait on latency.
READ_CONCURRENCY = 16

_io_pool: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _io_pool
    if _io_pool is None:
        _io_pool = ThreadPoolExecutor(READ_CONCURRENCY, thread_name_prefix="delta-object-io")
    return _io_pool


def _millis(value: datetime | None) -> int:
    return int(value.timestamp() * 1000) if value is not None else 0


def _split(location: str) -> tuple[str, str, str]:
    """``(scheme, bucket, prefix)`` of an object-store URI (``abfss://container@account...`` too)."""
    parsed = urlparse(location)
    bucket = parsed.netloc
    if "@" in bucket:  # abfss://<container>@<account>.dfs.core.windows.net/<path>
        bucket = bucket.split("@", 1)[0]
    return parsed.scheme.lower(), bucket, unquote(parsed.path).strip("/")


class _RangeReader(io.RawIOBase):
    """A seekable file over ranged GETs: each ``read`` is one request for exactly the bytes asked.

    pyarrow's Parquet reader asks for the footer, then for (coalesced) column chunks, so a
    projection reads only the columns it needs.
    """

    def __init__(self, store: Any, key: str, size: int) -> None:
        super().__init__()
        self._store = store
        self._key = key
        self._size = size
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, size: int = -1) -> bytes:
        import obstore  # lazy: object stores only

        end = self._size if size is None or size < 0 else min(self._size, self._pos + size)
        if end <= self._pos:
            return b""
        data = bytes(obstore.get_range(self._store, self._key, start=self._pos, end=end))
        self._pos += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def size(self) -> int:
        return self._size


class ObjectStoreStorage:
    """A table at ``s3://``, ``gs://``, ``az://``/``abfss://`` (or ``memory://``) through obstore.

    Args:
        location: the table's URI, e.g. ``s3://bucket/path/to/table``.
        storage_options: delta-rs style options (see ``core.storage.options``); credentials not given
            here are taken from the environment (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``) by obstore.
        store: an obstore store to use instead of building one (tests wrap one to inject faults).

    Raises:
        InvalidStorageOptionsError: unknown option keys, bad values, or a location without a bucket.
    """

    lists_cheaply = True

    def __init__(self, location: str, storage_options: Mapping[str, Any] | None = None, *, store: Any = None) -> None:
        scheme, bucket, prefix = _split(location)
        if not bucket and scheme != "memory":
            raise InvalidStorageOptionsError(f"Cannot open table {location!r}: the URI names no bucket")
        self.root = location.rstrip("/")
        self.scheme = scheme
        self.bucket = bucket
        self.prefix = prefix
        self.options = parse_options(location, storage_options)
        self.store = store if store is not None else self._build_store()

    def _build_store(self) -> Any:
        from obstore.store import AzureStore, GCSStore, MemoryStore, S3Store  # lazy: object stores only

        opts = self.options
        kwargs: dict[str, Any] = {
            "config": opts.config or None,
            "client_options": opts.client or None,
            "retry_config": self._retry_config(),
        }
        try:
            if opts.provider == "s3":
                return S3Store(self.bucket, **kwargs)
            if opts.provider == "gcs":
                return GCSStore(self.bucket, **kwargs)
            if opts.provider == "azure":
                return AzureStore(self.bucket, **kwargs)
            return MemoryStore()
        except BaseException as err:  # obstore raises ValueError, its own errors, or a Rust panic
            if isinstance(err, (KeyboardInterrupt, SystemExit)):
                raise
            raise InvalidStorageOptionsError(
                f"Cannot open table {self.root!r} with storage options {redacted(opts.config)}: {err}"
            ) from None

    def _retry_config(self) -> dict[str, Any] | None:
        retry = dict(self.options.retry)
        return retry or None

    # ------------------------------------------------------------------ keys

    def _key(self, relative_path: str) -> str:
        relative_path = relative_path.strip("/")
        if not self.prefix:
            return relative_path
        return f"{self.prefix}/{relative_path}" if relative_path else self.prefix

    def resolve(self, path: str) -> str:
        """The object key of a log path (relative URI-encoded, or an absolute URI in this bucket)."""
        if "://" in path:
            scheme, bucket, key = _split(path)
            if bucket != self.bucket or scheme not in (self.scheme, "s3a", "s3n", "s3"):
                raise StorageError(
                    f"Cannot read {path!r} from table {self.root!r}: files outside the table's bucket "
                    f"{self.bucket!r} are not supported",
                    location=self.root,
                    path=path,
                )
        else:
            key = self._key(decode_relative(path))
        if not is_inside(self.prefix, key):
            raise outside_table_error(path, self.root)
        return posixpath.normpath(key) if ".." in key.split("/") else key

    # ------------------------------------------------------------------ errors

    def _error(self, err: BaseException, action: str, path: str | None) -> StorageError:
        """The typed error for an obstore failure (after obstore's own retries)."""
        from obstore import exceptions as oe  # lazy: object stores only

        text = str(err)
        short = text.split("\n", 1)[0][:300]
        where = f"{action} {path!r} of table {self.root!r}" if path else f"{action} table {self.root!r}"
        if isinstance(err, (oe.PermissionDeniedError, oe.UnauthenticatedError)) or " 403 " in text:
            return StorageAccessDeniedError(
                f"Cannot {where}: access denied by the store (check the credentials in storage_options or "
                f"the connection: key id, secret, session token, region). Cause: {short}",
                location=self.root,
                path=path,
            )
        if "NoSuchBucket" in text:
            return BucketNotFoundError(
                f"Cannot {where}: bucket {self.bucket!r} does not exist (check the location and endpoint)",
                location=self.root,
                path=path,
            )
        transient = isinstance(err, (oe.GenericError, OSError, TimeoutError)) and any(
            marker in text for marker in ("error sending request", "timed out", "retries", "503", "500", "429",
                                         "SlowDown", "connection", "Connection")
        )
        if transient:
            return StorageUnavailableError(
                f"Cannot {where}: the store did not answer or kept failing after retries with backoff "
                f"(endpoint {self.options.config.get('endpoint', 'default')!r}). Cause: {short}",
                location=self.root,
                path=path,
                transient=True,
            )
        return StorageError(f"Cannot {where}: {short}", location=self.root, path=path)

    def _call(self, action: str, path: str | None, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except FileNotFoundError as err:
            if "NoSuchBucket" in str(err):
                raise self._error(err, action, path) from None
            raise
        except StorageError:
            raise
        except Exception as err:
            raise self._error(err, action, path) from err

    # ------------------------------------------------------------------ Storage

    def list_dir(self, relative_dir: str, *, start_after: str | None = None) -> list[FileInfo]:
        """Files directly under ``relative_dir`` sorted by name; one LIST from ``start_after`` on."""
        import obstore  # lazy: object stores only

        if start_after is None:
            return sorted((e for e in self.list_entries(relative_dir) if not e.is_dir), key=lambda f: f.name)
        prefix = self._prefix(relative_dir)
        offset = prefix + start_after
        metas = self._call(
            "list", relative_dir or "/",
            lambda: [m for chunk in obstore.list(self.store, prefix, offset=offset) for m in chunk],
        )
        files = [f for f in self._files_in(prefix, metas) if f.name > start_after]
        return sorted(files, key=lambda f: f.name)

    def list_entries(self, relative_dir: str) -> list[FileInfo]:
        """Objects and "folders" (common prefixes) directly under ``relative_dir``: one delimited LIST."""
        import obstore  # lazy: object stores only

        prefix = self._prefix(relative_dir)
        result = self._call("list", relative_dir or "/", lambda: obstore.list_with_delimiter(self.store, prefix))
        folders = [FileInfo(p[len(prefix):].rstrip("/"), 0, 0, is_dir=True) for p in result["common_prefixes"]]
        return folders + self._files_in(prefix, result["objects"])

    def _prefix(self, relative_dir: str) -> str:
        """The key prefix of a folder: its key and a slash ("" for the table root's bucket root)."""
        key = self._key(relative_dir)
        return f"{key}/" if key else ""

    @staticmethod
    def _files_in(prefix: str, metas: Any) -> list[FileInfo]:
        """The listed objects directly under ``prefix`` (deeper keys left out)."""
        out = []
        for meta in metas:
            name = meta["path"][len(prefix):]
            if name and "/" not in name:
                out.append(FileInfo(name, int(meta["size"]), _millis(meta["last_modified"])))
        return out

    def delete_empty_dir(self, relative_dir: str) -> bool:
        """Object stores have no folders: one that holds no object is already gone (True)."""
        return bool(relative_dir.strip("/")) and not self.list_entries(relative_dir)

    def read_bytes(self, relative_path: str) -> bytes:
        """The whole object (one GET); FileNotFoundError when absent."""
        import obstore  # lazy: object stores only

        key = self._key(relative_path)
        return bytes(self._call("read", relative_path, lambda: obstore.get(self.store, key).bytes()))

    def read_many(self, relative_paths: Sequence[str]) -> list[bytes]:
        """Several whole objects, fetched concurrently, in order."""
        if len(relative_paths) <= 1:
            return [self.read_bytes(p) for p in relative_paths]
        return list(_pool().map(self.read_bytes, relative_paths))

    def _head(self, relative_path: str) -> Any:
        import obstore  # lazy: object stores only

        key = self._key(relative_path)
        return self._call("read", relative_path, lambda: obstore.head(self.store, key))

    def exists(self, relative_path: str) -> bool:
        """One HEAD."""
        try:
            self._head(relative_path)
        except FileNotFoundError:
            return False
        return True

    def modification_time(self, relative_path: str) -> int:
        """The object's Last-Modified in milliseconds (one HEAD)."""
        return _millis(self._head(relative_path)["last_modified"])

    def write_if_absent(self, relative_path: str, data: bytes) -> bool:
        """One conditional PUT: True when this call created the object, False when it existed.

        Raises:
            CommitOutcomeUnknownError: the PUT failed and reading the key back failed too, so whether
                the object was created is unknown.
            StorageError: the PUT failed and the key is absent: nothing was written.
        """
        import obstore  # lazy: object stores only
        from obstore.exceptions import AlreadyExistsError, PreconditionError  # lazy: object stores only

        key = self._key(relative_path)
        try:
            obstore.put(self.store, key, data, mode="create", use_multipart=False)
        except (AlreadyExistsError, PreconditionError):
            # Taken: by another writer, or by this very PUT whose first answer was lost and which
            # obstore retried. Only the bytes can tell.
            return self._landed(relative_path, data, None)
        except Exception as err:
            typed = self._error(err, "write", relative_path)
            if isinstance(typed, (StorageAccessDeniedError, BucketNotFoundError)):
                raise typed from err  # refused outright: nothing was written
            if self._landed(relative_path, data, err):
                return True
            raise typed from err
        return True

    def _landed(self, relative_path: str, data: bytes, failure: BaseException | None) -> bool:
        """Whether the object at ``relative_path`` holds exactly ``data`` (this writer's bytes).

        With ``failure`` (the PUT raised), an absent object means the write did not land (False).
        """
        try:
            stored = self.read_bytes(relative_path)
        except FileNotFoundError:
            return False  # after a 412: deleted since (not ours); after a failure: nothing landed
        except StorageError as err:
            raise CommitOutcomeUnknownError(
                f"Cannot tell whether {relative_path!r} of table {self.root!r} was written: the PUT failed "
                f"({str(failure or 'conflict').splitlines()[0][:200]}) and reading it back failed ({err}). "
                "The table is consistent either way; reload it to see whether the commit landed.",
                location=self.root,
            ) from err
        return stored == data

    def write(self, relative_path: str, data: bytes) -> None:
        """Create or replace the object (one PUT; multipart above 5 MiB, still atomic)."""
        import obstore  # lazy: object stores only

        key = self._key(relative_path)
        self._call("write", relative_path, lambda: obstore.put(self.store, key, data))

    def write_stream(self, relative_path: str, fill: Callable[[pa.NativeFile], object]) -> tuple[int, int]:
        """Serialise in memory, then one PUT: nothing is visible (or left over) if ``fill`` raises."""
        sink = pa.BufferOutputStream()
        fill(sink)
        buffer = sink.getvalue()
        self.write(relative_path, buffer.to_pybytes())
        return buffer.size, time.time_ns() // 1_000_000

    def delete(self, relative_path: str) -> None:
        """Delete the object; absent objects are ignored."""
        import obstore  # lazy: object stores only

        key = self._key(relative_path)
        try:
            self._call("delete", relative_path, lambda: obstore.delete(self.store, key))
        except FileNotFoundError:
            return

    def open_input_file(self, path: str, *, size: int | None = None) -> pa.NativeFile:
        """A random-access reader: one GET for files up to ``WHOLE_FILE_READ``, else ranged GETs."""
        import obstore  # lazy: object stores only

        key = self.resolve(path)
        if size is None:
            size = int(self._call("read", path, lambda: obstore.head(self.store, key))["size"])
        if size <= WHOLE_FILE_READ:
            data = self._call("read", path, lambda: obstore.get(self.store, key).bytes())
            return pa.BufferReader(pa.py_buffer(data))
        return pa.PythonFile(_RangeReader(self.store, key, size), mode="r")

    def arrow_filesystem(self) -> pafs.FileSystem:
        """pyarrow's own file system for this location (for callers that want pyarrow datasets)."""
        import pyarrow.fs as pafs  # lazy: only for callers that ask

        config = self.options.config
        if self.options.provider != "s3":
            fs: pafs.FileSystem = pafs.FileSystem.from_uri(f"{self.scheme}://{self.bucket}")[0]
        else:
            endpoint = urlparse(config["endpoint"]) if config.get("endpoint") else None
            fs = pafs.S3FileSystem(
                access_key=config.get("access_key_id"),
                secret_key=config.get("secret_access_key"),
                session_token=config.get("session_token"),
                region=config.get("region"),
                endpoint_override=endpoint.netloc if endpoint else None,
                scheme=endpoint.scheme if endpoint else "https",
            )
        return pafs.SubTreeFileSystem(self.bucket, fs)  # it opens resolve()d keys


__all__ = ["READ_CONCURRENCY", "WHOLE_FILE_READ", "ObjectStoreStorage"]

"""Name the table, version and file in every error raised while reading one file of a table.

Readers wrap the work on one file -- a commit, a checkpoint, a data or change file -- in
:func:`reading`. A ``DeltaError`` raised inside gets what it does not already name appended to its
message (``(table '/data/t', version 7, file '_delta_log/00000000000000000007.json')``) and its
``version``/``path`` fields filled; an exception a malformed file provokes in parsing code (a
``KeyError`` for a missing field, a ``TypeError`` for a wrong type, pyarrow's ``ArrowInvalid``,
...) becomes the typed error the caller names, chained to the original. So a hostile or corrupt
log never surfaces as a bare ``KeyError`` or ``ArrowInvalid``.

Example:
    >>> with reading("/data/t", 7, "_delta_log/00000000000000000007.json"):  # doctest: +SKIP
    ...     state.apply_actions(actions, version=7)
"""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING

from airflow_provider_delta.exceptions import DeltaError, LogCorruptedError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["MALFORMED_INPUT", "name_in_error", "reading"]

#: What parsing code raises on input of the wrong shape (pyarrow's errors subclass these too:
#: ArrowInvalid is a ValueError, ArrowTypeError a TypeError, ArrowKeyError a KeyError, ...).
MALFORMED_INPUT: tuple[type[Exception], ...] = (
    KeyError,
    IndexError,
    TypeError,
    ValueError,
    AttributeError,
    NotImplementedError,
    OverflowError,
    RecursionError,
)


def name_in_error(err: DeltaError, table: str, version: int | None, path: str | None) -> DeltaError:
    """Append to ``err``'s message the table, version and file it does not name yet; fill its fields."""
    message = str(err.args[0]) if err.args else ""
    missing = []
    if table and table not in message:
        missing.append(f"table {table!r}")
    if version is not None and not re.search(rf"\b(version|commit|checkpoint) {version}\b", message):
        missing.append(f"version {version}")
    if path and path not in message and path.rsplit("/", 1)[-1] not in message:
        missing.append(f"file {path!r}")
    if missing:
        err.args = (f"{message} ({', '.join(missing)})", *err.args[1:])
    if getattr(err, "version", False) is None and version is not None:
        err.version = version  # type: ignore[attr-defined]
    if getattr(err, "path", False) is None and path is not None:
        err.path = path  # type: ignore[attr-defined]
    return err


def _log_error(message: str, version: int | None, path: str | None) -> DeltaError:
    return LogCorruptedError(message, version=version, path=path)


@contextlib.contextmanager
def reading(
    table: str,
    version: int | None,
    path: str | None,
    *,
    what: str = "log file",
    error: Callable[[str, int | None, str | None], DeltaError] = _log_error,
) -> Iterator[None]:
    """Run the block as the reading of ``path`` (version ``version`` of ``table``); see the module doc.

    Args:
        table: the table's location, as the user gave it.
        version: the version the file belongs to (or is read for).
        path: the file, relative to the table root where it is inside it.
        what: how the message calls the file (``"commit"``, ``"checkpoint file"``, ``"data file"``).
        error: builds the typed error for a malformed file (default: ``LogCorruptedError``).
    """
    try:
        yield
    except DeltaError as err:
        name_in_error(err, table, version, path)
        raise
    except MALFORMED_INPUT as err:
        at = f" at version {version}" if version is not None else ""
        raise error(
            f"Cannot read {what} {path!r} of table {table!r}{at}: it is malformed ({type(err).__name__}: {err})",
            version,
            path,
        ) from err

"""Names of the files in ``_delta_log`` (PROTOCOL.md "Delta Log Entries", "Checkpoints")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

LOG_DIR = "_delta_log"
LAST_CHECKPOINT = f"{LOG_DIR}/_last_checkpoint"
SIDECAR_DIR = f"{LOG_DIR}/_sidecars"

LogFileKind = Literal["commit", "checkpoint", "multipart", "v2", "compacted", "crc"]

_PATTERNS: tuple[tuple[LogFileKind, re.Pattern[str]], ...] = (
    ("commit", re.compile(r"^(\d{20})\.json$")),
    ("checkpoint", re.compile(r"^(\d{20})\.checkpoint\.parquet$")),
    ("multipart", re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")),
    ("v2", re.compile(r"^(\d{20})\.checkpoint\.([0-9a-fA-F-]{36})\.(json|parquet)$")),
    ("compacted", re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")),
    ("crc", re.compile(r"^(\d{20})\.crc$")),
)


@dataclass(frozen=True, slots=True)
class LogFile:
    """A parsed ``_delta_log`` file name."""

    name: str
    kind: LogFileKind
    version: int
    part: int = 1
    num_parts: int = 1
    size: int = 0
    modification_time: int = 0

    @property
    def path(self) -> str:
        """The path relative to the table root."""
        return f"{LOG_DIR}/{self.name}"

    @property
    def is_checkpoint(self) -> bool:
        """Whether this file is (a part of) a checkpoint."""
        return self.kind in ("checkpoint", "multipart", "v2")


def parse_log_name(name: str, *, size: int = 0, modification_time: int = 0) -> LogFile | None:
    """Parse a log file name; ``None`` for files that are not log entries (temp files, dirs)."""
    if not name[:1].isdigit():
        return None
    for kind, pattern in _PATTERNS:
        m = pattern.match(name)
        if m is None:
            continue
        version = int(m.group(1))
        if kind == "multipart":
            return LogFile(name, kind, version, int(m.group(2)), int(m.group(3)), size, modification_time)
        return LogFile(name, kind, version, size=size, modification_time=modification_time)
    return None


def commit_path(version: int) -> str:
    """``_delta_log/<version:020>.json``."""
    return f"{LOG_DIR}/{version:020d}.json"


def checkpoint_path(version: int) -> str:
    """``_delta_log/<version:020>.checkpoint.parquet`` (classic single-file checkpoint)."""
    return f"{LOG_DIR}/{version:020d}.checkpoint.parquet"


def version_prefix(version: int) -> str:
    """The 20-digit prefix every log file of ``version`` starts with."""
    return f"{version:020d}"

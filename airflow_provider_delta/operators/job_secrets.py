"""Job specs may carry storage credentials: written readable by their owner only, logged redacted."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from airflow_provider_delta.core.storage.options import redacted

if TYPE_CHECKING:
    from pathlib import Path

    from airflow_provider_delta.jobs.spec import JobSpec


def write_private_file(path: Path, text: str) -> None:
    """Create ``path`` with mode 0600 (never readable by others, whatever the umask) and write ``text``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(path, 0o600)  # an existing file keeps its old mode through O_CREAT


def redacted_spec_json(spec: JobSpec) -> str:
    """The spec's JSON with every secret storage option masked, for the task log."""
    document = json.loads(spec.to_json())
    document["storage_options"] = redacted(document.get("storage_options"))
    return json.dumps(document, sort_keys=True)

"""Access to the shared Delta conformance corpus (``../shared/conformance`` beside the repository).

The corpus is located by ``$DELTA_CONFORMANCE`` or, by default, ``<repo>/../shared/conformance``.
Its README describes MANIFEST.json; ``compare.py`` in the corpus is the canonical row comparison.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parents[2]
MISSING_MESSAGE = (
    "Delta conformance corpus not found: set DELTA_CONFORMANCE to its folder "
    "or place it at ../shared/conformance beside the repository"
)


def find_corpus() -> Path | None:
    """The corpus folder (it holds MANIFEST.json), or None when it is absent."""
    configured = os.environ.get("DELTA_CONFORMANCE")
    root = Path(configured) if configured else REPO_ROOT.parent / "shared" / "conformance"
    return root if (root / "MANIFEST.json").is_file() else None


@cache
def manifest_entries(corpus: Path) -> tuple[dict[str, Any], ...]:
    """MANIFEST.json's ``tables``: one entry per table."""
    return tuple(json.loads((corpus / "MANIFEST.json").read_text())["tables"])


@cache
def load_compare(corpus: Path) -> ModuleType:
    """The corpus's ``compare.py`` (``assert_same_rows``, ``read_expected``), imported without sys.path."""
    spec = importlib.util.spec_from_file_location("delta_conformance_compare", corpus / "compare.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"Cannot import {corpus / 'compare.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_table(corpus: Path, name: str, dest_dir: Path) -> Path:
    """Copy the corpus table ``name`` (``golden/snapshot-data3``) into ``dest_dir``; return the copy.

    Tests that write, or that need a path of their own, work on a copy and never on the corpus.
    """
    source = corpus / "tables" / name
    if not (source / "_delta_log").is_dir():
        raise FileNotFoundError(f"No conformance table {name!r} under {corpus / 'tables'}")
    target = dest_dir / Path(name).name
    shutil.copytree(source, target)
    return target

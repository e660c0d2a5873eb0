"""The engine's layout: no import cycle in ``core/``, lazy imports only with a reason, a cheap ``import core``.

import-linter's layer contract (pyproject.toml) fixes the order of the layers; these checks cover what
a layer contract cannot see: cycles between modules of one layer, and imports hidden in functions.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp

REPO_ROOT = Path(__file__).resolve().parents[2]
CORE = REPO_ROOT / "airflow_provider_delta" / "core"


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_core_has_no_import_cycle() -> None:
    # Function-local imports count: a cycle held together by them is still a cycle.
    graph = grimp.build_graph("airflow_provider_delta", exclude_type_checking_imports=True)
    core = {m for m in graph.modules if m.startswith("airflow_provider_delta.core")}
    edges = {m: {d for d in graph.find_modules_directly_imported_by(m) if d in core} for m in core}
    assert _cycles(edges) == []


def _function_local_imports(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each import inside a function or class, outside ``if TYPE_CHECKING:``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    tree = ast.parse("\n".join(lines))
    typing_only = [
        (n.lineno, n.end_lineno or n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING"
    ]
    return [
        (n.lineno, lines[n.lineno - 1])
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        and n.col_offset > 0
        and not any(a <= n.lineno <= b for a, b in typing_only)
    ]


def test_every_function_local_import_in_core_says_why() -> None:
    unexplained = []
    for path in sorted(CORE.rglob("*.py")):
        source = path.read_text(encoding="utf-8").splitlines()
        for line, text in _function_local_imports(path):
            # The reason sits on the import's line or above its block of consecutive imports.
            above = line - 2
            while above >= 0 and source[above].lstrip().startswith(("from ", "import ")):
                above -= 1
            if "#" not in text and not (above >= 0 and source[above].lstrip().startswith("#")):
                unexplained.append(f"{path.relative_to(REPO_ROOT)}:{line}: {text.strip()}")
    assert unexplained == [], "function-local imports need a one-line reason (import time):\n" + "\n".join(
        unexplained
    )


def test_import_core_loads_neither_the_expression_engine_nor_the_commands() -> None:
    probe = (
        "import sys, airflow_provider_delta.core, airflow_provider_delta.core.log.sensing\n"
        "heavy = [m for m in sys.modules if m == 'sqlglot' or m.startswith(("
        "'airflow_provider_delta.core.expressions', 'airflow_provider_delta.core.commands.merge',"
        "'airflow_provider_delta.core.commands.write', 'airflow_provider_delta.core.executor'))]\n"
        "print(','.join(sorted(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    assert out.stdout.strip() == ""


def test_commands_reach_the_data_only_through_an_executor() -> None:
    # The seam: commands plan and commit; reading and writing rows is the executor's (local or Spark).
    direct = []
    for path in sorted((CORE / "commands").rglob("*.py")):
        imported = {
            node.module
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom) and node.module
        }
        for module in sorted(imported):
            if module in (
                "airflow_provider_delta.core.write.files",
                "airflow_provider_delta.core.write.parquet",
            ):
                direct.append(f"{path.relative_to(REPO_ROOT)}: {module}")
    assert direct == []

"""Import layering: ``core/`` never imports pyspark or airflow; ``spark/`` never imports airflow or
``jobs/``; ``jobs/`` never imports airflow and reaches pyspark and ``spark/`` only inside functions; the
executor seam (``core/executor/``) never imports the commands above it, annotations included.

Three independent checks: import-linter's contracts (pyproject.toml), a plain AST scan of the
sources (catches an import even where import-linter is misconfigured), and a fresh interpreter
that loads the engine and reads a table without pulling pyspark or airflow into ``sys.modules``.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE = REPO_ROOT / "airflow_provider_delta"
AIRFLOW_LAYER = ("hooks", "operators", "sensors", "triggers", "policies", "assets", "get_provider_info")
ENGINE_FORBIDDEN = (
    "pyspark",
    "airflow",
    *(f"airflow_provider_delta.{m}" for m in ("spark", "cli", *AIRFLOW_LAYER)),
)
SPARK_FORBIDDEN = ("airflow", *(f"airflow_provider_delta.{m}" for m in ("jobs", "cli", *AIRFLOW_LAYER)))
JOBS_FORBIDDEN = ("airflow", *(f"airflow_provider_delta.{m}" for m in ("cli", *AIRFLOW_LAYER)))
#: What a job module may not import at module level: the Airflow layer imports the jobs when a DAG is parsed.
JOBS_LAZY = ("pyspark", "airflow_provider_delta.spark")
# The executor layer sits below commands and the facade, beside (independent of) transactions.
EXECUTOR_FORBIDDEN = tuple(f"airflow_provider_delta.core.{m}" for m in ("commands", "table", "transaction"))


def imported_modules(source: str, module: str) -> set[str]:
    """Absolute names of every module ``source`` (the module ``module``) imports, at any depth.

    Includes ``importlib.import_module("x")`` and ``__import__("x")`` with a literal name.
    """
    found: set[str] = set()
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


def module_level_imports(source: str) -> set[str]:
    """Modules imported at module level (not inside a function, not under ``if TYPE_CHECKING:``)."""
    found: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for inner in ast.walk(node) if not isinstance(node, ast.FunctionDef | ast.ClassDef) else ():
            if isinstance(inner, ast.Import):
                found.update(alias.name for alias in inner.names)
            elif isinstance(inner, ast.ImportFrom) and inner.module:
                found.add(inner.module)
    return found


def violations(folder: Path, forbidden: tuple[str, ...]) -> list[str]:
    """``file: module`` for each import under ``folder`` of a module in (or below) ``forbidden``."""
    out = []
    for path in sorted(folder.rglob("*.py")):
        module = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
        for name in sorted(imported_modules(path.read_text(encoding="utf-8"), module)):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                out.append(f"{path.relative_to(REPO_ROOT)}: imports {name}")
    return out


def test_the_scan_sees_every_import_form() -> None:
    source = textwrap.dedent(
        """
        import pyspark.sql
        from airflow.sdk import BaseOperator
        from ..spark import jobs
        def later():
            import importlib
            importlib.import_module("airflow.providers")
            __import__("pyspark")
        """
    )
    names = imported_modules(source, "airflow_provider_delta.core.table")
    assert {
        "pyspark.sql",
        "airflow.sdk",
        "airflow_provider_delta.spark",
        "airflow.providers",
        "pyspark",
    } <= names


def test_core_never_imports_pyspark_airflow_or_the_layers_above() -> None:
    found = violations(PACKAGE / "core", ENGINE_FORBIDDEN)
    assert found == [], "\n".join(found)


def test_the_executor_layer_never_imports_commands_even_for_annotations() -> None:
    # The work types an executor receives (MERGE's plan and job, the export's units) live in core/executor/.
    found = violations(PACKAGE / "core" / "executor", EXECUTOR_FORBIDDEN)
    assert found == [], "\n".join(found)


def test_exceptions_module_imports_only_the_standard_library() -> None:
    source = (PACKAGE / "exceptions.py").read_text(encoding="utf-8")
    names = imported_modules(source, "airflow_provider_delta.exceptions")
    assert {n for n in names if n.split(".")[0] not in sys.stdlib_module_names} == set()


def test_spark_layer_never_imports_airflow() -> None:
    spark = PACKAGE / "spark"
    if not spark.is_dir():
        pytest.skip("airflow_provider_delta/spark/ does not exist yet")
    found = violations(spark, SPARK_FORBIDDEN)
    assert found == [], "\n".join(found)


def test_the_job_framework_never_imports_airflow() -> None:
    found = violations(PACKAGE / "jobs", JOBS_FORBIDDEN)
    assert found == [], "\n".join(found)


def test_the_job_framework_imports_pyspark_and_spark_only_inside_functions() -> None:
    found = [
        f"{path.relative_to(REPO_ROOT)}: imports {name} at module level"
        for path in sorted((PACKAGE / "jobs").rglob("*.py"))
        for name in sorted(module_level_imports(path.read_text(encoding="utf-8")))
        if any(name == m or name.startswith(m + ".") for m in JOBS_LAZY)
    ]
    assert found == [], "\n".join(found)


def test_the_module_level_scan_skips_functions_and_type_checking() -> None:
    source = textwrap.dedent(
        """
        from typing import TYPE_CHECKING
        import pyarrow
        if TYPE_CHECKING:
            from airflow_provider_delta.spark.executor import SparkExecutor
        def run():
            from airflow_provider_delta.spark.read import read_delta
        """
    )
    assert module_level_imports(source) == {"typing", "pyarrow"}


def test_job_declarations_load_neither_pyspark_nor_airflow() -> None:
    code = textwrap.dedent(
        """
        import sys
        from airflow_provider_delta.jobs.registry import all_definitions, runner_script
        import airflow_provider_delta.jobs.runner
        all_definitions(); runner_script()
        print(sorted({m for m in sys.modules if m.split(".")[0] in ("pyspark", "airflow")
                      or m.startswith("airflow_provider_delta.spark.")}))
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout


def test_import_linter_contracts_are_kept() -> None:
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint_imports is None:
        pytest.skip("import-linter is not installed in this environment (run `make test`)")
    result = subprocess.run(
        [lint_imports, "--no-cache"], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_import_linter_catches_core_importing_airflow(tmp_path: Path) -> None:
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint_imports is None:
        pytest.skip("import-linter is not installed in this environment (run `make test`)")
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path)
    copy = shutil.copytree(PACKAGE, tmp_path / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "core" / "_bad.py").write_text("from __future__ import annotations\n\nimport airflow  # noqa\n")
    result = subprocess.run(
        [lint_imports, "--no-cache"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": str(Path(sys.executable).parent)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "airflow_provider_delta.core._bad -> airflow" in result.stdout


def test_import_linter_catches_the_executor_naming_a_command_type_in_an_annotation(tmp_path: Path) -> None:
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint_imports is None:
        pytest.skip("import-linter is not installed in this environment (run `make test`)")
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path)
    copy = shutil.copytree(PACKAGE, tmp_path / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "core" / "executor" / "_bad.py").write_text(
        "from __future__ import annotations\n\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        "    from airflow_provider_delta.core.commands.merge.plan import plan_merge  # noqa: F401\n"
    )
    result = subprocess.run(
        [lint_imports, "--no-cache"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": str(Path(sys.executable).parent)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "airflow_provider_delta.core.executor._bad ->" in result.stdout
    assert "airflow_provider_delta.core.commands.merge.plan" in result.stdout


def test_reading_a_table_loads_neither_pyspark_nor_airflow(conformance_dir: Path) -> None:
    table = conformance_dir / "tables" / "golden" / "dv-partitioned-with-checkpoint"
    code = textwrap.dedent(
        f"""
        import sys
        from airflow_provider_delta.core import DeltaTable
        t = DeltaTable({str(table)!r})
        t.to_arrow(filter="part = 0"); t.history(); t.files()
        print(sorted({{m.split(".")[0] for m in sys.modules}} & {{"pyspark", "airflow"}}))
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout

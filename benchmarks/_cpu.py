"""Where the CPU of a local Spark run goes: the JVM's threads by kind, and pyspark's Python workers.

On a 2-core machine a MERGE on ``local[2]`` is CPU-bound, so its wall time is about its CPU time over
two; this module tells which part of the process tree spent it. Linux only (``/proc``); elsewhere the
snapshots are empty and the report says so.

- **JVM threads**, from ``/proc/<java pid>/task/*/stat`` (user + system time), grouped by thread name
  with the digits removed: ``C CompilerThre`` are HotSpot's JIT compilers (C1 and C2), ``Executor task
  launch worker`` the Spark tasks, ``GC Thread``/``G Conc`` the garbage collector, ``Thread-`` mostly
  Janino compiling Spark's generated code.
- **Python workers**: every process whose command line runs ``pyspark.daemon`` or ``pyspark.worker``
  (with the CPU of its reaped children: the forked workers), i.e. the engine's code in Spark tasks.

Example:
    >>> before = cpu_snapshot(os.getpid())
    >>> cpu_delta(before, cpu_snapshot(os.getpid()))["python_workers"] >= 0
    True
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter

__all__ = ["cpu_delta", "cpu_snapshot", "summary"]

_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 10.0
_KINDS = (  # thread name prefix (digits removed, 15 characters at most) -> reported kind
    ("C CompilerThre", "jit"),
    ("Executor task", "tasks"),
    ("GC Thread", "gc"),
    ("G ", "gc"),  # G1's concurrent, refinement and service threads
)


def _stat_fields(path: str) -> tuple[str, list[str]] | None:
    try:
        with open(path) as handle:
            text = handle.read()
    except OSError:
        return None
    return text[text.index("(") + 1: text.rindex(")")], text[text.rindex(")") + 2:].split()


def _java_children(pid: int) -> list[int]:
    try:
        out = subprocess.run(["pgrep", "-P", str(pid), "java"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return []
    return [int(p) for p in out.split()]


def _python_workers() -> list[int]:
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ")
        except OSError:
            continue
        if b"pyspark.daemon" in command or b"pyspark.worker" in command or b"pyspark/daemon" in command:
            found.append(int(entry))
    return found


def cpu_snapshot(driver_pid: int) -> Counter[str]:
    """CPU ms so far of the JVM that ``driver_pid`` started (by kind) and of the Python workers."""
    snap: Counter[str] = Counter()
    for java in _java_children(driver_pid):
        for thread in os.listdir(f"/proc/{java}/task"):
            fields = _stat_fields(f"/proc/{java}/task/{thread}/stat")
            if fields is None:
                continue
            name = "".join(c for c in fields[0] if not c.isdigit()).strip()
            kind = next((k for prefix, k in _KINDS if name.startswith(prefix)), "other")
            snap[f"jvm_{kind}"] += (int(fields[1][11]) + int(fields[1][12])) * _TICK_MS
    for worker in _python_workers():
        fields = _stat_fields(f"/proc/{worker}/stat")
        if fields is not None:  # own time + reaped children's (forked workers that exited)
            snap["python_workers"] += sum(int(v) for v in fields[1][11:15]) * _TICK_MS
    return snap


def cpu_delta(before: Counter[str], after: Counter[str]) -> dict[str, float]:
    """CPU ms spent between two snapshots, per kind (a worker that exited in between is not counted)."""
    kinds = set(before) | set(after) | {"python_workers", "jvm_jit", "jvm_tasks", "jvm_gc", "jvm_other"}
    return {k: max(0.0, after.get(k, 0.0) - before.get(k, 0.0)) for k in sorted(kinds)}


def summary(delta: dict[str, float]) -> str:
    """``CPU 8.4 s: JIT 3.2, tasks 2.8, GC 0.5, other JVM 0.4, Python workers 1.5``."""
    total = sum(delta.values())
    if not total:
        return "CPU not measured (no /proc)"
    return (f"CPU {total / 1000:.1f} s: JIT {delta.get('jvm_jit', 0) / 1000:.1f}, Spark tasks "
            f"{delta.get('jvm_tasks', 0) / 1000:.1f}, GC {delta.get('jvm_gc', 0) / 1000:.1f}, other JVM "
            f"{delta.get('jvm_other', 0) / 1000:.1f}, Python workers {delta.get('python_workers', 0) / 1000:.1f}")

"""kill -9 at chosen storage steps of a writer: the table is always whole (see ``crash_harness``).

The default run kills at the named points the issue lists, for the operations that write them; the
slow run (``make test-all``) at ``SLOW_POINTS_PER_RUN`` seeded random steps of every scenario, for
two seeds (an even seed's commit also writes the automatic checkpoint, an odd one's does not).
"""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from typing import TYPE_CHECKING

import pytest

from tests.reliability.crash_harness import Expected, check_after_kill, prepare, run_child
from tests.reliability.crash_scenarios import SCENARIOS

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

pytestmark = pytest.mark.interop  # delta-rs is the second reader

SLOW_SEEDS = (0, 1)
SLOW_POINTS_PER_RUN = 20


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kill9")


_PREPARED: dict[tuple[str, int], tuple[Path, Expected]] = {}


def _prepared(work: Path, scenario: str, seed: int) -> tuple[Path, Expected]:
    key = (scenario, seed)
    if key not in _PREPARED:
        _PREPARED[key] = prepare(work, scenario, seed)
    return _PREPARED[key]


def _kill_and_check(work: Path, scenario: str, seed: int, step: int) -> str:
    base, expected = _prepared(work, scenario, seed)
    location = work / f"killed-{scenario}-{seed}-{step}"
    shutil.copytree(base, location)
    run = run_child(scenario, str(location), seed, step)
    assert run.outcome == "stopped", f"{scenario} finished before step {step}"
    check_after_kill(str(location), expected, run)
    shutil.rmtree(location)
    return run.label


# ------------------------------------------------------------------------------ the named points


def _first(kind: str, action: str) -> Callable[[tuple[str, ...]], int]:
    def pick(labels: tuple[str, ...]) -> int:
        return next(i for i, label in enumerate(labels) if label.startswith(f"{kind}:{action}:"))

    return pick


def _last(kind: str, action: str) -> Callable[[tuple[str, ...]], int]:
    def pick(labels: tuple[str, ...]) -> int:
        return max(i for i, label in enumerate(labels) if label.startswith(f"{kind}:{action}:"))

    return pick


def _after(pick: Callable[[tuple[str, ...]], int]) -> Callable[[tuple[str, ...]], int]:
    return lambda labels: pick(labels) + 1


NAMED_POINTS = {
    "while a data file is written": _last("data", "write-half"),
    "after the data files, before the commit": _first("commit", "create"),
    "during the commit's temp-file write": _first("commit", "write-half"),
    "with the commit written, before it is linked into place": _first("commit", "link"),
    "just after the commit landed": _after(_first("commit", "link")),
    "during the checkpoint write": _first("checkpoint", "write-half"),
    "between the checkpoint and _last_checkpoint": _first("last_checkpoint", "create"),
    "during the _last_checkpoint write": _first("last_checkpoint", "write-half"),
    "while a change-data file is written": _first("change_data", "write-half"),
    "while the log cleanup deletes": _last("commit", "delete"),
    "while VACUUM deletes files": _first("data", "delete"),
}
DEFAULT_CASES = [
    ("append", "while a data file is written"),
    ("append", "after the data files, before the commit"),
    ("append", "during the commit's temp-file write"),
    ("append", "with the commit written, before it is linked into place"),
    ("append", "just after the commit landed"),
    ("append", "during the checkpoint write"),
    ("append", "between the checkpoint and _last_checkpoint"),
    ("append", "during the _last_checkpoint write"),
    ("delete", "while a change-data file is written"),
    ("update", "during the commit's temp-file write"),
    ("merge", "while a data file is written"),
    ("replace_where", "just after the commit landed"),
    ("add_column", "during the commit's temp-file write"),
    ("checkpoint", "during the checkpoint write"),
    ("cleanup_log", "while the log cleanup deletes"),
    ("vacuum", "while VACUUM deletes files"),
    ("optimize", "while a data file is written"),
    ("reorg", "just after the commit landed"),
]


@pytest.mark.parametrize(("scenario", "point"), DEFAULT_CASES, ids=[f"{s}: {p}" for s, p in DEFAULT_CASES])
def test_kill_9_at_a_named_step_leaves_a_whole_table(work: Path, scenario: str, point: str) -> None:
    _, expected = _prepared(work, scenario, 0)
    step = NAMED_POINTS[point](expected.steps)
    label = _kill_and_check(work, scenario, 0, step)
    # Data and change files are written in parallel, so which file's step comes n-th varies between
    # runs; log steps come one at a time, in the same order.
    file_kinds = ("data:", "change_data:")
    if expected.steps[step].startswith(file_kinds):
        assert label.startswith(file_kinds), label
    else:
        assert label.split(":")[:2] == expected.steps[step].split(":")[:2]


def test_the_named_steps_exist_in_every_operation_that_writes_them(work: Path) -> None:
    # Guards the sample above: an engine change that renames or drops a step must show up here.
    _, appended = _prepared(work, "append", 0)
    kinds = {label.split(":")[0] for label in appended.steps}
    assert {"data", "commit", "checkpoint", "last_checkpoint"} <= kinds
    _, deleted = _prepared(work, "delete", 0)
    assert any(label.startswith("change_data:") for label in deleted.steps)


# --------------------------------------------------------------------------- seeded random points


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_kill_9_at_random_steps_leaves_a_whole_table(work: Path, scenario: str, seed: int) -> None:
    _, expected = _prepared(work, scenario, seed)
    steps = range(len(expected.steps))
    rng = random.Random(f"{scenario}-{seed}")
    chosen = sorted(rng.sample(steps, min(SLOW_POINTS_PER_RUN, len(steps))))
    survived = [_kill_and_check(work, scenario, seed, step) for step in chosen]
    assert len(survived) == len(chosen)
    # Figures for README's reliability section: kill points survived, by scenario and by kind of step.
    with (work.parent / "kill9-figures.jsonl").open("a") as fh:
        kinds = Counter(label.split(":")[0] for label in survived)
        fh.write(
            json.dumps({"scenario": scenario, "seed": seed, "survived": len(survived), "kinds": kinds}) + "\n"
        )

"""The engine's pool: run_all_or_undo runs jobs in parallel and undoes the finished ones when one fails."""

from __future__ import annotations

import threading
import time

import pytest

from airflow_provider_delta.core.parallel import run_all_or_undo, run_parallel


def test_results_come_back_in_job_order_from_pool_threads() -> None:
    def job(i: int) -> tuple[int, str]:
        time.sleep(0.01 * (5 - i))  # later jobs finish first
        return i, threading.current_thread().name

    results = run_all_or_undo([lambda i=i: job(i) for i in range(5)], undo=lambda r: None)
    assert [i for i, _ in results] == list(range(5))
    assert all(name.startswith("delta-io") for _, name in results)


def test_a_failing_job_undoes_every_finished_job_and_raises_its_error() -> None:
    undone: list[int] = []
    release = threading.Event()

    def slow() -> int:
        release.wait(5)
        return 2

    def fail() -> int:
        release.set()
        raise ValueError("job 3 failed")

    jobs = [lambda: 0, lambda: 1, slow, fail, *[lambda i=i: i for i in range(4, 40)]]
    with pytest.raises(ValueError, match="job 3 failed"):
        run_all_or_undo(jobs, undo=undone.append)
    # Every job that finished was undone (the slow one too, after the failure); none is undone twice.
    assert {0, 1, 2} <= set(undone)
    assert len(undone) == len(set(undone))
    assert 3 not in undone


def test_inside_a_pool_job_the_jobs_run_inline_and_are_undone_the_same_way() -> None:
    undone: list[str] = []

    def outer(_: int) -> list[str]:
        def fail() -> str:
            raise RuntimeError("inner failed")

        with pytest.raises(RuntimeError, match="inner failed"):
            run_all_or_undo([lambda: threading.current_thread().name, fail], undo=undone.append)
        return undone

    run_parallel(outer, [1, 2])
    assert len(undone) == 2 and all(name.startswith("delta-io") for name in undone)


def test_an_undo_that_fails_does_not_hide_the_error() -> None:
    def undo(_: int) -> None:
        raise OSError("cannot delete")

    def fail() -> int:
        raise KeyError("the real error")

    with pytest.raises(KeyError, match="the real error"):
        run_all_or_undo([lambda: 1, fail], undo=undo)

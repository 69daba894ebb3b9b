"""The worker pool never leaves a submitted job waiting while a batch-mate runs.

A parallel read batch submits N jobs back to back while threads from an earlier batch are
still settling into idle; every job must start at once, however the submits interleave with
threads taking jobs.
"""

import threading
import time

from jucode.pool import WorkerPool


def _batch_runs_together(pool, n):
    barrier = threading.Barrier(n, timeout=5)
    futures = [pool.submit(barrier.wait, name="t") for _ in range(n)]
    for f in futures:
        f.result(timeout=10)  # BrokenBarrierError if any job waited for another to finish


def test_batches_always_run_concurrently_while_threads_go_idle():
    pool = WorkerPool(idle_seconds=30)
    for round_no in range(300):
        _batch_runs_together(pool, 2 + round_no % 4)
    assert pool.thread_count <= 64


def test_nested_jobs_from_a_busy_worker_get_their_own_threads():
    pool = WorkerPool()

    def outer():
        barrier = threading.Barrier(3, timeout=5)
        inner = [pool.submit(barrier.wait) for _ in range(3)]
        return [f.result(timeout=10) for f in inner]

    assert sorted(pool.submit(outer).result(timeout=10)) == [0, 1, 2]


def test_idle_threads_retire_and_the_pool_still_serves_afterwards():
    pool = WorkerPool(idle_seconds=0.05)
    _batch_runs_together(pool, 4)
    deadline = time.monotonic() + 5
    while pool.thread_count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.thread_count == 0
    _batch_runs_together(pool, 3)


def test_a_failing_job_reports_its_exception_and_the_thread_lives_on():
    pool = WorkerPool()

    def boom():
        raise ValueError("nope")

    f = pool.submit(boom)
    try:
        f.result(timeout=5)
    except ValueError as e:
        assert str(e) == "nope"
    else:
        raise AssertionError("exception lost")
    assert pool.submit(lambda: 7).result(timeout=5) == 7

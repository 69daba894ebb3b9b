"""The worker pool never leaves a submitted job waiting while a batch-mate runs.

A parallel read batch submits N jobs back to back while threads from an earlier batch are
still settling into idle; every job must start at once, however the submits interleave with
threads taking jobs.
"""

import queue
import threading

from harness import wait_until

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


class _SlowHandoff(queue.Queue):
    """Holds a worker between taking a job and running it: the window the old idle count
    mistook for an idle thread."""

    def __init__(self):
        super().__init__()
        self.taken = threading.Event()
        self.proceed = threading.Event()

    def get(self, *args, **kwargs):
        item = super().get(*args, **kwargs)
        self.taken.set()
        self.proceed.wait(5)
        return item


def test_a_job_submitted_while_the_idle_thread_takes_another_gets_its_own_thread():
    pool = WorkerPool()
    jobs = pool._jobs = _SlowHandoff()
    jobs.proceed.set()
    pool.submit(lambda: None).result(timeout=5)              # one thread, now idle in get()
    jobs.proceed.clear()
    jobs.taken.clear()
    assert wait_until(lambda: pool._free == 1, timeout=5, interval=0.005)
    barrier = threading.Barrier(2, timeout=3)
    first = pool.submit(barrier.wait)
    assert jobs.taken.wait(5)                                 # the idle thread holds the job...
    second = pool.submit(barrier.wait)                        # ...and this one must not wait for it
    jobs.proceed.set()
    assert sorted([first.result(timeout=5), second.result(timeout=5)]) == [0, 1]


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
    assert wait_until(lambda: pool.thread_count == 0, timeout=5, interval=0.01)
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

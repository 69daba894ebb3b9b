"""The engine's worker pool: a job queue served by threads that grow on demand.

Turns, parallel read-only tool batches and subagents all run here. A turn blocks its thread
while it waits for nested jobs (a read batch, a child agent), so the pool must never run out
of threads: when every thread is busy a new one starts (up to ``max_threads``), and idle
threads exit after a while so an idle engine holds none.
"""

from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import Future

log = logging.getLogger("jucode.pool")


class WorkerPool:
    """``_free`` counts idle threads not yet promised to a queued job.

    Counting reservations under one lock (rather than comparing the queue's size with an idle
    count) closes the window where a thread has taken a job but still looks idle: every
    submitted job either reserves an idle thread or starts its own, so a batch of N jobs
    always runs on N threads at once.
    """

    def __init__(self, max_threads: int = 64, idle_seconds: float = 30.0):
        self._jobs: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._threads = 0
        self._free = 0
        self._max = max_threads
        self._idle_seconds = idle_seconds
        self._closed = False

    def submit(self, fn, *args, name: str = "job") -> Future:
        fut: Future = Future()
        job = (fut, fn, args, name)
        with self._lock:
            if self._closed:
                raise RuntimeError("worker pool is closed")
            if self._free > 0 or self._threads >= self._max:
                self._free -= 1  # below zero means a backlog waiting for the next free thread
                self._jobs.put(job)
                return fut
            self._threads += 1
            number = self._threads
        threading.Thread(target=self._work, args=(job,), name=f"jucode-worker-{number}", daemon=True).start()
        return fut

    def _work(self, job) -> None:
        while True:
            self._run(job)
            with self._lock:
                self._free += 1
            while True:
                try:
                    job = self._jobs.get(timeout=self._idle_seconds)
                    break
                except queue.Empty:
                    with self._lock:
                        if self._free > 0:  # nobody is waiting on this thread: retire it
                            self._free -= 1
                            self._threads -= 1
                            return

    @staticmethod
    def _run(job) -> None:
        fut, fn, args, name = job
        if not fut.set_running_or_notify_cancel():
            return
        try:
            fut.set_result(fn(*args))
        except BaseException as e:  # a job never takes the pool down
            log.exception("worker job %s failed", name)
            fut.set_exception(e)

    @property
    def thread_count(self) -> int:
        return self._threads

    def close(self) -> None:
        with self._lock:
            self._closed = True

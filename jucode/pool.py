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
    def __init__(self, max_threads: int = 64, idle_seconds: float = 30.0):
        self._jobs: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._max = max_threads
        self._idle_seconds = idle_seconds
        self._closed = False

    def submit(self, fn, *args, name: str = "job") -> Future:
        fut: Future = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("worker pool is closed")
            self._jobs.put((fut, fn, args, name))
            if self._jobs.qsize() > self._idle and self._threads < self._max:
                self._threads += 1
                t = threading.Thread(target=self._work, name=f"jucode-worker-{self._threads}", daemon=True)
                t.start()
        return fut

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            try:
                job = self._jobs.get(timeout=self._idle_seconds)
            except queue.Empty:
                job = None
            with self._lock:
                self._idle -= 1
                if job is None:
                    self._threads -= 1
                    return
            fut, fn, args, name = job
            if not fut.set_running_or_notify_cancel():
                continue
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

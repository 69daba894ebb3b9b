"""Read a blocking HTTP stream on a helper thread so an interrupt never waits on a socket.

Why: a thread blocked in ``recv`` cannot be woken reliably by closing its socket from another
thread (behaviour differs across httpx/urllib3 versions and platforms). Instead the reader
thread feeds a queue and the caller waits on the queue while watching ``cancel``; on interrupt
the caller returns at once and the stream is closed in the background, which also unblocks
and ends the reader thread.
"""

from __future__ import annotations

import queue
import threading
from typing import Callable, Iterable, Iterator, Optional

from jucode.llm.base import Interrupted

_POLL = 0.05      # how often a waiting caller re-checks ``cancel`` (interrupt latency bound)
_ITEM, _ERROR, _END = 0, 1, 2


class StreamHandle:
    """Holds whatever must be closed to abort the in-flight request (set by the reader thread)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._closers: list = []
        self.closed = False

    def add(self, closer: Callable[[], None]) -> None:
        with self._lock:
            if not self.closed:
                self._closers.append(closer)
                return
        _safe(closer)

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            closers, self._closers = self._closers, []
        for c in reversed(closers):
            _safe(c)


def _safe(fn) -> None:
    try:
        fn()
    except Exception:
        pass


def pumped(open_stream: Callable[[StreamHandle], Iterable], cancel: Optional[threading.Event],
           handle: Optional[StreamHandle] = None) -> Iterator:
    """Yield what ``open_stream(handle)`` yields, running it on a daemon thread.

    ``open_stream`` performs the request (so connecting is interruptible too), registers closers
    on the handle, and returns an iterable. Exceptions it raises are re-raised here. When
    ``cancel`` is set the handle is closed in the background and :class:`Interrupted` is raised.
    """
    handle = handle or StreamHandle()
    q: "queue.Queue" = queue.Queue()

    def reader() -> None:
        try:
            for x in open_stream(handle):
                if handle.closed:
                    break
                q.put((_ITEM, x))
            q.put((_END, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            q.put((_ERROR, exc))

    t = threading.Thread(target=reader, name="jucode-llm-stream", daemon=True)
    t.start()
    finished = False
    try:
        while True:
            if cancel is not None and cancel.is_set():
                raise Interrupted()
            try:
                kind, val = q.get(timeout=_POLL)
            except queue.Empty:
                continue
            if kind == _ITEM:
                yield val
            elif kind == _ERROR:
                finished = True
                raise val
            else:
                finished = True
                return
    finally:
        if not finished:
            # Interrupted, or the consumer stopped early: abort without blocking this thread.
            threading.Thread(target=handle.close, name="jucode-llm-abort", daemon=True).start()
        else:
            handle.close()

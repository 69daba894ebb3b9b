"""glibc heap controls that keep the engine's resident memory inside its budget.

Why a module of its own: both calls talk to the C allocator through ctypes, and both are
optional (they quietly do nothing off glibc, e.g. on macOS or musl).

- :func:`single_arena` runs once, before any thread starts. glibc otherwise gives each new
  thread that allocates its own malloc arena; the tokenizer build, the SDK import and each turn
  run on different worker threads, and the freed space stranded in their separate arenas cost
  ~4.5 MB of RSS over 50 turns (bench_llm peak RSS 108.8 → 104.3 MB). Python threads hold the
  GIL for nearly all allocation, so one arena costs no measurable contention.
- :func:`trim_heap` hands free pages back to the OS after the big one-off loads.
"""

from __future__ import annotations

import os
import sys

M_ARENA_MAX = -8      # mallopt parameter number, from glibc's malloc.h


def _libc():
    import ctypes

    # dlopen(NULL): the process's own symbols, libc included; avoids find_library's ldconfig run.
    return ctypes.CDLL(None)


def single_arena() -> bool:
    """Limit glibc to one malloc arena, unless MALLOC_ARENA_MAX already says otherwise."""
    if not sys.platform.startswith("linux") or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        fn = getattr(_libc(), "mallopt", None)
        return bool(fn is not None and fn(M_ARENA_MAX, 1) == 1)
    except Exception:
        return False


def trim_heap() -> bool:
    """Ask glibc to return free heap pages to the OS; False where unavailable (musl, macOS)."""
    import gc

    gc.collect()
    try:
        import ctypes

        fn = getattr(_libc(), "malloc_trim", None)
        if fn is None:
            return False
        fn.argtypes = [ctypes.c_size_t]
        fn(0)
        return True
    except Exception:
        return False

"""Memory a finished computation held goes back to the system: glibc keeps what threads freed in its arenas
(web/budget.py trims after every computation), and large blocks are mapped on their own (large_blocks_mapped)."""

from __future__ import annotations

import ctypes
import gc


def few_arenas(n: int = 2) -> None:
    """glibc gives each new thread's allocations an arena of their own (up to 8 per core), and what a finished
    computation freed in one is seldom given back: after a burst of concurrent hostile requests the server kept
    far more than before, and far less with two arenas (bench_hardening --gets measures it). Set once, at
    import, before the lab's threads start; nothing to do off glibc."""
    try:
        ctypes.CDLL("libc.so.6").mallopt(-8, n)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


few_arenas()


MMAP_FROM = 1 << 20  # bytes: a block this large (a tensor of 256k floats or more) is mapped on its own


def large_blocks_mapped(threshold: int = MMAP_FROM) -> None:
    """glibc maps a large block on its own and unmaps it when freed, but after the first such free it raises that
    threshold (up to 32 MiB), and later blocks below it come from the heap, which keeps them once freed: a lesson
    that draws its samples in 16 MiB chunks left the server 430 MiB larger for a 50 MiB computation
    (tests/cost_peaks.py). A fixed threshold turns that adjustment off, so the memory a computation holds is
    the memory the server holds. Set once, at import; nothing to do off glibc."""
    try:
        ctypes.CDLL("libc.so.6").mallopt(-3, threshold)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


large_blocks_mapped()


def trim(collect: bool = True) -> None:
    """Give freed memory back to the system: glibc keeps what a computation freed in its arenas. `collect`
    first frees what only a cycle held (a collection takes a while: after heavy work only)."""
    if collect:
        gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass

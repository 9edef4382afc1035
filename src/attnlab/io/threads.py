"""How many CPU threads torch uses for the lab's small tensors.

The lab's tensors are small: a second thread cannot share the work, and on a busy machine two threads that
spin-wait for each other can make a step many times slower, and a timing would show the scheduler instead of
the arithmetic. So lessons, and training
or generation of tiny models, run on one thread.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager, nullcontext

_mine = threading.local()  # per thread: how deep in one_thread() it is, and its count before


SMALL_MODEL = 250_000  # parameters; below this a CPU step is too small to share between threads


@contextmanager
def one_thread():
    """Run torch on one CPU thread inside the block. torch keeps the count per calling thread (OpenMP's and
    MKL's settings are thread-local), so each thread sets its own: a lesson computing beside another (the web
    app serves requests on threads) still runs on one thread, and gets the same numbers as it would alone."""
    import torch

    depth = getattr(_mine, "depth", 0)
    if depth == 0:
        _mine.before = torch.get_num_threads()
        torch.set_num_threads(1)
    _mine.depth = depth + 1
    try:
        yield
    finally:
        _mine.depth = depth
        if depth == 0:
            torch.set_num_threads(_mine.before)


def threads_for(model):
    """one_thread() for a tiny model on the CPU; torch's own setting for anything larger or on a GPU."""
    device = next(model.parameters()).device
    tiny = device.type == "cpu" and sum(p.numel() for p in model.parameters()) < SMALL_MODEL
    return one_thread() if tiny else nullcontext()

"""How many CPU threads torch uses for the lab's small tensors.

The lab's tensors are small: a second thread cannot share the work, and on a busy machine two threads that
spin-wait for each other can make a step ten times slower (a tiny training run went from half a second to
over a minute), and a timing would show the scheduler instead of the arithmetic. So lessons, and training
or generation of tiny models, run on one thread.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager, nullcontext

_lock = threading.Lock()
_users = 0
_before = 1

SMALL_MODEL = 250_000  # parameters; below this a CPU step is too small to share between threads


@contextmanager
def one_thread():
    """Run torch on one CPU thread inside the block. The setting is process-wide, so nested and concurrent
    uses (the web app serves requests and trains on threads) share one count; the last to leave restores."""
    import torch

    global _users, _before
    with _lock:
        if _users == 0:
            _before = torch.get_num_threads()
            torch.set_num_threads(1)
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                torch.set_num_threads(_before)


def threads_for(model):
    """one_thread() for a tiny model on the CPU; torch's own setting for anything larger or on a GPU."""
    device = next(model.parameters()).device
    tiny = device.type == "cpu" and sum(p.numel() for p in model.parameters()) < SMALL_MODEL
    return one_thread() if tiny else nullcontext()

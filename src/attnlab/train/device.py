"""Where tensors live: auto picks CUDA, then Apple's MPS, then the CPU."""

from __future__ import annotations

from contextlib import contextmanager

import torch

DEVICES = ("auto", "cpu", "cuda", "mps")


def pick_device(name: str = "auto") -> torch.device:
    """torch.device for 'auto' | 'cpu' | 'cuda' | 'mps'; asking for one this machine lacks is an error."""
    cuda = torch.cuda.is_available()
    mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    if name == "auto":
        return torch.device("cuda" if cuda else "mps" if mps else "cpu")
    if name not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {name!r}")
    if name == "cuda" and not cuda:
        raise ValueError("device 'cuda' was asked for, but this PyTorch sees no CUDA GPU (try --device auto or cpu)")
    if name == "mps" and not mps:
        raise ValueError("device 'mps' was asked for, but Apple's MPS backend is not available here")
    return torch.device(name)


SMALL_MODEL = 250_000  # parameters; below this a CPU step is too small to share between threads


@contextmanager
def threads_for(model: torch.nn.Module):
    """Run a tiny model on one CPU thread, then restore torch's setting.

    Its matrices are too small to split: a second thread only adds waiting, and on a busy machine two
    threads that spin-wait for each other can make a step ten times slower.
    """
    device = next(model.parameters()).device
    tiny = device.type == "cpu" and sum(p.numel() for p in model.parameters()) < SMALL_MODEL
    before = torch.get_num_threads()
    if tiny and before > 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if tiny and before > 1:
            torch.set_num_threads(before)

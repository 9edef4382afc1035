"""Where tensors live: auto picks CUDA, then Apple's MPS, then the CPU."""

from __future__ import annotations

import torch

DEVICES = ("auto", "cpu", "cuda", "mps")


def pick_device(name: str | torch.device = "auto") -> torch.device:
    """torch.device for 'auto' | 'cpu' | 'cuda' | 'mps'; asking for one this machine lacks is an error.
    A torch.device passes through (torchrun's processes are each given theirs, e.g. cuda:1)."""
    if isinstance(name, torch.device):
        return name
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

"""Several processes, one model: PyTorch DDP, launched by `torchrun` (nothing home-made).

torchrun starts one process per GPU (or several on a CPU) and tells each its place in the environment:
WORLD_SIZE processes in all, this one is RANK, LOCAL_RANK on this machine. Every process holds the whole
model and trains on its own share of each batch; DistributedDataParallel averages the gradients across
processes during backward, so every copy takes the same AdamW step and the copies stay equal. Rank 0 alone
prints and writes checkpoints. Outside torchrun (or with one process) every helper here does nothing, and
training is exactly the single-process loop.
"""

from __future__ import annotations

import hashlib
import os
from datetime import timedelta

import torch
import torch.distributed as dist


def launched() -> bool:
    """True when torchrun started this process as one of several."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and "RANK" in os.environ and "LOCAL_RANK" in os.environ


def setup(device: str = "auto") -> torch.device:
    """Join the process group torchrun describes; this rank's device: cuda:LOCAL_RANK (NCCL) or the CPU (gloo)."""
    local_rank = int(os.environ["LOCAL_RANK"])
    if device == "mps":
        raise ValueError("several processes (torchrun) cannot share Apple's MPS device; use --device cpu")
    use_cuda = device == "cuda" or (device == "auto" and torch.cuda.is_available())
    if use_cuda:
        if not torch.cuda.is_available():
            raise ValueError("device 'cuda' was asked for, but this PyTorch sees no CUDA GPU (try --device cpu)")
        if local_rank >= torch.cuda.device_count():
            raise ValueError(
                f"process {local_rank} on this machine has no GPU of its own: "
                f"{torch.cuda.device_count()} GPUs, so at most --nproc_per_node "
                f"{torch.cuda.device_count()}"
            )
        here = torch.device("cuda", local_rank)
        torch.cuda.set_device(here)  # NCCL works on the current device
    else:
        here = torch.device("cpu")
    if not dist.is_initialized():
        # MASTER_ADDR/PORT come from torchrun; a generous timeout, as a busy machine may start the ranks far apart
        dist.init_process_group(backend="nccl" if use_cuda else "gloo", timeout=timedelta(minutes=30))
    return here


def teardown() -> None:
    if active():
        dist.destroy_process_group()


def active() -> bool:
    """True inside a process group of more than one process."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    return dist.get_rank() if active() else 0


def world_size() -> int:
    return dist.get_world_size() if active() else 1


def is_main() -> bool:
    """Rank 0 prints progress and writes checkpoints; the others train silently."""
    return rank() == 0


def wrap(model: torch.nn.Module) -> torch.nn.Module:
    """DistributedDataParallel(model) in a process group (it syncs the gradients); the model itself otherwise."""
    if not active():
        return model
    from torch.nn.parallel import DistributedDataParallel

    device = next(model.parameters()).device
    ids = [device.index] if device.type == "cuda" else None  # CPU modules take no device_ids
    return DistributedDataParallel(model, device_ids=ids)


def _comm_device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")


def all_sum(values: list[float]) -> list[float]:
    """Each value summed over every process (every process gets the sums); unchanged with one process."""
    if not active():
        return list(values)
    t = torch.tensor(values, dtype=torch.float64, device=_comm_device())
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t.tolist()


def all_mean(value: float) -> float:
    """The mean of `value` over every process, e.g. the training loss of one global batch."""
    if not active():
        return value
    return all_sum([value])[0] / world_size()


def any_rank(flag: bool) -> bool:
    """True on every process if it is True on any: one rank's Ctrl+C stops all of them after the same step,
    so none waits forever for a gradient the others will never send."""
    if not active():
        return flag
    return all_sum([float(flag)])[0] > 0


def barrier() -> None:
    if active():
        dist.barrier()


def rank_seed(seed: int, rank: int, step: int = 0) -> int:
    """A seed of its own for each (run seed, rank, step): different dropout masks on each rank, reproducibly."""
    digest = hashlib.sha256(f"attnlab/{seed}/{rank}/{step}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1  # < 2**63, as torch.manual_seed accepts

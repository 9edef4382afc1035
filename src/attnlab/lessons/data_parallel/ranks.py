"""One rank of the experiment, as torchrun starts it (gloo on the CPU):

    python -m torch.distributed.run --standalone --nproc_per_node 2 \\
        -m attnlab.lessons.data_parallel.ranks OUT B STEPS SEED OPTIMIZER

Each rank builds the same model from the same seed and trains it on its own b windows of every global batch of 2b:
  1. inside DistributedDataParallel, which all-reduces (averages) the gradients during backward;
  2. alone, with no all-reduce (the control);
  3. inside DDP again for one step with the token table frozen: a parameter without a gradient is not reduced,
     so DDP then sends fewer than N · 4 bytes (the null of the bytes claim).
A communication hook that does exactly DDP's own averaging (torch's allreduce_hook) counts the bytes of every
bucket it reduces. Each rank writes its weights and first gradients (rank<r>.safetensors) and what it measured
(rank<r>.json); rank 0 writes done.json once both have.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel

from attnlab.io.atomic import atomic_file
from attnlab.lessons.data_parallel import experiment
from attnlab.train import distributed

FROZEN = "embed.tok.weight"  # the token table, frozen in run 3 (as fine-tuning often freezes it)


def counting_allreduce(buckets: list[list[int]], bucket):
    """DDP's own step (divide by the world size, all-reduce SUM: the mean), counting each bucket's bytes."""
    grads = bucket.buffer()  # (n,) this bucket's gradients, flattened, in the parameters' dtype
    buckets[-1].append(grads.numel() * grads.element_size())
    return allreduce_hook(None, bucket)  # None: the default process group, all ranks


def ddp_run(b: int, steps: int, seed: int, kind: str, *, frozen: tuple[str, ...] = (), on_step=None):
    """The model trained inside DDP: (model, losses, first gradient, bytes of each bucket at each step)."""
    model = experiment.build(seed)
    for name, p in model.named_parameters():
        p.requires_grad_(name not in frozen)
    ddp = DistributedDataParallel(model)  # copies rank 0's weights to every rank (they are equal already)
    buckets: list[list[int]] = [[]]
    ddp.register_comm_hook(buckets, counting_allreduce)

    def step_done(step: int) -> None:
        if step < steps:
            buckets.append([])  # the next step's buckets
        if on_step is not None:
            on_step(step)

    losses, grad = experiment.train(
        ddp, model, b, steps, seed, kind, rank=distributed.rank(), world=distributed.world_size(), on_step=step_done
    )
    return model, losses, grad, buckets


def run_rank(out: Path, b: int, steps: int, seed: int, kind: str) -> None:
    """This rank's three runs, written to `out`."""
    torch.set_num_threads(1)  # tiny tensors; one thread per rank on a busy machine
    distributed.setup("cpu")
    rank, world = distributed.rank(), distributed.world_size()
    try:

        def progress(step: int) -> None:
            if rank == 0:  # how far the run has got, for the page that waits for it
                (out / "step").write_text(str(step))

        model, ddp_losses, ddp_grad, buckets = ddp_run(b, steps, seed, kind, on_step=progress)
        alone = experiment.build(seed)  # the control: the same start, the same windows, no all-reduce
        alone_losses, alone_grad = experiment.train(alone, alone, b, steps, seed, kind, rank=rank, world=world)
        frozen, _, _, frozen_buckets = ddp_run(b, 1, seed, kind, frozen=(FROZEN,))

        tensors = {
            **{f"ddp.{k}": v for k, v in experiment.weights(model).items()},
            **{f"alone.{k}": v for k, v in experiment.weights(alone).items()},
            **{f"ddp_grad.{k}": v for k, v in ddp_grad.items()},
            **{f"alone_grad.{k}": v for k, v in alone_grad.items()},
        }
        save_file(tensors, str(out / f"rank{rank}.safetensors"))
        facts = {
            "rank": rank,
            "world": world,
            "buckets": buckets,
            "ddp_losses": ddp_losses,
            "alone_losses": alone_losses,
            "trainable": sum(p.numel() for p in model.parameters() if p.requires_grad),
            "frozen": FROZEN,
            "frozen_buckets": frozen_buckets[0],
            "frozen_trainable": sum(p.numel() for p in frozen.parameters() if p.requires_grad),
        }
        with atomic_file(out / f"rank{rank}.json") as tmp:
            tmp.write_text(json.dumps(facts), encoding="utf-8")
        distributed.barrier()  # every rank has written: rank 0 says so
        if rank == 0:
            with atomic_file(out / "done.json") as tmp:
                tmp.write_text(json.dumps({"world": world}), encoding="utf-8")
        distributed.barrier()  # leave together: gloo may abort a rank whose peer has gone
    finally:
        distributed.teardown()


def main(argv: list[str]) -> None:
    out, b, steps, seed, kind = Path(argv[0]), int(argv[1]), int(argv[2]), int(argv[3]), argv[4]
    run_rank(out, b, steps, seed, kind)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Start two ranks with torchrun (gloo, on this machine), train one process beside them, compare.

    python -m torch.distributed.run --standalone --nproc_per_node 2 -m attnlab.lessons.data_parallel.ranks ...

`--standalone` makes torchrun pick a free port on localhost. The ranks write what they measured to a temporary
folder (ranks.py); this process meanwhile trains the one-process model on the whole batch of 2b, then waits for
them, reporting their steps to a page that shows the progress (train/progress.py: a page that nobody waits for
any more cancels the run, and the ranks are killed). Nothing here times out early: a loaded machine may take
a while to start two Pythons; only a run still going after LIMIT_S is stopped, with an error that says so.

A run depends only on (b, steps, seed, optimizer): it is kept in memory and on disk (lessons/common/disk_cache.py),
so the page's other settings (k, the published model) never start it again, and a revisit is instant.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch
from safetensors.torch import load_file

from attnlab.lessons.common import disk_cache
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.data_parallel import experiment
from attnlab.train import progress

WORLD = 2  # processes
LIMIT_S = 900.0  # only a hung run (a rank that never joins) gets this far; a run takes seconds
POLL_S = 0.2
PACKAGE_ROOT = Path(__file__).resolve().parents[3]  # the folder holding attnlab/, for the ranks' imports


class NoRanks(ParamError):
    """The two processes could not be started or did not finish: the message says why and what they printed.
    A ParamError (with no parameter to blame) so that every view says it plainly: the CLI as one line, the page
    beside its form in its own language, the API as a 422 with the sentence."""

    def __init__(self, message: str):
        super().__init__(message, None, "explain.data_parallel.error.no_ranks", why=message)


@dataclass
class Gap:
    name: str
    numel: int
    ddp: float  # max |θ_ddp − θ_one| over this tensor (the worse rank)
    alone: float  # max |θ_alone − θ_one| (the closer rank)


@dataclass
class Run:
    """What the two ranks and the one process measured."""

    b: int
    steps: int
    seed: int
    optimizer: str
    world: int
    n_params: int  # N by the lab's counter
    trainable: int  # parameters with gradients on the ranks
    buckets: list[int]  # bytes of each bucket DDP all-reduced at the first step
    bytes_per_step: list[int]  # bytes DDP all-reduced at each step
    frozen: str  # the parameter frozen in the third run
    frozen_trainable: int  # parameters with gradients then
    frozen_bytes: int  # bytes DDP all-reduced in that run's step
    grad_max: float  # max |g_one| at the first step
    grad_diff: float  # max |g_ddp − g_one|, the worse rank
    grad_diff_alone: float  # max |g_alone − g_one|, the closer rank
    weight_diff: float  # max |θ_ddp − θ_one| after the steps, the worse rank
    weight_where: str
    alone_diff: float  # max |θ_alone − θ_one|, the closer rank
    alone_where: str
    ranks_diff: float  # max |θ_ddp(rank 0) − θ_ddp(rank 1)|
    alone_ranks_diff: float  # the same without the all-reduce
    losses_one: list[float]  # the one process's loss each step
    losses_ranks: list[list[float]]  # each rank's loss each step, under DDP
    loss_diff: float  # max over steps |mean of the ranks' losses − the one process's|
    params: list[Gap]
    seconds: float  # the two ranks, from start to finish
    rounding_diff: float  # max |θ_halves − θ_one|: one process summing the two halves (rounding alone)
    rounding_where: str


def command(out: Path, b: int, steps: int, seed: int, kind: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        str(WORLD),
        "-m",
        "attnlab.lessons.data_parallel.ranks",
        str(out),
        str(b),
        str(steps),
        str(seed),
        kind,
    ]


def _env() -> dict:
    path = os.environ.get("PYTHONPATH", "")
    return {
        **os.environ,
        "OMP_NUM_THREADS": "1",  # one thread a rank: two ranks on a 2-core machine
        "PYTHONPATH": str(PACKAGE_ROOT) + (os.pathsep + path if path else ""),
    }


def _step_of(out: Path) -> int:
    try:
        return int((out / "step").read_text())
    except (OSError, ValueError):  # not written yet, or caught mid-write
        return 0


def _tail(log: Path, chars: int = 3000) -> str:
    try:
        return log.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def start_ranks(out: Path, b: int, steps: int, seed: int, kind: str):
    """torchrun, in a session of its own (so that stopping it stops both ranks), its output in out/torchrun.log."""
    if not torch.distributed.is_available():
        raise NoRanks("this PyTorch was built without torch.distributed: the two-process run needs it")
    log = open(out / "torchrun.log", "wb")  # a file, not a pipe: a chatty rank can never block on a full pipe
    try:
        return subprocess.Popen(
            command(out, b, steps, seed, kind),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_env(),
            start_new_session=True,
        )
    except OSError as err:
        raise NoRanks(f"could not start torchrun ({sys.executable} -m torch.distributed.run): {err}") from None
    finally:
        log.close()


def wait_ranks(proc: subprocess.Popen, out: Path, steps: int, limit_s: float = LIMIT_S) -> None:
    """Wait for torchrun to end, reporting rank 0's steps; NoRanks if it failed or ran past limit_s."""
    deadline = time.monotonic() + limit_s
    while proc.poll() is None:
        progress.report("ranks", _step_of(out), steps)  # Cancelled when nobody waits any more
        if time.monotonic() > deadline:
            raise NoRanks(
                f"the two processes were still running after {limit_s:.0f} s and were stopped; "
                f"what they printed:\n{_tail(out / 'torchrun.log')}"
            )
        time.sleep(POLL_S)
    if proc.returncode != 0 or not (out / "done.json").exists():
        raise NoRanks(
            f"the two processes (torchrun, gloo on this machine) ended with status {proc.returncode} "
            f"before they finished; what they printed:\n{_tail(out / 'torchrun.log')}"
        )


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # torchrun and both ranks
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()


def _part(tensors: dict, prefix: str) -> dict:
    return {k[len(prefix) + 1 :]: v for k, v in tensors.items() if k.startswith(prefix + ".")}


def compare(
    out: Path,
    one: dict,
    one_grad: dict,
    losses_one: list[float],
    b: int,
    steps: int,
    seed: int,
    kind: str,
    seconds: float,
    halves: dict,
) -> Run:
    """The ranks' files against the one process's weights and first gradient; `halves`: the weights of the one
    process that summed the two halves itself (the rounding reference)."""
    ranks = [load_file(str(out / f"rank{r}.safetensors")) for r in range(WORLD)]
    facts = [json.loads((out / f"rank{r}.json").read_text(encoding="utf-8")) for r in range(WORLD)]
    ddp, alone = [_part(t, "ddp") for t in ranks], [_part(t, "alone") for t in ranks]
    ddp_g, alone_g = [_part(t, "ddp_grad") for t in ranks], [_part(t, "alone_grad") for t in ranks]
    worst = max((experiment.max_abs_diff(w, one) for w in ddp), key=lambda d: d[0])
    closest = min((experiment.max_abs_diff(w, one) for w in alone), key=lambda d: d[0])
    params = [
        Gap(
            name,
            w.numel(),
            max(float((d[name] - w).abs().max()) for d in ddp),
            min(float((a[name] - w).abs().max()) for a in alone),
        )
        for name, w in one.items()
    ]
    buckets = facts[0]["buckets"]
    ranks_losses = [f["ddp_losses"] for f in facts]
    mean = [sum(x) / WORLD for x in zip(*ranks_losses)]
    f = facts[0]
    return Run(
        b,
        steps,
        seed,
        kind,
        f["world"],
        experiment.n_params(),
        f["trainable"],
        buckets[0],
        [sum(s) for s in buckets],
        f["frozen"],
        f["frozen_trainable"],
        sum(f["frozen_buckets"]),
        max(float(g.abs().max()) for g in one_grad.values()),
        max(experiment.max_abs_diff(g, one_grad)[0] for g in ddp_g),
        min(experiment.max_abs_diff(g, one_grad)[0] for g in alone_g),
        worst[0],
        worst[1],
        closest[0],
        closest[1],
        experiment.max_abs_diff(ddp[0], ddp[1])[0],
        experiment.max_abs_diff(alone[0], alone[1])[0],
        losses_one,
        ranks_losses,
        max(abs(m - s) for m, s in zip(mean, losses_one)),
        params,
        seconds,
        *experiment.max_abs_diff(halves, one),
    )


def run_both(b: int, steps: int, seed: int, kind: str) -> Run:
    """The two ranks (torchrun) and, meanwhile, the one process with batch 2b and the one process summing the two
    halves itself (the same sums in DDP's order: rounding alone); compared."""
    with tempfile.TemporaryDirectory(prefix="attnlab-data-parallel-") as folder:
        out = Path(folder)
        progress.report("ranks", 0, steps)  # both listed from the start
        progress.report("one", 0, steps)
        start = time.perf_counter()
        proc = start_ranks(out, b, steps, seed, kind)
        try:
            model = experiment.build(seed)
            losses, grad = experiment.train(
                model, model, WORLD * b, steps, seed, kind, on_step=lambda s: progress.report("one", s, steps)
            )
            halves = experiment.build(seed)
            experiment.train_halves(halves, b, steps, seed, kind, WORLD)
            wait_ranks(proc, out, steps)
        finally:
            stop(proc)  # cancelled, failed or done: no rank outlives the lesson
        seconds = time.perf_counter() - start
        progress.report("ranks", steps, steps)
        one = experiment.weights(model)
        return compare(out, one, grad, losses, b, steps, seed, kind, seconds, experiment.weights(halves))


_lock = threading.Lock()  # one run at a time: a second request for the same settings then finds it kept


@lru_cache(maxsize=16)
def _kept(b: int, steps: int, seed: int, kind: str) -> Run:
    key = disk_cache.make_key(
        "run",
        "data-parallel",
        [("b", b), ("steps", steps), ("seed", seed), ("optimizer", kind)],
        source="data_parallel",
    )
    stored = disk_cache.load(key)
    if stored is not disk_cache.MISS and isinstance(stored, Run):
        return stored
    run = run_both(b, steps, seed, kind)
    disk_cache.store(key, run)
    return run


def measure(b: int, steps: int, seed: int, kind: str) -> Run:
    """The run for these settings: kept in memory or on disk, else run now."""
    while not _lock.acquire(timeout=POLL_S):
        progress.report("ranks", 0, steps)  # waiting behind another run: shown as not started; stops if left
    try:
        return _kept(b, steps, seed, kind)
    finally:
        _lock.release()

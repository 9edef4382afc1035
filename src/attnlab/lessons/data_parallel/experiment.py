"""The training steps both sides of the comparison take: the same model, the same windows, the same optimizer.

One process with batch 2b and k = 2 processes with batch b each draw one global batch of 2b windows from one
seeded generator (train/data.get_batch: rank r keeps windows r·b … (r+1)·b − 1), so the only difference left
is who sums the gradient: one backward over 2b windows, or two backwards over b windows each whose gradients
the all-reduce averages. The loss is a mean, so the two are equal in exact arithmetic:

    ∇ (1/2b) Σ_{i<2b} ℓ_i  =  ½ · [ ∇ (1/b) Σ_{i<b} ℓ_i  +  ∇ (1/b) Σ_{b≤i<2b} ℓ_i ]
"""

from __future__ import annotations

import torch

from attnlab.models import GPT, count_params
from attnlab.models.count import architecture_of
from attnlab.models.presets import preset
from attnlab.text import JINGYESI, CharTokenizer
from attnlab.train.data import get_batch
from attnlab.train.loop import TrainConfig, lm_loss, make_optimizer

PRESET = "jingyesi-tiny"  # the lab's model for the whole 静夜思 (2 layers, d_model 64, 4 heads)
CONTEXT = 8  # shorter than the poem (24 characters): the ranks' windows differ
OPTIMIZERS = ("sgd", "adamw")
LR = {"sgd": 0.1, "adamw": 1e-3}  # adamw: the lab's learning rate (TrainConfig), constant here
TEXT = JINGYESI


def stream() -> torch.Tensor:
    """静夜思 as character ids (N,)."""
    tok = CharTokenizer.train(TEXT)
    return torch.tensor(tok.encode(TEXT))


def vocab_size() -> int:
    return CharTokenizer.train(TEXT).vocab_size


def config():
    """The lab's jingyesi-tiny GPT with its context cut to CONTEXT, no dropout (every rank would draw its own mask:
    a real difference, not rounding) and no biases (a K bias's gradient is exactly 0, softmax ignoring a shift
    shared by a whole row, and AdamW would turn what rounding leaves of it into a step as large as lr)."""
    return preset(PRESET, vocab_size(), context_length=CONTEXT, dropout=0.0, bias=False)


def build(seed: int) -> GPT:
    """The model every side starts from: the same seed, the same weights, in every process (the caller's own
    random state left as it was)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GPT(config())


def n_params() -> int:
    """N, by the lab's counter (models/count.py), from the configuration alone."""
    return count_params(architecture_of(config()))


def optimizer(model: GPT, kind: str) -> torch.optim.Optimizer:
    """sgd: θ ← θ − lr·g, linear in the gradient; adamw: the lab's own (train/loop.make_optimizer), which divides
    each gradient by its running size, so a gradient that is mostly rounding can still move its weight."""
    if kind == "sgd":
        return torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=LR["sgd"])
    if kind == "adamw":
        return make_optimizer(model, TrainConfig(lr=LR["adamw"], schedule="constant"))
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {kind!r}")


def train(
    net: torch.nn.Module,
    model: GPT,
    b: int,
    steps: int,
    seed: int,
    kind: str = "sgd",
    *,
    rank: int = 0,
    world: int = 1,
    on_step=None,
) -> tuple[list[float], dict[str, torch.Tensor]]:
    """`steps` updates of `model` through `net` (the model itself, or DDP around it), each on this rank's b windows
    of the global batch of world·b. Returns this rank's losses and the gradient of the first step (the one that
    DDP averaged, if `net` is DDP)."""
    data = stream()
    windows = torch.Generator().manual_seed(seed)  # one generator for the global batch, as train/data does
    opt = optimizer(model, kind)
    losses, first = [], {}
    # Not train.small: `net` (DDP) runs forward while `model` is updated, and the first step's gradient is kept.
    for step in range(steps):
        x, y = get_batch(data, CONTEXT, b, windows, rank=rank, world_size=world)  # (b, T) each
        loss = lm_loss(net, x, y)  # mean over this rank's b·T positions
        opt.zero_grad(set_to_none=True)
        loss.backward()  # under DDP: the buckets are all-reduced (averaged) here
        if step == 0:
            first = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
        opt.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step + 1)
    return losses, first


def train_halves(model: GPT, b: int, steps: int, seed: int, kind: str = "sgd", world: int = 2) -> None:
    """The all-reduce's arithmetic in one process: each step's gradient summed over the `world` halves of the
    global batch of world·b (each half's mean loss divided by world, as DDP averages), then one step. Its distance
    from the one-batch run is rounding alone, the sums taken in another order: what the tolerance is set from."""
    data = stream()
    windows = torch.Generator().manual_seed(seed)
    opt = optimizer(model, kind)
    for _ in range(steps):
        x, y = get_batch(data, CONTEXT, world * b, windows)  # (world·b, T): rank r's windows are rows r·b … (r+1)·b − 1
        opt.zero_grad(set_to_none=True)
        for r in range(world):
            (lm_loss(model, x[r * b : (r + 1) * b], y[r * b : (r + 1) * b]) / world).backward()
        opt.step()


def weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter by name (a shared one once), detached copies."""
    return {name: p.detach().clone().contiguous() for name, p in model.named_parameters()}


def max_abs_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> tuple[float, str]:
    """max |a − b| over every parameter, and the parameter where it is reached."""
    worst, where = 0.0, ""
    for name, w in a.items():
        d = float((w.double() - b[name].double()).abs().max())
        if d > worst or not where:
            worst, where = d, name
    return worst, where

"""The plan of a scaling sweep (issue 24, ⑦): what every run shares, which runs to train, and how long they take.

The settings every run shares (its window, batch, learning rate, model and training configuration) and the ladder
of sizes are here. The sweep is planned on compute budgets (isoFLOP): for each budget C every size trains on D =
C / (its training FLOPs per token), so each budget has its own best size; the plan takes the largest budgets
C, 4·C, 16·C whose runs fit a time budget by each size's measured step time on this machine. The plan is kept in
`OUT/plan.json`, and a resumed sweep must match it (load_plan). Training the runs is sweep.py.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from attnlab.io import safe_read
from attnlab.io.threads import threads_for
from attnlab.models import GPT, count_flops, preset
from attnlab.train.loop import TrainConfig, Trainer

# (layers, d_model): non-embedding parameters from about 3k to 2.7M; heads of width 16
LADDER: tuple[tuple[int, int], ...] = ((1, 16), (2, 24), (2, 32), (2, 48), (3, 64), (4, 96), (4, 128), (6, 192))
CONTEXT = 64  # characters a window holds: a whole 五绝 or 七绝 with its title
BATCH = 16
LR = 2e-3
BUDGET_RATIO = 4.0  # one compute budget to the next
N_BUDGETS = 3
MIN_STEPS = 30  # a run shorter than this has not left its warm-up: not a point on the law
MAX_EPOCHS = 4.0  # a run that reads the training text more often than this measures memorising, not scale
EVAL_ITERS = 40  # held-out batches of the final estimate, the same batches for every run


def model_config(layers: int, d_model: int, vocab_size: int):
    return preset(
        "poems-small",
        vocab_size=vocab_size,
        n_layers=layers,
        d_model=d_model,
        n_heads=max(1, d_model // 16),
        context_length=CONTEXT,
        d_ff=None,
        dropout=0.0,
    )


def flops_per_step(cfg) -> int:
    return count_flops(cfg, BATCH * CONTEXT)


def train_config(steps: int, seed: int) -> TrainConfig:
    return TrainConfig(
        steps=steps,
        batch_size=BATCH,
        lr=LR,
        schedule="cosine",
        warmup_steps=min(100, steps // 10),
        weight_decay=0.1,
        seed=seed,
        eval_iters=EVAL_ITERS,
        log_interval=max(1, steps // 20),
    )


def new_trainer(cfg, data, steps: int, *, seed: int, device: str) -> Trainer:
    """A run's trainer, seeded: the runs and the measurement of their step times make theirs alike."""
    torch.manual_seed(seed)
    return Trainer(GPT(cfg), data, train_config(steps, seed), device=device)


@dataclass(frozen=True)
class RunSpec:
    layers: int
    d_model: int
    budget: int  # index of the compute budget
    flops: float  # its training FLOPs (count_flops)
    steps: int

    @property
    def heads(self) -> int:
        return max(1, self.d_model // 16)

    @property
    def name(self) -> str:
        return f"L{self.layers}-d{self.d_model}-C{self.budget}"

    @property
    def tokens(self) -> int:
        return self.steps * BATCH * CONTEXT


@dataclass
class Plan:
    corpus: str
    corpus_sha256: str | None
    vocab_size: int
    train_tokens: int
    seed: int
    budgets: list[float]  # FLOPs
    runs: list[RunSpec] = field(default_factory=list)
    estimated_s: float = 0.0
    step_seconds: dict = field(default_factory=dict)  # "L2-d32" -> measured seconds per step

    def key(self) -> dict:
        """What a resumed sweep must share with the one that wrote the runs."""
        return {
            "corpus_sha256": self.corpus_sha256,
            "vocab_size": self.vocab_size,
            "seed": self.seed,
            "runs": [asdict(r) for r in self.runs],
            "context": CONTEXT,
            "batch": BATCH,
            "lr": LR,
        }


def step_seconds(
    data, vocab_size: int, ladder, device: str, steps: int = 3, *, minutes: float | None = None
) -> dict[tuple[int, int], float]:
    """Each size's measured seconds per training step here, as the runs will take them (after one warm-up step,
    which pays for allocation). With `minutes`, ValueError as soon as the sizes timed so far already make the
    smallest plan longer than that: a budget too small is refused after one size's measurement, not all."""
    out = {}
    for layers, d in ladder:
        trainer = new_trainer(model_config(layers, d, vocab_size), data, steps + 1, seed=0, device=device)
        with threads_for(trainer.model):
            trainer.train_step(lr=LR)
            if trainer.device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(steps):
                loss = trainer.train_step(lr=LR)
            loss.item()  # waits for the device
            out[(layers, d)] = (time.perf_counter() - start) / steps
        if minutes is not None and smallest_plan_s(data, vocab_size, out, ladder) > 60 * minutes:
            raise ValueError(too_short(minutes))
    return out


def too_short(minutes: float) -> str:
    return f"no sweep fits {minutes:g} minutes here: give it more time"


def _runs_for(c0: float, cfgs: dict, train_tokens: int) -> list[RunSpec]:
    """The runs of the budgets c0, 4·c0, 16·c0: each size with at least MIN_STEPS steps and at most MAX_EPOCHS."""
    runs = []
    for b in range(N_BUDGETS):
        c = c0 * BUDGET_RATIO**b
        for size, cfg in cfgs.items():
            steps = int(c // flops_per_step(cfg))
            if steps >= MIN_STEPS and steps * BATCH * CONTEXT <= MAX_EPOCHS * train_tokens:
                runs.append(RunSpec(*size, budget=b, flops=float(steps * flops_per_step(cfg)), steps=steps))
    return runs


def _seconds(runs, seconds_per_step: dict) -> float:
    return sum(r.steps * seconds_per_step[(r.layers, r.d_model)] for r in runs)


def _smallest_budget(cfgs: dict) -> float:
    return min(flops_per_step(cfg) for cfg in cfgs.values()) * MIN_STEPS


def smallest_plan_s(data, vocab_size: int, seconds_per_step: dict, ladder=LADDER) -> float:
    """The seconds of the smallest plan's runs of the sizes timed so far: every plan takes at least this long."""
    cfgs = {size: model_config(*size, vocab_size) for size in ladder}
    runs = _runs_for(_smallest_budget(cfgs), cfgs, len(data.train))
    return _seconds([r for r in runs if (r.layers, r.d_model) in seconds_per_step], seconds_per_step)


def plan_sweep(
    data,
    vocab_size: int,
    *,
    minutes: float,
    seconds_per_step: dict,
    ladder=LADDER,
    corpus: str = "",
    corpus_sha256: str | None = None,
    seed: int = 0,
) -> Plan:
    """The largest budgets C, 4·C, 16·C whose runs fit `minutes` by the measured step times."""
    train_tokens = len(data.train)
    cfgs = {size: model_config(*size, vocab_size) for size in ladder}
    budget_s, best = 60 * minutes, None
    c0 = _smallest_budget(cfgs)
    while True:  # grow the smallest budget by 2^(1/4) while the whole plan still fits
        runs = _runs_for(c0, cfgs, train_tokens)
        if _seconds(runs, seconds_per_step) > budget_s or (best and len(runs) < len(best[1])):
            break  # over time, or a size read too often
        if runs:
            best = (c0, runs)
        if c0 > 1e30:
            break
        c0 *= 2**0.25
    if best is None:
        raise ValueError(too_short(minutes))
    c0, runs = best
    return Plan(
        corpus,
        corpus_sha256,
        vocab_size,
        train_tokens,
        seed,
        [c0 * BUDGET_RATIO**b for b in range(N_BUDGETS)],
        runs,
        _seconds(runs, seconds_per_step),
    )


def load_plan(out: Path, corpus: str, sha: str | None, vocab_size: int, seed: int) -> Plan | None:
    """The plan a previous call wrote in `out` (None for a new sweep); ValueError when it is another sweep's. A
    resumed sweep keeps its plan: planning again would measure other step times and choose other budgets."""
    path = out / "plan.json"
    if not path.exists():
        if out.exists() and any(out.iterdir()):
            raise ValueError(f"{out} is not empty and holds no sweep: give an empty or new folder")
        return None
    kept = safe_read.read_json(path)
    if (kept.get("corpus_sha256"), kept.get("vocab_size"), kept.get("seed")) != (sha, vocab_size, seed) or (
        kept.get("context"),
        kept.get("batch"),
        kept.get("lr"),
    ) != (CONTEXT, BATCH, LR):
        raise ValueError(
            f"{out} holds another sweep (another corpus, seed or settings); give an empty folder, or "
            "the same corpus and seed to resume it"
        )
    return Plan(
        corpus,
        sha,
        vocab_size,
        kept["train_tokens"],
        seed,
        kept["budgets"],
        [RunSpec(**r) for r in kept["runs"]],
        kept.get("estimated_s", 0.0),
        kept.get("step_seconds", {}),
    )


def seconds_left(plan: Plan, runs: list[RunSpec]) -> float:
    """The measured step times' estimate of what `runs` still take."""
    return sum(r.steps * plan.step_seconds.get(f"L{r.layers}-d{r.d_model}", 0.0) for r in runs)

"""A scaling sweep: a family of GPTs on one corpus, each trained on several token budgets (issue 24, ⑦).

Every run is one point (N non-embedding parameters, D tokens, held-out loss). The sweep is planned on compute
budgets (isoFLOP): for each budget C every size trains on D = C / (its training FLOPs per token), so each budget
has its own best size. The plan fits a time budget from each size's measured step time on this machine.
Each finished run is written to `OUT/runs/NAME.json` at once, so a killed sweep keeps its finished runs and the
next call skips them (the plan is kept in `OUT/plan.json` and must match).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from attnlab.io.atomic import atomic_file
from attnlab.io.threads import threads_for
from attnlab.lessons.scale import emergence
from attnlab.lessons.scale.emergence import Items, measure
from attnlab.lessons.scale.scaling_law import compute_optimal, fit_law, isoflop_minima
from attnlab.models import GPT, WindowMLP, WindowMLPConfig, count_flops, preset
from attnlab.models.count import non_embedding_params
from attnlab.models.window_mlp import n_params as mlp_params
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
        return {"corpus_sha256": self.corpus_sha256, "vocab_size": self.vocab_size, "seed": self.seed,
                "runs": [asdict(r) for r in self.runs], "context": CONTEXT, "batch": BATCH, "lr": LR}


def model_config(layers: int, d_model: int, vocab_size: int):
    return preset("poems-small", vocab_size=vocab_size, n_layers=layers, d_model=d_model,
                  n_heads=max(1, d_model // 16), context_length=CONTEXT, d_ff=None, dropout=0.0)


def flops_per_step(cfg) -> int:
    return count_flops(cfg, BATCH * CONTEXT)


def step_seconds(data, vocab_size: int, ladder, device: str, steps: int = 3) -> dict[tuple[int, int], float]:
    """Each size's measured seconds per training step here, as the runs will take them (after one warm-up step,
    which pays for allocation)."""
    out = {}
    for layers, d in ladder:
        trainer = _trainer(model_config(layers, d, vocab_size), data, steps + 1, seed=0, device=device)
        with threads_for(trainer.model):
            trainer.train_step(lr=LR)
            if trainer.device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(steps):
                loss = trainer.train_step(lr=LR)
            loss.item()  # waits for the device
            out[(layers, d)] = (time.perf_counter() - start) / steps
    return out


def plan_sweep(data, vocab_size: int, *, minutes: float, seconds_per_step: dict, ladder=LADDER,
               corpus: str = "", corpus_sha256: str | None = None, seed: int = 0) -> Plan:
    """The largest budgets C, 4·C, 16·C whose runs fit `minutes` by the measured step times."""
    train_tokens = len(data.train)
    cfgs = {size: model_config(*size, vocab_size) for size in ladder}

    def runs_for(c0: float) -> list[RunSpec]:
        runs = []
        for b in range(N_BUDGETS):
            c = c0 * BUDGET_RATIO ** b
            for size, cfg in cfgs.items():
                steps = int(c // flops_per_step(cfg))
                if steps >= MIN_STEPS and steps * BATCH * CONTEXT <= MAX_EPOCHS * train_tokens:
                    runs.append(RunSpec(*size, budget=b, flops=float(steps * flops_per_step(cfg)), steps=steps))
        return runs

    def seconds(runs) -> float:
        return sum(r.steps * seconds_per_step[(r.layers, r.d_model)] for r in runs)

    budget_s, best = 60 * minutes, None
    c0 = min(flops_per_step(cfg) for cfg in cfgs.values()) * MIN_STEPS
    while True:  # grow the smallest budget by 2^(1/4) while the whole plan still fits
        runs = runs_for(c0)
        if seconds(runs) > budget_s or (best and len(runs) < len(best[1])):  # over time, or a size read too often
            break
        if runs:
            best = (c0, runs)
        if c0 > 1e30:
            break
        c0 *= 2 ** 0.25
    if best is None:
        raise ValueError(f"no sweep fits {minutes:g} minutes here: give it more time")
    c0, runs = best
    return Plan(corpus, corpus_sha256, vocab_size, train_tokens, seed, [c0 * BUDGET_RATIO ** b for b in range(N_BUDGETS)],
                runs, seconds(runs))


def _train_config(steps: int, seed: int) -> TrainConfig:
    return TrainConfig(steps=steps, batch_size=BATCH, lr=LR, schedule="cosine", warmup_steps=min(100, steps // 10),
                       weight_decay=0.1, seed=seed, eval_iters=EVAL_ITERS, log_interval=max(1, steps // 20))


def _trainer(cfg, data, steps: int, *, seed: int, device: str) -> Trainer:
    torch.manual_seed(seed)
    return Trainer(GPT(cfg), data, _train_config(steps, seed), device=device)


def train_point(spec: RunSpec, data, vocab_size: int, *, seed: int, device: str,
                on_step: Callable[[int, int], None] | None = None, tokenizer=None, items: Items | None = None) -> dict:
    """Train one run of the plan and measure it: one point of the law, and (given the sweep's items and tokenizer)
    its emergence scores, exact and smooth (lessons/scale/emergence.py)."""
    cfg = model_config(spec.layers, spec.d_model, vocab_size)
    trainer = _trainer(cfg, data, spec.steps, seed=seed, device=device)
    start = time.perf_counter()
    result = trainer.run(callback=(lambda e: on_step(e["step"], spec.steps)) if on_step else None)
    scores = measure(trainer.model, tokenizer, items, seed=seed) if items is not None else {}
    return {
        "name": spec.name, "layers": spec.layers, "d_model": spec.d_model, "heads": spec.heads, "budget": spec.budget,
        "n_params": non_embedding_params(cfg), "n_params_total": sum(p.numel() for p in trainer.model.parameters()),
        "tokens": spec.tokens, "flops": spec.flops, "steps": spec.steps, "val_loss": result.val_loss,
        "train_loss": result.loss, "seconds": round(time.perf_counter() - start, 2), "seed": seed,
        "form_score": None, "exact_recall": None, **scores,
    }


def load_plan(out: Path, corpus: str, sha: str | None, vocab_size: int, seed: int) -> Plan | None:
    """The plan a previous call wrote in `out` (None for a new sweep); ValueError when it is another sweep's. A
    resumed sweep keeps its plan: planning again would measure other step times and choose other budgets."""
    path = out / "plan.json"
    if not path.exists():
        if out.exists() and any(out.iterdir()):
            raise ValueError(f"{out} is not empty and holds no sweep: give an empty or new folder")
        return None
    kept = json.loads(path.read_text(encoding="utf-8"))
    if (kept.get("corpus_sha256"), kept.get("vocab_size"), kept.get("seed")) != (sha, vocab_size, seed) or \
            (kept.get("context"), kept.get("batch"), kept.get("lr")) != (CONTEXT, BATCH, LR):
        raise ValueError(f"{out} holds another sweep (another corpus, seed or settings); give an empty folder, or "
                         "the same corpus and seed to resume it")
    return Plan(corpus, sha, vocab_size, kept["train_tokens"], seed, kept["budgets"],
                [RunSpec(**r) for r in kept["runs"]], kept.get("estimated_s", 0.0), kept.get("step_seconds", {}))


def seconds_left(plan: Plan, runs: list[RunSpec]) -> float:
    """The measured step times' estimate of what `runs` still take."""
    return sum(r.steps * plan.step_seconds.get(f"L{r.layers}-d{r.d_model}", 0.0) for r in runs)


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as tmp:
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


def finished_runs(out: Path, plan: Plan) -> dict[str, dict]:
    """The runs of the plan a previous call finished."""
    done = {}
    for spec in plan.runs:
        path = out / "runs" / f"{spec.name}.json"
        if path.exists():
            done[spec.name] = json.loads(path.read_text(encoding="utf-8"))
    return done


# ---- the fixed-window MLP baseline (chapter 16: why a fixed MLP does not suit language) --------------------------

MLP = dict(window=8, d_embed=32, d_hidden=256)


def mlp_config(vocab_size: int) -> WindowMLPConfig:
    return WindowMLPConfig(vocab_size=vocab_size, context_length=CONTEXT, **MLP)


def mlp_flops_per_step(cfg: WindowMLPConfig) -> int:
    """Its products: the hidden layer (window·d_embed → d_hidden) and the output (d_hidden → vocab), forward and
    backward (3 × 2 FLOPs per weight and token), as count_flops counts a GPT's."""
    return 6 * (cfg.window * cfg.d_embed * cfg.d_hidden + cfg.d_hidden * cfg.vocab_size) * BATCH * CONTEXT


def train_mlp(budget: int, flops: float, data, vocab_size: int, *, seed: int, device: str) -> dict | None:
    cfg = mlp_config(vocab_size)
    steps = int(flops // mlp_flops_per_step(cfg))
    if steps < MIN_STEPS or steps * BATCH * CONTEXT > MAX_EPOCHS * len(data.train):
        return None
    torch.manual_seed(seed)
    trainer = Trainer(WindowMLP(cfg), data, _train_config(steps, seed), device=device)
    result = trainer.run()
    return {"budget": budget, "window": cfg.window, "n_params": mlp_params(cfg), "tokens": steps * BATCH * CONTEXT,
            "flops": float(steps * mlp_flops_per_step(cfg)), "steps": steps, "val_loss": result.val_loss}


# ---- the whole sweep ---------------------------------------------------------------------------------------------

def summarize(plan: Plan, runs: list[dict], mlp: list[dict], *, bootstrap: int = 200) -> dict:
    """scale.json: the runs, the fitted law L(N, D) with its intervals, and the compute-optimal size per budget
    (from the law, and measured: the best run of each budget), beside Chinchilla's ~20 tokens per parameter."""
    points = [r for r in runs if r["val_loss"] is not None]
    n, d, loss = ([r[k] for r in points] for k in ("n_params", "tokens", "val_loss"))
    fit = fit_law(n, d, loss, bootstrap=bootstrap, seed=plan.seed) if len(points) >= 5 else None
    labels = [plan.budgets[r["budget"]] for r in points]  # a budget's FLOPs label its runs
    measured = isoflop_minima(n, d, labels, loss) if points else []
    optimum = []
    for b, c in enumerate(plan.budgets):
        row = {"budget": b, "flops": c, "measured": next(({**m, "budget": b} for m in measured if m["budget"] == c), None)}
        if fit is not None and fit.alpha > 0 and fit.beta > 0:
            mean_c6 = [6 * r["n_params"] * r["tokens"] for r in points if r["budget"] == b]
            if mean_c6:  # the law's own compute, 6·N·D, at this budget's runs
                best = asdict(compute_optimal(fit, sum(mean_c6) / len(mean_c6)))
                # an optimum outside the sizes measured is the law extrapolated, not a finding
                best["in_range"] = bool(fit.n_range[0] <= best["n_params"] <= fit.n_range[1])
                row["fitted"] = best
        optimum.append(row)
    return {
        "corpus": plan.corpus, "corpus_sha256": plan.corpus_sha256, "vocab_size": plan.vocab_size,
        "train_tokens": plan.train_tokens, "context": CONTEXT, "batch": BATCH, "seed": plan.seed,
        "n_params_counts": "non-embedding (Kaplan et al. 2020); compute counts every product, the head's included",
        "uniform_loss": math.log(plan.vocab_size), "budgets": plan.budgets, "runs": runs, "mlp_baseline": mlp,
        "fit": asdict(fit) if fit is not None else None, "optimum": optimum, "chinchilla_tokens_per_param": 20,
        "emergence": {**emergence.summarize(runs), "uniform_prob": 1 / plan.vocab_size},
    }


def run_sweep(corpus_data, out: str | Path, *, minutes: float, device: str = "cpu", seed: int = 0,
              ladder=None, bootstrap: int = 200, progress: Callable[[dict], None] | None = None,
              seconds_per_step: dict | None = None, command: str | None = None) -> dict:
    """Plan (or reload the plan of) a sweep in `out`, train what is not finished, and write out/scale.json.
    `corpus_data` = (name, sha256, tokenizer, TokenData). progress(event) gets {"phase", "run", "done", "of",
    "step", "steps", "left_s"} as it goes. `seconds_per_step` {(layers, d_model): s} replaces the measurement
    (tests: a plan that does not depend on this machine's load). `command` is kept in scale.json: the line that
    made the sweep, which the scale page shows."""
    name, sha, tokenizer, data = corpus_data
    out, ladder = Path(out), ladder or LADDER
    say = progress or (lambda event: None)
    plan = load_plan(out, name, sha, tokenizer.vocab_size, seed)
    if plan is None:
        if seconds_per_step is None:
            say({"phase": "calibrate"})
        times = seconds_per_step or step_seconds(data, tokenizer.vocab_size, ladder, device)
        plan = plan_sweep(data, tokenizer.vocab_size, minutes=minutes, seconds_per_step=times, ladder=ladder,
                          corpus=name, corpus_sha256=sha, seed=seed)
        plan.step_seconds = {f"L{k[0]}-d{k[1]}": v for k, v in times.items()}
        write_json(out / "plan.json", {**plan.key(), "budgets": plan.budgets, "estimated_s": plan.estimated_s,
                                       "train_tokens": plan.train_tokens, "corpus": name,
                                       "step_seconds": plan.step_seconds})
    done = finished_runs(out, plan)
    say({"phase": "plan", "runs": len(plan.runs), "sizes": len({(r.layers, r.d_model) for r in plan.runs}),
         "budgets": plan.budgets, "done": len(done), "left_s": seconds_left(plan, [r for r in plan.runs if r.name not in done])})
    runs, start = [], time.perf_counter()
    items = emergence.items_for(tokenizer, data, CONTEXT)
    for i, spec in enumerate(plan.runs):
        if spec.name in done:
            runs.append(done[spec.name])
            continue
        say({"phase": "run", "run": spec.name, "done": i, "of": len(plan.runs),
             "left_s": seconds_left(plan, [r for r in plan.runs[i:] if r.name not in done])})
        record = train_point(spec, data, tokenizer.vocab_size, seed=seed, device=device, tokenizer=tokenizer, items=items,
                             on_step=lambda step, steps: say({"phase": "step", "run": spec.name, "step": step,
                                                              "steps": steps, "done": i, "of": len(plan.runs)}))
        write_json(out / "runs" / f"{spec.name}.json", record)  # kept at once: a killed sweep loses only this run
        runs.append(record)
    say({"phase": "baseline"})
    mlp = [m for b, c in enumerate(plan.budgets) if (m := train_mlp(b, c, data, tokenizer.vocab_size, seed=seed,
                                                                   device=device)) is not None]
    say({"phase": "fit"})
    result = {**summarize(plan, runs, mlp, bootstrap=bootstrap), "seconds": round(time.perf_counter() - start, 1),
              "command": command}
    write_json(out / "scale.json", result)
    return result

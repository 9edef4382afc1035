"""A scaling sweep: a family of GPTs on one corpus, each trained on several token budgets (issue 24, ⑦).

Every run is one point (N non-embedding parameters, D tokens, held-out loss). Which runs, with which settings, and
how long they take is the plan (lessons/scale/planning.py); this file trains them, the fixed-window MLP baseline
beside them, and fits the law to what they measured (scale.json). Each finished run is written to
`OUT/runs/NAME.json` at once, so a killed sweep keeps its finished runs and the next call skips them (the plan is
kept in `OUT/plan.json` and must match).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch

from attnlab.io import safe_read
from attnlab.io.atomic import atomic_file
from attnlab.lessons.scale import emergence, planning
from attnlab.lessons.scale.emergence import Items, measure
from attnlab.lessons.scale.planning import Plan, RunSpec
from attnlab.lessons.scale.scaling_law import compute_optimal, fit_law, isoflop_minima
from attnlab.models import WindowMLP, WindowMLPConfig
from attnlab.models.count import non_embedding_params
from attnlab.models.window_mlp import n_params as mlp_params
from attnlab.train.loop import Trainer


def train_point(
    spec: RunSpec,
    data,
    vocab_size: int,
    *,
    seed: int,
    device: str,
    on_step: Callable[[int, int], None] | None = None,
    tokenizer=None,
    items: Items | None = None,
) -> dict:
    """Train one run of the plan and measure it: one point of the law, and (given the sweep's items and tokenizer)
    its emergence scores, exact and smooth (lessons/scale/emergence.py)."""
    cfg = planning.model_config(spec.layers, spec.d_model, vocab_size)
    trainer = planning.new_trainer(cfg, data, spec.steps, seed=seed, device=device)
    start = time.perf_counter()
    result = trainer.run(callback=(lambda e: on_step(e["step"], spec.steps)) if on_step else None)
    scores = measure(trainer.model, tokenizer, items, seed=seed) if items is not None else {}
    return {
        "name": spec.name,
        "layers": spec.layers,
        "d_model": spec.d_model,
        "heads": spec.heads,
        "budget": spec.budget,
        "n_params": non_embedding_params(cfg),
        "n_params_total": sum(p.numel() for p in trainer.model.parameters()),
        "tokens": spec.tokens,
        "flops": spec.flops,
        "steps": spec.steps,
        "val_loss": result.val_loss,
        "train_loss": result.loss,
        "seconds": round(time.perf_counter() - start, 2),
        "seed": seed,
        "form_score": None,
        "exact_recall": None,
        **scores,
    }


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
            done[spec.name] = safe_read.read_json(path)
    return done


# ---- the fixed-window MLP baseline (chapter 16: why a fixed MLP does not suit language) --------------------------

MLP = dict(window=8, d_embed=32, d_hidden=256)


def mlp_config(vocab_size: int) -> WindowMLPConfig:
    return WindowMLPConfig(vocab_size=vocab_size, context_length=planning.CONTEXT, **MLP)


def mlp_flops_per_step(cfg: WindowMLPConfig) -> int:
    """Its products: the hidden layer (window·d_embed → d_hidden) and the output (d_hidden → vocab), forward and
    backward (3 × 2 FLOPs per weight and token), as count_flops counts a GPT's."""
    products = cfg.window * cfg.d_embed * cfg.d_hidden + cfg.d_hidden * cfg.vocab_size
    return 6 * products * planning.BATCH * planning.CONTEXT


def train_mlp(budget: int, flops: float, data, vocab_size: int, *, seed: int, device: str) -> dict | None:
    cfg = mlp_config(vocab_size)
    steps = int(flops // mlp_flops_per_step(cfg))
    tokens = steps * planning.BATCH * planning.CONTEXT
    if steps < planning.MIN_STEPS or tokens > planning.MAX_EPOCHS * len(data.train):
        return None
    torch.manual_seed(seed)
    trainer = Trainer(WindowMLP(cfg), data, planning.train_config(steps, seed), device=device)
    result = trainer.run()
    return {
        "budget": budget,
        "window": cfg.window,
        "n_params": mlp_params(cfg),
        "tokens": tokens,
        "flops": float(steps * mlp_flops_per_step(cfg)),
        "steps": steps,
        "val_loss": result.val_loss,
    }


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
        row = {
            "budget": b,
            "flops": c,
            "measured": next(({**m, "budget": b} for m in measured if m["budget"] == c), None),
        }
        if fit is not None and fit.alpha > 0 and fit.beta > 0:
            mean_c6 = [6 * r["n_params"] * r["tokens"] for r in points if r["budget"] == b]
            if mean_c6:  # the law's own compute, 6·N·D, at this budget's runs
                best = asdict(compute_optimal(fit, sum(mean_c6) / len(mean_c6)))
                # an optimum outside the sizes measured is the law extrapolated, not a finding
                best["in_range"] = bool(fit.n_range[0] <= best["n_params"] <= fit.n_range[1])
                row["fitted"] = best
        optimum.append(row)
    return {
        "corpus": plan.corpus,
        "corpus_sha256": plan.corpus_sha256,
        "vocab_size": plan.vocab_size,
        "train_tokens": plan.train_tokens,
        "context": planning.CONTEXT,
        "batch": planning.BATCH,
        "seed": plan.seed,
        "n_params_counts": "non-embedding (Kaplan et al. 2020); compute counts every product, the head's included",
        "uniform_loss": math.log(plan.vocab_size),
        "budgets": plan.budgets,
        "runs": runs,
        "mlp_baseline": mlp,
        "fit": asdict(fit) if fit is not None else None,
        "optimum": optimum,
        "chinchilla_tokens_per_param": 20,
        "emergence": {**emergence.summarize(runs), "uniform_prob": 1 / plan.vocab_size},
    }


def run_sweep(
    corpus_data,
    out: str | Path,
    *,
    minutes: float,
    device: str = "cpu",
    seed: int = 0,
    ladder=None,
    bootstrap: int = 200,
    progress: Callable[[dict], None] | None = None,
    seconds_per_step: dict | None = None,
    command: str | None = None,
) -> dict:
    """Plan (or reload the plan of) a sweep in `out`, train what is not finished, and write out/scale.json.
    `corpus_data` = (name, sha256, tokenizer, TokenData). progress(event) gets {"phase", "run", "done", "of",
    "step", "steps", "left_s"} as it goes. `seconds_per_step` {(layers, d_model): s} replaces the measurement
    (tests: a plan that does not depend on this machine's load). `command` is kept in scale.json: the line that
    made the sweep, which the scale page shows."""
    name, sha, tokenizer, data = corpus_data
    out, ladder = Path(out), ladder or planning.LADDER
    say = progress or (lambda event: None)
    plan = planning.load_plan(out, name, sha, tokenizer.vocab_size, seed)
    if plan is None:
        if seconds_per_step is None:
            say({"phase": "calibrate"})
        times = seconds_per_step or planning.step_seconds(data, tokenizer.vocab_size, ladder, device, minutes=minutes)
        plan = planning.plan_sweep(
            data,
            tokenizer.vocab_size,
            minutes=minutes,
            seconds_per_step=times,
            ladder=ladder,
            corpus=name,
            corpus_sha256=sha,
            seed=seed,
        )
        plan.step_seconds = {f"L{k[0]}-d{k[1]}": v for k, v in times.items()}
        write_json(
            out / "plan.json",
            {
                **plan.key(),
                "budgets": plan.budgets,
                "estimated_s": plan.estimated_s,
                "train_tokens": plan.train_tokens,
                "corpus": name,
                "step_seconds": plan.step_seconds,
            },
        )
    done = finished_runs(out, plan)
    left = planning.seconds_left(plan, [r for r in plan.runs if r.name not in done])
    say(
        {
            "phase": "plan",
            "runs": len(plan.runs),
            "sizes": len({(r.layers, r.d_model) for r in plan.runs}),
            "budgets": plan.budgets,
            "done": len(done),
            "left_s": left,
        }
    )
    runs, start = [], time.perf_counter()
    items = emergence.items_for(tokenizer, data, planning.CONTEXT)
    for i, spec in enumerate(plan.runs):
        if spec.name in done:
            runs.append(done[spec.name])
            continue
        say(
            {
                "phase": "run",
                "run": spec.name,
                "done": i,
                "of": len(plan.runs),
                "left_s": planning.seconds_left(plan, [r for r in plan.runs[i:] if r.name not in done]),
            }
        )
        record = train_point(
            spec,
            data,
            tokenizer.vocab_size,
            seed=seed,
            device=device,
            tokenizer=tokenizer,
            items=items,
            on_step=lambda step, steps: say(
                {"phase": "step", "run": spec.name, "step": step, "steps": steps, "done": i, "of": len(plan.runs)}
            ),
        )
        write_json(out / "runs" / f"{spec.name}.json", record)  # kept at once: a killed sweep loses only this run
        runs.append(record)
    say({"phase": "baseline"})
    mlp = [
        m
        for b, c in enumerate(plan.budgets)
        if (m := train_mlp(b, c, data, tokenizer.vocab_size, seed=seed, device=device)) is not None
    ]
    say({"phase": "fit"})
    result = {
        **summarize(plan, runs, mlp, bootstrap=bootstrap),
        "seconds": round(time.perf_counter() - start, 1),
        "command": command,
    }
    write_json(out / "scale.json", result)
    return result

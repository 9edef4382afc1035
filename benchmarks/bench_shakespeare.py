"""Tiny Shakespeare with nanoGPT's published CPU recipe: attnlab's GPT under each speed setting beside a baseline
built from torch's own layers, all trained by the same loop (Trainer.train_step), interleaved.

Recipe (nanoGPT README, "I only have a macbook"): 4 layers, 4 heads, d_model 128, context 64, batch 12,
2000 iterations, lr 1e-3 with 100 warm-up steps and cosine decay to 1e-4, AdamW (beta2 0.99, weight decay
0.1), gradient clipping 1.0, no dropout; characters; the first 90% of the text trains, the last 10% is
validation. nanoGPT reports val loss about 1.88.

The machine may be shared, so every setting trains in rounds of --chunk steps, one setting after another,
round after round: a busy spell slows all of them alike, and the ratio to the baseline is taken within each
round. Prints, per setting, the median ms/iter (spread: fastest and slowest round), tokens/s, the median
ratio of tokens/s to the baseline's (spread), and at the end the val loss (20 and 200 batches).

    python benchmarks/bench_shakespeare.py [--steps 2000] [--settings torch,fp32,bf16,compile] [--chunk 50]
                                           [--device cpu] [--threads N] [--clock wall|cpu] [--data input.txt]

Settings: torch (the baseline: nn.TransformerEncoderLayer, fp32), fp32, bf16 (autocast), compile (fp32 +
torch.compile), bf16+compile, and torch-oldloop (the baseline with torch's plain per-parameter AdamW loop,
as the loop ran before it chose fused AdamW).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from torch import nn

from attnlab.io.threads import threads_for
from attnlab.models import GPT, preset
from attnlab.text import read_corpus, train_tokenizer
from attnlab.train import TokenData, TrainConfig, Trainer, corpus_defaults, pick_device

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tinyshakespeare" / "input.txt"
SETTINGS = {  # name: (model class name, TrainConfig overrides)
    "torch": ("torch", dict(precision="fp32")),
    "torch-oldloop": ("torch", dict(precision="fp32")),
    "fp32": ("attnlab", dict(precision="fp32")),
    "bf16": ("attnlab", dict(precision="bf16")),
    "compile": ("attnlab", dict(precision="fp32", compile=True)),
    "bf16+compile": ("attnlab", dict(precision="bf16", compile=True)),
}


class TorchLayersGPT(nn.Module):
    """The baseline: the same GPT shape from torch's nn.TransformerEncoderLayer (pre-LN, GELU, causal)."""

    def __init__(self, config):
        super().__init__()
        self.config = c = config
        self.tok = nn.Embedding(c.vocab_size, c.d_model)
        self.pos = nn.Embedding(c.context_length, c.d_model)
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.pos.weight, std=0.02)
        layer = nn.TransformerEncoderLayer(
            c.d_model,
            c.n_heads,
            dim_feedforward=c.hidden,
            dropout=c.dropout,
            activation="gelu",
            batch_first=True,
            norm_first=True,
            bias=c.bias,
        )
        self.blocks = nn.TransformerEncoder(layer, c.n_layers, enable_nested_tensor=False)
        self.ln_f = nn.LayerNorm(c.d_model)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))  # (B, T, d_model)
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=idx.device)
        x = self.blocks(x, mask=mask, is_causal=True)
        return self.lm_head(self.ln_f(x))  # (B, T, V)


def build(name: str, config, data: TokenData, settings: dict, device, seed: int) -> Trainer:
    kind, overrides = SETTINGS[name]
    torch.manual_seed(seed)
    model = (TorchLayersGPT if kind == "torch" else GPT)(config)
    trainer = Trainer(model, data, TrainConfig(**{**settings, **overrides}), device=device)
    if name == "torch-oldloop":
        groups = [{"params": g["params"], "weight_decay": g["weight_decay"]} for g in trainer.optimizer.param_groups]
        cfg = trainer.cfg
        trainer.optimizer = torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), foreach=False)
    return trainer


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}..{max(values):.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument(
        "--settings",
        default="torch,fp32,bf16",
        help=f"comma-separated, of {', '.join(SETTINGS)}; the first is the baseline the ratios divide by",
    )
    parser.add_argument("--chunk", type=int, default=50, help="steps per setting per round")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--data", type=Path, default=DATA, help="Tiny Shakespeare's input.txt")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: the loop's choice)")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="cpu: this process's CPU time (with --threads 1 on a shared machine, the time the work "
        "took, not the time it waited for a core)",
    )
    args = parser.parse_args()
    names = args.settings.split(",")
    unknown = [n for n in names if n not in SETTINGS]
    if unknown:
        raise SystemExit(f"unknown settings {unknown}; choose from {list(SETTINGS)}")
    if not args.data.is_file():
        raise SystemExit(f"Tiny Shakespeare not found at {args.data} (pass --data)")
    device = pick_device(args.device)
    texts = read_corpus(str(args.data))
    tok = train_tokenizer("char", texts)
    data = TokenData.from_texts(texts, tok, val_fraction=0.1)
    preset_name, settings = corpus_defaults(str(args.data))
    settings = {**settings, "steps": args.steps, "eval_interval": 0, "seed": args.seed}
    config = preset(preset_name, vocab_size=tok.vocab_size)
    trainers = {n: build(n, config, data, settings, device, args.seed) for n in names}
    tokens_per_step = settings["batch_size"] * config.context_length
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    context = threads_for(trainers[names[0]].model)
    with context:
        if args.threads:
            torch.set_num_threads(args.threads)
        print(
            f"torch {torch.__version__}, {torch.get_num_threads()} threads, {device}; {len(data.train):,} train / "
            f"{len(data.val):,} val tokens, vocab {tok.vocab_size}; {config}; {args.steps} steps in rounds of "
            f"{args.chunk}; settings {names}; {args.clock} clock",
            flush=True,
        )
        first: dict[str, float] = {}
        for name, trainer in trainers.items():  # step 1 apart: compile happens here, and is timed apart
            t = time.perf_counter()
            float(trainer.train_step())
            first[name] = time.perf_counter() - t
        ms: dict[str, list[float]] = {n: [] for n in names}
        while any(t.step < args.steps for t in trainers.values()):
            for name, trainer in trainers.items():
                n = min(args.chunk, args.steps - trainer.step)
                if n <= 0:
                    continue
                start = clock()
                for _ in range(n):
                    loss = trainer.train_step()
                float(loss)  # wait for the device (the loop reads the loss at its log interval)
                ms[name].append(1000 * (clock() - start) / n)
            done = min(t.step for t in trainers.values())
            print(f"  step {done}: " + ", ".join(f"{k} {v[-1]:.1f} ms" for k, v in ms.items()), flush=True)

        base = names[0]
        print(
            f"\n{'setting':14s} {'first step s':>12s}  {'ms/iter median [min..max]':28s} {'tokens/s':>9s}  "
            f"{'tokens/s ÷ ' + base + ' (per round)':32s} val loss (20 / 200 batches)"
        )
        for name, trainer in trainers.items():
            rounds = min(len(ms[name]), len(ms[base]))
            ratios = [ms[base][i] / ms[name][i] for i in range(rounds)]
            val20 = trainer.estimate_val_loss()
            trainer.cfg.eval_iters = 200
            val200 = trainer.estimate_val_loss()
            print(
                f"{name:14s} {first[name]:12.1f}  {spread(ms[name]):28s} {tokens_per_step * 1000 / statistics.median(ms[name]):9.0f}  "
                f"{spread(ratios):32s} {val20:.4f} / {val200:.4f}",
                flush=True,
            )
        print("goal (issue 12): tokens/s >= 1.5x the torch-layers baseline, val loss <= 1.88 after 2000 iterations")


if __name__ == "__main__":
    main()

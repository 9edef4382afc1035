"""Mixture of experts on a real corpus, held-out loss and routing: tinyshakespeare (character level, 65 symbols: the
one real corpus whose output layer is cheap enough for four models × two seeds in five minutes of a shared 2-core
CPU) or 唐诗三百首 (the 蒙学 edition, simplified; 2,493 characters, about ten times slower a step).

Four GPTs per seed, trained by the lab's own loop (attnlab.train.loop.Trainer) with the same seed, batches, steps
and schedule: `moe` (n_experts experts of hidden width D_FF, top-1, capacity factor 1.25, balance_loss 0.01),
`moe_free` (the same, balance_loss 0), `dense_active` (one FFN of width D_FF: the MoE's active parameters less its
routers) and `dense_total` (one FFN of width n_experts · D_FF: its total, less the routers and E − 1 output biases).
Held out: tinyshakespeare's last tenth (its first MAX_EVAL_TOKENS characters are measured), or a tenth of the poems,
whole, drawn by a seeded shuffle (attnlab.train.data.split_texts); the loss is the mean cross-entropy over
non-overlapping windows of it. Routing is read on those held-out windows: the share of tokens each
expert takes, dead experts (< 2% of their layer's tokens), the busiest expert's share and the characters each
expert takes most. Prints one line per run, then the means over seeds.

    python benchmarks/bench_moe.py [--corpus shakespeare|tangshi] [--steps 300] [--seeds 0 1] [--experts 4] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from pathlib import Path

import torch
import torch.nn.functional as F

from attnlab.models import GPT, GPTConfig
from attnlab.models.count import active_params, count_params
from attnlab.nn.moe import moe_layers
from attnlab.text import CharTokenizer, read_corpus
from attnlab.train.data import TokenData, split_texts
from attnlab.train.loop import TrainConfig, Trainer

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CORPORA = {
    "shakespeare": DATA / "tinyshakespeare" / "input.txt",
    "tangshi": DATA / "chinese-poetry" / "蒙学" / "tangshisanbaishou.simplified.json",
}
MAX_EVAL_TOKENS = 16384
BASE = dict(context_length=32, d_model=64, n_heads=4, n_layers=2, norm_first=True, activation="gelu")
D_FF = 64  # each expert's hidden width
DEAD = 0.02


def configs(vocab: int, E: int) -> dict[str, GPTConfig]:
    base = {**BASE, "vocab_size": vocab}
    moe = dict(ffn="moe", n_experts=E, top_k=1, capacity_factor=1.25, d_ff=D_FF)
    return {
        "moe": GPTConfig(**base, **moe, balance_loss=0.01),
        "moe_free": GPTConfig(**base, **moe, balance_loss=0.0),
        "dense_active": GPTConfig(**base, d_ff=D_FF),
        "dense_total": GPTConfig(**base, d_ff=E * D_FF),
    }


def shown(tok, c: int) -> str:
    """A character as the table prints it: the end-of-text mark ␃, a line break ⏎, a space ␣."""
    return "␃" if c == tok.eot_id else {"\n": "⏎", " ": "␣"}.get(tok.decode([c]), tok.decode([c]))


@torch.no_grad()
def held_out(model: GPT, val: torch.Tensor, tok) -> tuple[float, list | None]:
    """Mean cross-entropy over every non-overlapping window of the held-out stream, and each MoE layer's routing."""
    T = model.config.context_length
    val = val[: MAX_EVAL_TOKENS + 1]
    n = (len(val) - 1) // T
    x, y = val[: n * T].reshape(n, T), val[1 : n * T + 1].reshape(n, T)  # (n, T) each
    model.eval()
    loss = float(F.cross_entropy(model(x).flatten(0, 1), y.flatten()))
    layers = []
    read = x.flatten().tolist()
    for layer in moe_layers(model):
        counts = layer.tokens_per_expert.tolist()
        share = [c / sum(counts) for c in counts]
        per = [Counter() for _ in counts]
        for ch, e in zip(read, layer.choice.flatten().tolist()):
            per[e][ch] += 1
        top = ["".join(shown(tok, c) for c, _ in p.most_common(8)) for p in per]
        layers.append(
            {
                "share": share,
                "dead": sum(s < DEAD for s in share),
                "busiest": max(share),
                "balance": float(layer.aux_loss),
                "dropped": layer.dropped,
                "top": top,
            }
        )
    return loss, layers or None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="shakespeare")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--experts", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1, help="1: steadier on a shared machine")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    corpus = CORPORA[args.corpus]
    if not corpus.is_file():
        raise SystemExit(f"corpus not found at {corpus}")
    texts = read_corpus(str(corpus))
    tok = CharTokenizer.train(texts)
    if args.corpus == "tangshi":
        train_texts, val_texts = split_texts(texts, 0.1, seed=0)
        data = TokenData.from_split(train_texts, val_texts, tok)
    else:
        data = TokenData.from_texts(texts, tok, val_fraction=0.1)
    cfgs = configs(tok.vocab_size, args.experts)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); {corpus.name}: {len(data.train):,} train / "
        f"{len(data.val):,} held-out tokens (first {min(len(data.val), MAX_EVAL_TOKENS):,} measured), vocab {tok.vocab_size}; "
        f"{args.steps} steps, batch 16, lr 3e-3 cosine; E = {args.experts}, top-1, capacity 1.25"
    )
    for name, c in cfgs.items():
        print(f"  {name:12s} d_ff {c.hidden:4d}  total {count_params(c):9,}  active {active_params(c):9,}")
    results: dict[str, list] = {name: [] for name in cfgs}
    start = time.perf_counter()
    for seed in args.seeds:
        for name, c in cfgs.items():
            torch.manual_seed(seed)
            model = GPT(c)
            trainer = Trainer(
                model,
                data,
                TrainConfig(
                    steps=args.steps,
                    batch_size=16,
                    lr=3e-3,
                    warmup_steps=20,
                    seed=seed,
                    eval_iters=1,
                    log_interval=args.steps,
                ),
            )
            t0 = time.perf_counter()
            trainer.run()
            loss, routing = held_out(model, data.val, tok)
            results[name].append((loss, routing))
            line = f"seed {seed} {name:12s} held-out {loss:.4f}  ({time.perf_counter() - t0:.0f} s)"
            if routing:
                line += "  " + " | ".join(
                    f"L{i + 1} shares {' '.join(f'{s:.2f}' for s in r['share'])} dead {r['dead']} "
                    f"balance {r['balance']:.3f} dropped {r['dropped']}"
                    for i, r in enumerate(routing)
                )
            print(line, flush=True)
    print(f"means over seeds {args.seeds} ({time.perf_counter() - start:.0f} s in all):")
    for name, runs in results.items():
        losses = [loss for loss, _ in runs]
        spread = f" ± {statistics.stdev(losses):.4f}" if len(losses) > 1 else ""
        line = f"  {name:12s} held-out {statistics.mean(losses):.4f}{spread}  per seed {' '.join(f'{x:.4f}' for x in losses)}"
        if runs[0][1]:
            dead = [sum(r["dead"] for r in routing) for _, routing in runs]
            busiest = [max(r["busiest"] for r in routing) for _, routing in runs]
            line += f"  dead experts {dead}  busiest share {' '.join(f'{b:.2f}' for b in busiest)}"
        print(line)
    for name in ("moe", "moe_free"):
        routing = results[name][0][1]
        print(f"characters each expert takes most (seed {args.seeds[0]}, {name}):")
        for i, r in enumerate(routing):
            print(f"  L{i + 1}: " + "  ".join(f"E{e + 1} {top}" for e, top in enumerate(r["top"])))


if __name__ == "__main__":
    main()

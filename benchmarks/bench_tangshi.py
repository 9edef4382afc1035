"""唐诗三百首 (the 蒙学 edition, simplified) on the CPU for a fixed wall-clock budget (default 10 minutes).

A short calibration run measures the time per step; the real run then gets as many steps as fit in the
budget (so its learning-rate schedule ends on time) and stops early if the machine slows down. Model: the
`tangshi-small` preset (6 layers, 6 heads, d_model 192, context 128, dropout 0.1), character tokenizer,
the last 10% of the poems held out. Prints the validation loss and five sample lines, each started from the
end-of-text mark (a new poem), sampled at temperature 0.8 with top-k 40.

    python benchmarks/bench_tangshi.py [--minutes 10] [--threads N] [--out DIR] [--preset NAME] [--dropout P]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from attnlab.sampling import generate
from attnlab.train import new_run

CORPUS = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "data"
    / "chinese-poetry"
    / "蒙学"
    / "tangshisanbaishou.simplified.json"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=None, help="also save the checkpoint here")
    parser.add_argument("--preset", default="tangshi-small", help="model preset (default tangshi-small)")
    parser.add_argument("--dropout", type=float, default=None, help="override the preset's dropout")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if not CORPUS.is_file():
        raise SystemExit(f"corpus not found at {CORPUS}")
    budget = 60 * args.minutes
    settings = dict(preset=args.preset, dropout=args.dropout, device=args.device, seed=0)

    calib = new_run(str(CORPUS), steps=30, **settings)
    marks = {}
    calib.trainer.run(
        callback=lambda e: marks.__setitem__(e["step"], time.perf_counter()) if e["type"] == "step" else None
    )
    per_step = (marks[29] - marks[5]) / 24
    steps = max(50, int(0.97 * budget / per_step))
    run = new_run(
        str(CORPUS), steps=steps, eval_interval=max(1, steps // 10), eval_iters=20, log_interval=50, **settings
    )
    n_params = sum(p.numel() for p in run.model.parameters())
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {run.trainer.device}; "
        f"{len(run.texts)} poems, {len(run.data.train):,} train / {len(run.data.val):,} val tokens, "
        f"vocab {run.tokenizer.vocab_size}, {n_params:,} parameters; {per_step * 1000:.0f} ms/step -> {steps} steps",
        flush=True,
    )

    start = time.perf_counter()

    def show(event: dict) -> None:
        if event["type"] == "step" and event["val_loss"] is not None:
            print(
                f"  step {event['step']:5d}  loss {event['loss']:.4f}  val loss {event['val_loss']:.4f}  "
                f"{event['seconds']:.0f} s",
                flush=True,
            )

    result = run.trainer.run(callback=show, should_stop=lambda: time.perf_counter() - start > budget)
    best = min((h for h in run.trainer.history if h["val_loss"] is not None), key=lambda h: h["val_loss"])
    print(
        f"val loss {result.val_loss:.4f} after {result.step} steps in {result.seconds:.0f} s"
        + (" (stopped at the time limit)" if result.stopped else "")
        + f"; lowest on the way {best['val_loss']:.4f} at step {best['step']}"
    )
    if args.out:
        print(f"saved {run.save(args.out)}")
    print("five sample lines (each a new poem's first line):")
    for seed in range(5):
        gen = generate(run.model, run.tokenizer, "", max_new_tokens=64, temperature=0.8, top_k=40, seed=seed)
        print("  " + (gen.new_text.split("\n")[0] or gen.new_text))


if __name__ == "__main__":
    main()

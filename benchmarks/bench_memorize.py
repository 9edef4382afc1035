"""Seconds to memorize 床前明月光 and the whole 静夜思 on this machine (target for the line: under 3 s).

For each built-in text and several seeds: build the seeded model, train it with the default step budget
(what `attnlab train --corpus NAME` does), then check that greedy generation recites the text. Prints the
wall-clock time of build + training, and the smallest budget that recites for every seed.

    python benchmarks/bench_memorize.py [--seeds 5] [--threads N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from attnlab.sampling import generate
from attnlab.text import BUILTIN_TEXTS
from attnlab.train import corpus_defaults, new_run

PROMPTS = {"poem": "床前", "jingyesi": "床"}


def recites(run, name: str) -> bool:
    gen = generate(run.model, run.tokenizer, PROMPTS[name], max_new_tokens=40, greedy=True)
    return gen.text == BUILTIN_TEXTS[name] and gen.stop_reason == "eot"


def timed_run(name: str, seed: int, steps: int | None = None) -> tuple[float, bool]:
    start = time.perf_counter()
    run = new_run(name, seed=seed, steps=steps, device="cpu")
    run.trainer.run()
    seconds = time.perf_counter() - start
    return seconds, recites(run, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    timed_run("poem", 0, steps=2)  # warm-up: first-call overheads are not training

    for name in ("poem", "jingyesi"):
        default_steps = corpus_defaults(name)[1]["steps"]
        results = [timed_run(name, seed) for seed in range(args.seeds)]
        times = [s for s, _ in results]
        ok = sum(r for _, r in results)
        print(
            f"{name:9s} default budget {default_steps:4d} steps: median {statistics.median(times):.2f} s "
            f"(min {min(times):.2f}, max {max(times):.2f}), recited {ok}/{args.seeds}"
        )
        for steps in (5, 10, 15, 20, 30, 40, 50, 75, 100, 150):
            runs = [timed_run(name, seed, steps) for seed in range(args.seeds)]
            if all(r for _, r in runs):
                print(
                    f"{name:9s} smallest budget that recites for every seed: {steps} steps, "
                    f"median {statistics.median(s for s, _ in runs):.2f} s"
                )
                break


if __name__ == "__main__":
    main()

"""The full CPU scaling sweep on 全唐诗 (issue 24, ⑦): `attnlab scale` with its defaults, then the numbers.

Trains the sweep's family of GPTs (attnlab.lessons.scale.planning.LADDER: about 3k to 2.7M non-embedding parameters) on
every poem of the 全唐诗 slice, on three compute budgets 4× apart chosen to fit --minutes by each size's measured
step time here, plus the fixed-window MLP baseline; fits L(N, D) = E + A/N^α + B/D^β with bootstrap intervals;
prints every run, the exponents with their intervals and the range they hold for, and the compute-optimal size per
budget (fitted and measured) beside Chinchilla's ~20 tokens per parameter. Resumable: the same --out continues.

    python benchmarks/bench_scale.py [--minutes 30] [--out DIR] [--corpus DIR] [--device cpu]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_poems import CORPUS  # ../shared/data's 全唐诗, found as bench_poems.py finds it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--out", type=Path, default=None, help="the sweep's folder (default: a new temporary one)")
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--lang", default="en", choices=("zh", "en"))
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="attnlab-scale-")) / "sweep"
    print(f"sweep folder: {out}", flush=True)
    command = [
        sys.executable,
        "-m",
        "attnlab",
        "scale",
        "--corpus",
        args.corpus,
        "--out",
        str(out),
        "--minutes",
        str(args.minutes),
        "--device",
        args.device,
        "--lang",
        args.lang,
    ]
    raise SystemExit(subprocess.run(command, check=False).returncode)  # its progress and results, as they come


if __name__ == "__main__":
    main()

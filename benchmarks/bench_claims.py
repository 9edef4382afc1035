"""The claims at many random settings: the longer sweep behind tests/test_claims_rule.py's few draws.

For every topic, draws N valid settings from its form at random (the full ranges, not the tests' reduced ones,
unless --quick), runs the lesson, and counts each claim's outcome (shown / not shown / contradicted). It also
redoes every status from the claim's own printed numbers (measured, baseline, margin, direction) and lists any
claim whose status its numbers do not give: that list must be empty. Prints, per claim, how often it was shown,
so a learner (or a reviewer) sees which claims depend on the settings, and how much.

    python benchmarks/bench_claims.py [--n 20] [--seed 0] [--topic sqrt-dk] [--quick]
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections import Counter, defaultdict

from attnlab.lessons.common.claims import status_of
from attnlab.lessons.common.params import Param, ParamError
from attnlab.lessons.explain import TOPICS, get_topic

# With --quick, the parameters that cost time stay at most these (the tests' sizes).
QUICK = {
    "n_samples": 1000,
    "train_steps": 60,
    "steps": 120,
    "n_test": 10,
    "seeds": 3,
    "n_max": 64,
    "repeats": 1,
    "time_n_max": 64,
    "time_d_model": 32,
}


def draw(p: Param, rng: random.Random, quick: bool):
    if p.kind == "int":
        hi = int(p.hi) if not quick or p.name not in QUICK else min(int(p.hi), max(int(p.lo), QUICK[p.name]))
        if p.log and p.lo >= 1:  # sizes read on a log scale: draw the exponent
            return min(hi, int(round(2 ** rng.uniform(math.log2(p.lo), math.log2(hi)))))
        return rng.randint(int(p.lo), hi)
    if p.kind == "float":
        return rng.uniform(p.lo, p.hi)
    if p.kind == "choice":
        return rng.choice(list(p.choices))
    if p.kind == "bool":
        return rng.random() < 0.5
    return p.default  # text and file paths: the default


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="random settings per topic")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--topic", action="append", help="only these topics (repeatable)")
    parser.add_argument("--quick", action="store_true", help="keep training steps and timing sizes small")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    mismatches: list[str] = []
    for name in args.topic or list(TOPICS):
        topic = get_topic(name)
        outcomes: dict[str, Counter] = defaultdict(Counter)
        refused, start = 0, time.perf_counter()
        for _ in range(args.n):
            settings = {p.name: draw(p, rng, args.quick) for p in topic.params if not p.cli_only}
            try:
                result = topic.run(lang="en", **settings)
            except ParamError:
                refused += 1
                continue
            for c in result.claims:
                outcomes[c.id][c.status] += 1
                redone = status_of(c.direction, c.measured, c.baseline, c.margin)
                if redone != c.status:
                    mismatches.append(f"{name}.{c.id} at {settings}: prints {c.status}, its numbers give {redone}")
        print(
            f"\n{name}: {args.n} settings ({refused} refused by the form's own checks), "
            f"{time.perf_counter() - start:.0f} s"
        )
        for cid, counts in outcomes.items():
            total = sum(counts.values())
            print(
                f"  {cid:28s} shown {counts['shown']:3d}/{total:<3d}  not shown {counts['not_shown']:3d}  "
                f"contradicted {counts['contradicted']:3d}"
            )
    print(f"\nstatuses their own numbers do not give: {len(mismatches)}")
    for m in mismatches:
        print("  " + m)
    raise SystemExit(1 if mismatches else 0)


if __name__ == "__main__":
    main()

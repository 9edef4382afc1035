"""The claims at many random settings: the longer sweep behind tests/test_claims_rule.py's few draws.

For every topic, draws N valid settings from its form at random (the full ranges, not the tests' reduced ones,
unless --quick), runs the lesson, and counts each claim's outcome (shown / not shown / contradicted). It also
redoes every status from the claim's own printed numbers (measured, baseline, margin, direction) and lists any
claim whose status its numbers do not give: that list must be empty. Prints, per claim, how often it was shown,
so a learner (or a reviewer) sees which claims depend on the settings, and how much, and how often its declared
null (lessons/common/nulls.py, run at the same settings) showed it: that count should be 0.

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


def with_nulls(topic, settings: dict):
    """The lesson at `settings`, its claims carrying their nulls (each null run at its settings merged over these;
    lessons/common/nulls.py), as every view shows them."""
    result = topic.run(lang="en", **settings)
    done = []
    for other in topic.null_settings(result, settings):
        try:
            done.append(topic.run(lang="en", **other))
        except ParamError:
            done.append(None)
    return topic.with_nulls(result, settings, "en", done)


def shaped(settings: dict, params: tuple, rng: random.Random) -> dict:
    """A typed model configuration drawn whole (scale's and memory's `layers`, `d_model`, `heads`, ...), since its
    sizes depend on each other as the form says: the heads divide d_model, the K/V heads divide the heads (0: as
    many), and a configuration with layers gives its vocabulary and context. Drawn one by one they almost never
    agree, and every draw would be refused. Other settings are left as drawn."""
    if not settings.get("layers") or not {"d_model", "heads"} <= set(settings):
        return settings
    p = {x.name: x for x in params}
    out = dict(settings)
    heads = max(1, out["heads"])
    out["heads"] = heads
    width = draw(p["d_model"], rng, False)  # on the form's own scale, then rounded to a multiple of the heads
    out["d_model"] = heads * max(1, min(int(p["d_model"].hi) // heads, round(width / heads)))
    if out.get("kv_heads"):
        out["kv_heads"] = rng.choice([k for k in range(1, heads + 1) if heads % k == 0])
    for name in ("vocab", "context"):
        if name in out and not out[name]:
            out[name] = max(1, draw(p[name], rng, False))
    return out


TRIES = 200  # draws per setting until the form's own checks (the lesson's cost()) accept one


def valid(topic, rng: random.Random, quick: bool) -> dict:
    """Settings drawn until the lesson's cost() accepts them: sizes that must divide each other (heads and
    widths) rarely agree when drawn one by one, and a refused draw tests nothing. The last draw if none is."""
    for _ in range(TRIES):
        settings = {p.name: draw(p, rng, quick) for p in topic.params if not p.cli_only}
        settings = shaped(settings, topic.params, rng)
        try:
            topic.cost(**settings)
        except ParamError:
            continue
        return settings
    return settings


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
            settings = valid(topic, rng, args.quick)
            try:
                result = with_nulls(topic, settings)
            except ParamError:  # the lesson refuses what its cost() let through (a corpus-dependent value)
                refused += 1
                continue
            for c in result.claims:
                outcomes[c.id][c.status] += 1
                if c.null is not None:
                    outcomes[c.id]["null " + c.null["status"]] += 1
                redone = status_of(c.direction, c.measured, c.baseline, c.margin)
                if redone == "shown" and c.null is not None and c.null["status"] == "shown":
                    redone = "not_shown"  # it does not beat its null
                if redone != c.status:
                    mismatches.append(f"{name}.{c.id} at {settings}: prints {c.status}, its numbers give {redone}")
        print(
            f"\n{name}: {args.n} settings ({refused} refused by the lesson after its cost() let them through), "
            f"{time.perf_counter() - start:.0f} s"
        )
        for cid, counts in outcomes.items():
            total = sum(v for k, v in counts.items() if not k.startswith("null "))
            nulls = sum(v for k, v in counts.items() if k.startswith("null "))
            on_null = f"  on its null: shown {counts['null shown']:3d}/{nulls}" if nulls else "  (identity: no null)"
            print(
                f"  {cid:28s} shown {counts['shown']:3d}/{total:<3d}  not shown {counts['not_shown']:3d}  "
                f"contradicted {counts['contradicted']:3d}{on_null}"
            )
    print(f"\nstatuses their own numbers do not give: {len(mismatches)}")
    for m in mismatches:
        print("  " + m)
    raise SystemExit(1 if mismatches else 0)


if __name__ == "__main__":
    main()

"""Each topic at its heaviest accepted settings: what its cost estimate says, and the peak it measures.

    python tests/cost_peaks.py [TOPIC ...]     # one JSON line per topic (tests/test_cost_bounds_peak.py runs it)

The heaviest accepted settings: the parameters that only cost time (steps, repeats, seeds) at the lesson's
QUICK value, or their least; every other number at the largest value its form takes, and every choice at the
one its estimate finds heaviest, one after the other, each kept where the lesson still accepts it (its cost()
raises nothing, the web would admit it: budget.lane_for) and reset where it does not. The peak is the process's resident memory above where it stood, read from the
kernel's high-water mark (VmHWM, reset through /proc/self/clear_refs): it counts what torch and numpy allocate,
which tracemalloc does not see. A first run at QUICK with another seed and its time parameters at their least imports what the lesson needs (no part
of a request's peak), and freed memory goes back to the system before each measurement (web.memory.trim).
Linux only: that is where the lab's budget is measured.
"""

from __future__ import annotations

import json
import sys

TIME = {"steps", "train_steps", "gpt_steps", "repeats", "n_seeds", "seeds", "n_test"}  # cost time, not memory


def kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field))


def accepted(topic, settings: dict) -> bool:
    from attnlab.lessons.common.params import ParamError
    from attnlab.web import budget

    try:
        budget.lane_for(topic.cost(**settings))
    except (ParamError, budget.TooLarge):
        return False
    return True


def heaviest(topic) -> dict:
    """Time parameters small, every other number at its largest accepted value (module doc)."""
    quick = topic.quick
    settings = {p.name: p.lo for p in topic.params if p.name in TIME and p.kind == "int" and p.name not in quick}
    settings.update(quick)
    for p in [*topic.params, *topic.params]:  # twice: a size refused early may be taken once another has grown
        if p.cli_only or p.name in TIME or p.name == "seed":
            continue
        if p.kind in ("int", "float"):
            top = int(p.hi) if p.kind == "int" else p.hi
            if accepted(topic, {**settings, p.name: top}):
                settings[p.name] = top
        elif p.kind == "choice":  # the choice the estimate finds heaviest, of those accepted
            costs = {c: estimate(topic, {**settings, p.name: c}) for c in p.choices}
            top = max((c for c in costs if costs[c] is not None), key=lambda c: costs[c], default=None)
            if top is not None and costs[top] > (estimate(topic, settings) or 0.0):
                settings[p.name] = top
    return settings


def estimate(topic, settings: dict) -> float | None:
    return topic.cost(**settings).mb if accepted(topic, settings) else None


def measure(name: str) -> dict:
    from attnlab.lessons.common.params import ParamError
    from attnlab.lessons.explain import TOPICS
    from attnlab.web.memory import trim

    topic = TOPICS[name]
    settings = heaviest(topic)
    estimate = topic.cost(**settings).mb
    warm = {**topic.quick, **({"seed": 7} if any(p.name == "seed" for p in topic.params) else {})}
    warm.update({p.name: p.lo for p in topic.params if p.name in TIME and p.kind == "int"})  # imports, not training
    try:
        topic.run(lang="en", **warm)
    except ParamError:
        pass
    trim()
    before = kib("VmRSS:")
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")  # the high-water mark starts again from here
    refused = None
    try:
        topic.run(lang="en", **settings)
    except ParamError as err:  # a combination its cost() passed and the lesson itself refuses: still a bound
        refused = str(err)
    peak = (kib("VmHWM:") - before) / 1024
    trim()
    return {"topic": name, "settings": settings, "estimate_mb": estimate, "peak_mb": round(peak, 1), "refused": refused}


def main(names: list[str]) -> None:
    import torch

    import attnlab.web.memory  # noqa: F401 - the server's allocator settings (few arenas, large blocks mapped)
    from attnlab.lessons.explain import TOPICS

    torch.set_num_threads(1)
    for name in names or list(TOPICS):
        print(json.dumps(measure(name), ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

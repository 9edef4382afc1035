"""positional's memory estimate bounds what it allocates (issue 37: counted as the default 16 MB, it took about
800 MB a request at its largest values, and 16 at once starved the other lessons). The lesson computes with numpy,
whose arrays tracemalloc traces; its peak at the heaviest accepted values is at most the estimate the web's slots
use, and the estimate does not overstate it tenfold."""

from __future__ import annotations

import tracemalloc

from attnlab.lessons.common.cost import MIB
from attnlab.lessons.explain import get_topic

HEAVIEST = {"n_positions": 512, "d_model": 512, "delta": 4096, "n_check": 100000}


def test_the_estimate_bounds_the_peak_at_the_heaviest_values():
    topic = get_topic("positional")
    assert all(HEAVIEST[p.name] == p.hi for p in topic.params)  # the form's largest values, each one
    estimate = topic.cost(**HEAVIEST).mb
    topic.run(lang="en", **topic.quick)  # what a first run imports (torch) is no part of a request's peak
    tracemalloc.start()
    try:
        topic.run(lang="en", **HEAVIEST)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak / MIB <= estimate < 10 * max(peak / MIB, 1.0), (peak / MIB, estimate)
    assert topic.cost(**topic.quick).mb <= estimate  # smaller values, no larger estimate

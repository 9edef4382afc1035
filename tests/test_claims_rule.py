"""The rule: no claim a lesson prints is false, for any seed and at the edges of every parameter its form accepts.

Generic over the registry: every topic in attnlab.lessons.explain.TOPICS is run
  * at its defaults and with seeds 0-9 (when it has a `seed` parameter), and
  * with each parameter at each of its edges, one at a time (min and max of a range, every choice, both
    booleans, the empty and the longest text), the others at the topic's base settings,
and a claim with holds=False fails the test, unless the setting is a deliberate "break it" switch (BREAK_IT).
A setting the lesson refuses with a ParamError (too large for memory, an empty sentence) prints no claim.

Time: a few topics train or time something; TEST_SIZED shrinks their other parameters while one is at its
edge (and for the seed sweep), so the whole file stays well within two minutes on two cores. The parameter at
its edge is always the real edge of the form.
"""

from __future__ import annotations

import pytest

from attnlab.lessons.explain import TOPICS, get_topic
from attnlab.lessons.common.params import Param, ParamError

# Settings whose purpose is to break an invariant: there the lesson must print the claim as false.
BREAK_IT = {("position-wise", "bug", True)}

# Test-sized values for the parameters that cost time (training steps, timing sizes, samples). They never
# replace the parameter under test, and a topic not listed runs at its defaults.
TEST_SIZED = {
    "sqrt-dk": {"n_samples": 1000},
    "multihead": {"train_steps": 50},
    "serial-vs-parallel": {"n_max": 64, "repeats": 1},
    "complexity": {"time_n_max": 64, "time_d_model": 32, "repeats": 1},
    "one-hot": {"train_steps": 20},
    "seq2seq": {"steps": 100, "n_test": 5},
    "mlm": {"steps": 40, "d_model": 8},
    "break": {"train_steps": 40, "seeds": 3},
}

SEEDS = range(10)


def edges(p: Param) -> list:
    if p.kind == "int":
        return [int(p.lo), int(p.hi)]
    if p.kind == "float":
        return [p.lo, p.hi]
    if p.kind == "choice":
        return list(p.choices)
    if p.kind == "bool":
        return [False, True]
    return ["", "x" * (p.max_len or 1)]  # str: the empty text and the longest the form takes


def base(topic: str) -> dict:
    names = {p.name for p in get_topic(topic).params}
    return {k: v for k, v in TEST_SIZED.get(topic, {}).items() if k in names}


def edge_cases():
    for name, topic in TOPICS.items():
        for p in topic.params:
            for value in edges(p):
                yield pytest.param(name, p.name, value, id=f"{name}-{p.name}={value!r:.20}")


def seed_cases():
    for name, topic in TOPICS.items():
        if any(p.name == "seed" for p in topic.params):
            for seed in SEEDS:
                yield pytest.param(name, seed, id=f"{name}-seed={seed}")


def false_claims(topic: str, settings: dict, lang: str = "en") -> list[str]:
    try:
        result = get_topic(topic).run(lang=lang, **settings)
    except ParamError:
        return []  # refused with a readable message: nothing was claimed
    claims = getattr(result, "claims", [])
    for c in claims:
        assert isinstance(c.holds, bool), (topic, settings, c.id)  # every claim carries holds
    return [f"{c.id}: {c.text}" for c in claims if not c.holds]


def test_every_topic_is_covered():
    covered = {case.values[0] for case in edge_cases()} | {case.values[0] for case in seed_cases()}
    no_params = {name for name, topic in TOPICS.items() if not topic.params}
    assert covered | no_params == set(TOPICS)


@pytest.mark.parametrize("topic", list(TOPICS))
def test_defaults_print_no_false_claim(topic):
    assert false_claims(topic, {}) == []


@pytest.mark.parametrize("topic,seed", list(seed_cases()))
def test_no_false_claim_for_seeds_0_to_9(topic, seed):
    assert false_claims(topic, {**base(topic), "seed": seed}) == []


@pytest.mark.parametrize("topic,name,value", list(edge_cases()))
def test_no_false_claim_at_the_edges_of_the_form(topic, name, value):
    settings = {**base(topic), name: value}
    bad = false_claims(topic, settings)
    if (topic, name, value) in BREAK_IT:
        assert bad, f"{topic} with {name}={value!r} is meant to break an invariant, and its claims should say so"
    else:
        assert bad == [], f"{topic} with {settings}"


@pytest.mark.parametrize("topic,name,value", sorted(BREAK_IT))
def test_break_it_settings_are_real_parameters(topic, name, value):
    params = {p.name: p for p in get_topic(topic).params}
    assert name in params and params[name].parse(value) == value

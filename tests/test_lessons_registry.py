"""The topic registry: names, parameter specs, parsing of raw strings, JSON-able results."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnlab.lessons.common.params import Param, ParamError
from attnlab.lessons.explain import TOPICS, as_dict, explain, get_topic

# The topics the public contract names (DESIGN.md): each must stay registered; a new topic needs no line here.
ISSUE_TOPICS = [
    "sqrt-dk",
    "positional",
    "permutation",
    "multihead",
    "position-wise",
    "rnn-gradients",
    "serial-vs-parallel",
    "complexity",
    "forms",
    "glossary",
    "norms",
    "context-vectors",
    "one-hot",
    "seq2seq",
    "break",
    "mlm",
    "scale",
    "flash",
    "memory",
    "moe",
    "data-parallel",
    "logit-lens",
    "ffn-memory",
    "patching",
    "induction",
    "word2vec",
]


def test_every_topic_of_the_issue_is_registered_with_specs_and_a_figure():
    assert [name for name in TOPICS if name in ISSUE_TOPICS] == ISSUE_TOPICS  # all there, in course order
    assert len({t.slug for t in TOPICS.values()}) == len(TOPICS)
    for topic in TOPICS.values():
        assert callable(topic.lesson) and callable(topic.piece("figure").plot) and callable(topic.view)
        names = [p.name for p in topic.params]
        assert len(names) == len(set(names))
        for p in topic.params:
            assert p.parse(p.default) == p.default  # every default passes its own check


def test_raw_strings_and_dashed_names_are_parsed():
    r = explain("sqrt_dk", **{"d-k": "16", "n_samples": "500", "n-keys": "4"})
    assert r.params["d_k"] == 16 and r.params["n_samples"] == 500
    assert json.loads(json.dumps(as_dict(r)))["chosen"]["d_k"] == 16


def test_unknown_topic_and_parameter_are_named():
    with pytest.raises(KeyError, match="sqrt-dk"):
        get_topic("nope")
    with pytest.raises(ParamError, match="no parameter dk"):
        explain("sqrt-dk", dk=3)


@given(st.one_of(st.text(max_size=5), st.integers(-(10**6), 10**6), st.floats(allow_nan=True)))
def test_param_parse_accepts_in_range_and_rejects_everything_else_with_a_message(raw):
    p = Param("d_k", "int", 4, 1, 1024)
    try:
        value = p.parse(raw)
    except ParamError as err:
        assert "d_k must be an integer from 1 to 1024" in str(err)
    else:
        assert isinstance(value, int) and 1 <= value <= 1024


@pytest.mark.parametrize("name", list(TOPICS))
def test_every_lesson_owns_its_quick_settings_and_its_cost_facts(name):
    """QUICK (beside PARAMS) names only the lesson's own parameters, with values its form takes and that differ
    from the defaults (a QUICK value equal to the default would shrink nothing); HEAVY says whether it takes
    seconds: a lesson that trains at its defaults is heavy."""
    topic = TOPICS[name]
    params = {p.name: p for p in topic.params}
    assert set(topic.quick) <= set(params), sorted(set(topic.quick) - set(params))
    for key, value in topic.quick.items():
        assert params[key].parse(value) == value and value != params[key].default, (key, value)
    assert topic.cost(**topic.quick).mb <= topic.cost().mb or not topic.quick  # quick is never costlier in memory
    if topic.cost().trains:
        assert topic.heavy, f"{name} trains: its lesson.py should say HEAVY = True"
    assert not (topic.heavy and topic.together)

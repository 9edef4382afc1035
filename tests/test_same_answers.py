"""A move of code changes no answer: every /api/... JSON answer and every CLI --json output at each topic's
defaults is byte-identical to the one recorded in tests/answers/defaults.json (recorded at the commit before
the lessons moved into their folders, by `python tests/answers_support.py`).

Measured times are the one thing that differs from run to run: a field named *seconds*, the complexity
lesson's fitted time exponent `time_slope`, the scale lesson's measured `flops_per_s` and the `days_here` it gives, and a topic's progress status "done" or "idle" (the server keeps
only the results that took 0.2 s or more, so a quick topic is kept on a busy machine and not on an idle one)
are compared as placeholders, everything else byte for byte.
"""

from __future__ import annotations

import json
import re

import pytest

from answers_support import RECORD, answers

TIMED = re.compile(r'("(?:\w*seconds\w*|time_slope|flops_per_s|days_here)":\s?)(-?[0-9.e+-]+|null)')
KEPT = re.compile(r'^200 \{"status":"(?:done|idle)",')


def untimed(text: str) -> str:
    return KEPT.sub('200 {"status":<kept or not>,', TIMED.sub(r"\1<measured>", text))


@pytest.fixture(scope="module")
def recorded() -> dict[str, str]:
    return json.loads(RECORD.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def now(recorded) -> dict[str, str]:
    return answers(set(recorded))


def test_the_record_covers_every_topic_the_api_and_the_cli(recorded):
    from attnlab.lessons.explain import TOPICS

    for name in TOPICS:
        assert f"GET /api/explain/{name}" in recorded and f"attnlab explain {name} --json" in recorded, name
    refused = [k for k, v in recorded.items() if v.split(" ", 1)[0] not in ("200", "0")]
    assert refused == ["GET /api/toy/check?question=future&answer=0"]  # one refusal: its message must not change either


def test_every_answer_is_byte_identical_to_the_recorded_one(recorded, now):
    assert set(now) == set(recorded)
    changed = [k for k in recorded if untimed(now[k]) != untimed(recorded[k])]
    assert not changed, f"{len(changed)} answers changed, e.g. {changed[:5]}"


def test_the_placeholder_hides_only_measured_times():
    text = '{"n":64,"seconds":0.0012,"rnn_seconds":3e-05,"time_slope":2.3,"slope":2.0}'
    assert untimed(text) == '{"n":64,"seconds":<measured>,"rnn_seconds":<measured>,"time_slope":<measured>,"slope":2.0}'
    assert untimed('200 {"status":"idle","models":[]}') == untimed('200 {"status":"done","models":[]}')
    assert untimed('200 {"status":"training","models":[]}') != untimed('200 {"status":"done","models":[]}')

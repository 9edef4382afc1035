"""A move of code changes no answer: every /api/... JSON answer and every CLI --json output at each topic's
defaults is byte-identical to the one recorded in tests/answers/defaults.json (by `python tests/answers_support.py`),
on a machine whose float arithmetic is the recording's (tests/answers/arithmetic.txt, tests/answers_compare.py).
On another CPU's arithmetic the answers keep their shape, settings and claim ids, and a lesson that does not train
keeps its numbers within float32's rounding: a trained model's last bits are the CPU's, not the code's.

Measured times are the one thing that differs from run to run: a field named *seconds*, the complexity
lesson's fitted time exponent `time_slope`, the scale lesson's measured `flops_per_s` and the `days_here` it gives, and a topic's progress status "done" or "idle" (the server keeps
only the results that took 0.2 s or more, so a quick topic is kept on a busy machine and not on an idle one)
are compared as placeholders, everything else byte for byte.
"""

from __future__ import annotations

import json
import re

import pytest
from answers_compare import answer_problems, probe
from answers_support import ARITHMETIC, RECORD, answers

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


def trains(key: str) -> bool:
    """Whether the answer comes from a lesson that trains at its defaults (its numbers are the CPU's last bits)."""
    from attnlab.lessons.explain import TOPICS

    where = key.split(" ")[1] if key.startswith(("GET ", "POST ")) else key
    for name, topic in TOPICS.items():
        if where.split("?")[0] in (f"/api/explain/{name}", f"/api/explain/{name}/progress") or key.startswith(
            f"attnlab explain {name} "
        ):
            return topic.cost().trains
    return False


@pytest.fixture(scope="module")
def same_arithmetic() -> bool:
    return probe() == ARITHMETIC.read_text(encoding="utf-8").strip()


@pytest.mark.slow  # every topic's defaults, both languages, the API and the CLI
def test_every_answer_is_the_recorded_one(recorded, now, same_arithmetic):
    """Byte for byte where this machine computes as the recording's did; else within what arithmetic explains."""
    assert set(now) == set(recorded)
    if same_arithmetic:
        changed = [k for k in recorded if untimed(now[k]) != untimed(recorded[k])]
        assert not changed, f"{len(changed)} answers changed, e.g. {changed[:5]}"
        return
    changed = {k: p for k in recorded if (p := answer_problems(recorded[k], now[k], trains=trains(k)))}
    assert not changed, f"{len(changed)} answers changed beyond float rounding, e.g. {list(changed.items())[:3]}"


def test_the_comparison_on_other_arithmetic_catches_a_real_change(recorded):
    """The tolerant comparison is not blind: a changed setting, a changed claim id, a number moved by 1% in a lesson
    that does not train, a changed word, a dropped key are all caught; float32 rounding is not."""
    key = "GET /api/explain/positional?lang=en"
    status, body = recorded[key].split(" ", 1)
    data = json.loads(body)
    assert answer_problems(recorded[key], recorded[key], trains=False) == []

    def edited(change) -> str:
        copy = json.loads(body)
        change(copy)
        return f"{status} {json.dumps(copy, ensure_ascii=False)}"

    row = data["table"][1]  # sin and cos of the second position: numbers of order 1
    j = next(j for j, v in enumerate(row) if abs(v) > 0.1)

    def scaled(by: float):
        return lambda d: d["table"][1].__setitem__(j, d["table"][1][j] * by)

    assert answer_problems(recorded[key], edited(scaled(1 + 1e-7)), trains=False) == []  # float32 rounding
    assert answer_problems(recorded[key], edited(scaled(1.01)), trains=False)
    assert answer_problems(recorded[key], edited(scaled(1.01)), trains=True) == []  # a trained lesson: shape only
    assert answer_problems(recorded[key], edited(lambda d: d["params"].update(d_model=7)), trains=True)
    assert answer_problems(recorded[key], edited(lambda d: d["claims"][0].update(id="other")), trains=True)
    assert answer_problems(recorded[key], edited(lambda d: d["claims"][0].update(text="changed words")), trains=False)
    assert answer_problems(recorded[key], edited(lambda d: d.pop("note")), trains=True)
    assert answer_problems(recorded[key], edited(lambda d: d["table"].pop()), trains=True)


def test_the_placeholder_hides_only_measured_times():
    text = '{"n":64,"seconds":0.0012,"rnn_seconds":3e-05,"time_slope":2.3,"slope":2.0}'
    assert untimed(text) == '{"n":64,"seconds":<measured>,"rnn_seconds":<measured>,"time_slope":<measured>,"slope":2.0}'
    assert untimed('200 {"status":"idle","models":[]}') == untimed('200 {"status":"done","models":[]}')
    assert untimed('200 {"status":"training","models":[]}') != untimed('200 {"status":"done","models":[]}')

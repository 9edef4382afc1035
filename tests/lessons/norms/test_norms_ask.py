"""norms' question is answered by the measured changes: LayerNorm's output is the same in any batch (closed form:
it reads the sample's own row), BatchNorm's moves; other changes would make each other option right."""

from dataclasses import replace

import numpy as np
import pytest
from results import result

from attnlab.lessons.explain import TOPICS

TOPIC = TOPICS["norms"]


@pytest.fixture(scope="module")
def r():
    return result("norms", **TOPIC.quick)


def test_at_quick_settings_layernorm_stays_and_batchnorm_changes(r):
    answer = TOPIC.answer(r)
    assert answer.option == "a"
    x = np.array(r.sample)
    by_hand = (x - x.mean()) / np.sqrt(x.var() + 1e-5)  # LayerNorm of the row alone: no batch in it
    assert r.ln_in_a == pytest.approx(by_hand, abs=1e-12) and r.ln_in_b == pytest.approx(by_hand, abs=1e-12)
    assert answer.numbers["ln_diff"] <= 1e-12 and answer.numbers["bn_diff"] > 0.1


@pytest.mark.parametrize(("ln", "bn", "option"), [(0.5, None, "b"), (None, 0.0, "c"), (0.5, 0.0, "d")])
def test_other_changes_make_another_option_right(r, ln, bn, option):
    other = replace(r, ln_diff=r.ln_diff if ln is None else ln, bn_diff=r.bn_diff if bn is None else bn)
    assert TOPIC.answer(other).option == option


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_changes(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "b", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    bn = f"{r.bn_diff:.3g}"
    assert bn in right["why"] and bn in wrong["why"]

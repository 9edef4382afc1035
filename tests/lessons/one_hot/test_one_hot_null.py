"""one-hot's "training pulls characters used alike together" is compared with its strongest null, the same model
trained alike on the same characters shuffled (attnlab.text.shuffled_chars), in the same run; trained on the
shuffled characters itself, the lesson is its own twin and the claim ties, never a verdict."""

import pytest
import torch
from results import result

from attnlab.lessons.explain import TOPICS
from attnlab.lessons.one_hot import lesson as OH

pytestmark = pytest.mark.slow  # trains the lesson's model

QUICK = TOPICS["one-hot"].quick


def claim(r, name="training_context"):
    return next(c for c in r.claims if c.id == name)


def test_the_control_is_the_twin_trained_on_the_shuffled_characters():
    r = result("one-hot", **QUICK)
    c = claim(r)
    assert c.baseline == r.context_corr_shuffled != r.context_corr_init  # not the untrained table
    assert c.values["context_corr_shuffled"] == r.context_corr_shuffled and r.context_corr_shuffled != r.context_corr


@pytest.mark.parametrize("seed", [0, 3])
def test_on_the_shuffled_characters_the_model_is_its_own_twin(seed):
    r = result("one-hot", shuffle=True, seed=seed, **QUICK)
    c = claim(r)
    assert c.status == "not_shown" and c.measured == c.baseline  # a tie by construction
    assert "shuffled" in r.note
    plain = result("one-hot", seed=seed, **QUICK)
    assert r.context_corr == plain.context_corr_shuffled  # the twin of the plain run, trained alone
    assert r.context_corr_init == plain.context_corr_init  # the same initial table


def test_the_twin_trains_on_the_same_characters_in_another_order(monkeypatch):
    seen = []
    true_train = OH.train

    def spy(stream, vocab, d, steps, seed, name=OH.MODEL):
        seen.append(stream.clone())
        return true_train(stream, vocab, d, steps, seed, name)

    monkeypatch.setattr(OH, "train", spy)
    OH.one_hot(lang="en", **QUICK)
    real, shuffled = seen
    assert not torch.equal(real, shuffled) and torch.equal(real.sort().values, shuffled.sort().values)

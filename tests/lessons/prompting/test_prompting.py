"""The prompting topic (issue 38, part 1): in-context learning of a fresh mapping by a model trained only to copy.
The prompts against their definition, the ceiling k/K + (K − k)/K² against a reader that does exactly that, the
accuracies against the model's own logits, the claims at the defaults and on their null (trained on shuffled
tokens), and the --json contract."""

from __future__ import annotations

import json
import math

import pytest
import torch
from results import explained, result
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.common.claims import SHOWN
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import TOPICS
from attnlab.lessons.prompting import runs
from attnlab.lessons.prompting.lesson import INDUCTION_LIKE, MODELS, chance_margin, prompting, trained

QUICK = TOPICS["prompting"].quick


@pytest.mark.parametrize("keys,shots", [(10, 0), (10, 1), (10, 8), (4, 3), (16, 15)])
def test_prompts_are_fresh_mappings_with_distinct_keys_and_a_query(keys, shots):
    p = runs.prompts(5, keys, shots)
    assert p.x.shape == (runs.N_PROMPTS, 2 * shots + 1)
    shown_keys, values, q = p.x[:, 0:-1:2], p.x[:, 1:-1:2] - keys, p.x[:, -1]
    assert ((0 <= shown_keys) & (shown_keys < keys)).all() and ((0 <= values) & (values < keys)).all()
    assert all(len(set(row.tolist())) == shots for row in shown_keys)  # distinct keys in a prompt
    assert torch.equal(p.shown, (shown_keys == q[:, None]).any(dim=1))
    for i in torch.nonzero(p.shown)[:, 0].tolist():  # a demonstrated query's answer is the value shown beside it
        j = shown_keys[i].tolist().index(int(q[i]))
        assert int(values[i, j]) == int(p.answer[i])
    if shots:  # the same prompts for every model; another seed, other prompts
        assert torch.equal(p.x, runs.prompts(5, keys, shots).x) and not torch.equal(p.x, runs.prompts(6, keys, shots).x)


@pytest.mark.parametrize("shots", [2, 5, 8])
def test_deranged_labels_move_every_value_to_another_key(shots):
    real, wrong = runs.prompts(3, 10, shots), runs.prompts(3, 10, shots, deranged=True)
    assert torch.equal(real.x[:, 0::2], wrong.x[:, 0::2]) and torch.equal(real.answer, wrong.answer)
    a, b = real.x[:, 1:-1:2], wrong.x[:, 1:-1:2]  # (P, k) values in demonstration order
    for row_a, row_b in zip(a.tolist(), b.tolist()):  # a rotation by 1 .. k-1: every value one place away or more
        assert any(row_b == row_a[s:] + row_a[:s] for s in range(1, shots))


def test_the_ceiling_is_what_copying_and_guessing_get():
    """A reader that copies a demonstrated key's value and guesses uniformly otherwise, on the lesson's own prompts:
    its share right is k/K + (K − k)/K² within four binomial standard errors."""
    g = torch.Generator().manual_seed(0)
    for keys, shots in [(10, 0), (10, 4), (10, 8), (6, 5)]:
        right = n = 0
        for seed in range(8):
            p = runs.prompts(seed, keys, shots)
            shown_keys, values, q = p.x[:, 0:-1:2], p.x[:, 1:-1:2] - keys, p.x[:, -1]
            guess = torch.randint(0, keys, q.shape, generator=g)
            copied = torch.where(shown_keys == q[:, None], values, -1).max(dim=1).values if shots else guess
            said = torch.where(p.shown, copied, guess)
            right += int((said == p.answer).sum())
            n += len(q)
        c = runs.ceiling(shots, keys)
        assert abs(right / n - c) <= 4 * math.sqrt(c * (1 - c) / n), (keys, shots, right / n, c)


@pytest.mark.slow  # trains
def test_accuracy_is_the_share_of_argmax_values_right():
    two, _ = trained(20, 1, False)
    p = runs.prompts(1, 10, 4)
    with torch.no_grad():
        logits = two(p.x)[:, -1, 10:20]  # (P, K): the value tokens
    assert runs.accuracy(two, p, 10) == float((logits.argmax(dim=-1) == p.answer).float().mean())


@pytest.mark.slow  # trains
def test_quick_settings_keep_the_contract_and_untrained_models_read_nothing():
    r = result("prompting", "en", **QUICK)
    assert r.shots == list(range(9)) and set(r.accuracy) == {*MODELS, "ceiling", "chance"}
    assert all(len(v) == 9 and all(0 <= a <= 1 for a in v) for v in r.accuracy.values())
    assert r.accuracy["ceiling"] == [runs.ceiling(k, 10) for k in range(9)] and r.chance == 0.1
    assert r.heads and all(1 <= h <= 2 for h in r.heads) and len(r.label_attention) == 2
    assert len(r.alone) == 2 and all(0 <= a <= 1 for a in r.alone)
    if r.fallback:  # no head reached the bar: the one that attends most, alone
        assert len(r.heads) == 1 and r.label_attention[r.heads[0] - 1] == max(r.label_attention)
    else:
        assert all(r.label_attention[h - 1] >= INDUCTION_LIKE for h in r.heads)
    untrained = result("prompting", "en", steps=0)
    assert {c.id: c.status for c in untrained.claims}["reads_examples"] != SHOWN


@pytest.mark.slow  # trains
def test_at_the_defaults_it_learns_in_context_and_its_null_does_not():
    r = explained("prompting", "en")
    status = {c.id: c.status for c in r.claims}
    assert status == dict.fromkeys(("reads_examples", "follows_labels", "needs_two_layers", "head_carries"), SHOWN)
    acc = r.accuracy
    assert acc["two_layer"][-1] - r.chance >= 0.3  # the bar at 8 shots
    assert acc["two_layer"][-1] >= acc["ceiling"][-1] - 0.15 and acc["two_layer"][0] <= 0.2  # up from chance
    p = 0.1  # deranged labels: chance, within four standard errors of 500 prompts
    assert abs(acc["deranged"][-1] - p) <= 4 * math.sqrt(p * (1 - p) / runs.N_PROMPTS)
    assert acc["one_layer"][-1] <= acc["two_layer"][-1] - 0.3
    for c in r.claims:  # each claim's null (trained on shuffled tokens) does not show it
        assert c.null["status"] != SHOWN, (c.id, c.null)
    x = r.example
    assert x.query in [k for k, _ in x.pairs] and x.answer == dict(x.pairs)[x.query]


def test_the_bar_over_chance_is_one_the_examples_can_reach():
    """0.3 over chance, or half of what the examples allow when that is less (3 examples of 10 keys: 0.27)."""
    assert chance_margin(runs.ceiling(8, 10), 0.1) == 0.3
    assert chance_margin(runs.ceiling(3, 10), 0.1) == pytest.approx((0.37 - 0.1) / 2)
    for keys in range(4, 17):
        for shots in range(1, keys):
            c = runs.ceiling(shots, keys)
            assert 0 < chance_margin(c, 1 / keys) < c - 1 / keys


@pytest.mark.slow  # trains
def test_with_one_head_zeroed_at_a_time_the_other_still_copies():
    """At the defaults both last-layer heads look at the demonstrated value: zeroed together the model falls near
    chance, zeroed one at a time it keeps much of its accuracy (the two heads do the same work)."""
    r = result("prompting", "en")
    assert r.heads == [1, 2] and not r.fallback
    two, together = r.accuracy["two_layer"][-1], r.accuracy["ablated"][-1]
    assert together < 0.2 and all(together + 0.2 < a <= two + 0.05 for a in r.alone), (r.alone, together, two)


def test_too_many_shots_are_refused_in_one_line():
    with pytest.raises(ParamError) as err:
        prompting(keys=4, shots=4)
    assert err.value.name == "shots" and "\n" not in str(err.value)


@pytest.mark.slow  # trains
def test_json_carries_shots_and_accuracy_per_model():
    out = CliRunner().invoke(app, ["explain", "prompting", "--json", "--lang", "en", "--steps", "20"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["shots"] == list(range(9)) and set(data["accuracy"]) >= {"two_layer", "one_layer", "deranged"}

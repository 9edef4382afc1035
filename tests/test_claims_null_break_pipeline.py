"""The claims of break-it and of the pipeline's ⑤ (first update) and ③ (where 月 looks) fail on their nulls: each is
run where its effect is absent by construction and must not be shown; at the defaults each has the status its
numbers give (shown, except where the numbers say otherwise, as the page then says).

Break-it's nulls: the part not removed (the intact model against itself, its runs reused), a steady difference
smaller than the noise floor (a tie, as two models that both memorized the poem), pairs that do not share their
start, a model that never learns (lr 0), the checks run on the intact model. The pipeline's: no step (lr 0),
a step too small to move anything (lr 1e-12), Adam with an ε that swamps every gradient, an untrained model and a
uniform attention map, a count at chance. The default runs train once per module; the nulls reuse them.
"""

from __future__ import annotations

import dataclasses

import pytest

from attnlab.lessons.break_it import checks as C
from attnlab.lessons.break_it import runs as R
from attnlab.lessons.break_it.lesson import break_it
from attnlab.lessons.common.claims import status_of
from attnlab.lessons.pipeline import first_step as FS
from attnlab.lessons.pipeline import focus as FO
from attnlab.text import POEM
from attnlab.train import new_run

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.slow,
]  # trains or starts processes; Every claim id appears in one of these; no-residual ("worse", 4 layers), no-positions and one-head
# ("still_learns") are the slow or repeated ones, left to tests/test_break_it.py.
ABLATIONS = ("no-causal-mask", "ffn-only", "no-scale", "no-layernorm", "ffn-first", "attention-only")
DEFAULT_SHOWN = {
    "no-causal-mask": {"same_start", "does_what_it_says", "leak", "fails_causal"},
    "ffn-only": {"same_start", "does_what_it_says", "worse", "bigram_bound"},
    "no-scale": {"same_start", "does_what_it_says", "still_learns", "saturates"},
    "no-layernorm": {"same_start", "does_what_it_says", "still_learns", "slower"},
    "ffn-first": {"same_start", "does_what_it_says", "still_learns", "shifted", "costs"},
    "attention-only": {"same_start", "does_what_it_says", "still_learns"},
}
# The course's point the measurement does not show: on the poem both models learn it by heart (break_it's note).
DEFAULT_NOT_SHOWN = {"attention-only": {"worse"}}


def statuses(claims) -> dict[str, str]:
    return {c.id: c.status for c in claims}


def consistent(claims) -> None:
    for c in claims:
        assert c.status == status_of(c.direction, c.measured, c.baseline, c.margin), c.id
        assert c.control and (c.direction == "within" or c.margin > 0), c.id


@pytest.fixture(scope="module")
def defaults(one_thread):
    R.paired.cache_clear()
    R._intact_cache.clear()
    return {a: break_it(ablate=a, lang="en") for a in ABLATIONS}


# ---------------------------------------------------------------------------------------------------- break it
@pytest.mark.parametrize("ablation", ABLATIONS)
def test_break_at_the_defaults_every_claim_is_shown(defaults, ablation):
    r = defaults[ablation]
    not_shown = DEFAULT_NOT_SHOWN.get(ablation, set())
    assert statuses(r.claims) == {
        **{i: "shown" for i in DEFAULT_SHOWN[ablation]},
        **dict.fromkeys(not_shown, "not_shown"),
    }
    consistent(r.claims)
    # ffn-first is measured on the lesson's essay, its last tenth held out; the others on 静夜思 itself
    assert (r.corpus, r.causal_on) == (("essay", "held_out") if ablation == "ffn-first" else ("jingyesi", "same_text"))


def _with(monkeypatch, change):
    """break_it's pairs, each changed by `change(pair) -> pair`: the real runs, reused."""
    real = R.paired
    monkeypatch.setattr(R, "paired", lambda a, corpus, steps, seed, **kw: change(real(a, corpus, steps, seed, **kw)))


@pytest.mark.parametrize("ablation", ABLATIONS)
def test_break_the_intact_model_against_itself_shows_no_effect(defaults, monkeypatch, ablation):
    _with(monkeypatch, lambda p: dataclasses.replace(p, ablated=p.intact))
    r = break_it(ablate=ablation, lang="en")
    s = statuses(r.claims)
    for i in ("leak", "fails_causal", "worse", "saturates", "slower", "costs"):
        assert s.get(i, "not_shown") == "not_shown", i
    if ablation == "ffn-only":  # the intact model reads other positions: it goes below the bound
        assert s["bigram_bound"] == "contradicted"
    assert "no difference is shown" in r.finding
    consistent(r.claims)


def test_break_a_steady_difference_under_the_floor_is_a_tie(defaults, monkeypatch):
    # as two models that both memorized the poem: the unmasked one 0.005 nats apart in every seed, each way
    def nudge(p):
        h = p.intact
        up = dataclasses.replace(
            h, train_loss=[x - 0.005 for x in h.train_loss], causal_loss=[x + 0.005 for x in h.causal_loss]
        )
        return dataclasses.replace(p, ablated=up)

    _with(monkeypatch, nudge)
    r = break_it(ablate="no-causal-mask", lang="en")
    assert statuses(r.claims)["leak"] == statuses(r.claims)["fails_causal"] == "not_shown"
    assert {c.id: c.margin for c in r.claims}["leak"] == pytest.approx(0.01)  # the floor: seeds agree exactly


def test_break_pairs_that_do_not_share_their_start_are_not_fair(defaults, monkeypatch):
    def apart(p):
        data = R.corpus_data("jingyesi")
        other = R._build_sized("no-causal-mask", data, p.seed + 1, ("no-causal-mask",))  # another seed's weights
        return dataclasses.replace(
            p, same_start=R.same_start(R._build_sized("no-causal-mask", data, p.seed, ()), other)
        )

    _with(monkeypatch, apart)
    assert statuses(break_it(ablate="no-causal-mask", lang="en").claims)["same_start"] == "contradicted"


@pytest.mark.parametrize("ablation", ABLATIONS)
def test_break_the_checks_on_the_intact_model_fail(defaults, monkeypatch, ablation):
    import attnlab.models.gpt as G

    real = G.GPTConfig
    monkeypatch.setattr(G, "GPTConfig", lambda *a, ablations=(), **kw: real(*a, **kw))  # the part is never removed
    s = statuses(break_it(ablate=ablation, lang="en").claims)  # (the runs are the cached real ones)
    assert s["does_what_it_says"] == "contradicted"
    if ablation == "ffn-first":
        assert s["shifted"] == "contradicted"


@pytest.mark.parametrize("ablation", ["no-positions", "one-head"])
def test_break_the_other_checks_fail_on_the_intact_model_too(monkeypatch, ablation):
    import attnlab.models.gpt as G

    real = G.GPTConfig
    monkeypatch.setattr(G, "GPTConfig", lambda *a, ablations=(), **kw: real(*a, **kw))
    assert C.check(ablation, R.corpus_data("jingyesi"))["error"] > 1e-6


def test_break_a_model_that_never_learns_does_not_still_learn(defaults, monkeypatch):
    # as if trained 0 steps: every measurement of the ablated run is its untrained one (the form's least is 40)
    def frozen(p):
        h = p.ablated
        return dataclasses.replace(
            p,
            ablated=dataclasses.replace(
                h, causal_loss=[h.causal_loss[0]] * len(h.causal_loss), train_loss=[h.train_loss[0]] * len(h.train_loss)
            ),
        )

    _with(monkeypatch, frozen)
    for ablation in ("attention-only", "ffn-first", "no-layernorm"):
        assert statuses(break_it(ablate=ablation, lang="en").claims)["still_learns"] == "not_shown", ablation


def test_break_costs_is_not_asked_of_a_memorized_text(defaults):
    from attnlab.lessons.break_it.lesson import _finding, claims_of

    r = dataclasses.replace(defaults["ffn-first"], causal_on="same_text")  # as with --corpus jingyesi
    assert "costs" not in statuses(claims_of(r, "en")) and "Nothing of this text is held out" in _finding(r, "en")


# ------------------------------------------------------------------------------------------- pipeline ⑤ and ③
def test_first_step_at_the_defaults():
    r = FS.first_step(new_run("poem", seed=0, device="cpu"), seeds=5, lang="en")
    # the text's rule raises p(光) in 5 of 5 seeds (chance: 1 in 32); AdamW's first step lowers it at seed 0
    # and raises it by 1% in 4 of 5 (chance reaches 4 of 5 with probability 3/16): not shown
    assert statuses(r.claims) == {
        "plain_raises": "shown",
        "plain_over_seeds": "shown",
        "adamw_first": "contradicted",
        "adamw_line": "shown",
        "adamw_sign": "shown",
        "adamw_over_seeds": "not_shown",
    }
    consistent(r.claims)


def test_first_step_no_step_raises_nothing(monkeypatch):
    real = FS._plain
    monkeypatch.setattr(FS, "_plain", lambda model, probe, lr, device: real(model, probe, 0.0, device))  # lr 0
    monkeypatch.setattr(FS, "_SEED_CACHE", {})
    s = statuses(FS.first_step(new_run("poem", seed=0, device="cpu"), seeds=3, lang="en").claims)
    assert s["plain_raises"] == "not_shown" and s["plain_over_seeds"] != "shown"


def test_first_step_a_step_too_small_to_move_anything(monkeypatch):
    monkeypatch.setattr(FS, "_SEED_CACHE", {})
    s = statuses(FS.first_step(new_run("poem", seed=0, device="cpu", lr=1e-12), seeds=3, lang="en").claims)
    assert s["adamw_first"] == s["adamw_line"] == "not_shown" and s["adamw_over_seeds"] != "shown"
    assert s["plain_raises"] == "shown"  # the text's rule, measured against its own first-order estimate


def test_first_step_adam_with_a_huge_eps_is_not_a_sign_step(monkeypatch):
    import attnlab.train.loop as L

    real = L.make_optimizer

    def swamped(model, cfg):
        opt = real(model, cfg)
        for g in opt.param_groups:
            g["eps"] = 1.0  # |g| / (|g| + 1) << 0.99 for every gradient here
        return opt

    monkeypatch.setattr(L, "make_optimizer", swamped)
    assert (
        statuses(FS.first_step(new_run("poem", seed=0, device="cpu"), seeds=0, lang="en").claims)["adamw_sign"]
        == "contradicted"
    )


@pytest.fixture(scope="module")
def trained(one_thread):
    run = new_run("poem", seed=0, device="cpu")
    untrained = FO.focus(run.model, run.tokenizer, POEM, lang="en")
    run.trainer.run()
    return run, untrained


def test_focus_at_the_defaults(trained):
    run, _ = trained
    f = FO.focus(run.model, run.tokenizer, POEM, lang="en")
    # layer 2 looks at 床 by a clear lead, layer 1 is within 5 points of even; no head gives 明 the largest weight
    assert statuses(f.claims) == {
        "top_1_1": "not_shown",
        "top_1_2": "not_shown",
        "top_2_1": "shown",
        "top_2_2": "shown",
        "expected_heads": "not_shown",
    }
    consistent(f.claims)


def test_focus_an_untrained_model_looks_nowhere_in_particular(trained):
    _, f = trained
    assert set(statuses(f.claims).values()) == {"not_shown"}


def test_focus_a_uniform_attention_map_shows_nothing(trained, monkeypatch):
    run, _ = trained
    real = FO.attention_step

    def uniform(model, tokenizer, text):
        att = real(model, tokenizer, text)
        for m in att.maps:
            m.weights = [[1 / (i + 1) if j <= i else 0.0 for j in range(len(row))] for i, row in enumerate(m.weights)]
        return att

    monkeypatch.setattr(FO, "attention_step", uniform)
    assert set(statuses(FO.focus(run.model, run.tokenizer, POEM, lang="en").claims).values()) == {"not_shown"}


@pytest.mark.parametrize("hits,status", [(10, "not_shown"), (12, "not_shown"), (20, "shown")])
def test_focus_a_count_over_seeds_is_against_chance(trained, hits, status):
    # 40 heads choosing among 床前明月 at random give 明 10 on average; the 12 of 40 (the measured count at
    # the page's defaults) does not beat that; 20 would
    run, _ = trained
    seeds = FO.SeedFocus(seeds=10, heads=4, seeds_with_expected=7, heads_with_expected=hits)
    f = FO.focus(run.model, run.tokenizer, POEM, lang="en", over_seeds=seeds)
    claim = {c.id: c for c in f.claims}["expected_seeds"]
    assert claim.status == status and claim.baseline == 10 and claim.values["chance"] == 0.25


def test_focus_every_head_on_the_expected_character_beats_chance(trained, monkeypatch):
    run, _ = trained
    real = FO.attention_step

    def on_ming(model, tokenizer, text):  # every head puts 0.7 on 明 (index 2), the rest spread evenly
        att = real(model, tokenizer, text)
        for m in att.maps:
            row = [0.1] * 4
            row[2] = 0.7
            m.weights[3] = row + [0.0] * (len(m.weights[3]) - 4)
        return att

    monkeypatch.setattr(FO, "attention_step", on_ming)
    s = statuses(FO.focus(run.model, run.tokenizer, POEM, lang="en").claims)
    assert s["expected_heads"] == "shown" and s["top_1_1"] == "shown"  # 4 of 4 at 1/4: chance reaches it 1 in 256

"""filter_logits on hand-worked cases and as properties; generation with and without the KV cache."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from attnlab.models import GPT, GPTConfig
from attnlab.sampling import filter_logits, generate, prob_text
from attnlab.text import JINGYESI, CharTokenizer

NEG_INF = float("-inf")


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see attnlab.io.threads


def softmax64(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max())
    return e / e.sum()


# --- hand-worked cases ---------------------------------------------------------------------------------

LOGITS = torch.tensor([1.0, 2.0, 3.0, 4.0])
# softmax([1, 2, 3, 4]) by hand: e^k / (e + e^2 + e^3 + e^4)
_Z = sum(math.exp(k) for k in (1, 2, 3, 4))
P = [math.exp(k) / _Z for k in (1, 2, 3, 4)]  # ≈ 0.0321, 0.0871, 0.2369, 0.6439


def test_temperature_divides():
    assert torch.equal(filter_logits(LOGITS, temperature=2.0), torch.tensor([0.5, 1.0, 1.5, 2.0]))
    assert torch.equal(filter_logits(LOGITS), LOGITS)


def test_top_k_hand_case():
    assert torch.equal(filter_logits(LOGITS, top_k=2), torch.tensor([NEG_INF, NEG_INF, 3.0, 4.0]))
    assert torch.equal(filter_logits(LOGITS, top_k=10), LOGITS)  # k >= V keeps everything


@pytest.mark.parametrize(
    "p, kept",
    [
        (0.5, [3]),  # P[3] ≈ 0.644 already >= 0.5
        (P[3], [3]),  # exactly reached by the top token alone
        (0.7, [2, 3]),  # 0.644 < 0.7 <= 0.644 + 0.237
        (0.9, [1, 2, 3]),  # 0.881 < 0.9 <= 0.968
        (0.99, [0, 1, 2, 3]),
        (1.0, [0, 1, 2, 3]),
    ],
)
def test_top_p_hand_cases(p, kept):
    out = filter_logits(LOGITS, top_p=p)
    assert [i for i in range(4) if out[i] > NEG_INF] == kept
    assert all(out[i] == LOGITS[i] for i in kept)


def test_filters_compose_in_order():
    # temperature 0.5 -> logits [2, 4, 6, 8]; top-k 3 drops id 0; top-p 0.9 on softmax([4, 6, 8]):
    # p ≈ [0.016, 0.117, 0.867] -> needs 8 and 6.
    out = filter_logits(LOGITS, temperature=0.5, top_k=3, top_p=0.9)
    assert torch.equal(out, torch.tensor([NEG_INF, NEG_INF, 6.0, 8.0]))


def test_batched_rows_are_independent():
    rows = torch.stack([LOGITS, LOGITS.flip(0)])
    out = filter_logits(rows, top_k=1)
    assert torch.equal(out, torch.tensor([[NEG_INF, NEG_INF, NEG_INF, 4.0], [4.0, NEG_INF, NEG_INF, NEG_INF]]))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(temperature=0.0), "temperature"),
        (dict(temperature=-1.0), "temperature"),
        (dict(temperature=float("nan")), "temperature"),
        (dict(top_k=0), "top_k"),
        (dict(top_k=2.5), "top_k"),
        (dict(top_p=0.0), "top_p"),
        (dict(top_p=1.5), "top_p"),
    ],
)
def test_out_of_range_options_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        filter_logits(LOGITS, **kwargs)


# --- properties ----------------------------------------------------------------------------------------

logit_vectors = st.lists(st.floats(-20, 20, allow_nan=False, width=32), min_size=1, max_size=40)


@given(
    logit_vectors,
    st.floats(0.05, 5.0),
    st.one_of(st.none(), st.integers(1, 50)),
    st.one_of(st.none(), st.floats(0.01, 1.0)),
)
@example([7.0, 7.000000476837158], 1.7, None, 0.01)
def test_never_empty_and_kept_entries_unchanged(values, temperature, top_k, top_p):
    logits = torch.tensor(values)
    out = filter_logits(logits, temperature=temperature, top_k=top_k, top_p=top_p)
    kept = out > NEG_INF
    assert kept.any()
    assert torch.equal(out[kept], (logits / temperature)[kept])  # kept entries are exactly logits / T
    # a most probable token always survives; "most probable" after the temperature, which is what the filters
    # rank (7.0 and 7.0000005 both become 4.117647 at T = 1.7: a tie, and of ties the lower id is kept)
    probs = torch.softmax(logits / temperature, -1)
    assert probs[kept].max() == probs.max()


@given(logit_vectors, st.floats(0.01, 0.999))
def test_top_p_set_is_minimal(values, p):
    logits = torch.tensor(values)
    probs = softmax64(values)  # independent float64 computation
    kept = (filter_logits(logits, top_p=p) > NEG_INF).numpy()
    mass = probs[kept].sum()
    smallest_kept = probs[kept].min()
    assume(abs(mass - p) > 1e-5 and abs(mass - smallest_kept - p) > 1e-5)  # away from float32 rounding
    assert mass >= p  # enough probability
    assert mass - smallest_kept < p  # and nothing to spare: dropping any kept token falls short
    # and the kept tokens are the most probable ones
    assert probs[~kept].max(initial=0.0) <= smallest_kept + 1e-7


@given(st.lists(st.integers(-1000, 1000), min_size=1, max_size=40, unique=True), st.integers(1, 50))
def test_top_k_keeps_exactly_k_without_ties(values, k):
    logits = torch.tensor(values, dtype=torch.float32) / 10
    kept = filter_logits(logits, top_k=k) > NEG_INF
    assert int(kept.sum()) == min(k, len(values))
    largest = sorted(range(len(values)), key=lambda i: -values[i])[:k]
    assert sorted(largest) == kept.nonzero().flatten().tolist()


@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=2, max_size=20))
def test_temperature_to_zero_approaches_argmax(values):
    order = sorted(values, reverse=True)
    assume(order[0] - order[1] > 0.05)  # a unique maximum
    logits = torch.tensor(values, dtype=torch.float64)
    top = int(torch.argmax(logits))
    p_top = [
        float(torch.softmax(filter_logits(logits, temperature=t), -1)[top]) for t in (2.0, 1.0, 0.3, 0.1, 0.01, 1e-3)
    ]
    assert all(a <= b + 1e-12 for a, b in zip(p_top, p_top[1:]))  # sharper as T falls
    assert p_top[-1] > 0.999


# --- generation ----------------------------------------------------------------------------------------

TOK = CharTokenizer.train(JINGYESI)


def untrained(positions="learned", context=8, seed=0) -> GPT:
    torch.manual_seed(seed)
    cfg = GPTConfig(
        vocab_size=TOK.vocab_size,
        context_length=context,
        d_model=32,
        n_heads=2,
        n_layers=2,
        norm_first=True,
        positions=positions,
        activation="gelu",
    )
    return GPT(cfg).eval()


@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "rope"])
@pytest.mark.parametrize(
    "mode",
    [
        dict(greedy=True),
        dict(temperature=1.0, seed=3),
        dict(temperature=0.8, top_k=5, seed=1),
        dict(temperature=1.2, top_p=0.9, seed=7),
    ],
)
def test_kv_cache_gives_the_same_tokens(positions, mode):
    model = untrained(positions)
    # 20 new tokens on a context of 8: the window slides, so the cache must be rebuilt correctly too.
    runs = [
        generate(model, TOK, "床前明", max_new_tokens=20, use_cache=c, stop_at_eot=False, **mode) for c in (True, False)
    ]
    assert runs[0].new_ids == runs[1].new_ids
    assert len(runs[0].new_ids) == 20
    for a, b in zip(runs[0].steps, runs[1].steps):
        assert a.chosen.prob == pytest.approx(b.chosen.prob, abs=1e-5)


def test_greedy_is_the_argmax_of_a_plain_forward():
    model = untrained()
    gen = generate(model, TOK, "床前", max_new_tokens=5, greedy=True, stop_at_eot=False)
    ids = TOK.encode("床前")
    for new in gen.new_ids:  # recompute each step by hand with the whole sequence
        with torch.no_grad():
            logits = model(torch.tensor([ids[-8:]]))[0, -1]
        assert new == int(torch.argmax(logits))
        ids.append(new)
    assert generate(model, TOK, "床前", max_new_tokens=5, temperature=0, stop_at_eot=False).new_ids == gen.new_ids


def test_seeded_sampling_is_reproducible():
    model = untrained()
    a = generate(model, TOK, "床", max_new_tokens=15, seed=11, stop_at_eot=False)
    b = generate(model, TOK, "床", max_new_tokens=15, seed=11, stop_at_eot=False)
    assert a.new_ids == b.new_ids
    others = {tuple(generate(model, TOK, "床", max_new_tokens=15, seed=s, stop_at_eot=False).new_ids) for s in range(5)}
    assert len(others) > 1  # the seed matters


def test_step_record_shows_candidates_filters_and_choice():
    model = untrained()
    gen = generate(
        model, TOK, "床前", max_new_tokens=6, temperature=0.7, top_k=3, seed=0, n_candidates=5, stop_at_eot=False
    )
    for step in gen.steps:
        probs = [c.prob for c in step.candidates[:5]]
        assert probs == sorted(probs, reverse=True)
        assert step.n_kept == 3 and sum(c.kept for c in step.candidates[:5]) == 3
        assert step.chosen.kept and step.chosen.filtered_prob > 0
        assert sum(c.filtered_prob for c in step.candidates if c.kept) == pytest.approx(1.0, abs=1e-5)
    assert gen.text == "床前" + gen.new_text and len(gen.new_ids) == 6


def test_long_prompt_is_cropped_to_the_context():
    model = untrained(context=8)
    prompt = JINGYESI[:12]
    gen = generate(model, TOK, prompt, max_new_tokens=3, greedy=True, stop_at_eot=False)
    assert gen.cropped == 4 and gen.steps[0].context_tokens == 8
    assert gen.text.startswith(prompt)
    # the model saw only the last 8 characters: same as giving it just those
    assert generate(model, TOK, prompt[4:], max_new_tokens=3, greedy=True, stop_at_eot=False).new_ids == gen.new_ids


def test_unknown_prompt_characters_are_named():
    with pytest.raises(ValueError, match="春"):
        generate(untrained(), TOK, "春眠", max_new_tokens=2)


def test_empty_prompt_starts_a_new_text():
    gen = generate(untrained(), TOK, "", max_new_tokens=3, greedy=True, stop_at_eot=False)
    assert gen.prompt_ids == [] and len(gen.new_ids) == 3


def test_generation_refuses_bad_options():
    with pytest.raises(ValueError, match="temperature"):
        generate(untrained(), TOK, "床", temperature=-0.5)
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(untrained(), TOK, "床", max_new_tokens=-1)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_sampled_tokens_always_survive_the_filters(seed):
    gen = generate(
        untrained(), TOK, "床", max_new_tokens=4, temperature=1.5, top_k=4, top_p=0.5, seed=seed, stop_at_eot=False
    )
    assert all(step.chosen.kept for step in gen.steps)


def test_each_candidate_says_which_filter_cut_it():
    """Recomputed in numpy from the model's own logits: T, then top-k, then top-p on what is left."""
    model = untrained()
    temperature, k, p = 1.7, 6, 0.6
    gen = generate(
        model,
        TOK,
        "床前",
        max_new_tokens=4,
        temperature=temperature,
        top_k=k,
        top_p=p,
        seed=3,
        n_candidates=TOK.vocab_size,
        stop_at_eot=False,
    )
    seq = list(gen.prompt_ids)
    for step in gen.steps:
        with torch.no_grad():
            logits = model(torch.tensor([seq]))[0, -1].double().numpy()
        q = softmax64(logits / temperature)
        order = np.argsort(-q, kind="stable")
        in_k = set(order[:k].tolist())
        q_k = np.where([i in in_k for i in range(len(q))], q, 0.0)
        q_k /= q_k.sum()
        ranked = sorted(in_k, key=lambda i: -q_k[i])
        mass, in_p = 0.0, set()
        for i in ranked:
            if mass >= p:
                break
            in_p.add(i)
            mass += q_k[i]
        final = np.where([i in in_p for i in range(len(q))], q, 0.0)
        final /= final.sum()
        for c in step.candidates:
            want = None if c.id in in_p else "top-k" if c.id not in in_k else "top-p"
            assert c.cut_by == want and c.kept == (want is None)
            assert c.filtered_prob == pytest.approx(final[c.id], abs=1e-5)
        assert {c.cut_by for c in step.candidates} == {None, "top-k", "top-p"}  # every kind show up at these settings
        seq.append(step.chosen.id)


def test_greedy_cuts_everything_but_the_argmax():
    gen = generate(untrained(), TOK, "床", max_new_tokens=2, greedy=True, stop_at_eot=False)
    for step in gen.steps:
        assert [c.cut_by for c in step.candidates] == [None] + ["greedy"] * (len(step.candidates) - 1)


@pytest.mark.parametrize(
    "p, text",
    [
        (0.0, "0"),
        (1.0, "1"),
        (0.5, "0.5"),
        (0.123456, "0.1235"),
        (0.0004, "4.0e-04"),
        (3.21e-9, "3.2e-09"),
        (0.001, "0.001"),
        (0.99998, "0.99998"),
        (0.9999999, "0.9999999"),
    ],
)
def test_prob_text_never_shows_a_positive_probability_as_zero(p, text):
    assert prob_text(p) == text
    assert float(prob_text(p)) == pytest.approx(p, rel=0.13, abs=5e-5)


# --- every allowed option works (issue 14: T <= 1e-38 and top_p <= 1e-46 used to end in NaN) -----------------

TINY = [5e-324, 1e-320, 1e-46, 1e-45, 1e-40, 1e-39, 1e-38, 1.2e-38, 1e-30]
extreme_logits = st.lists(
    st.one_of(
        st.floats(width=32, allow_nan=False),
        st.sampled_from([0.0, 1.0, 3.0, 3.0, float("-inf"), float("inf"), float("nan"), 3.4e38, -3.4e38, 1e-45]),
    ),
    min_size=1,
    max_size=12,
)
temperatures = st.one_of(st.sampled_from(TINY + [10.0]), st.floats(0, 10, exclude_min=True))
top_ps = st.one_of(st.none(), st.sampled_from(TINY + [1.0]), st.floats(0, 1, exclude_min=True))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(extreme_logits, temperatures, st.one_of(st.none(), st.integers(1, 20)), top_ps)
def test_any_allowed_option_leaves_a_distribution_with_the_most_probable_token(values, temperature, top_k, top_p):
    logits = torch.tensor(values, dtype=torch.float32)
    out = filter_logits(logits, temperature=temperature, top_k=top_k, top_p=top_p)
    assert not torch.isnan(out).any() and not torch.isposinf(out).any()
    kept = out > NEG_INF
    assert kept.any()  # never empty
    probs = torch.softmax(out, -1)
    assert torch.isfinite(probs).all() and float(probs.sum()) == pytest.approx(1.0, abs=1e-5)
    torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(0))  # what generate() draws with
    clean = torch.nan_to_num(logits, nan=NEG_INF, posinf=float("inf"), neginf=NEG_INF)  # NaN counts as -inf
    tempered = filter_logits(logits, temperature=temperature)
    assert (tempered[clean == clean.max()] > NEG_INF).all()  # temperature alone never drops the largest logit
    p_tempered = torch.softmax(tempered, -1)
    assert kept[p_tempered == p_tempered.max()].any()  # a most probable token (of any ties) always stays


@pytest.mark.parametrize("temperature", TINY)
def test_temperature_near_zero_is_the_argmax(temperature):
    logits = torch.tensor([1.0, 2.5, 2.4999998, -3.0, 0.0])
    probs = torch.softmax(filter_logits(logits, temperature=temperature), -1)
    assert probs.tolist() == [0.0, 1.0, 0.0, 0.0, 0.0]
    tied = torch.softmax(filter_logits(torch.tensor([2.0, 5.0, 5.0]), temperature=temperature), -1)
    assert tied.tolist() == [0.0, 0.5, 0.5]  # ties share the mass, as the limit T -> 0 does


@pytest.mark.parametrize("top_p", TINY)
def test_tiny_top_p_keeps_only_the_most_probable(top_p):
    out = filter_logits(LOGITS, top_p=top_p)
    assert [i for i in range(4) if out[i] > NEG_INF] == [3]
    tied = filter_logits(torch.tensor([5.0, 1.0, 5.0]), top_p=top_p)
    assert (tied > NEG_INF).tolist() == [True, False, False]  # of tied tokens the lower id, as documented


def test_rows_of_only_minus_infinity_or_nan_are_uniform():
    out = filter_logits(torch.tensor([[NEG_INF] * 3, [float("nan")] * 3, [float("nan"), 1.0, NEG_INF]]))
    assert torch.equal(out[:2], torch.zeros(2, 3))  # every token ties for the most probable
    assert torch.softmax(out, -1)[2].tolist() == [0.0, 1.0, 0.0]


@pytest.mark.parametrize(
    "options",
    [dict(temperature=5e-324), dict(temperature=1e-39), dict(top_p=1e-46), dict(top_p=5e-324, temperature=10.0)],
)
def test_generation_with_the_smallest_options_is_greedy(options):
    model = untrained()
    greedy = generate(model, TOK, "床", max_new_tokens=6, greedy=True, stop_at_eot=False)
    drawn = generate(model, TOK, "床", max_new_tokens=6, seed=1, stop_at_eot=False, **options)
    assert drawn.new_ids == greedy.new_ids
    assert all(step.chosen.kept for step in drawn.steps)

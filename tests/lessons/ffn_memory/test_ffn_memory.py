"""The `ffn-memory` topic: a neuron's value is the logit change a real forward pass measures when the neuron is added
(exactly without a final LayerNorm; with one, exactly up to the two terms memory.py says it leaves out), knocking out
no neuron changes nothing, the chance levels match exhaustive counts, a knockout is scored against the text's average
token, and each claim against its nulls (the untrained model, the same characters shuffled, shuffled activations) is
not shown."""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter

import pytest
import torch
from results import result as stored
from shared_data import data_dir

from attnlab.inspect import knock_out, run_with
from attnlab.lessons.common.claims import beats_chance
from attnlab.lessons.common.weights import redraw
from attnlab.lessons.explain import as_dict
from attnlab.lessons.ffn_memory import data as texts
from attnlab.lessons.ffn_memory import memory
from attnlab.models import GPT, GPTConfig

pytestmark = pytest.mark.slow  # trains the lesson's models

SMALL = dict(layers=2, d_model=32, train_steps=60, top=10, knock=5, shown=6, seed=0)
STEPS_TS = 400  # Tiny Shakespeare: at 200 steps the shared keys cleared the current-token chance by one neuron


def model(layers=2, ablations=(), seed=1, vocab=20) -> GPT:
    config = GPTConfig(
        vocab_size=vocab,
        context_length=8,
        d_model=16,
        n_heads=2,
        n_layers=layers,
        norm_first=True,
        activation="relu",
        ablations=ablations,
    )
    return redraw(GPT(config), seed).eval()


def ids(seed=0, B=3, T=8, vocab=20) -> torch.Tensor:
    return torch.randint(0, vocab, (B, T), generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def result():
    return stored("ffn-memory", lang="en", **SMALL)


# --- the intervention and the value, against real forward passes ------------------------------------------------


def test_knocking_out_no_neuron_changes_nothing_exactly():
    m, x = model(), ids()
    plain, _ = run_with(m, x)  # (B, T, V), the same recorded path (an unrecorded forward may take the fused kernel)
    with torch.no_grad():
        torch.testing.assert_close(plain, m(x))
    for layer in range(2):
        logits, tr = run_with(m, x, {memory.hidden_name(layer): knock_out([])})
        assert torch.equal(logits, plain)
    j = int(tr[memory.hidden_name(1)].amax(dim=(0, 1)).argmax())  # a neuron that fires here
    logits, _ = run_with(m, x, {memory.hidden_name(1): knock_out([j])})
    assert not torch.equal(logits, plain)  # the same path with a firing neuron does change something


@pytest.mark.parametrize("layers", [1, 2])
def test_value_is_the_logit_change_of_adding_the_neuron_without_layernorm(layers):
    """No LayerNorm anywhere: the last layer's FFN output reaches the LM head linearly, so adding δ to neuron j's
    activation at one position changes that position's logits by exactly δ · value_j and nothing before it."""
    m, x = model(layers, ablations=("no-layernorm",)), ids()
    assert m.ln_f is None
    last, j, pos, delta = layers - 1, 5, 4, 2.5
    values = memory.value_logits(m, last)  # (d_ff, V)

    def add(t):
        out = t.clone()
        out[:, pos, j] += delta
        return out

    base, _ = run_with(m, x)
    edited, _ = run_with(m, x, {memory.hidden_name(last): add})
    change = edited - base  # (B, T, V)
    torch.testing.assert_close(change[:, pos], (delta * values[j]).expand_as(change[:, pos]), rtol=1e-4, atol=1e-5)
    assert torch.equal(change[:, :pos], torch.zeros_like(change[:, :pos]))  # causal: earlier positions untouched
    # and knocking neuron j out removes exactly a_j · value_j at every position
    _, tr = run_with(m, x)
    a = tr[memory.hidden_name(last)][..., j]  # (B, T)
    ko, _ = run_with(m, x, {memory.hidden_name(last): knock_out([j])})
    torch.testing.assert_close(base - ko, a[..., None] * values[j], rtol=1e-4, atol=1e-5)


def test_value_through_the_final_layernorm_is_exact_up_to_the_terms_left_out():
    """With ln_f, autograd's d logits / d a_j at a position is (W_U γ ⊙ (c − x̂ (x̂·c)/d)) / σ, c = v_j − mean(v_j):
    σ · J plus the x̂ term is the value memory.py reads, to float precision."""
    m, x = model(2), ids()
    assert m.ln_f is not None
    j, pos = 7, 5
    _, tr = run_with(m, x)
    resid = tr["layers.1.output"][:, pos].double()  # (B, d): the residual stream entering ln_f
    v = m.blocks[1].ffn.W_2.weight[:, j].double()  # (d,)
    ln, W_U = m.ln_f, m.lm_head.weight.double()

    def logits_at(eps):
        return (
            torch.nn.functional.layer_norm(resid + eps * v, (len(v),), ln.gamma.double(), ln.beta.double(), ln.eps)
            @ W_U.T
        )  # (B, V)

    _, J = torch.autograd.functional.jvp(
        logits_at, torch.zeros((), dtype=torch.float64), torch.ones((), dtype=torch.float64)
    )
    mu = resid.mean(-1, keepdim=True)
    sigma = torch.sqrt(resid.var(-1, unbiased=False, keepdim=True) + ln.eps)  # (B, 1)
    xhat = (resid - mu) / sigma  # (B, d)
    c = v - v.mean()
    left_out = ((ln.gamma.double() * xhat) @ W_U.T) * ((xhat @ c) / len(v))[:, None]  # (B, V)
    value = memory.value_logits(m, 1)[j].double()  # (V,)
    torch.testing.assert_close(sigma * J + left_out, value.expand_as(J), rtol=1e-5, atol=1e-6)


def test_batched_knockouts_equal_knock_out_one_neuron_at_a_time():
    """knock_each runs many neurons in one pass; each must equal attnlab.inspect.knock_out([j]) on its own."""
    d = texts.corpus_data("jingyesi")
    x, at, y = texts.contexts(d.val, 8)
    m = model(2, vocab=d.vocab_size)
    acts = memory.read(m, x, at, y)[0]
    freq = memory.frequencies(y, d.vocab_size)
    found = memory.neurons(m, acts, y, 4)
    assert len(found) > 10
    memory.knock_each(m, x, at, y, acts, found, 4, freq, chunk=7)  # chunks that split layers' neurons unevenly

    def score(rows, edits=None):  # log p(next) against the frequency-weighted average token, by hand
        logits, _ = run_with(m, x[rows], edits)
        logp = torch.log_softmax(logits[torch.arange(len(rows)), at[rows]].double(), -1)  # (R, V)
        return logp[torch.arange(len(rows)), y[rows]] - (logp * freq).sum(-1)

    for n in found[::5]:
        rows = torch.tensor(n.fire + memory.quiet(acts, n.layer, n.index, 4))
        hurt = score(rows) - score(rows, {memory.hidden_name(n.layer): knock_out([n.index])})
        assert n.hurt_fire == pytest.approx(float(hurt[:4].mean()), abs=1e-6)
        assert n.hurt_quiet == pytest.approx(float(hurt[4:].mean()), abs=1e-6)


def test_a_knockout_that_knows_nothing_of_the_next_token_scores_zero_on_average():
    """Against the frequency-weighted average token, any change of a prediction (a knockout that only flattens it,
    or any other) averages exactly 0 over next tokens drawn from those frequencies: Σ_y f_y (Δ log p(y) − Σ_v f_v
    Δ log p(v)) = 0. Only a neuron whose effect depends on which token comes next can score above it; the plain
    Δ log p of a flattening does not average 0 (it raises every unlikely token)."""
    g = torch.Generator().manual_seed(5)
    logits = 4 * torch.randn(1, 1, 12, generator=g, dtype=torch.float64)  # one confident prediction, V = 12
    f = torch.rand(12, generator=g, dtype=torch.float64)
    f /= f.sum()
    before, after = torch.log_softmax(logits, -1)[0, 0], torch.log_softmax(0.3 * logits, -1)[0, 0]  # flattened
    score = lambda lp: lp - lp @ f  # noqa: E731  (V,): every possible next token's score
    assert float(f @ (score(after) - score(before))) == pytest.approx(0.0, abs=1e-12)
    assert float(f @ (after - before)) > 0.1  # the raw log p "improves" on average: the bias the score removes


# --- chance levels against exhaustive counts ---------------------------------------------------------------------


def test_shared_by_chance_matches_every_k_subset():
    y = torch.tensor([0, 1, 1, 2, 2, 2, 3, 0, 1])
    K = 3
    exact = sum(2 * max(Counter(y[list(s)].tolist()).values()) >= K for s in itertools.combinations(range(len(y)), K))
    exact /= len(list(itertools.combinations(range(len(y)), K)))
    assert memory.shared_by_chance(y, K, seed=0) == pytest.approx(exact, abs=0.03)  # 4000 draws: SE < 0.008


def test_shared_given_current_matches_every_choice_of_positions_with_the_same_current_tokens():
    """Exhaustive: a key of K = 4 positions (current tokens a, a, b, c) is replaced by every choice of 2 distinct
    a-positions, 1 b-position and 1 c-position; the share of choices whose next tokens share one (>= 2 of 4)."""
    cur = torch.tensor([0, 0, 0, 0, 1, 1, 1, 2, 2, 0, 1, 2])  # current token at each read position
    y = torch.tensor([5, 5, 6, 7, 5, 6, 6, 7, 8, 5, 8, 6])  # the next token there
    key = [0, 1, 4, 7]  # two a's, one b, one c
    n = memory.Neuron(0, 0, key, [1.0] * 4, 0, 0, [0], [1.0])
    pos = {c: (cur == c).nonzero().flatten().tolist() for c in (0, 1, 2)}
    choices = [
        [*aa, b, c] for aa in itertools.combinations(pos[0], 2) for b in pos[1] for c in pos[2]
    ]  # every replacement
    exact = sum(2 * max(Counter(y[ch].tolist()).values()) >= 4 for ch in choices) / len(choices)
    got = memory.shared_given_current(cur, y, [n], seed=0, draws=20000)
    assert got == pytest.approx(exact, abs=0.015)  # 20,000 draws: standard error < 0.004
    # drawn from anywhere instead, the same key shares far less often: the current token carries the next
    assert memory.shared_by_chance(y, 4, seed=0) < exact


def test_the_shuffled_null_trains_on_the_same_characters_in_another_order():
    d = texts.corpus_data("jingyesi")
    plain, mixed = texts.training_ids(d, False, 0), texts.training_ids(d, True, 0)
    assert torch.equal(plain, d.train) and not torch.equal(plain, mixed)
    assert torch.equal(torch.bincount(plain), torch.bincount(mixed))  # every character's count kept
    assert mixed[-1] == plain[-1] == d.tokenizer.eot_id  # the end mark stays where it was


def test_readable_by_chance_is_the_rate_over_every_pair_of_different_neurons():
    g = torch.Generator().manual_seed(0)
    found = [
        memory.Neuron(
            0,
            i,
            [0, 1],
            [1.0, 1.0],
            int(torch.randint(0, 4, (), generator=g)),
            2,
            [int(torch.randint(0, 4, (), generator=g))],
            [1.0],
        )
        for i in range(12)
    ]
    pairs = [(a, b) for a in found for b in found if a is not b]
    assert memory.readable_by_chance(found) == pytest.approx(
        sum(a.value_top[0] == b.key_next for a, b in pairs) / len(pairs)
    )


# --- the lesson ---------------------------------------------------------------------------------------------------


def test_json_shape_and_rows_read_from_the_text(result):
    r = result
    d = json.loads(json.dumps(as_dict(r), ensure_ascii=False))
    assert d["topic"] == "ffn-memory" and not d["held_out"] and d["n_positions"] == 24
    assert d["neurons"] == 2 * 4 * 32 and len(d["layers"]) == 2 and 0 < len(d["rows"]) <= SMALL["shown"]
    assert sum(x["alive"] for x in d["layers"]) == d["trained"]["alive"]
    assert sum(x["readable"] for x in d["layers"]) == d["trained"]["readable"] <= d["trained"]["alive"]
    assert {c["id"] for c in d["claims"]} == {"fires_hurts", "top_beats_random", "values_match_keys", "keys_share_next"}
    hurts = [row.hurt_fire for row in r.rows]
    assert hurts == sorted(hurts, reverse=True)
    from attnlab.text.builtin import JINGYESI

    for row in r.rows:
        assert len(row.windows) == SMALL["top"] and row.readable == (row.value_top == row.key_next)
        acts = [w.act for w in row.windows]
        assert acts == sorted(acts, reverse=True) and acts[-1] > 0
        for w in row.windows:
            assert (w.before + w.fire + w.next.replace("␃", "")) in JINGYESI  # a real context of the poem
        assert Counter(w.next for w in row.windows).most_common(1)[0][1] == round(row.key_share * SMALL["top"])


def test_claims_shown_on_the_trained_poem(result):
    status = {c.id: c.status for c in result.claims}
    assert status["fires_hurts"] == status["top_beats_random"] == status["values_match_keys"] == "shown"
    assert status["keys_share_next"] == "not_shown"  # 24 positions: K = 10 contexts cannot share a next token
    for c in result.claims:
        assert c.control and c.margin is not None


def test_untrained_model_shows_no_claim():
    r = stored("ffn-memory", lang="en", **{**SMALL, "train_steps": 0})
    assert [c.id for c in r.claims if c.status == "shown"] == []
    assert r.trained == r.untrained and r.loss == r.loss_untrained


def test_on_a_real_corpus_keys_share_next_tokens_and_shuffled_activations_do_not():
    path = data_dir() / "tinyshakespeare" / "input.txt"
    if not path.is_file():  # a user's checkout without ../shared/data; CI has it, and there a skip would hide a loss
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the shared corpus {path} is missing (set ATTNLAB_DATA)")
        pytest.skip(f"the shared corpus {path} is not here (set ATTNLAB_DATA to run this test)")
    settings = dict(corpus=str(path), layers=1, d_model=32, train_steps=STEPS_TS, shown=3)
    r = stored("ffn-memory", lang="en", **settings)
    status = {c.id: c.status for c in r.claims}
    assert r.held_out and status["keys_share_next"] == status["values_match_keys"] == "shown", r.claims
    # the lesson's null on a real corpus: trained alike on its characters shuffled, read on the real text. Its
    # neurons fire on characters, and the current character alone decides much of the next in English: a chance
    # level of K positions drawn from anywhere would call that shared (it did); the same current tokens do not
    null = stored("ffn-memory", lang="en", **settings, shuffle=True)
    assert [c.id for c in null.claims if c.status != "not_shown"] == [], null.claims
    # the null of keys_share_next: the same model, every neuron's activations shuffled over the read positions
    d = texts.corpus_data(str(path))
    x, at, y = texts.contexts(d.val, 16)
    m = redraw(
        GPT(
            GPTConfig(
                vocab_size=d.vocab_size,
                context_length=16,
                d_model=32,
                n_heads=2,
                n_layers=1,
                norm_first=True,
                activation="relu",
            )
        ),
        0,
    ).eval()
    acts = memory.read(m, x, at, y)[0]  # (1, P, d_ff)
    g = torch.Generator().manual_seed(1)
    shuffled = torch.stack([acts[0, torch.randperm(len(y), generator=g), j] for j in range(acts.shape[-1])], -1)
    found = memory.neurons(m, shuffled[None], y, 10)
    claim = beats_chance(
        "null",
        "",
        "en",
        k=sum(n.shared for n in found),
        n=len(found),
        p=memory.shared_by_chance(y, 10, 0),
        control="shuffled",
    )
    assert claim.status != "shown"

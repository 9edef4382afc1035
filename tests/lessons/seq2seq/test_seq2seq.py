"""The seq2seq lesson: Bahdanau's α by hand, the no-attention decoder's bottleneck as a fact of the graph, the task's
split and alignment, seeded reproducibility, the claims over seeds, and API = CLI = Python."""

from __future__ import annotations

import json

import pytest
import torch
from results import explained, result
from typer.testing import CliRunner

from attnlab.lessons.common.claims import status_of
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import as_dict, explain
from attnlab.lessons.seq2seq import task as task_
from attnlab.lessons.seq2seq.lesson import LENGTHS, TRAIN_LENGTHS, trained, trained_models, typed_example
from attnlab.lessons.seq2seq.models import build

pytestmark = pytest.mark.slow  # trains the lesson's models

SMALL = {
    "train_steps": 100,
    "n_test": 5,
    "n_seeds": 1,
    "text": "2026",
}  # the other explain tests use the same: one training, cached
CLAIMS = [
    "bottleneck",
    "bottleneck_cross",
    "falls",
    "final_only",
    "alpha",
    "alignment",
    "alignment_cross",
    "encoder_decoder_leads",
]


def model(kind: str, seed: int = 0):
    torch.manual_seed(seed)
    return build(kind, task_.SRC_VOCAB, task_.TGT_VOCAB, 16, 8).double().eval()


def batch(n: int = 5, b: int = 3):
    g = torch.Generator().manual_seed(7)
    return task_.encode("reverse", task_.sample(n, b, g, test=True))


def test_bahdanau_alpha_is_the_hand_computation_at_every_step_and_sums_to_one():
    m = model("bahdanau")
    src, tgt_in, _ = batch()
    states, (s, c) = m.encoder(src)  # (B, S, H)
    _, alpha = m.decoder(states, (s, c), tgt_in)  # (B, T, S)
    a = m.decoder.attn
    W_s, W_h, b, v = a.W_s.weight, a.W_h.weight, a.W_h.bias, a.v.weight[0]
    x = m.decoder.embed(tgt_in)
    for t in range(tgt_in.shape[1]):
        for i in range(src.shape[0]):
            e = torch.stack([v @ torch.tanh(W_s @ s[i] + W_h @ h_j + b) for h_j in states[i]])  # (S,)
            hand = torch.exp(e) / torch.exp(e).sum()
            torch.testing.assert_close(alpha[i, t], hand, rtol=1e-12, atol=1e-12)
        context = torch.einsum("bs,bsh->bh", alpha[:, t], states)  # c = Σ_j α_j h_j
        lib_context, _ = a(s[:, None], states)
        torch.testing.assert_close(lib_context[:, 0], context, rtol=1e-12, atol=1e-12)
        s, c, _ = m.decoder.lstm.step(s, c, torch.cat([x[:, t], context], -1))
    torch.testing.assert_close(alpha.sum(-1), torch.ones(alpha.shape[:2], dtype=alpha.dtype), rtol=0, atol=1e-12)


def test_the_no_attention_decoder_sees_only_the_final_encoder_state():
    m = model("no_attention")
    src, tgt_in, _ = batch(n=6)
    states, final = m.encoder(src)
    states = states.detach().requires_grad_(True)
    logits, _ = m.decoder(states, final, tgt_in)
    # No path in the graph from h_1..h_S (as a sequence) to the output: its gradient does not exist.
    assert torch.autograd.grad(logits.sum(), states, allow_unused=True)[0] is None
    noisy = states.detach() + torch.randn(states.shape, dtype=states.dtype, generator=torch.Generator().manual_seed(3))
    assert torch.equal(m.decoder(noisy, final, tgt_in)[0], logits)  # every other encoder state changed: same output
    moved = (final[0] + 0.5, final[1])
    assert not torch.allclose(m.decoder(states, moved, tgt_in)[0], logits)  # the last state moved: it changes
    # and the encoder's last state depends on every source digit: the bottleneck carries the whole sentence
    src2 = src.clone()
    src2[:, 0] = src2[:, 0] % 10 + 1
    assert not torch.allclose(m.encoder(src2)[1][0], final[0])


def test_the_bahdanau_decoder_reads_every_encoder_state():
    m = model("bahdanau")
    src, tgt_in, _ = batch(n=6)
    states, final = m.encoder(src)
    states = states.detach().requires_grad_(True)
    logits, _ = m.decoder(states, final, tgt_in)
    (grad,) = torch.autograd.grad(logits.sum(), states)
    assert (grad.abs().sum(-1) > 0).all()  # every h_j reaches the output


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("digits", "2026", "二〇二六"),
        ("reverse", "2026", "六二〇二"),
        ("pairs", "2026", "〇二六二"),
        ("pairs", "12345", "二一四三五"),
    ],
)
def test_the_task_translates_along_its_alignment(name, text, expected):
    assert task_.translate(name, text) == expected
    for n in range(1, 13):
        assert sorted(task_.align(name, n)) == list(range(n))  # a permutation: each source digit read once


def test_train_and_test_strings_never_meet():
    g = torch.Generator().manual_seed(0)
    for n in (2, 5, 8):
        test = task_.sample(n, 50, g, test=True)
        train = task_.sample(n, 200, g, test=False)
        assert all(task_.is_test(s) for s in test) and not any(task_.is_test(s) for s in train)
        assert not set(test) & set(train) and all(len(s) == n for s in test + train)


def test_seeded_runs_are_reproducible():
    a = as_dict(explain("seq2seq", lang="en", **SMALL))  # trained now, or by an earlier test: cached
    trained_models.cache_clear()
    trained.cache_clear()
    typed_example.cache_clear()
    b = as_dict(explain("seq2seq", lang="en", **SMALL))  # trained afresh
    assert a == b
    assert a["lengths"] == list(LENGTHS) and a["longer"] == [n > TRAIN_LENGTHS[-1] for n in LENGTHS]
    assert set(a["accuracy"]) == {"no_attention", "bahdanau", "transformer", "decoder_only"}
    assert all(len(v) == len(LENGTHS) and all(0 <= x <= 1 for x in v) for v in a["accuracy"].values())


def test_the_decoder_only_gpt_reads_source_then_target_causally_at_the_encoder_decoders_size():
    """One GPT over [source ; target]: its target logits are the GPT's own at those positions over the target
    vocabulary; a target position reads every source digit but no later target token; and the two Transformers
    have the same parameter count to within 1%."""
    sizes = {kind: sum(p.numel() for p in model(kind).parameters()) for kind in ("transformer", "decoder_only")}
    real = {k: sum(p.numel() for p in build(k, task_.SRC_VOCAB, task_.TGT_VOCAB, 14, 32).parameters()) for k in sizes}
    assert abs(real["decoder_only"] - real["transformer"]) <= 0.01 * real["transformer"], real
    gpt = model("decoder_only")
    src, tgt_in, _ = batch(n=5)  # (3, 5), (3, 6)
    logits, maps = gpt(src, tgt_in)
    assert logits.shape == (3, 6, task_.TGT_VOCAB) and maps == []
    whole = gpt.model(torch.cat([src, tgt_in + task_.SRC_VOCAB], 1))  # (3, 11, V_src + V_tgt)
    assert torch.equal(logits, whole[:, 5:, task_.SRC_VOCAB :])
    later = tgt_in.clone()
    later[:, 3:] = (later[:, 3:] + 1) % task_.TGT_VOCAB  # change target tokens 3.. only
    assert torch.allclose(gpt(src, later)[0][:, :3], logits[:, :3], atol=1e-12)  # positions 0..2 cannot see them
    assert not torch.allclose(gpt(src, later)[0][:, 3:], logits[:, 3:])
    for j in range(5):  # every target position reads every source digit: no bottleneck, no cross-attention
        moved = src.clone()
        moved[:, j] = moved[:, j] % 10 + 1
        assert (gpt(moved, tgt_in)[0] - logits).abs().amax(dim=(0, 2)).min() > 1e-9, j


def test_the_encoder_decoders_lead_is_averaged_over_the_trained_lengths():
    r = result("seq2seq", lang="en", **SMALL)
    c = {c.id: c for c in r.claims}["encoder_decoder_leads"]
    at = [r.lengths.index(n) for n in TRAIN_LENGTHS]
    mean = {k: sum(r.accuracy_by_seed[k][0][i] for i in at) / len(at) for k in ("transformer", "decoder_only")}
    assert c.measured == pytest.approx(mean["transformer"]) and c.baseline == pytest.approx(mean["decoder_only"])
    assert c.values["lengths"] == list(TRAIN_LENGTHS) and c.margin >= 0.2
    p = (mean["transformer"], mean["decoder_only"])  # one seed: the binomial error over every test string averaged
    n = SMALL["n_test"] * len(at)
    assert c.values["standard_error"] == pytest.approx(sum(x * (1 - x) / n for x in p) ** 0.5)


@pytest.mark.parametrize("seed", range(3))
def test_the_claims_carry_their_comparison_over_seeds(seed):
    # What each claim shows where is in tests/test_claims_null_seq2seq.py; here: the contract at test size.
    r = result("seq2seq", lang="en", seed=seed, **SMALL)
    assert [c.id for c in r.claims] == CLAIMS
    for c in r.claims:
        assert c.status == status_of(c.direction, c.measured, c.baseline, c.margin) and c.holds == (c.status == "shown")
        assert c.control and c.versus and c.values
    assert r.claims[0].values["gap"] == pytest.approx(
        r.claims[0].values["attention"] - r.claims[0].values["no_attention"]
    )
    assert r.claims[0].margin >= 0.2
    for c in r.claims[5:7]:  # alignment at its weakest trained length, against a uniform map there: 1/n
        n, se = c.values["length"], c.values["standard_error"]
        assert n in TRAIN_LENGTHS and c.baseline == pytest.approx(1 / n)
        assert se > 0 or c.measured in (0, 1)  # one seed: the binomial error over the test strings
        assert c.margin == pytest.approx((1 - 1 / n) / 2 + 2 * se)  # halfway from uniform to perfect, and 2 errors
        scores = dict(zip(c.values["lengths"], c.values["by_length"]))
        assert c.values["lengths"] == list(TRAIN_LENGTHS) and c.measured == scores[n]
        lead = (scores[n] - 1 / n) / (1 - 1 / n)  # its share of the way from uniform to perfect: the least
        assert all((x - 1 / m) / (1 - 1 / m) >= lead for m, x in scores.items())
    ex = r.example
    assert ex.source == "2026" and ex.target == "二〇二六" and ex.truth == task_.align("digits", 4)
    for w in [ex.bahdanau, ex.transformer, *(h.weights for h in r.heads)]:
        assert len(w) == 4 and all(len(row) == 4 and abs(sum(row) - 1) < 1e-5 for row in w)
    assert r.alignment_score["no_attention"] is None and 0 <= r.alignment_score["bahdanau"] <= 1


@pytest.mark.fresh  # the models must be trained in this process: a result read from the store trains nothing here
def test_a_typed_input_reuses_the_trained_models_and_bad_text_is_refused():
    result("seq2seq", lang="en", **SMALL)
    before = trained.cache_info().misses
    r = result("seq2seq", lang="zh", **{**SMALL, "text": "9876543"})
    assert trained.cache_info().misses == before  # no training for a new typed input
    assert r.example.source == "9876543" and r.example.truth == task_.align("digits", 7)
    assert r.example.held_out == task_.is_test("9876543")
    assert r.suggestions and all(task_.is_test(s) for s in r.suggestions)  # what the page offers is held out
    with pytest.raises(ParamError, match="text must be 1 to 12 digits"):
        result("seq2seq", text="12a4")
    with pytest.raises(ParamError, match="train_steps must be an integer from 0 to 1000"):
        result("seq2seq", train_steps=-5)


def test_api_equals_cli_equals_python():
    from fastapi.testclient import TestClient

    from attnlab.cli import app
    from attnlab.web.app import create_app

    python = json.loads(json.dumps(as_dict(explained("seq2seq", "en", **SMALL))))  # the claims with their nulls
    api = TestClient(create_app()).get("/api/explain/seq2seq", params={**SMALL, "lang": "en"}).json()
    out = CliRunner().invoke(
        app,
        [
            "explain",
            "seq2seq",
            "--train-steps",
            "100",
            "--n-test",
            "5",
            "--n-seeds",
            "1",
            "--text",
            "2026",
            "--json",
            "--lang",
            "en",
        ],
    )
    assert out.exit_code == 0, out.output
    assert api == python == json.loads(out.stdout)


def test_the_short_address_leads_to_the_lesson_page():
    from fastapi.testclient import TestClient

    from attnlab.web.app import create_app

    response = TestClient(create_app()).get("/seq2seq", params={"lang": "en", "text": "42"}, follow_redirects=False)
    assert response.status_code == 307 and response.headers["location"] == "/explain/seq2seq?lang=en&text=42"

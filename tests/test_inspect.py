"""attnlab.inspect held to exact references: a truncated model for the lens, weight edits for head ablation,
the clean run for full patching, hand-multiplied attention for rollout."""

import copy

import pytest
import torch

from attnlab.inspect import (
    Site,
    head_effects,
    knock_out,
    log_prob,
    logit_lens,
    patch,
    restoration,
    rollout,
    run_with,
    zero_head,
)
from attnlab.models.gpt import GPT, GPTConfig


def model(norm_first=True, seed=0, **kw):
    torch.manual_seed(seed)
    cfg = dict(vocab_size=13, d_model=16, n_heads=4, n_layers=3, context_length=10, norm_first=norm_first)
    m = GPT(GPTConfig(**{**cfg, **kw}))
    for p in m.parameters():  # untrained weights are nearly uniform; spread them so effects are visible
        p.data.normal_(0, 0.3)
    return m.eval()


IDS = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6])


@pytest.mark.parametrize("norm_first", [True, False])
def test_lens_last_layer_is_the_logits_exactly(norm_first):
    m = model(norm_first)
    lens = logit_lens(m, IDS)
    assert lens.shape == (4, 8, 13)
    logits, _ = run_with(m, IDS)  # the same forward pass the lens reads (attention written out, weights kept)
    assert torch.equal(lens[-1], logits[0])
    with torch.no_grad():  # the plain forward uses the fused attention kernel: equal to rounding
        torch.testing.assert_close(lens[-1], m(IDS[None])[0], rtol=0, atol=1e-5)


@pytest.mark.parametrize("norm_first", [True, False])
def test_lens_at_layer_l_is_the_model_cut_after_l_blocks(norm_first):
    m = model(norm_first)
    lens = logit_lens(m, IDS)
    for l in range(4):
        cut = copy.deepcopy(m)
        cut.blocks = cut.blocks[:l]  # the same model stopped after l blocks, final LN and head kept
        with torch.no_grad():
            torch.testing.assert_close(lens[l], cut(IDS[None])[0], rtol=0, atol=1e-6)


def test_lens_layer_0_is_the_embedding_direct_path():
    m = model()
    with torch.no_grad():
        x0 = m.embed.tok(IDS) + m.embed.pos(torch.arange(8))  # E[token] + P[i]
        direct = m.lm_head(m.ln_f(x0))
    torch.testing.assert_close(logit_lens(m, IDS)[0], direct, rtol=0, atol=1e-6)


def test_lens_uses_each_layers_own_normalization():
    # Reusing the last layer's mean and variance (a known bug elsewhere) gives other numbers at layer 1.
    m = model()
    _, tr = run_with(m, IDS)
    x1, xL = tr["layers.0.output"][0], tr["layers.2.output"][0]
    stale = m.lm_head(
        (x1 - xL.mean(-1, keepdim=True)) / (xL.var(-1, unbiased=False, keepdim=True) + 1e-5).sqrt() * m.ln_f.gamma
        + m.ln_f.beta
    )
    assert (logit_lens(m, IDS)[1] - stale).abs().max() > 1e-3


def test_ablating_nothing_changes_nothing():
    m = model()
    logits, _ = run_with(m, IDS, {})
    assert torch.equal(logits, run_with(m, IDS)[0])
    with torch.no_grad():
        torch.testing.assert_close(logits, m(IDS[None]), rtol=0, atol=1e-5)
    # Resampling a head from the input itself is no change at all.
    assert torch.equal(head_effects(m, IDS, target=2, how="resample", reference=IDS[None]), torch.zeros(3, 4))
    # Knocking out no neuron is no change.
    assert torch.equal(run_with(m, IDS, {"layers.1.ffn.hidden": knock_out([])})[0], logits)


def test_zero_ablation_equals_zeroing_the_heads_columns_of_W_O():
    m = model()
    effects = head_effects(m, IDS, target=5, how="zero")
    with torch.no_grad():
        base = log_prob(m(IDS[None]), 5, -1)
        for layer, head in [(0, 1), (2, 3)]:
            edited = copy.deepcopy(m)
            d_k = 4
            edited.blocks[layer].attn.W_O.weight[:, head * d_k : (head + 1) * d_k] = 0  # the head writes nothing
            expected = log_prob(edited(IDS[None]), 5, -1) - base
            torch.testing.assert_close(effects[layer, head], expected[0], rtol=0, atol=1e-5)
    assert effects.abs().max() > 1e-3  # with spread weights some head matters


def test_mean_ablation_over_the_input_itself_with_one_position_is_no_change():
    m = model()
    one = IDS[:1]
    assert torch.equal(head_effects(m, one, target=0, how="mean", reference=one[None]), torch.zeros(3, 4))


def test_knock_out_equals_zeroing_the_neurons_weights():
    m = model()
    logits, _ = run_with(m, IDS, {"layers.1.ffn.hidden": knock_out([2, 7])})
    edited = copy.deepcopy(m)
    with torch.no_grad():
        edited.blocks[1].ffn.W_2.weight[:, [2, 7]] = 0  # the neurons write nothing
        torch.testing.assert_close(logits, edited(IDS[None]), rtol=0, atol=1e-6)


def test_patching_the_full_clean_activation_restores_the_clean_output():
    m = model()
    clean, corrupt = IDS, torch.tensor([3, 1, 4, 1, 5, 9, 2, 7])
    with torch.no_grad():
        clean_logits = m(clean[None])
    for site in ["embed.output", "layers.1.output", "layers.2.output"]:
        torch.testing.assert_close(patch(m, clean, corrupt, site), clean_logits, rtol=0, atol=1e-6)
    every_head = patch(m, clean, corrupt, "layers.2.attn.head_outputs")
    assert (every_head - clean_logits).abs().max() > 0  # the FFN still reads the corrupt stream


def test_patching_a_later_position_cannot_reach_an_earlier_one():
    m = model()
    clean, corrupt = IDS, torch.tensor([3, 1, 4, 1, 5, 9, 2, 7])
    corrupt_logits, _ = run_with(m, corrupt)
    patched = patch(m, clean, corrupt, Site("layers.0.output", position=7))
    assert torch.equal(patched[:, :7], corrupt_logits[:, :7])  # causal: position 7 is read by none before it


def test_restoration_is_one_at_the_last_layer_of_the_answer_position_and_zero_before_the_change():
    m = model()
    clean, corrupt = IDS, torch.tensor([3, 1, 4, 8, 5, 9, 2, 6])  # differ at position 3 only
    share = restoration(m, clean, corrupt, target=4, what="resid")
    assert share.shape == (4, 8)
    assert share[-1, -1].item() == pytest.approx(1.0, abs=1e-5)  # the whole final stream at the answer
    assert share[:, :3].abs().max().item() < 1e-6  # positions before the change hold the same values
    assert share[0, 3].item() == pytest.approx(1.0, abs=1e-5)  # the changed token's embedding carries it all
    heads = restoration(m, clean, corrupt, target=4, what="heads")
    assert heads.shape == (3, 4)


def test_rollout_rows_sum_to_one_are_causal_and_match_the_product_by_hand():
    m = model()
    R = rollout(m, IDS)
    torch.testing.assert_close(R.sum(-1), torch.ones(8))
    assert torch.equal(R.triu(1), torch.zeros(8, 8))  # nothing flows from the future
    _, tr = run_with(m, IDS)
    by_hand = torch.eye(8)
    for layer in range(3):
        A = tr[f"layers.{layer}.attn.weights"][0].mean(0)
        by_hand = (0.5 * A + 0.5 * torch.eye(8)) @ by_hand  # rows of A already sum to 1, so no renormalizing
    torch.testing.assert_close(R, by_hand, rtol=0, atol=1e-6)
    assert rollout(m, IDS, per_layer=True).shape == (3, 8, 8)


def test_bad_input_is_refused_clearly():
    m = model()
    with pytest.raises(ValueError, match="how must be"):
        head_effects(m, IDS, 1, how="knockout")
    with pytest.raises(ValueError, match="needs reference"):
        head_effects(m, IDS, 1, how="mean")
    with pytest.raises(ValueError, match="as long as"):
        head_effects(m, IDS, 1, how="resample", reference=IDS[None, :4])
    with pytest.raises(KeyError, match="no activation named layers.0.atn.output"):
        run_with(m, IDS, {"layers.0.atn.output": zero_head(0)})
    with pytest.raises(ValueError, match="same shape"):
        patch(m, IDS, IDS[:4], "layers.0.output")
    with pytest.raises(ValueError, match="nothing to restore"):
        restoration(m, IDS, IDS, 1)


def test_rollout_reads_a_bidirectional_encoder_too():
    from attnlab.models.encoder import Encoder, EncoderConfig

    torch.manual_seed(0)
    enc = Encoder(EncoderConfig(vocab_size=13, d_model=16, n_heads=4, n_layers=2, context_length=10)).eval()
    R = rollout(enc, IDS)
    torch.testing.assert_close(R.sum(-1), torch.ones(8))
    assert R.triu(1).abs().max() > 0.01  # every position reads the later ones as well

"""The three forms: causality, KV-cache decoding, parameter counts, traces, clear errors."""

import pytest
import torch

from attnlab.models import GPT, PRESETS, Encoder, EncoderConfig, EncoderDecoder, EncoderDecoderConfig, GPTConfig, preset
from attnlab.nn import Block, DecoderBlock
from attnlab.trace import trace


def small_gpt(**overrides):
    torch.manual_seed(0)
    fields = dict(vocab_size=11, context_length=12, d_model=16, n_heads=4, n_layers=3)
    fields.update(overrides)
    return GPT(GPTConfig(**fields)).eval()


@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "rope"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_changing_token_j_changes_nothing_before_j_in_any_layer(positions, norm_first):
    model = small_gpt(positions=positions, norm_first=norm_first)
    idx = torch.randint(0, 11, (1, 10), generator=torch.Generator().manual_seed(1))
    for j in (0, 4, 9):
        changed = idx.clone()
        changed[0, j] = (idx[0, j] + 1) % 11
        a, b = trace(model, idx), trace(model, changed)
        for i in range(3):
            out_a, out_b = a[f"layers.{i}.output"], b[f"layers.{i}.output"]
            assert torch.equal(out_a[:, :j], out_b[:, :j]), f"layer {i} leaked position {j} into the past"
            assert not torch.allclose(out_a[:, j], out_b[:, j])  # position j itself does change
        assert torch.equal(a["logits"][:, :j], b["logits"][:, :j])


def test_encoder_is_bidirectional():
    torch.manual_seed(0)
    enc = Encoder(EncoderConfig(vocab_size=11, context_length=8, d_model=16, n_heads=2, n_layers=2)).eval()
    idx = torch.randint(0, 11, (1, 6))
    changed = idx.clone()
    changed[0, 5] = (idx[0, 5] + 1) % 11
    assert not torch.allclose(enc(idx)[:, 0], enc(changed)[:, 0])  # the last token reaches the first position
    assert enc.token_logits(idx).shape == (1, 6, 11)
    assert enc.classify(idx).shape == (1, 2)


@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "rope"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_kv_cache_gives_the_full_forward_logits_at_every_step(positions, norm_first):
    model = small_gpt(positions=positions, norm_first=norm_first)
    idx = torch.randint(0, 11, (2, 12), generator=torch.Generator().manual_seed(2))
    cache = model.new_kv_cache()
    prompt = model(idx[:, :4], kv_cache=cache)  # a prompt of 4, then one token at a time
    steps = [prompt] + [model(idx[:, t : t + 1], kv_cache=cache) for t in range(4, 12)]
    assert cache.length == 12
    for t in range(4, 12):
        full = model(idx[:, : t + 1])
        assert torch.allclose(steps[t - 3][:, -1], full[:, -1], atol=1e-5)
    assert torch.allclose(torch.cat(steps, dim=1), model(idx), atol=1e-5)


def test_kv_cache_in_the_encoder_decoder():
    torch.manual_seed(0)
    model = EncoderDecoder(
        EncoderDecoderConfig(src_vocab_size=9, tgt_vocab_size=7, context_length=10, d_model=16, n_heads=2)
    ).eval()
    src, tgt = torch.randint(0, 9, (2, 6)), torch.randint(0, 7, (2, 5))
    memory = model.encode(src)
    cache = model.new_kv_cache()
    steps = torch.cat([model.decode(tgt[:, t : t + 1], memory, kv_cache=cache) for t in range(5)], dim=1)
    assert torch.allclose(steps, model(src, tgt), atol=1e-5)


def test_cache_beyond_the_context_is_refused():
    model = small_gpt()
    cache = model.new_kv_cache()
    model(torch.zeros(1, 12, dtype=torch.long), kv_cache=cache)
    with pytest.raises(ValueError, match="after 12 cached ones, the context holds 12"):
        model(torch.zeros(1, 1, dtype=torch.long), kv_cache=cache)


def gpt_params(c: GPTConfig) -> int:
    d, V, L, F = c.d_model, c.vocab_size, c.n_layers, c.hidden
    attention = 4 * (d * d + d)  # W_Q, W_K, W_V, W_O with biases
    ffn = d * F + F + F * d + d
    norms = 2 * 2 * d  # two LayerNorms, gamma and beta
    positions = c.context_length * d if c.positions == "learned" else 0
    return (
        V * d
        + positions
        + L * (attention + ffn + norms)
        + (2 * d if c.norm_first else 0)
        + (0 if c.tie_weights else V * d)
    )


def encoder_params(c: EncoderConfig) -> int:
    d, V, L, F = c.d_model, c.vocab_size, c.n_layers, c.hidden
    block = 4 * (d * d + d) + (2 * d * F + F + d) + 4 * d
    positions = c.context_length * d if c.positions == "learned" else 0
    return (
        V * d + positions + L * block + (2 * d if c.norm_first else 0) + (d * V + V) + (d * c.n_classes + c.n_classes)
    )


def seq2seq_params(c: EncoderDecoderConfig) -> int:
    d, F = c.d_model, c.hidden
    mha, ffn = 4 * (d * d + d), 2 * d * F + F + d
    positions = 2 * c.context_length * d if c.positions == "learned" else 0
    enc = c.n_encoder_layers * (mha + ffn + 4 * d)
    dec = c.n_decoder_layers * (2 * mha + ffn + 6 * d)
    return (
        (c.src_vocab_size + c.tgt_vocab_size) * d
        + positions
        + enc
        + dec
        + (4 * d if c.norm_first else 0)
        + d * c.tgt_vocab_size
    )


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_parameter_counts_match_the_closed_form(name):
    config = preset(name, vocab_size=37)
    model, count = {
        GPTConfig: (GPT, gpt_params),
        EncoderConfig: (Encoder, encoder_params),
        EncoderDecoderConfig: (EncoderDecoder, seq2seq_params),
    }[type(config)]
    assert sum(p.numel() for p in model(config).parameters()) == count(config)


def test_tied_weights_count_once():
    config = GPTConfig(vocab_size=50, d_model=16, n_heads=2, tie_weights=True)
    assert sum(p.numel() for p in GPT(config).parameters()) == gpt_params(config)


def test_decoder_only_block_has_no_cross_attention_and_enc_dec_block_has():
    model = small_gpt()
    assert all(type(b) is Block for b in model.blocks)
    assert not any("cross" in name for name, _ in model.named_modules())
    seq2seq = EncoderDecoder(EncoderDecoderConfig())
    assert all(isinstance(b, DecoderBlock) and hasattr(b, "cross_attn") for b in seq2seq.decoder)


def test_trace_records_every_layer_and_head_with_named_shapes():
    model = small_gpt()
    idx = torch.randint(0, 11, (2, 7))
    tr = trace(model, idx)
    # The traced pass (explicit attention) computes what the ordinary pass (fused SDPA) computes.
    assert torch.allclose(tr.output, model(idx), atol=1e-5)
    for i in range(3):
        for what, shape in [
            ("q", (2, 4, 7, 4)),
            ("k", (2, 4, 7, 4)),
            ("v", (2, 4, 7, 4)),
            ("scores", (2, 4, 7, 7)),
            ("masked_scores", (2, 4, 7, 7)),
            ("weights", (2, 4, 7, 7)),
            ("head_outputs", (2, 4, 7, 4)),
        ]:
            assert tr[f"layers.{i}.attn.{what}"].shape == shape
        assert tr[f"layers.{i}.output"].shape == (2, 7, 16)
    assert tr["logits"].shape == (2, 7, 11)
    assert tr.shapes()["layers.0.attn.weights"]["dims"] == "(B, H, T_q, T_k)"
    # Per head: the recorded weights are softmax(q k^T / sqrt(d_k)) with the causal mask, recomputed here.
    q, k = tr.head(1, 2, "q"), tr.head(1, 2, "k")
    scores = q @ k.transpose(-2, -1) / 2.0
    scores = scores.masked_fill(torch.ones(7, 7, dtype=torch.bool).triu(1), float("-inf"))
    assert torch.allclose(tr.head(1, 2, "weights"), scores.softmax(-1), atol=1e-6)
    assert torch.allclose(tr.head(1, 2, "head_outputs"), tr.head(1, 2, "weights") @ tr.head(1, 2, "v"), atol=1e-6)


def test_trace_works_on_encoder_heads_and_cross_attention():
    torch.manual_seed(0)
    enc = Encoder(preset("encoder-tiny", vocab_size=10)).eval()
    tr = trace(enc.classify, torch.randint(0, 10, (1, 5)))
    assert tr["logits"].shape == (1, 2) and tr.entries["logits"].dims == "(B, n_classes)"
    assert "layers.0.attn.masked_scores" not in tr  # bidirectional: nothing masked
    s2s = EncoderDecoder(preset("seq2seq-tiny", vocab_size=10)).eval()
    tr = trace(s2s, torch.randint(0, 10, (1, 6)), torch.randint(0, 10, (1, 4)))
    assert tr["decoder.0.cross_attn.weights"].shape == (1, 2, 4, 6)


def test_clear_errors():
    with pytest.raises(ValueError, match="d_model must be divisible by n_heads: got d_model=10, n_heads=4"):
        GPTConfig(d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="vocab_size must be a positive integer"):
        GPTConfig(vocab_size=0)
    with pytest.raises(ValueError, match="unknown preset"):
        preset("nope")
    model = small_gpt()
    with pytest.raises(ValueError, match="sequence too long: idx has 13 tokens, the context holds 12"):
        model(torch.zeros(1, 13, dtype=torch.long))
    with pytest.raises(ValueError, match=r"token ids must be in \[0, 11\), got \[-1, 11\]"):
        model(torch.tensor([[0, 11, -1]]))
    with pytest.raises(ValueError, match=r"\(B, T\) tensor of integer token ids"):
        model(torch.zeros(1, 3))
    with pytest.raises(ValueError, match="key_padding_mask must be a bool tensor of shape"):
        Encoder(EncoderConfig())(
            torch.zeros(2, 4, dtype=torch.long), key_padding_mask=torch.ones(2, 5, dtype=torch.bool)
        )


def test_config_round_trips_through_a_dict():
    config = preset("shakespeare-cpu", vocab_size=65)
    assert GPTConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown GPTConfig fields"):
        GPTConfig.from_dict({**config.to_dict(), "colour": "red"})


@pytest.mark.parametrize("seed", range(5))
def test_untrained_gpt_predicts_near_uniform(seed):
    torch.manual_seed(seed)
    model = GPT(preset("poem-tiny", vocab_size=6)).eval()
    p = model(torch.tensor([[0, 1, 2, 3]]))[0, -1].softmax(-1)  # next after 床前明月
    assert (p - 1 / 6).abs().max() < 0.05  # every token within 0.05 of 1/|V| = 0.167

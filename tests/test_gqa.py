"""Grouped-query and multi-query attention (issue 25, item 2): MultiHeadAttention(..., n_kv_heads) and
GPTConfig.n_kv_heads.

Checked against what we did not write: torch's F.scaled_dot_product_attention on K and V repeated per group by
the reference below (and torch's own enable_gqa grouping), with our weights copied across; plain multi-head
attention when the groups have size 1; the full forward pass for the KV-cached decode; `sum(p.numel())` for the
counts; a checkpoint written to disk and read back.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlab.models import GPT, GPTConfig, count_params
from attnlab.nn import MultiHeadAttention
from attnlab.text import CharTokenizer
from attnlab.trace import trace
from attnlab.train import load_checkpoint, save_checkpoint

D, H = 24, 6  # d_k = 4; n_kv_heads may be 6 (MHA), 3 or 2 (GQA), 1 (MQA)


@pytest.fixture(autouse=True)
def _float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    yield
    torch.set_default_dtype(old)


def randomize(module):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    return module.eval()


def reference(x, context, W_Q, b_Q, W_K, b_K, W_V, b_V, W_O, b_O, n_heads, n_kv_heads, causal=False):
    """GQA by hand: project, repeat each K/V head for its n_heads / n_kv_heads query heads, torch's SDPA, W_O."""
    B, T, d = x.shape
    src = x if context is None else context
    d_k = d // n_heads
    q = (x @ W_Q.T + b_Q).view(B, T, n_heads, d_k).transpose(1, 2)
    k = (src @ W_K.T + b_K).view(B, src.shape[1], n_kv_heads, d_k).transpose(1, 2)
    v = (src @ W_V.T + b_V).view(B, src.shape[1], n_kv_heads, d_k).transpose(1, 2)
    group = n_heads // n_kv_heads
    k_rep = torch.stack([k[:, h // group] for h in range(n_heads)], dim=1)  # query head h reads K/V head h // group
    v_rep = torch.stack([v[:, h // group] for h in range(n_heads)], dim=1)
    out = F.scaled_dot_product_attention(q, k_rep, v_rep, is_causal=causal)
    grouped = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)  # torch's own grouping
    assert torch.allclose(out, grouped, atol=1e-12)
    return out.transpose(1, 2).reshape(B, T, d) @ W_O.T + b_O


def weights_of(m):
    return [
        t.detach().clone()
        for t in (
            m.W_Q.weight,
            m.W_Q.bias,
            m.W_K.weight,
            m.W_K.bias,
            m.W_V.weight,
            m.W_V.bias,
            m.W_O.weight,
            m.W_O.bias,
        )
    ]


@pytest.mark.parametrize("kv", [6, 3, 2, 1])
@pytest.mark.parametrize("kind", ["self", "causal", "cross"])
def test_gqa_matches_the_repeated_kv_reference(kv, kind):
    m = randomize(MultiHeadAttention(D, H, n_kv_heads=kv))
    assert m.W_K.weight.shape == m.W_V.weight.shape == (kv * D // H, D)  # K, V project to n_kv_heads · d_k
    x, memory = torch.randn(2, 7, D), torch.randn(2, 5, D)
    context = memory if kind == "cross" else None
    causal = kind == "causal"
    ref = reference(x, context, *weights_of(m), H, kv, causal=causal)
    explicit, w = m(x, context, causal=causal, need_weights=True)
    fused, _ = m(x, context, causal=causal)
    assert torch.allclose(explicit, ref, atol=1e-10) and torch.allclose(fused, ref, atol=1e-10)
    assert w.shape == (2, H, 7, 5 if kind == "cross" else 7)


def test_a_wrong_grouping_would_be_caught():
    """The reference must fail on the other grouping (head h reads K/V head h % n_kv), else it proves nothing."""
    m = randomize(MultiHeadAttention(D, H, n_kv_heads=2))
    x = torch.randn(1, 5, D)
    out, _ = m(x)
    B, T, _ = x.shape
    q = m.W_Q(x).view(B, T, H, 4).transpose(1, 2)
    k = m.W_K(x).view(B, T, 2, 4).transpose(1, 2)
    v = m.W_V(x).view(B, T, 2, 4).transpose(1, 2)
    wrong = F.scaled_dot_product_attention(q, k.repeat(1, 3, 1, 1), v.repeat(1, 3, 1, 1))  # tiled, not interleaved
    assert not torch.allclose(m.W_O(wrong.transpose(1, 2).reshape(B, T, D)), out, atol=1e-3)


def test_n_kv_heads_equal_to_n_heads_is_plain_multi_head_attention():
    torch.manual_seed(1)
    plain = MultiHeadAttention(D, H)
    torch.manual_seed(1)
    same = MultiHeadAttention(D, H, n_kv_heads=H)
    old = {k: tuple(v.shape) for k, v in plain.state_dict().items()}
    assert {k: tuple(v.shape) for k, v in same.state_dict().items()} == old  # old checkpoints load
    assert old["W_K.weight"] == old["W_V.weight"] == (D, D)
    x = torch.randn(2, 6, D)
    same.load_state_dict(plain.state_dict())
    for causal in (False, True):
        assert torch.equal(plain(x, causal=causal)[0], same(x, causal=causal)[0])


@pytest.mark.parametrize("kv", [0, 4, -1, 2.0, True])
def test_n_kv_heads_must_divide_n_heads(kv):
    with pytest.raises(ValueError, match="n_kv_heads"):
        MultiHeadAttention(D, H, n_kv_heads=kv)


def gpt_config(**kw):
    return GPTConfig(vocab_size=17, context_length=16, d_model=D, n_heads=H, n_layers=2, dropout=0.0, **kw)


@pytest.mark.parametrize("kv", [None, 3, 1])
@pytest.mark.parametrize("positions", ["learned", "rope"])
def test_cached_decode_of_a_gqa_gpt_is_the_full_forward(kv, positions):
    model = GPT(gpt_config(n_kv_heads=kv, positions=positions, norm_first=True)).eval()
    idx = torch.randint(0, 17, (2, 12))
    full = model(idx)
    cache = model.new_kv_cache()
    steps = [model(idx[:, :4], kv_cache=cache)] + [model(idx[:, t : t + 1], kv_cache=cache) for t in range(4, 12)]
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-10)
    for layer in cache.layers:  # the cache holds the K/V heads only: n_heads / n_kv_heads times smaller
        assert layer.k.shape == layer.v.shape == (2, kv or H, 12, D // H)


def test_the_count_is_every_parameter_of_a_gqa_gpt():
    for kv in (None, 6, 3, 2, 1):
        for ablations in ((), ("one-head",)):
            cfg = gpt_config(n_kv_heads=kv, ablations=ablations)
            assert count_params(cfg) == sum(p.numel() for p in GPT(cfg).parameters()), (kv, ablations)
    # MQA: W_K and W_V each lose d·(d - d_k) weights and d - d_k biases, in each of the 2 layers
    saved = count_params(gpt_config()) - count_params(gpt_config(n_kv_heads=1))
    assert saved == 2 * (2 * D * (D - D // H) + 2 * (D - D // H))


def test_the_trace_records_k_as_each_query_head_reads_it():
    model = GPT(gpt_config(n_kv_heads=2)).eval()
    tr = trace(model, torch.randint(0, 17, (1, 6)))
    k = tr["layers.0.attn.k"]
    assert k.shape == (1, H, 6, D // H)  # after the repeat: one K per query head
    assert torch.equal(tr.head(0, 0, "k"), tr.head(0, 2, "k"))  # heads 0..2 share K/V head 0
    assert not torch.allclose(tr.head(0, 2, "k"), tr.head(0, 3, "k"))  # head 3 reads K/V head 1
    q = tr["layers.0.attn.q"]
    assert torch.allclose(tr["layers.0.attn.scores"], q @ k.transpose(-2, -1) / 2.0)  # sqrt(d_k) = 2


@pytest.mark.parametrize("kv", [2, 1])
def test_a_gqa_checkpoint_saves_and_loads(tmp_path, kv):
    tok = CharTokenizer.train("床前明月光疑是地上霜举头望明月低头思故乡")
    cfg = GPTConfig(vocab_size=tok.vocab_size, context_length=16, d_model=D, n_heads=H, n_layers=2, n_kv_heads=kv)
    torch.set_default_dtype(torch.float32)  # checkpoints are float32
    model = GPT(cfg).eval()
    out = save_checkpoint(tmp_path / "ck", model, tok, {})
    ckpt = load_checkpoint(out)
    assert ckpt.model.config.n_kv_heads == kv and ckpt.warnings == []
    assert ckpt.model.blocks[0].attn.W_K.weight.shape == (kv * D // H, D)
    idx = torch.randint(0, tok.vocab_size, (1, 10))
    assert torch.equal(ckpt.model(idx), model(idx))


def test_the_quality_null_n_kv_heads_equal_to_n_heads_trains_exactly_like_mha():
    """benchmarks/bench_gqa.py compares held-out losses; with the groups of size 1 there is nothing to compare:
    the same seed gives the same weights, the same updates and the same held-out loss, to the bit."""
    from attnlab.train import TokenData, TrainConfig, Trainer

    torch.set_default_dtype(torch.float32)
    stream = torch.randint(0, 17, (400,))
    data = TokenData(train=stream[:300], val=stream[300:])
    losses = []
    for kv in (None, H):
        torch.manual_seed(3)
        trainer = Trainer(GPT(gpt_config(n_kv_heads=kv)), data, TrainConfig(steps=3, batch_size=4, eval_iters=2))
        losses.append(trainer.run().val_loss)
    assert losses[0] == losses[1]

"""attnlab.nn.lora against its closed form: before training the wrapped model is the model; the update is
(α / r) B A, which the merged nn.Linear computes; only A and B train; a GPT wrapped on W_Q, W_K, W_V, W_O trains
r · (d_in + d_out) numbers a matrix."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.models import GPT, GPTConfig
from attnlab.nn.lora import LoRALinear, add_lora


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 8), st.integers(1, 12), st.integers(1, 12), st.booleans(), st.integers(0, 10_000))
def test_the_update_is_alpha_over_r_times_b_a_and_merges_into_one_linear(r, d_in, d_out, bias, seed):
    torch.manual_seed(seed)
    base = torch.nn.Linear(d_in, d_out, bias=bias)
    lora = LoRALinear(base, r, alpha=2.0 * r)
    x = torch.randn(5, 3, d_in)  # (B, T, d_in)
    torch.testing.assert_close(lora(x), base(x))  # B starts at zero: the wrapped map is the map
    with torch.no_grad():
        lora.B.normal_()
    want = x @ (base.weight + 2.0 * lora.B @ lora.A).T + (base.bias if bias else 0)  # closed form, α / r = 2
    torch.testing.assert_close(lora(x), want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(lora.merged()(x), want, rtol=1e-5, atol=1e-5)


def test_only_a_and_b_train_and_a_gpt_trains_r_times_d_in_plus_d_out_per_matrix():
    config = GPTConfig(vocab_size=20, context_length=16, d_model=32, n_heads=4, n_layers=2)
    model = GPT(config)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    x = torch.randint(20, (2, 10))
    want = model(x)
    trainable = add_lora(model, r=4, alpha=8.0, targets=("W_Q", "W_K", "W_V", "W_O"))
    torch.testing.assert_close(model(x), want)  # unchanged until trained
    assert sum(p.numel() for p in trainable) == 2 * 4 * 4 * (32 + 32)  # 2 layers, 4 matrices, r (d_in + d_out)
    assert {id(p) for p in model.parameters() if p.requires_grad} == {id(p) for p in trainable}
    opt = torch.optim.SGD(trainable, lr=0.1)
    for _ in range(3):
        loss = model(x).logsumexp(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = dict(model.named_parameters())
    for name, value in before.items():  # every weight the model had is frozen where it now lives
        moved = name.replace(".W_Q.", ".W_Q.base.").replace(".W_K.", ".W_K.base.")
        moved = moved.replace(".W_V.", ".W_V.base.").replace(".W_O.", ".W_O.base.")
        torch.testing.assert_close(after[moved], value)
    assert not torch.allclose(model(x), want)  # and the update changed the model


def test_a_bad_rank_or_no_target_is_refused():
    with pytest.raises(ValueError, match="rank"):
        LoRALinear(torch.nn.Linear(3, 3), r=0)
    with pytest.raises(ValueError, match="no nn.Linear"):
        add_lora(torch.nn.Sequential(torch.nn.Linear(3, 3)), targets=("W_Q",))

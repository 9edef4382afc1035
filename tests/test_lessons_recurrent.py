"""attnlab.nn.recurrent against torch's own RNN, LSTM and GRU, and additive attention against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.nn.recurrent import GRU, LSTM, RNN, AdditiveAttention


def test_rnn_equals_torch_rnn():
    torch.manual_seed(0)
    ours = RNN(3, 5)
    ref = torch.nn.RNN(3, 5, nonlinearity="tanh", batch_first=True)
    with torch.no_grad():
        ref.weight_hh_l0.copy_(ours.W_h)
        ref.weight_ih_l0.copy_(ours.W_x)
        ref.bias_ih_l0.copy_(ours.b)
        ref.bias_hh_l0.zero_()
    x = torch.randn(2, 7, 3)
    h, states = ours(x)
    out, h_ref = ref(x)
    torch.testing.assert_close(torch.stack(states[1:], 1), out)
    torch.testing.assert_close(h, h_ref[0])
    assert len(states) == 8  # h_0 .. h_7: one step per token


def test_lstm_equals_torch_lstm():
    torch.manual_seed(1)
    ours = LSTM(4, 6, forget_bias=1.0)
    ref = torch.nn.LSTM(4, 6, batch_first=True)
    H = 6
    with torch.no_grad():
        for k, gate in enumerate("ifco"):  # torch stacks the gates as i, f, g(=c~), o
            W, b = getattr(ours, f"W_{gate}"), getattr(ours, f"b_{gate}")
            ref.weight_hh_l0[k * H : (k + 1) * H].copy_(W[:, :H])  # [h, x]: the h columns come first
            ref.weight_ih_l0[k * H : (k + 1) * H].copy_(W[:, H:])
            ref.bias_ih_l0[k * H : (k + 1) * H].copy_(b)
        ref.bias_hh_l0.zero_()
    x = torch.randn(3, 5, 4)
    h, trace = ours(x)
    out, (h_ref, c_ref) = ref(x)
    torch.testing.assert_close(torch.stack(trace["h"][1:], 1), out)
    torch.testing.assert_close(trace["c"][-1], c_ref[0])
    f = torch.stack(trace["f"])
    assert ((f > 0) & (f < 1)).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gru_equals_torch_gru(dtype):
    torch.manual_seed(3)
    ours = GRU(4, 6).to(dtype)
    ref = torch.nn.GRU(4, 6, batch_first=True).to(dtype)
    H = 6
    with torch.no_grad():  # torch stacks the gates as r, z, n; weight_hh @ h and weight_ih @ x, each with a bias
        for k, gate in enumerate("rz"):
            W, b = getattr(ours, f"W_{gate}"), getattr(ours, f"b_{gate}")
            ref.weight_hh_l0[k * H : (k + 1) * H].copy_(W[:, :H])  # [h, x]: the h columns come first
            ref.weight_ih_l0[k * H : (k + 1) * H].copy_(W[:, H:])
            ref.bias_ih_l0[k * H : (k + 1) * H].copy_(b)
            ref.bias_hh_l0[k * H : (k + 1) * H].zero_()
        ref.weight_ih_l0[2 * H :].copy_(ours.W_nx)
        ref.bias_ih_l0[2 * H :].copy_(ours.b_n)
        ref.weight_hh_l0[2 * H :].copy_(ours.W_nh)
        ref.bias_hh_l0[2 * H :].copy_(ours.b_nh)  # inside r * (...): not foldable into b_n
    x = torch.randn(3, 5, 4, dtype=dtype)
    h0 = torch.randn(3, 6, dtype=dtype)
    h, trace = ours(x, h0)
    out, h_ref = ref(x, h0[None])
    torch.testing.assert_close(torch.stack(trace["h"][1:], 1), out)
    torch.testing.assert_close(h, h_ref[0])
    z = torch.stack(trace["z"])
    assert len(trace["h"]) == 6 and ((z > 0) & (z < 1)).all()


def test_gru_keeps_its_state_where_the_update_gate_is_1():
    gru = GRU(2, 3)
    with torch.no_grad():
        gru.b_z.fill_(50.0)  # z = sigmoid(50) = 1 to float precision: h_t = h_{t-1}
    h0 = torch.randn(1, 3)
    h, _ = gru(torch.randn(1, 7, 2), h0)
    torch.testing.assert_close(h, h0)
    with pytest.raises(ValueError, match="GRU expects x of shape"):
        gru(torch.randn(1, 7, 5))


def test_additive_attention_against_numpy():
    torch.manual_seed(2)
    attn = AdditiveAttention(3, 4, 5)
    s, h = torch.randn(2, 2, 3), torch.randn(2, 6, 4)
    mask = torch.ones(2, 2, 6, dtype=torch.bool)
    mask[0, :, 4:] = False
    context, alpha = attn(s, h, mask)
    Ws, Wh, bh, v = (
        attn.W_s.weight.detach().numpy(),
        attn.W_h.weight.detach().numpy(),
        attn.W_h.bias.detach().numpy(),
        attn.v.weight.detach().numpy()[0],
    )
    for b in range(2):
        for t in range(2):
            e = np.array([v @ np.tanh(Ws @ s[b, t].numpy() + Wh @ h[b, j].numpy() + bh) for j in range(6)])
            e[~mask[b, t].numpy()] = -np.inf
            a = np.exp(e - e.max())
            a /= a.sum()
            np.testing.assert_allclose(alpha[b, t].detach().numpy(), a, rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(context[b, t].detach().numpy(), a @ h[b].numpy(), rtol=1e-5, atol=1e-6)
    assert (alpha[0, :, 4:] == 0).all()


def test_bad_shapes_are_clear_errors():
    with pytest.raises(ValueError, match=r"\(B, T, 3\)"):
        RNN(3, 4)(torch.randn(2, 5, 2))
    with pytest.raises(ValueError, match="d_hidden"):
        LSTM(3, 0)

"""Recurrent networks, for contrast with attention: a tanh RNN, an LSTM, a GRU and additive (Bahdanau) attention.

Column-vector notation as in the course (h_t = tanh(W_h h_{t-1} + W_x x_t + b)); tensors carry a leading
batch dimension, so `W_h h` is written `h @ W_h.T`. Each loop is a plain Python `for` over time: that loop
*is* the lesson, n dependent steps that cannot run side by side.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class RNN(nn.Module):
    """h_t = tanh(W_h h_{t-1} + W_x x_t + b), the same W_h, W_x, b at every step."""

    def __init__(self, d_in: int, d_hidden: int):
        super().__init__()
        if d_in < 1 or d_hidden < 1:
            raise ValueError(f"RNN needs d_in >= 1 and d_hidden >= 1, got d_in={d_in}, d_hidden={d_hidden}")
        self.d_in, self.d_hidden = d_in, d_hidden
        self.W_h = nn.Parameter(torch.empty(d_hidden, d_hidden))
        self.W_x = nn.Parameter(torch.empty(d_hidden, d_in))
        self.b = nn.Parameter(torch.zeros(d_hidden))
        bound = 1 / math.sqrt(d_hidden)  # torch.nn.RNN's default range
        nn.init.uniform_(self.W_h, -bound, bound)
        nn.init.uniform_(self.W_x, -bound, bound)

    def step(self, h: Tensor, x: Tensor) -> Tensor:
        """One step: (B, d_hidden), (B, d_in) -> (B, d_hidden)."""
        return torch.tanh(h @ self.W_h.T + x @ self.W_x.T + self.b)

    def forward(self, x: Tensor, h0: Tensor | None = None) -> tuple[Tensor, list[Tensor]]:
        """x: (B, T, d_in) -> (h_T (B, d_hidden), [h_0, h_1, ..., h_T]), one dependent step per token."""
        if x.dim() != 3 or x.shape[-1] != self.d_in:
            raise ValueError(f"RNN expects x of shape (B, T, {self.d_in}), got {tuple(x.shape)}")
        h = x.new_zeros(x.shape[0], self.d_hidden) if h0 is None else h0
        states = [h]
        for t in range(x.shape[1]):  # step t must wait for step t-1
            h = self.step(h, x[:, t])  # (B, d_hidden)
            states.append(h)
        return h, states


class LSTM(nn.Module):
    """The LSTM of the course, gate by gate, on the concatenation [h_{t-1}, x_t]:

    f_t = sigmoid(W_f [h, x] + b_f)     forget gate: how much old memory to keep
    i_t = sigmoid(W_i [h, x] + b_i)     input gate: how much new content to write
    c~_t = tanh(W_c [h, x] + b_c)       candidate content
    c_t = f_t * c_{t-1} + i_t * c~_t    the additive memory update
    o_t = sigmoid(W_o [h, x] + b_o);  h_t = o_t * tanh(c_t)
    """

    def __init__(self, d_in: int, d_hidden: int, *, forget_bias: float = 0.0):
        super().__init__()
        if d_in < 1 or d_hidden < 1:
            raise ValueError(f"LSTM needs d_in >= 1 and d_hidden >= 1, got d_in={d_in}, d_hidden={d_hidden}")
        self.d_in, self.d_hidden = d_in, d_hidden
        bound = 1 / math.sqrt(d_hidden)
        for name in ("f", "i", "c", "o"):
            W = nn.Parameter(torch.empty(d_hidden, d_hidden + d_in).uniform_(-bound, bound))
            b = nn.Parameter(torch.empty(d_hidden).uniform_(-bound, bound))
            setattr(self, f"W_{name}", W)
            setattr(self, f"b_{name}", b)
        with torch.no_grad():
            self.b_f += forget_bias  # a positive forget bias keeps f near 1 at the start: memory kept

    def step(self, h: Tensor, c: Tensor, x: Tensor, *, detach_gates: bool = False) -> tuple[Tensor, Tensor, Tensor]:
        """One step -> (h_t, c_t, f_t), each (B, d_hidden).

        detach_gates=True holds the gates and the candidate fixed for autograd, leaving only the direct
        cell path c_{t-1} -> c_t, whose derivative is diag(f_t).
        """
        hx = torch.cat([h, x], dim=-1)  # (B, d_hidden + d_in) = [h_{t-1}, x_t]
        f = torch.sigmoid(hx @ self.W_f.T + self.b_f)  # (B, d_hidden)
        i = torch.sigmoid(hx @ self.W_i.T + self.b_i)
        c_tilde = torch.tanh(hx @ self.W_c.T + self.b_c)
        o = torch.sigmoid(hx @ self.W_o.T + self.b_o)
        if detach_gates:
            f, i, c_tilde, o = f.detach(), i.detach(), c_tilde.detach(), o.detach()
        c = f * c + i * c_tilde  # the additive path
        h = o * torch.tanh(c)
        return h, c, f

    def forward(
        self, x: Tensor, state: tuple[Tensor, Tensor] | None = None, *, detach_gates: bool = False
    ) -> tuple[Tensor, dict[str, list[Tensor]]]:
        """x: (B, T, d_in) -> (h_T, {"h": [h_0..h_T], "c": [c_0..c_T], "f": [f_1..f_T]})."""
        if x.dim() != 3 or x.shape[-1] != self.d_in:
            raise ValueError(f"LSTM expects x of shape (B, T, {self.d_in}), got {tuple(x.shape)}")
        if state is None:
            h = x.new_zeros(x.shape[0], self.d_hidden)
            c = x.new_zeros(x.shape[0], self.d_hidden)
        else:
            h, c = state
        trace: dict[str, list[Tensor]] = {"h": [h], "c": [c], "f": []}
        for t in range(x.shape[1]):
            h, c, f = self.step(h, c, x[:, t], detach_gates=detach_gates)
            trace["h"].append(h)
            trace["c"].append(c)
            trace["f"].append(f)
        return h, trace


class GRU(nn.Module):
    """The GRU (Cho et al. 2014), gate by gate: two gates and no separate memory cell.

    r_t = sigmoid(W_r [h, x] + b_r)                          reset gate: how much of h_{t-1} the candidate reads
    z_t = sigmoid(W_z [h, x] + b_z)                          update gate: how much of h_{t-1} to keep
    n_t = tanh(W_nx x_t + b_n + r_t * (W_nh h_{t-1} + b_nh))  candidate state
    h_t = (1 - z_t) * n_t + z_t * h_{t-1}                    kept where z is near 1: the additive path
    The reset gate multiplies W_nh h_{t-1} (as torch.nn.GRU and cuDNN do), where the paper multiplies h_{t-1}
    before the product; z_t keeps the old state here, where some texts write the same gate as 1 - z_t.
    """

    def __init__(self, d_in: int, d_hidden: int):
        super().__init__()
        if d_in < 1 or d_hidden < 1:
            raise ValueError(f"GRU needs d_in >= 1 and d_hidden >= 1, got d_in={d_in}, d_hidden={d_hidden}")
        self.d_in, self.d_hidden = d_in, d_hidden
        bound = 1 / math.sqrt(d_hidden)  # torch.nn.GRU's default range

        def uniform(*shape: int) -> nn.Parameter:
            return nn.Parameter(torch.empty(*shape).uniform_(-bound, bound))

        self.W_r, self.b_r = uniform(d_hidden, d_hidden + d_in), uniform(d_hidden)
        self.W_z, self.b_z = uniform(d_hidden, d_hidden + d_in), uniform(d_hidden)
        self.W_nx, self.b_n = uniform(d_hidden, d_in), uniform(d_hidden)
        self.W_nh, self.b_nh = uniform(d_hidden, d_hidden), uniform(d_hidden)

    def step(self, h: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
        """One step -> (h_t, z_t), each (B, d_hidden)."""
        hx = torch.cat([h, x], dim=-1)  # (B, d_hidden + d_in) = [h_{t-1}, x_t]
        r = torch.sigmoid(hx @ self.W_r.T + self.b_r)  # (B, d_hidden)
        z = torch.sigmoid(hx @ self.W_z.T + self.b_z)
        n = torch.tanh(x @ self.W_nx.T + self.b_n + r * (h @ self.W_nh.T + self.b_nh))
        return (1 - z) * n + z * h, z

    def forward(self, x: Tensor, h0: Tensor | None = None) -> tuple[Tensor, dict[str, list[Tensor]]]:
        """x: (B, T, d_in) -> (h_T, {"h": [h_0..h_T], "z": [z_1..z_T]}), one dependent step per token."""
        if x.dim() != 3 or x.shape[-1] != self.d_in:
            raise ValueError(f"GRU expects x of shape (B, T, {self.d_in}), got {tuple(x.shape)}")
        h = x.new_zeros(x.shape[0], self.d_hidden) if h0 is None else h0
        trace: dict[str, list[Tensor]] = {"h": [h], "z": []}
        for t in range(x.shape[1]):
            h, z = self.step(h, x[:, t])
            trace["h"].append(h)
            trace["z"].append(z)
        return h, trace


class AdditiveAttention(nn.Module):
    """Bahdanau attention: e_tj = v^T tanh(W_s s_t + W_h h_j), alpha_t = softmax_j(e_t), c_t = sum_j alpha_tj h_j."""

    def __init__(self, d_query: int, d_key: int, d_attn: int):
        super().__init__()
        self.W_s = nn.Linear(d_query, d_attn, bias=False)
        self.W_h = nn.Linear(d_key, d_attn, bias=True)
        self.v = nn.Linear(d_attn, 1, bias=False)

    def forward(self, s: Tensor, h: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """s: (B, T_q, d_query) decoder states; h: (B, T_k, d_key) encoder states -> (context (B, T_q, d_key),
        alpha (B, T_q, T_k)). mask: bool (B or 1, T_q or 1, T_k), True = may attend."""
        e = self.v(torch.tanh(self.W_s(s)[:, :, None, :] + self.W_h(h)[:, None, :, :]))  # (B, T_q, T_k, 1)
        e = e.squeeze(-1)  # (B, T_q, T_k): alignment scores
        if mask is not None:
            e = e.masked_fill(~mask, float("-inf"))
        alpha = torch.softmax(e, dim=-1)  # (B, T_q, T_k), each row sums to 1
        context = alpha @ h  # (B, T_q, T_k) @ (B, T_k, d_key) -> (B, T_q, d_key)
        return context, alpha


__all__ = ["RNN", "LSTM", "AdditiveAttention"]

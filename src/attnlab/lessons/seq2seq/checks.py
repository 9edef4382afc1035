"""The seq2seq lesson's hand computations behind its two identities (claims final_only and alpha), on trained models."""

from __future__ import annotations

import torch


def final_state_check(model, src: torch.Tensor, tgt_in: torch.Tensor) -> dict:
    """The no-attention decoder sees only (h_S, c_S): replace every other encoder state with noise and compare."""
    states, final = model.encoder(src)  # (B, S, H), ((B, H), (B, H))
    logits, _ = model.decoder(states, final, tgt_in)
    noise = torch.randn(states.shape, generator=torch.Generator().manual_seed(1))
    others = states.clone()
    others[:, :-1] = noise[:, :-1]  # h_1..h_{S-1} replaced, h_S kept
    changed_others = (model.decoder(others, final, tgt_in)[0] - logits).abs().max()
    last = (final[0] + noise[:, -1], final[1])  # only the last state moved
    changed_last = (model.decoder(states, last, tgt_in)[0] - logits).abs().max()
    return {"others_change": float(changed_others), "last_change": float(changed_last)}


def alpha_check(model, src: torch.Tensor, tgt_in: torch.Tensor) -> dict:
    """Bahdanau's first step by hand: e_j = v^T tanh(W_s s_0 + W_h h_j), alpha = softmax(e), c = sum_j alpha_j h_j."""
    states, (s0, _) = model.encoder(src)  # (1, S, H), (1, H)
    attn = model.decoder.attn
    W_s, W_h, b_h, v = attn.W_s.weight, attn.W_h.weight, attn.W_h.bias, attn.v.weight[0]  # (A, H), (A, H), (A,), (A,)
    e = torch.stack([v @ torch.tanh(W_s @ s0[0] + W_h @ h + b_h) for h in states[0]])  # (S,)
    alpha = torch.exp(e - e.max()) / torch.exp(e - e.max()).sum()
    context = sum(a * h for a, h in zip(alpha, states[0]))  # (H,)
    lib_context, lib_alpha = attn(s0[:, None, :], states)  # (1, 1, H), (1, 1, S)
    _, maps = model(src, tgt_in)
    return {
        "alpha_hand_error": float(max((alpha - lib_alpha[0, 0]).abs().max(), (alpha - maps[0][0, 0, 0]).abs().max())),
        "context_hand_error": float((context - lib_context[0, 0]).abs().max()),
        "alpha_sum_error": float((maps[0].sum(-1) - 1).abs().max()),
    }

"""attnlab.nn.moe (issue 25 §4): the top-k routed FFN against a reference written here (a plain loop over the tokens
that calls each chosen expert), closed forms of the balance loss, capacity drops on a constructed router, the
gradient, and a MoE GPT that trains, counts and saves like a dense one."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attnlab.models import GPT, GPTConfig
from attnlab.models.count import active_params, count_params, forward_flops
from attnlab.nn import FeedForward, MoE
from attnlab.nn.moe import aux_loss, balance_loss
from attnlab.text import JINGYESI, CharTokenizer
from attnlab.train.data import TokenData
from attnlab.train.loop import TrainConfig, Trainer, lm_loss
from attnlab.train.storage.checkpoint import load_checkpoint, save_checkpoint


def reference(moe: MoE, x: torch.Tensor) -> tuple[torch.Tensor, list[int], int]:
    """Token by token: softmax router, top-k, gates (raw for k = 1, renormalised for k > 1), capacity taken in queue
    order (every first choice before any second choice, tokens in order), y = sum of gate · expert(x).
    Returns y, the choices each expert took, and how many choices were dropped."""
    tokens = x.reshape(-1, x.shape[-1])
    N, E, k = tokens.shape[0], moe.n_experts, moe.top_k
    C = math.ceil(moe.capacity_factor * N * k / E)
    choices = []
    for n in range(N):
        p = torch.softmax(tokens[n] @ moe.router.weight.T, dim=-1)
        order = sorted(range(E), key=lambda i: (-p[i].item(), i))[:k]
        total = sum(p[i] for i in order)
        choices.append([(i, p[i] if k == 1 else p[i] / total) for i in order])
    taken, dropped = [0] * E, 0
    y = torch.zeros_like(tokens)
    for slot in range(k):
        for n in range(N):
            i, g = choices[n][slot]
            if taken[i] < C:
                taken[i] += 1
                y[n] = y[n] + g * moe.experts[i](tokens[n][None])[0]
            else:
                dropped += 1
    return y.reshape(x.shape), taken, dropped


@pytest.mark.parametrize("E,k,cf", [(4, 1, 1.0), (4, 2, 1.0), (4, 1, 8.0), (3, 2, 0.5), (5, 3, 1.25)])
def test_the_layer_equals_the_token_by_token_reference(E, k, cf):
    torch.manual_seed(E * 10 + k)
    moe = MoE(8, 12, n_experts=E, top_k=k, capacity_factor=cf, activation="gelu").double()
    x = torch.randn(3, 7, 8, dtype=torch.float64)
    y = moe(x)
    want, taken, dropped = reference(moe, x)
    torch.testing.assert_close(y, want, rtol=1e-12, atol=1e-12)
    assert moe.kept_per_expert.tolist() == taken and moe.dropped == dropped
    assert int(moe.tokens_per_expert.sum()) == 21 * k and int(moe.kept.sum()) == 21 * k - dropped
    if cf >= E:  # room for every token: nothing dropped
        assert dropped == 0


def test_one_expert_with_room_for_all_is_that_feedforward_exactly():
    torch.manual_seed(0)
    moe = MoE(16, 32, n_experts=1, top_k=1, capacity_factor=1.0)
    ffn = FeedForward(16, 32)
    ffn.load_state_dict(moe.experts[0].state_dict())
    x = torch.randn(2, 9, 16)
    assert torch.equal(moe(x), ffn(x))  # the gate is softmax over one expert: exactly 1
    assert moe.dropped == 0 and moe.aux_loss.item() == 1.0  # E · f · P = 1 · 1 · 1


def test_balance_loss_closed_forms():
    E, N = 4, 12
    uniform = balance_loss(torch.full((E,), N // E), torch.full((N, E), 1 / E))
    assert float(uniform) == pytest.approx(1.0, abs=1e-12)  # E · E · (1/E · 1/E)
    one = balance_loss(torch.tensor([N, 0, 0, 0]), F.one_hot(torch.zeros(N, dtype=torch.long), E).double())
    assert float(one) == pytest.approx(E, abs=1e-12)  # E · 1 · 1


def test_the_module_gives_the_closed_forms_on_constructed_routers():
    E = 4
    moe = MoE(E, 8, n_experts=E, top_k=1, capacity_factor=10.0).double()
    x = torch.eye(E, dtype=torch.float64).repeat(3, 1)[None]  # (1, 12, 4): token n is e_{n mod 4}
    with torch.no_grad():
        moe.router.weight.copy_(3.0 * torch.eye(E))  # token e_i prefers expert i: an even load, P even by symmetry
    moe(x)
    assert moe.tokens_per_expert.tolist() == [3, 3, 3, 3] and moe.aux_loss.item() == pytest.approx(1.0, abs=1e-12)
    with torch.no_grad():
        moe.router.weight.zero_()
        moe.router.weight[0] = 200.0  # every token to expert 0 with probability 1 (to rounding)
    moe(x)
    assert moe.tokens_per_expert.tolist() == [12, 0, 0, 0] and moe.aux_loss.item() == pytest.approx(E, abs=1e-9)


def test_capacity_drops_are_counted_and_pass_through_as_zero():
    moe = MoE(4, 8, n_experts=4, top_k=1, capacity_factor=1.0).double()
    with torch.no_grad():
        moe.router.weight.zero_()
        moe.router.weight[2] = 50.0
    x = torch.rand(2, 4, 4, dtype=torch.float64) + 0.1  # (2, 4, 4): 8 tokens, all routed to expert 2
    y = moe(x)
    assert moe.capacity(8) == 2  # ceil(1.0 · 8 · 1 / 4)
    assert moe.tokens_per_expert.tolist() == [0, 0, 8, 0] and moe.kept_per_expert.tolist() == [0, 0, 2, 0]
    assert moe.dropped == 6
    assert (moe.choice == 2).all() and moe.kept.flatten().tolist() == [True] * 2 + [
        False
    ] * 6  # first come, first served
    assert (y[0, :2].abs().sum(-1) > 0).all() and torch.equal(
        y.reshape(8, 4)[2:], torch.zeros(6, 4, dtype=torch.float64)
    )
    p = torch.softmax(x[0, :2] @ moe.router.weight.T, -1)[:, 2:3]  # the raw gate of the kept two
    torch.testing.assert_close(y[0, :2], p * moe.experts[2](x[0, :2]))


@pytest.mark.parametrize("k", [1, 2])
def test_the_gradient_reaches_the_router_from_the_output_and_from_the_balance_loss(k):
    torch.manual_seed(1)
    moe = MoE(8, 16, n_experts=4, top_k=k, capacity_factor=2.0)
    x = torch.randn(2, 5, 8)
    moe(x).pow(2).sum().backward()  # through the gates
    assert moe.router.weight.grad.abs().sum() > 0
    moe.zero_grad()
    moe(x)
    moe.aux_loss.backward()  # through P (f is a count)
    assert moe.router.weight.grad.abs().sum() > 0
    assert all(e.W_1.weight.grad is None for e in moe.experts)  # the balance loss touches the router only


def test_a_moe_gpt_counts_total_and_active_parameters_exactly():
    for E, k, bias, ablations in [
        (4, 1, True, ()),
        (3, 2, False, ()),
        (1, 1, True, ()),
        (4, 2, True, ("attention-only",)),
    ]:
        cfg = GPTConfig(
            vocab_size=13,
            context_length=9,
            d_model=16,
            n_heads=4,
            n_layers=3,
            d_ff=24,
            ffn="moe",
            n_experts=E,
            top_k=k,
            bias=bias,
            ablations=ablations,
        )
        model = GPT(cfg)
        assert count_params(cfg) == sum(p.numel() for p in model.parameters())
        per_expert = sum(p.numel() for p in FeedForward(16, 24, bias=bias).parameters())
        idle = 0 if ablations else 3 * (E - k) * per_expert  # attention-only: no FFN, nothing idle
        assert active_params(cfg) == count_params(cfg) - idle
    dense = GPTConfig(vocab_size=13, context_length=9, d_model=16, n_heads=4, n_layers=3, d_ff=24)
    moe1 = GPTConfig(**{**dense.to_dict(), "ffn": "moe", "n_experts": 4, "top_k": 1})
    assert active_params(dense) == count_params(dense)
    assert active_params(moe1) - count_params(dense) == 3 * 16 * 4  # the routers only
    assert forward_flops(moe1) - forward_flops(dense) == 3 * 2 * 9 * 16 * 4  # one expert a token, plus the router


def poem_data() -> tuple[TokenData, int]:
    tok = CharTokenizer.train([JINGYESI])
    data = TokenData.from_texts([JINGYESI], tok, val_fraction=0.0)
    return data, tok.vocab_size


def moe_config(V: int, **kw) -> GPTConfig:
    return GPTConfig(
        **{
            **dict(vocab_size=V, context_length=8, d_model=16, n_heads=2, n_layers=1, ffn="moe", n_experts=4, top_k=1),
            **kw,
        }
    )


def test_the_loop_trains_on_cross_entropy_plus_the_weighted_balance_loss_and_reports_the_cross_entropy():
    data, V = poem_data()
    cfg = TrainConfig(steps=1, batch_size=4, seed=0, grad_clip=None)
    trainers = []
    for weight in (0.0, 5.0):
        torch.manual_seed(0)
        trainers.append(Trainer(GPT(moe_config(V, balance_loss=weight)), data, cfg))
    assert all(torch.equal(a, b) for a, b in zip(trainers[0].model.parameters(), trainers[1].model.parameters()))
    losses = [tr.train_step() for tr in trainers]
    assert torch.equal(losses[0], losses[1])  # the loss reported is the cross-entropy alone
    r0, r1 = (tr.model.blocks[0].ffn.router.weight for tr in trainers)
    assert not torch.equal(r0, r1)  # but the update saw the balance loss
    head0, head1 = (tr.model.lm_head.weight for tr in trainers)
    assert torch.equal(head0, head1)  # which does not reach past the router's input (one step, same batch)
    model = trainers[1].model
    lm_loss(model, *[torch.tensor([data.train[:8].tolist()])] * 2)
    assert trainers[1].balance_term().item() == pytest.approx(5.0 * model.aux_loss.item())
    assert torch.equal(model.aux_loss, aux_loss(model)) and torch.equal(model.aux_loss, model.blocks[0].ffn.aux_loss)
    dense = Trainer(GPT(GPTConfig(vocab_size=V, context_length=8, d_model=16, n_heads=2, n_layers=1)), data, cfg)
    dense.train_step()
    assert dense.model.aux_loss is None and dense.balance_term() == 0.0


def test_a_moe_gpt_trains_and_saves_and_loads(tmp_path):
    data, V = poem_data()
    torch.manual_seed(0)
    model = GPT(moe_config(V, top_k=2, capacity_factor=2.0))
    trainer = Trainer(model, data, TrainConfig(steps=60, batch_size=8, lr=1e-2, seed=0))
    result = trainer.run()
    first, last = result.history[0]["loss"], result.loss
    assert last < 0.5 * first, (first, last)
    tok = CharTokenizer.train([JINGYESI])
    out = save_checkpoint(tmp_path / "moe", model, tok, {})
    ckpt = load_checkpoint(out)
    assert ckpt.model.config == model.config and ckpt.model.config.ffn == "moe"
    x = data.train[None, :8]
    model.eval()
    assert torch.equal(ckpt.model(x), model(x))

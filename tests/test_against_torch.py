"""Our layers against torch's own, with the weights copied across (float64, dropout 0)."""

import pytest
import torch
from torch import nn

from attnlab.nn import Block, DecoderBlock, LayerNorm, MultiHeadAttention, causal_mask

D, H, FF = 16, 4, 40


@pytest.fixture(autouse=True)
def _float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    yield
    torch.set_default_dtype(old)


def copy_mha(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    """torch stacks W_Q, W_K, W_V into one in_proj (3d, d); nn.Linear stores W^T, so rows stack the same way."""
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.W_Q.weight, ours.W_K.weight, ours.W_V.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.W_Q.bias, ours.W_K.bias, ours.W_V.bias]))
        theirs.out_proj.weight.copy_(ours.W_O.weight)
        theirs.out_proj.bias.copy_(ours.W_O.bias)


def copy_ln(ours: LayerNorm, theirs: nn.LayerNorm) -> None:
    with torch.no_grad():
        theirs.weight.copy_(ours.gamma)
        theirs.bias.copy_(ours.beta)


def copy_ffn(ours, linear1: nn.Linear, linear2: nn.Linear) -> None:
    with torch.no_grad():
        linear1.weight.copy_(ours.W_1.weight)
        linear1.bias.copy_(ours.W_1.bias)
        linear2.weight.copy_(ours.W_2.weight)
        linear2.bias.copy_(ours.W_2.bias)


def randomize(module: nn.Module) -> nn.Module:
    """Random LayerNorm gains and biases too, so a swapped gamma/beta cannot pass."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    return module.eval()


def close(a, b):
    return torch.allclose(a, b, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("kind", ["self", "self-causal", "self-padding", "cross", "cross-padding"])
def test_multihead_matches_torch(kind):
    ours = randomize(MultiHeadAttention(D, H))
    theirs = nn.MultiheadAttention(D, H, batch_first=True).eval()
    copy_mha(ours, theirs)
    x, memory = torch.randn(3, 6, D), torch.randn(3, 5, D)
    context = memory if kind.startswith("cross") else None
    source = x if context is None else memory
    padding = torch.ones(3, source.shape[1], dtype=torch.bool)
    padding[0, -2:] = False
    padding[2, -1:] = False

    kw, ref_kw = {}, {}
    if kind == "self-causal":
        kw["causal"] = True
        ref_kw["attn_mask"] = ~causal_mask(6)  # torch: True = NOT allowed
    if kind.endswith("padding"):
        kw["key_padding_mask"] = padding
        ref_kw["key_padding_mask"] = ~padding
    out, weights = ours(x, context, need_weights=True, **kw)
    ref, ref_weights = theirs(x, source, source, average_attn_weights=False, **ref_kw)
    assert close(out, ref)
    assert close(weights, ref_weights)
    fused, _ = ours(x, context, **kw)  # the SDPA path
    assert close(fused, ref)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_block_matches_transformer_encoder_layer(norm_first, activation):
    ours = randomize(Block(D, H, FF, norm_first=norm_first, activation=activation))
    theirs = nn.TransformerEncoderLayer(
        D, H, FF, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    ).eval()
    copy_mha(ours.attn, theirs.self_attn)
    copy_ffn(ours.ffn, theirs.linear1, theirs.linear2)
    copy_ln(ours.ln_1, theirs.norm1)
    copy_ln(ours.ln_2, theirs.norm2)
    x = torch.randn(2, 7, D)
    assert close(ours(x), theirs(x))
    padding = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])
    assert close(ours(x, key_padding_mask=padding), theirs(x, src_key_padding_mask=~padding))
    assert close(ours(x, causal=True), theirs(x, src_mask=~causal_mask(7), is_causal=True))


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_decoder_block_matches_transformer_decoder_layer(norm_first):
    ours = randomize(DecoderBlock(D, H, FF, norm_first=norm_first))
    theirs = nn.TransformerDecoderLayer(
        D, H, FF, dropout=0.0, activation="relu", batch_first=True, norm_first=norm_first
    ).eval()
    copy_mha(ours.self_attn, theirs.self_attn)
    copy_mha(ours.cross_attn, theirs.multihead_attn)
    copy_ffn(ours.ffn, theirs.linear1, theirs.linear2)
    for mine, ref in [(ours.ln_1, theirs.norm1), (ours.ln_2, theirs.norm2), (ours.ln_3, theirs.norm3)]:
        copy_ln(mine, ref)
    tgt, memory = torch.randn(2, 5, D), torch.randn(2, 6, D)
    src_padding = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])
    out = ours(tgt, memory, memory_key_padding_mask=src_padding)
    ref = theirs(tgt, memory, tgt_mask=~causal_mask(5), tgt_is_causal=True, memory_key_padding_mask=~src_padding)
    assert close(out, ref)


@pytest.mark.parametrize("explicit", [True, False], ids=["written-out", "fused"])
def test_layernorm_matches_torch(explicit):
    ours = randomize(LayerNorm(D, explicit=explicit))
    theirs = nn.LayerNorm(D)
    copy_ln(ours, theirs)
    x = (torch.randn(4, 9, D) * 3 + 1).requires_grad_()
    assert close(ours(x), theirs(x))
    (grad_ours,) = torch.autograd.grad(ours(x).pow(2).sum(), x)
    (grad_theirs,) = torch.autograd.grad(theirs(x).pow(2).sum(), x)
    assert close(grad_ours, grad_theirs)

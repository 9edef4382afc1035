"""Communication and computation: which layers let position j change the output at position i?

For a layer y = f(x) on n positions, the Jacobian d y_i / d x_j is a d x d block for each pair (i, j).
Attention is the only layer with non-zero blocks off the diagonal (i != j); FFN, LayerNorm and the
residual connection around them act on each position alone, so their off-diagonal blocks are exactly 0 —
not small, zero. The "bug" toggle feeds each FFN its neighbour's vector as well (x_i + x_{i-1}): a block
appears at (i, i-1) and the position-wise invariant is broken (003, self-check 4). The whole block gets the
same buggy FFN, so its rows i >= 1 change too; row 0 has no neighbour (x_{-1} is the zero pad) and stays.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.autograd.functional import jacobian

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, check, lesson, seeded
from attnlab.lessons.common.result import Shown

PARAMS = (
    Param("n", "int", 5, 2, 12, step=1, help="positions"),
    Param("d_model", "int", 8, 2, 32, step=1, help="width of each position's vector"),
    Param("bug", "bool", False, help="let the FFN read its neighbour (breaks position-wise)"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="seed of the input and the weights"),
)
QUICK = {"n": 3, "d_model": 4}
COURSE = ("chapter01", 40)  # the course map's section (web/course_map.py) and place in it

LAYERS = ("attention", "ffn", "layernorm", "residual", "block")
MIXES = 0.01  # "attention mixes" means an off-diagonal block of at least 1% of its largest block norm: not rounding
# The strongest null of "attention mixes" (lessons/common/nulls.py): the same attention layer, the same weights and
# input, each position allowed to read only itself (a diagonal attention map), computed beside it as its control.
# The other claims are identities (exactly 0 off the diagonal).
NULLS = {"attention_mixes": Null("self_only")}


@dataclass
class LayerJacobian:
    layer: str
    label: str  # the layer's name in the requested language
    block_norms: list[list[float]]  # (n, n): ||d y_i / d x_j||_F
    off_diagonal_max: float  # largest block norm with i != j
    diagonal_min: float  # smallest block norm with i == j
    mixes_positions: bool  # any off-diagonal block non-zero


@dataclass
class PositionWiseResult(Shown):
    topic: str
    params: dict
    layers: list[LayerJacobian]
    claims: list[Claim]


class NeighbourBug(torch.nn.Module):
    """An FFN that also reads the previous position: FFN(x_i + x_{i-1}). Deliberately wrong. A module, so it
    can stand in for a Block's own FFN."""

    def __init__(self, ffn: torch.nn.Module):
        super().__init__()
        self.ffn = ffn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        previous = torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], dim=1)  # (B, n, d): x_{i-1}, 0 for i = 0
        return self.ffn(x + previous)


def neighbour_bug(ffn):
    """FFN(x_i + x_{i-1}) in place of FFN(x_i)."""
    return NeighbourBug(ffn)


def build(n: int, d: int, seed: int, bug: bool):
    """The layers and the input of the lesson: (attention, ffn, layernorm, block, x). With `bug`, the FFN and
    the block's own FFN both read their neighbour."""
    from attnlab.nn import Block, FeedForward, LayerNorm, MultiHeadAttention

    with seeded(seed):
        attn = MultiHeadAttention(d, 1).double()
        ffn = FeedForward(d).double()
        ln = LayerNorm(d).double()
        block = Block(d, 1).double()
        x = torch.randn(n, d, dtype=torch.float64)  # (n, d)
    if bug:
        ffn = neighbour_bug(ffn)
        block.ffn = neighbour_bug(block.ffn)  # same weights, so the figures differ only by the bug
    return attn, ffn, ln, block, x


def block_norms(fn, x: torch.Tensor) -> torch.Tensor:
    """(n, n) grid of ||d y_i / d x_j||_F for fn: (1, n, d) -> (1, n, d), by autograd in float64."""
    J = jacobian(lambda x2: fn(x2[None])[0], x)  # (n, d, n, d)
    return J.permute(0, 2, 1, 3).flatten(2).norm(dim=-1)  # (n, n, d*d) -> (n, n)


@lesson
def position_wise(
    n: int = 5, d_model: int = 8, bug: bool = False, seed: int = 0, *, lang: str = "zh"
) -> PositionWiseResult:
    """Block norms of the Jacobian for attention, FFN, LayerNorm, residual and a whole block."""
    p = check(PARAMS, dict(n=n, d_model=d_model, bug=bug, seed=seed))
    n, d = p["n"], p["d_model"]
    attn, ffn, ln, block, x = build(n, d, p["seed"], p["bug"])
    fns = {
        "attention": lambda h: attn(h)[0],
        "ffn": ffn,
        "layernorm": ln,
        "residual": lambda h: h + ffn(h),  # the skip connection around the FFN
        "block": block,
    }
    off = ~torch.eye(n, dtype=torch.bool)
    layers = []
    for name in LAYERS:
        grid = block_norms(fns[name], x)
        off_max = grid[off].max().item()
        layers.append(
            LayerJacobian(
                name,
                t(f"explain.plot.pw.{name}", lang),
                grid.tolist(),
                off_max,
                grid.diagonal().min().item(),
                off_max != 0.0,
            )
        )
    by = {layer.layer: layer for layer in layers}
    att = by["attention"]
    scale = max(max(row) for row in att.block_norms)  # the attention's largest block: what "mixing" is measured against
    diagonal = torch.eye(n, dtype=torch.bool)  # (n, n): query i may read key i only
    self_only = block_norms(lambda h: attn(h, mask=diagonal)[0], x)[off].max().item()
    claims = [
        lead(
            "attention_mixes",
            t(
                "explain.position_wise.claim.attention",
                lang,
                v=att.off_diagonal_max,
                own=self_only,
                margin=MIXES * scale,
                share=MIXES,
            ),
            lang,
            measured=att.off_diagonal_max,
            baseline=self_only,
            margin=MIXES * scale,
            control=t("explain.position_wise.control.self_only", lang),
            values={"off_diagonal_max": att.off_diagonal_max, "self_only": self_only, "largest_block": scale},
        ),
    ]
    for name in ("ffn", "layernorm", "residual"):  # an identity: off the diagonal exactly 0; the bug contradicts it
        v = by[name].off_diagonal_max
        claims.append(
            within(
                f"{name}_alone",
                t(f"explain.position_wise.claim.{name}", lang, v=v),
                lang,
                measured=v,
                expected=0.0,
                tol=0.0,
                control=t("explain.position_wise.control.zero", lang),
                values={"off_diagonal_max": v, "bug": p["bug"]},
            )
        )
    return PositionWiseResult("position-wise", p, layers, claims)

"""Attention alone is a set operation: shuffle the tokens and the outputs come back as the same rows shuffled.

Self-attention(P X) = P self-attention(X) for any permutation P, because every query scores every key and
the softmax sums over keys in any order. Adding positions (X + PE) breaks it: the shuffled sentence gets
the positions 0..n-1 again, so each token now sits at a different position. 明月 and 月明 are the smallest case.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within
from attnlab.lessons.common.cost import DEFAULT, Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, heads_divide, lesson, seeded
from attnlab.lessons.common.result import Shown

PARAMS = (
    Param("sentence", "str", "床前明月光", max_len=64, help="the tokens, one character each"),
    Param("shuffle", "choice", "random", choices=("random", "reverse", "rotate"), help="how to reorder the tokens"),
    Param("d_model", "int", 16, 2, 256, step=2, help="width of the token vectors"),
    Param("n_heads", "int", 2, 1, 16, step=1, help="attention heads (divides d_model)"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="seed of the weights and of the random shuffle"),
)
QUICK = {"d_model": 8}
COURSE = ("lecture06", 75)  # the course map's section (web/course_map.py) and place in it

SHOWN_DIMS = 4  # output columns shown per token
ROUNDING = 1e-5  # float32: equivariance holds to rounding, far below this
DIFFERS = 0.01  # "the output differs" means by at least 1% of the largest output entry: not rounding
# Each claim's strongest null (lessons/common/nulls.py): the same layer, the same tokens and the same shuffle with no
# positions added, where order cannot get in; the run computes it beside the claim, and it is each claim's control.
NULLS = {"positions_break": Null("no_positions"), "mingyue": Null("no_positions")}


@dataclass
class Case:
    """One run of the same attention layer on the sentence and on its shuffle."""

    with_positions: bool
    max_diff: float  # max |attn(shuffled) - attn(original)[perm]|
    scale: float  # max |attn(original)|: what a difference is measured against
    weights: list[list[float]]  # (n, n) head-averaged weights on the original order
    weights_shuffled: list[list[float]]  # (n, n) on the shuffled order
    outputs: list[list[float]]  # first SHOWN_DIMS output dims per token, original order
    outputs_shuffled: list[list[float]]  # the same for the shuffled sentence


@dataclass
class PermutationResult(Shown):
    topic: str
    params: dict
    tokens: list[str]
    shuffled: list[str]
    perm: list[int]  # shuffled[i] = tokens[perm[i]]
    without_positions: Case
    with_positions: Case
    pair: dict  # 明月 vs 月明: the output of 明 in each, with and without positions
    claims: list[Claim]


def embed(tokens: list[str], d_model: int, seed: int) -> torch.Tensor:
    """A fixed random vector per character (seeded by its code point), so 明 is the same vector in any sentence."""
    rows = [torch.randn(d_model, generator=torch.Generator().manual_seed(seed * 65537 + ord(c))) for c in tokens]
    return torch.stack(rows)[None]  # (1, n, d_model)


def choose_perm(tokens: list[str], how: str, seed: int) -> list[int]:
    """A permutation that really changes the token string (a shuffle that gives back the same text proves nothing)."""
    n = len(tokens)
    if how == "reverse":
        candidates = [list(range(n - 1, -1, -1))]
    elif how == "rotate":
        candidates = [[(i + 1) % n for i in range(n)]]
    else:
        g = torch.Generator().manual_seed(seed)
        candidates = [torch.randperm(n, generator=g).tolist() for _ in range(200)]
    for perm in candidates:
        if [tokens[j] for j in perm] != tokens:
            return perm
    raise ParamError(
        f"shuffle={how!r} leaves {''.join(tokens)!r} unchanged; choose another shuffle or a sentence whose characters differ",
        "sentence",
        "explain.error.unchanged",
        shuffle=how,
        sentence="".join(tokens),
    )


def run_case(layer, x: torch.Tensor, perm: list[int], with_positions: bool) -> Case:
    from attnlab.nn import sinusoidal_positions

    n, d = x.shape[1], x.shape[2]
    pe = sinusoidal_positions(n, d)[None] if with_positions else torch.zeros(1, n, d)  # (1, n, d)
    x_shuffled = x[:, perm]  # (1, n, d): the same token vectors in the new order
    with torch.no_grad():
        out, w = layer(x + pe, need_weights=True)  # positions 0..n-1 on the original order
        out_s, w_s = layer(x_shuffled + pe, need_weights=True)  # and 0..n-1 again on the shuffled order
    diff = (out_s - out[:, perm]).abs().max().item()  # equivariance: f(P X) = P f(X)
    return Case(
        with_positions,
        diff,
        out.abs().max().item(),
        w[0].mean(0).tolist(),
        w_s[0].mean(0).tolist(),
        out[0, :, :SHOWN_DIMS].tolist(),
        out_s[0, :, :SHOWN_DIMS].tolist(),
    )


def cost(p: dict) -> Cost:
    """A few small tensors; heads that do not divide the width are refused before the lesson waits for a slot."""
    heads_divide(p["d_model"], p["n_heads"])
    return DEFAULT


@lesson
def permutation(
    sentence: str = "床前明月光",
    shuffle: str = "random",
    d_model: int = 16,
    n_heads: int = 2,
    seed: int = 0,
    *,
    lang: str = "zh",
) -> PermutationResult:
    """The same self-attention layer on a sentence and on its shuffle, without and with positions."""
    p = check(PARAMS, dict(sentence=sentence, shuffle=shuffle, d_model=d_model, n_heads=n_heads, seed=seed))
    tokens = [c for c in p["sentence"] if not c.isspace()]
    if len(tokens) < 2:
        raise ParamError(
            f"sentence needs at least 2 characters (spaces ignored), got {p['sentence']!r}",
            "sentence",
            "explain.error.sentence_short",
            got=repr(p["sentence"]),
        )
    cost(p)
    perm = choose_perm(tokens, p["shuffle"], p["seed"])

    from attnlab.nn import MultiHeadAttention

    with seeded(p["seed"]):
        layer = MultiHeadAttention(p["d_model"], p["n_heads"]).eval()
        for W in (layer.W_Q, layer.W_K, layer.W_V, layer.W_O):
            # N(0, 1/d) keeps the vectors' scale; torch's smaller default makes every row nearly uniform
            torch.nn.init.normal_(W.weight, std=p["d_model"] ** -0.5)
    x = embed(tokens, p["d_model"], p["seed"])
    plain = run_case(layer, x, perm, with_positions=False)
    positioned = run_case(layer, x, perm, with_positions=True)

    # 明月 vs 月明: where does 明 end up? Its output row in each order.
    pair_x = embed(["明", "月"], p["d_model"], p["seed"])
    pair = {}
    for name, use_pe in (("without_positions", False), ("with_positions", True)):
        case = run_case(layer, pair_x, [1, 0], use_pe)
        pair[name] = {
            "ming_yue": case.outputs[0],
            "yue_ming": case.outputs_shuffled[1],
            "max_diff": case.max_diff,
            "scale": case.scale,
        }

    claims = claims_of(plain, positioned, pair, lang)
    return PermutationResult(
        topic="permutation",
        params=p,
        tokens=tokens,
        shuffled=[tokens[j] for j in perm],
        perm=perm,
        without_positions=plain,
        with_positions=positioned,
        pair=pair,
        claims=claims,
    )


def claims_of(plain: Case, positioned: Case, pair: dict, lang: str) -> list[Claim]:
    """Equivariance is an identity (to float32 rounding); that positions break it, and that 明 then tells 明月 from
    月明, is a lead over the same layer without positions, by 1% of the largest output entry."""

    def c(name: str) -> str:
        return t(f"explain.permutation.control.{name}", lang)

    margin, pair_margin = DIFFERS * plain.scale, DIFFERS * pair["without_positions"]["scale"]
    plain_pair, pos_pair = pair["without_positions"]["max_diff"], pair["with_positions"]["max_diff"]
    return [
        within(
            "equivariant",
            t("explain.permutation.claim.equivariant", lang, diff=plain.max_diff, tol=ROUNDING),
            lang,
            measured=plain.max_diff,
            expected=0.0,
            tol=ROUNDING,
            control=c("shuffled_rows"),
            values={"max_diff": plain.max_diff},
        ),
        lead(
            "positions_break",
            t(
                "explain.permutation.claim.positions",
                lang,
                diff=positioned.max_diff,
                plain=plain.max_diff,
                margin=margin,
                share=DIFFERS,
            ),
            lang,
            measured=positioned.max_diff,
            baseline=plain.max_diff,
            margin=margin,
            control=c("no_positions"),
            values={"with_positions": positioned.max_diff, "without_positions": plain.max_diff, "scale": plain.scale},
        ),
        lead(
            "mingyue",
            t(
                "explain.permutation.claim.pair",
                lang,
                plain=plain_pair,
                pos=pos_pair,
                margin=pair_margin,
                share=DIFFERS,
            ),
            lang,
            measured=pos_pair,
            baseline=plain_pair,
            margin=pair_margin,
            control=c("pair_no_positions"),
            values={
                "with_positions": pos_pair,
                "without_positions": plain_pair,
                "scale": pair["without_positions"]["scale"],
            },
        ),
    ]

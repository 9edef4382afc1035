"""LayerNorm against BatchNorm: one sample's output alone and inside different batches.

LayerNorm normalizes each sample over its own d features: mean and variance of that row only, so the sample's
output is the same alone or in any batch. BatchNorm (training mode) normalizes each feature over the batch:
mean and variance of that column, so the same sample comes out differently next to different neighbours (and a
batch of one has no variance to divide by: torch refuses it). In eval mode BatchNorm uses stored running
statistics instead, and then a sample no longer depends on its batch. attnlab.nn.LayerNorm (the written-out
formula) and torch.nn.BatchNorm1d (the comparison), both in float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, check, lesson, seeded
from attnlab.lessons.common.result import Shown

PARAMS = (
    Param("batch", "int", 8, 3, 64, step=1, help="samples per batch (the sample plus batch-1 others)"),
    Param("d_model", "int", 8, 2, 64, step=1, help="features per sample"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed"),
)
QUICK = {"batch": 4, "d_model": 6}
COURSE = ("lecture06", 80)  # the course map's section (web/course_map.py) and place in it
ROUNDING = 1e-12  # float64: "the same output" up to rounding
DIFFERS = 0.01  # "comes out differently": by at least 0.01 on outputs of unit scale (normalized), far above rounding
# The strongest null of "BatchNorm depends on the batch" (lessons/common/nulls.py): a norm that reads the sample alone,
# LayerNorm, on the same sample in the same two batches, computed beside it as its control. The others are identities.
NULLS = {"batchnorm_differs": Null("layernorm")}


@dataclass
class NormsResult(Shown):
    topic: str
    params: dict
    sample: list[float]  # x, (d,): the one sample followed through
    ln_alone: list[float]  # LayerNorm(x) for a batch of one
    ln_in_a: list[float]  # LayerNorm of row 0 of batch A = [x, others_a]
    ln_in_b: list[float]  # row 0 of batch B = [x, others_b]
    bn_in_a: list[float]  # BatchNorm1d (training mode) of row 0 of batch A
    bn_in_b: list[float]  # ... of batch B
    bn_eval_a: list[float]  # BatchNorm1d in eval mode (running statistics) of row 0 of batch A
    bn_eval_b: list[float]
    ln_diff: float  # max |LN alone - LN in A|, |LN alone - LN in B|: 0
    bn_diff: float  # max |BN in A - BN in B| in training mode: not 0
    bn_eval_diff: float  # max |BN eval in A - BN eval in B|: 0
    bn_formula_diff: float  # max |BN in A - (x - batch mean) / sqrt(batch var + eps)|, the formula by hand
    bn_alone_refused: bool  # torch refuses a batch of one in training mode (one value per channel)
    claims: list[Claim]


def max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


@lesson
def norms(batch: int = 8, d_model: int = 8, seed: int = 0, *, lang: str = "zh") -> NormsResult:
    """The same sample through LayerNorm and BatchNorm, alone and inside two different batches."""
    from attnlab.nn import LayerNorm

    p = check(PARAMS, dict(batch=batch, d_model=d_model, seed=seed))
    B, d = p["batch"], p["d_model"]
    g = torch.Generator().manual_seed(p["seed"])
    x = torch.randn(1, d, generator=g, dtype=torch.float64)  # (1, d): the sample
    batch_a = torch.cat([x, torch.randn(B - 1, d, generator=g, dtype=torch.float64)])  # (B, d)
    batch_b = torch.cat([x, 2 + 3 * torch.randn(B - 1, d, generator=g, dtype=torch.float64)])  # other neighbours

    with seeded(p["seed"]):
        ln = LayerNorm(d, explicit=True).double()  # the formula, term by term
        bn = torch.nn.BatchNorm1d(d).double()  # training mode: batch statistics
    with torch.no_grad():
        ln_alone, ln_a, ln_b = ln(x)[0], ln(batch_a)[0], ln(batch_b)[0]  # (d,) each
        bn_a, bn_b = bn(batch_a)[0], bn(batch_b)[0]  # also updates the running statistics
        try:
            bn(x)
            refused = False
        except ValueError:  # "Expected more than 1 value per channel when training"
            refused = True
        by_hand = (x[0] - batch_a.mean(0)) / torch.sqrt(batch_a.var(0, unbiased=False) + bn.eps)  # gamma 1, beta 0
        bn.eval()  # now the stored running mean and variance: the same for every batch
        bn_eval_a, bn_eval_b = bn(batch_a)[0], bn(batch_b)[0]

    ln_diff = max(max_abs(ln_alone, ln_a), max_abs(ln_alone, ln_b))
    bn_diff, bn_eval_diff = max_abs(bn_a, bn_b), max_abs(bn_eval_a, bn_eval_b)
    formula_diff = max_abs(bn_a, by_hand)

    def c(name: str) -> str:
        return t(f"explain.norms.control.{name}", lang)

    claims = [
        within(
            "layernorm_same",
            t("explain.norms.claim.layernorm", lang, diff=ln_diff, B=B, tol=ROUNDING),
            lang,
            measured=ln_diff,
            expected=0.0,
            tol=ROUNDING,
            control=c("alone"),
            values={"ln_diff": ln_diff, "batch": B},
        ),
        lead(
            "batchnorm_differs",
            t("explain.norms.claim.batchnorm", lang, diff=bn_diff, B=B, ln=ln_diff, margin=DIFFERS),
            lang,
            measured=bn_diff,
            baseline=ln_diff,
            margin=DIFFERS,
            control=c("layernorm"),
            values={"bn_diff": bn_diff, "ln_diff": ln_diff, "batch": B},
        ),
        within(
            "batchnorm_formula",
            t("explain.norms.claim.formula", lang, diff=formula_diff, tol=ROUNDING),
            lang,
            measured=formula_diff,
            expected=0.0,
            tol=ROUNDING,
            control=c("formula"),
            values={"formula_diff": formula_diff},
        ),
        within(
            "batchnorm_eval",
            t(
                "explain.norms.claim.eval" if refused else "explain.norms.claim.eval_taken",
                lang,
                diff=bn_eval_diff,
                tol=ROUNDING,
            ),
            lang,
            measured=bn_eval_diff,
            expected=0.0,
            tol=ROUNDING,
            control=c("eval"),
            values={"bn_eval_diff": bn_eval_diff, "alone_refused": refused},
        ),
    ]
    as_list = lambda v: v.tolist()  # noqa: E731
    return NormsResult(
        "norms",
        p,
        as_list(x[0]),
        as_list(ln_alone),
        as_list(ln_a),
        as_list(ln_b),
        as_list(bn_a),
        as_list(bn_b),
        as_list(bn_eval_a),
        as_list(bn_eval_b),
        ln_diff,
        bn_diff,
        bn_eval_diff,
        formula_diff,
        refused,
        claims,
    )

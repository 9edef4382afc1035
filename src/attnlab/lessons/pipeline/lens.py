"""The logit lens on the pipeline's model and text: what the model would predict if it stopped after each layer.

    lens_l = LM_head(LN_f(x_l))      x_0 = the embedding, x_l = the residual stream after block l

(attnlab.inspect.logit_lens: LN_f is applied afresh to each layer's own stream.) The card shows the most
probable next token at every position and layer, and at the last position the rank (0 = top) and probability,
layer by layer, of the token the whole model predicts there. Row L is the model's own output, so its last cell is
step ④'s top token with its probability; rows before it are a reading, not what the model computes.

The claim: the layers build the answer, p_L(answer) - p_0(answer) >= 1/|V| (the control is the embedding's direct
path, a bigram-like reading). An untrained model's layers move it by a hair: not shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.i18n import t
from attnlab.inspect import answer_by_layer, logit_lens
from attnlab.io.threads import threads_for
from attnlab.lessons.common.claims import Claim, lead
from attnlab.lessons.common.result import Shown
from attnlab.lessons.pipeline.lesson import _ids


@dataclass
class LensCell:
    id: int
    token: str
    prob: float


@dataclass
class LensRow:
    layer: int  # 0 = the embedding alone, L = after the last block (the model's own output)
    top: list[LensCell]  # the most probable next token at each position


@dataclass
class LensView(Shown):
    tokens: list[str]  # the positions read (the text, cropped to the model's context)
    cropped: int  # tokens dropped from the front of the text to fit the context
    rows: list[LensRow]  # layers 0 .. L
    answer: LensCell  # the model's own top prediction after the whole text (row L, last position)
    answer_rank: list[int]  # its rank at the last position, layer by layer (0 = the top guess)
    answer_prob: list[float]  # its probability there, layer by layer
    settles: int  # the first layer from which the answer stays the top guess up to L
    uniform: float  # 1 / |V|
    claims: list[Claim]


def lens_view(model, tokenizer, text: str, lang: str = "zh") -> LensView:
    """The logit lens of `model` on `text` (ValueError if the tokenizer cannot read it; TypeError for a model
    without an LM head)."""
    ids, cropped = _ids(tokenizer, text, model.config.context_length)
    with threads_for(model):  # one thread for a tiny model: the same last digits as step ④
        lens = logit_lens(model, ids).double()  # (L+1, T, vocab)
    probs = lens.softmax(-1)  # (L+1, T, vocab)
    best_p, best = probs.max(-1)  # (L+1, T) each
    names = tokenizer.tokens(range(tokenizer.vocab_size))
    rows = [
        LensRow(layer=k, top=[LensCell(i, names[i], q) for i, q in zip(best[k].tolist(), best_p[k].tolist())])
        for k in range(lens.shape[0])
    ]
    answer = rows[-1].top[-1]
    ranks, p = answer_by_layer(lens[:, -1:], answer.id, position=-1)  # the last position only
    settles = len(ranks)
    while settles > 0 and ranks[settles - 1] == 0:
        settles -= 1
    uniform = 1 / tokenizer.vocab_size
    builds = lead(
        "lens_builds",
        t(
            "pipeline.lens.claim",
            lang,
            answer=answer.token,
            layers=len(p) - 1,
            p0=f"{p[0]:.4g}",
            pl=f"{p[-1]:.4g}",
            u=f"{uniform:.4g}",
        ),
        lang,
        measured=p[-1],
        baseline=p[0],
        margin=uniform,
        control=t("pipeline.lens.control", lang),
    )
    return LensView(
        tokens=tokenizer.tokens(ids),
        cropped=cropped,
        rows=rows,
        answer=answer,
        answer_rank=ranks,
        answer_prob=p,
        settles=settles,
        uniform=uniform,
        claims=[builds],
    )


def lens_absent(model) -> str | None:
    """Why a model has no lens card (a catalog key's last part), or None."""
    return "no_head" if not hasattr(model, "lm_head") or not hasattr(model, "blocks") else None

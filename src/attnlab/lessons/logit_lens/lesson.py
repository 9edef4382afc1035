"""⑧ The logit lens: what a small GPT would predict if it stopped after each layer (attnlab.inspect.logit_lens).

    lens_l = LM_head(LN_f(x_l))      x_0 = the embedding, x_l = the residual stream after block l

The experiment: a pre-LN GPT (n_layers blocks, d_model 32, 2 heads, context 32; lessons/logit_lens/runs.py) trained
train_steps steps on the built-in 静夜思 (or, from the CLI or Python, a .txt or chinese-poetry .json file's first
4,000 characters), and the same GPT at the same seed untrained. Both read the prompt (default 床前明月, whose
continuation in the poem is 光). For every layer l = 0 (the embedding's direct path) .. L and every position, the
lens's top tokens; at the last position, the rank and probability of the model's own answer (its final top token)
layer by layer, and of the text's continuation. Nothing is held out: the lens asks what a model does with a text,
not how well it generalizes.

Checked exactly: the lens after the last block is the model's output (the plain forward, fused attention: equal to
rounding), and the lens at layer 0 is LM_head(LN_f(E[token] + P[position])). Claimed, for the text's continuation
(what only the text's order can teach: any trained model grows confident in its own answer with depth), against the
untrained model reading the same character: it is on top before the last layer, and its probability rises with
depth. Their null: the same run with the GPT trained alike on the same characters shuffled (`shuffle`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Matrix, Shown
from attnlab.lessons.common.view import g
from attnlab.lessons.logit_lens import runs
from attnlab.train import progress

TOP = 3  # tokens listed per layer and position
EXACT = 1e-5  # the lens after the last block against the plain forward (fused attention: equal to rounding)
# layers to spare a claim must clear over the control: one whole layer (a count of layers has no finer grain)
LAYER_MARGIN = 1
# the continuation's probability must rise (layer 0 -> L) by half the scale more than the control's: a probability,
# not a log-probability, since the log of a tiny p swings by nats in any model, trained on the text or not
RISE_MARGIN = 0.5
# Both claims' strongest null (lessons/common/nulls.py): trained alike on the same characters shuffled, read on the
# real prompt; a model of a shuffled text grows confident in its own answer too, but not in the text's continuation.
NULLS = {"early": Null("shuffled", shuffle=True), "sharpens": Null("shuffled", shuffle=True)}

PARAMS = (
    Param(
        "prompt",
        "str",
        "床前明月",
        max_len=runs.BASE["context_length"],
        help="the text the model reads; the answer is its prediction after the last character",
    ),
    Param("n_layers", "int", 4, 1, 6, step=1, help="blocks of the GPT (the lens reads after each)"),
    Param("train_steps", "int", 150, 0, 400, step=10, help="training steps (0: untrained, the same as the control)"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed (weights and batches)"),
    Param("shuffle", "bool", False, help="train on the same characters shuffled (the null: order says nothing)"),
    Param(
        "corpus",
        "str",
        "",
        max_len=4096,
        cli_only=True,
        help="a .txt or chinese-poetry .json file (its first 4,000 characters); empty: the built-in 静夜思",
    ),
)
QUICK = {"train_steps": 60}
COURSE = ("inside", 20)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Top:
    token: str
    p: float


@dataclass
class LayerRow:
    """One layer of the lens as the page's tables list it."""

    layer: int  # 0: the embedding's direct path; l: after block l
    label: str
    answer_rank: int  # the answer's rank at the last position, 1 = top
    answer_p: float
    untrained_rank: int  # the untrained model's own answer, the same
    untrained_p: float


@dataclass
class Reading:
    """One model's answer at the last position (its own, or the text's continuation), read through the lens layer
    by layer."""

    answer: str  # the token read: the model's own prediction (its final top token), or the text's continuation
    ranks: list[int]  # per layer 0..L, 1 = top
    probs: list[float]
    settled: int  # the first layer from which the token stays on top (L: only at the end; L + 1: not even there)
    spare: int  # layers before the last at which the token is already on top to the end (0: not before the end)
    rise: float  # log p_L(answer) - log p_0(answer), nats
    p_rise: float  # p_L(answer) - p_0(answer)


@dataclass
class Check:
    id: str
    text: str
    max_diff: float  # max |a - b| over every position and token
    tol: float
    ok: bool


@dataclass
class LogitLensResult(Shown):
    topic: str
    params: dict
    corpus: str
    vocab_size: int
    n_layers: int
    tokens: list[str]  # the prompt, one token a position
    layer_labels: list[str]  # 0..L
    answer: str  # the trained model's prediction after the prompt
    answer_p: float
    expected: str | None  # what follows the prompt in the training text (None: the prompt is not in it)
    continuation: Reading | None  # the trained model's lens on `expected` (None: the prompt is not in the text)
    continuation_untrained: Reading | None  # the untrained model's lens on the same character
    answer_ranks: list[int]  # per layer 0..L, the answer's rank at the last position (1 = top)
    answer_probs: list[float]
    trained: Reading
    untrained: Reading
    lens_top: list[list[list[Top]]]  # [layer][position] the TOP tokens of the lens
    top_header: list[str]  # the top-tokens table as printed: a corner label, then each position's token
    top_rows: list[list[str]]  # per layer: its label, then per position "光 0.98 · 月 0.012 · 前 0.0031"
    final_p: Matrix  # [layer][position] p of the model's final top token at that position
    rows: list[LayerRow]
    checks: list[Check]
    loss_first: float | None  # the training batch's cross-entropy at the first and last step (None: no training)
    loss_last: float | None
    note: str
    claims: list[Claim] = field(default_factory=list)


def cost(p: dict) -> Cost:
    """Trains one small GPT (stoppable at every step); a bad prompt is refused before that."""
    if not p["prompt"].strip():
        raise ParamError(
            "prompt must hold at least one character, got an empty string", "prompt", "explain.error.text_empty"
        )
    if not p["corpus"].strip():
        unknown_chars(p["prompt"], set(runs.corpus_data("").text), "静夜思")
    return Cost(32.0, trains=p["train_steps"] > 0)


def unknown_chars(prompt: str, known: set, corpus: str) -> None:
    missing = "".join(dict.fromkeys(ch for ch in prompt if ch not in known))
    if missing:
        raise ParamError(
            f"prompt must be characters of the corpus {corpus}; not in it: {missing}",
            "prompt",
            "explain.error.not_in_corpus",
            missing=missing,
            corpus=corpus,
        )


def read(lens: torch.Tensor, tok, token: int | None = None) -> Reading:
    """A token at the last position (default the model's own top token), its rank and p at each layer of the lens."""
    from attnlab.inspect import answer_by_layer

    answer = int(lens[-1, -1].argmax()) if token is None else token
    ranks, probs = answer_by_layer(lens, answer, position=-1)
    L = len(ranks) - 1
    settled = L if ranks[L] == 0 else L + 1  # L + 1: not on top even at the end
    while settled <= L and settled > 0 and ranks[settled - 1] == 0:  # walk back while it is still on top
        settled -= 1
    return Reading(
        shown(tok, answer),
        [r + 1 for r in ranks],
        probs,
        settled,
        max(0, L - settled),
        math.log(probs[-1]) - math.log(probs[0]),
        probs[-1] - probs[0],
    )


def shown(tok, i: int) -> str:
    """A token as the tables print it: the end-of-text mark ␃, a line break ⏎, a space ␣."""
    return "␃" if i == tok.eot_id else {"\n": "⏎", " ": "␣"}.get(tok.decode([i]), tok.decode([i]))


def checks_of(model, ids: torch.Tensor, lens: torch.Tensor, lang: str) -> list[Check]:
    """The two identities of the lens, measured on this model and prompt."""
    with torch.no_grad():
        output = model(ids[None])[0]  # (T, vocab): the plain forward pass
        x0 = model.embed.tok(ids) + model.embed.pos(torch.arange(len(ids)))  # (T, d_model): E[token] + P[i]
        direct = model.lm_head(model.ln_f(x0))  # (T, vocab)
    out = []
    for id, diff, tol in (
        ("last", (lens[-1] - output).abs().max().item(), EXACT),
        ("first", (lens[0] - direct).abs().max().item(), EXACT),
    ):
        out.append(Check(id, t(f"explain.logit_lens.check.{id}", lang), diff, tol, diff <= tol))
    return out


def claims_of(a: Reading | None, u: Reading | None, L: int, lang: str) -> list[Claim]:
    """Both on the text's continuation (a: the trained model's lens on it, u: the untrained model's on the same
    character; None when the prompt is not in the text, where nothing can be claimed). train_steps = 0 makes the two
    models one: neither claim can be shown then; nor, unless by a seed's luck, with `shuffle`."""
    control = t("explain.logit_lens.control.untrained", lang)
    absent = a is None or u is None
    hint = t("explain.logit_lens.hint.absent", lang) if absent else None
    spare, u_spare = (0, 0) if absent else (a.spare, u.spare)
    p0, pL, u_p0, u_pL = (0.0,) * 4 if absent else (a.probs[0], a.probs[-1], u.probs[0], u.probs[-1])
    answer = "—" if absent else a.answer
    return [
        lead(
            "early",
            t(
                "explain.logit_lens.claim.early",
                lang,
                answer=answer,
                settled=L + 1 if absent else a.settled,
                spare=spare,
                u_spare=u_spare,
                L=L,
                margin=LAYER_MARGIN,
            ),
            lang,
            measured=spare,
            baseline=u_spare,
            margin=LAYER_MARGIN,
            control=control,
            values={"settled": None if absent else a.settled, "untrained_settled": None if absent else u.settled},
            hint=hint or t("explain.logit_lens.hint.early", lang),
        ),
        lead(
            "sharpens",
            t(
                "explain.logit_lens.claim.sharpens",
                lang,
                answer=answer,
                p0=p0,
                pL=pL,
                rise=pL - p0,
                u_p0=u_p0,
                u_pL=u_pL,
                u_rise=u_pL - u_p0,
                margin=RISE_MARGIN,
            ),
            lang,
            measured=pL - p0,
            baseline=u_pL - u_p0,
            margin=RISE_MARGIN,
            control=control,
            values={"p_first": p0, "p_last": pL, "untrained_p_first": u_p0, "untrained_p_last": u_pL},
            hint=hint or t("explain.logit_lens.hint.sharpens", lang),
        ),
    ]


def tops_of(lens: torch.Tensor, tok) -> list[list[list[Top]]]:
    probs = lens.softmax(-1)  # (L+1, T, vocab)
    p, idx = probs.topk(min(TOP, probs.shape[-1]), dim=-1)  # (L+1, T, TOP)
    return [
        [[Top(shown(tok, int(i)), float(x)) for x, i in zip(ps, ids)] for ps, ids in zip(pl, il)]
        for pl, il in zip(p.tolist(), idx.tolist())
    ]


@lesson
def logit_lens(
    prompt: str = "床前明月",
    n_layers: int = 4,
    train_steps: int = 150,
    seed: int = 0,
    shuffle: bool = False,
    corpus: str = "",
    *,
    lang: str = "zh",
) -> LogitLensResult:
    """Train (or find) the GPT, read the prompt through the lens at every layer, and check the claims."""
    from attnlab.inspect import logit_lens as lens_of

    p = check(
        PARAMS,
        dict(prompt=prompt, n_layers=n_layers, train_steps=train_steps, seed=seed, shuffle=shuffle, corpus=corpus),
    )
    cost(p)
    try:
        data = runs.corpus_data(p["corpus"].strip())
    except ValueError as err:
        raise ParamError(str(err), "corpus", "explain.error.corpus", corpus=p["corpus"][:80]) from None
    unknown_chars(p["prompt"], set(data.tokenizer.chars), data.name)
    tok, L = data.tokenizer, p["n_layers"]
    progress.report("trained", 0, p["train_steps"])
    model, losses = runs.trained(data, L, p["train_steps"], p["seed"], p["shuffle"])
    control = runs.untrained(data, L, p["seed"])

    ids = torch.tensor(tok.encode(p["prompt"]))  # (T,)
    lens, lens_u = lens_of(model, ids), lens_of(control, ids)  # (L+1, T, vocab) each
    a, u = read(lens, tok), read(lens_u, tok)
    final_top = lens[-1].argmax(-1)  # (T,): the model's own prediction at each position
    final_p = lens.softmax(-1).gather(-1, final_top.expand(L + 1, -1)[..., None])[..., 0]  # (L+1, T)
    tops = tops_of(lens, tok)

    labels = [t("explain.logit_lens.layer0", lang)] + [
        t("explain.logit_lens.layer", lang, l=l) for l in range(1, L + 1)
    ]
    rows = [LayerRow(l, labels[l], a.ranks[l], a.probs[l], u.ranks[l], u.probs[l]) for l in range(L + 1)]
    tokens = [shown(tok, int(i)) for i in ids]
    header = [t("explain.logit_lens.corner", lang)] + tokens
    cells = [
        [label] + [" · ".join(f"{x.token} {g(x.p, 2)}" for x in cell) for cell in layer]
        for label, layer in zip(labels, tops)
    ]
    at = data.text.find(p["prompt"])
    end = at + len(p["prompt"])
    expected = None if at < 0 else (data.text[end] if end < len(data.text) else "␃")
    c = cu = None
    if expected is not None:  # the text's continuation, read in both models: what the claims are about
        y = tok.eot_id if end >= len(data.text) else tok.encode(data.text[end])[0]
        c, cu = read(lens, tok, y), read(lens_u, tok, y)
    if expected is None:
        note = t("explain.logit_lens.note.absent", lang, corpus=data.name)
    else:
        note = t("explain.logit_lens.note.found", lang, corpus=data.name, expected=expected, answer=a.answer)
    if p["shuffle"]:
        note += " " + t("explain.logit_lens.note.shuffled", lang)
    return LogitLensResult(
        "logit-lens",
        p,
        data.name,
        tok.vocab_size,
        L,
        tokens,
        labels,
        a.answer,
        a.probs[-1],
        expected,
        c,
        cu,
        a.ranks,
        a.probs,
        a,
        u,
        tops,
        header,
        cells,
        final_p.tolist(),
        rows,
        checks_of(model, ids, lens, lang),
        losses[0] if losses else None,
        losses[-1] if losses else None,
        note,
        claims_of(c, cu, L, lang),
    )

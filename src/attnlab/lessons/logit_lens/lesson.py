"""⑧ The logit lens: what a small GPT would predict if it stopped after each layer (attnlab.inspect.logit_lens).

    lens_l = LM_head(LN_f(x_l))      x_0 = the embedding, x_l = the residual stream after block l

The experiment: a pre-LN GPT (n_layers blocks, d_model 32, 2 heads, context 32; lessons/logit_lens/runs.py) trained
train_steps steps on the built-in 静夜思 (or, from the CLI or Python, a .txt or chinese-poetry .json file's first
4,000 characters), and the same GPT at the same seed untrained, the control. Both read the prompt (default 床前明月,
whose continuation in the poem is 光). For every layer l = 0 (the embedding's direct path) .. L and every position,
the lens's top tokens; at the last position, the rank and probability of the model's own answer (its final top
token) layer by layer. Nothing is held out: the lens asks what a model does with a text, not how well it generalizes.

Checked exactly: the lens after the last block is the model's output (the plain forward, fused attention: equal to
rounding), and the lens at layer 0 is LM_head(LN_f(E[token] + P[position])). Claimed against the untrained control:
the answer is on top before the last layer, and its log-probability rises with depth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Matrix, Shown
from attnlab.lessons.common.view import g
from attnlab.lessons.logit_lens import runs
from attnlab.train import progress

TOP = 3  # tokens listed per layer and position
EXACT = 1e-5  # the lens after the last block against the plain forward (fused attention: equal to rounding)
# layers to spare a claim must clear over the control: one whole layer (a count of layers has no finer grain)
LAYER_MARGIN = 1
# nats the answer's log p must rise (layer 0 -> L) beyond the control's rise (how both claims fare over seeds:
# README, logit-lens)
RISE_MARGIN = 1.0

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
    """One model's answer at the last position, read through the lens layer by layer."""

    answer: str  # the model's own prediction: its final top token
    ranks: list[int]  # per layer 0..L, 1 = top
    probs: list[float]
    settled: int  # the first layer from which the answer stays on top (L: only at the end)
    spare: int  # L - settled: layers before the last at which the answer is already on top
    rise: float  # log p_L(answer) - log p_0(answer), nats


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


def read(lens: torch.Tensor, tok) -> Reading:
    """The answer at the last position (the model's own top token), its rank and p at each layer of the lens."""
    from attnlab.inspect import answer_by_layer

    answer = int(lens[-1, -1].argmax())
    ranks, probs = answer_by_layer(lens, answer, position=-1)
    L = len(ranks) - 1
    settled = L
    while settled > 0 and ranks[settled - 1] == 0:  # walk back while it is still on top
        settled -= 1
    return Reading(
        shown(tok, answer),
        [r + 1 for r in ranks],
        probs,
        settled,
        L - settled,
        math.log(probs[-1]) - math.log(probs[0]),
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


def claims_of(a: Reading, u: Reading, L: int, lang: str) -> list[Claim]:
    """Both against the untrained GPT at the same seed reading the same prompt (its own answer, picked the same
    way: so the selection of the answer as the final top token is in the control too). train_steps = 0 makes the
    two models one: neither claim can be shown then."""
    control = t("explain.logit_lens.control.untrained", lang)
    return [
        lead(
            "early",
            t(
                "explain.logit_lens.claim.early",
                lang,
                answer=a.answer,
                settled=a.settled,
                spare=a.spare,
                u_answer=u.answer,
                u_spare=u.spare,
                L=L,
                margin=LAYER_MARGIN,
            ),
            lang,
            measured=a.spare,
            baseline=u.spare,
            margin=LAYER_MARGIN,
            control=control,
            values={"settled": a.settled, "untrained_settled": u.settled, "layers": L},
            hint=t("explain.logit_lens.hint.early", lang),
        ),
        lead(
            "sharpens",
            t(
                "explain.logit_lens.claim.sharpens",
                lang,
                answer=a.answer,
                p0=a.probs[0],
                pL=a.probs[-1],
                rise=a.rise,
                u_answer=u.answer,
                u_rise=u.rise,
                margin=RISE_MARGIN,
            ),
            lang,
            measured=a.rise,
            baseline=u.rise,
            margin=RISE_MARGIN,
            control=control,
            values={
                "p_first": a.probs[0],
                "p_last": a.probs[-1],
                "untrained_p_first": u.probs[0],
                "untrained_p_last": u.probs[-1],
            },
            hint=t("explain.logit_lens.hint.sharpens", lang),
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
    corpus: str = "",
    *,
    lang: str = "zh",
) -> LogitLensResult:
    """Train (or find) the GPT, read the prompt through the lens at every layer, and check the claims."""
    from attnlab.inspect import logit_lens as lens_of

    p = check(PARAMS, dict(prompt=prompt, n_layers=n_layers, train_steps=train_steps, seed=seed, corpus=corpus))
    cost(p)
    try:
        data = runs.corpus_data(p["corpus"].strip())
    except ValueError as err:
        raise ParamError(str(err), "corpus", "explain.error.corpus", corpus=p["corpus"][:80]) from None
    unknown_chars(p["prompt"], set(data.tokenizer.chars), data.name)
    tok, L = data.tokenizer, p["n_layers"]
    progress.report("trained", 0, p["train_steps"])
    model, losses = runs.trained(data, L, p["train_steps"], p["seed"])
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
    if expected is None:
        note = t("explain.logit_lens.note.absent", lang, corpus=data.name)
    else:
        note = t("explain.logit_lens.note.found", lang, corpus=data.name, expected=expected, answer=a.answer)
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
        claims_of(a, u, L, lang),
    )

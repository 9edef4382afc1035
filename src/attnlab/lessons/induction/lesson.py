"""⑧ Induction heads forming: a 2-layer attention-only GPT learns to copy what followed the current token last time,
and a 1-layer one, trained alike, cannot (Olsson et al. 2022, "In-context learning and induction heads").

The experiment (lessons/induction/runs.py): two attention-only GPTs (no FFN; pre-LN, 2 heads, d_model 32) trained
with the same seed, the same batches and the same steps on random tokens that repeat with a period drawn anew for
each sequence (2 to n), so that only content, not position, says where to look. Every sequence is fresh random
tokens: what the models learn is a way of reading the context, not the tokens.
Positions are sinusoidal by default because that is where the phase change happens within a laptop minute here:
with learned position vectors (the other choice) the 2-layer model's best head ends no better than the 1-layer
control's at the default steps (README: induction).
Logged about LOG_POINTS times on the same N_EVAL sequences [r r] (n distinct random tokens, then the same n):
every head's prefix-matching and previous-token score, the in-context-learning score and the loss (scores.py).
The phase change: the first logged step at which a head's prefix-matching score passes THRESHOLD.
Then on text: the trained 2-layer model reads the first characters of 静夜思 twice (each character an id of its
own), and its heads' maps are the two shown side by side: layer 1's previous-token head, layer 2's induction head.
Checked exactly: the scores against hand-built maps and uniform attention's closed form (tests/test_induction.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Matrix, Shown
from attnlab.lessons.induction import runs, scores
from attnlab.train import progress

THRESHOLD = 0.4  # the prefix-matching score that counts as an induction head (the issue's, and the browser lab's)
# how far the 2-layer model's best head must lead the 1-layer control's: untrained heads sit close to uniform
# attention (0.042 at n = 16), and at the defaults the two trained models end far further apart than this
# (README: induction)
PM_MARGIN = 0.2
# nats by which the 2-layer model's ICL score must be below the control's: untrained, both sit close to 0, and at
# the defaults the trained models end several times this apart
ICL_MARGIN = 0.5
# how far a layer-1 head's previous-token score must clear uniform attention's (0.099 at n = 16); at the defaults
# the best head clears it by more
PREV_MARGIN = 0.1
TEXT = "jingyesi"  # the built-in text read twice after training
# Every claim's strongest null (lessons/common/nulls.py): both models trained alike on each sequence's tokens
# shuffled, read on the same [r r]: the same tokens as often, but nothing to copy, so no head has a reason to look
# where a token came before. induction_forms also carries, in the run, a head that looks a fixed distance back.
NULLS = {
    name: Null("shuffled", shuffle=True)
    for name in ("induction_forms", "needs_two_layers", "icl_drops", "previous_token")
}

PARAMS = (
    Param("steps", "int", 1000, 0, 2000, step=10, help="training steps of each of the two models (0: untrained)"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed (weights and batches)"),
    Param("d_model", "int", 32, 8, 64, step=8, help="width of the token vectors (even: 2 heads)"),
    Param("n", "int", 16, 4, 32, step=1, help="half length: n random tokens, then the same n again"),
    Param("vocab", "int", 32, 8, 128, step=8, help="how many distinct tokens (at least n)"),
    Param(
        "positions", "choice", "sinusoidal", choices=("sinusoidal", "learned"), help="position encoding of both models"
    ),
    Param("shuffle", "bool", False, help="train on each sequence's tokens shuffled (the null: nothing to copy)"),
)
QUICK = {"steps": 20, "n": 6, "vocab": 8, "d_model": 16, "seed": 1}
COURSE = ("inside", 50)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class HeadMap:
    """One head's attention on the repeated text, as the page draws it."""

    layer: int  # counted from 1, as the page shows it
    head: int
    score: float  # its prefix-matching (induction head) or previous-token score on the repeated text
    weights: Matrix  # (2k, 2k): query rows, key columns


@dataclass
class Text:
    """The trained 2-layer model reading the first k characters of 静夜思 twice."""

    chars: list[str]  # the 2k characters read
    k: int
    prefix_matching: list[list[float]]  # [layer][head] on this text
    previous_token: list[list[float]]
    icl_score: float
    previous_map: HeadMap  # layer 1's head with the highest previous-token score
    induction_map: HeadMap  # layer 2's head with the highest prefix-matching score


@dataclass
class InductionResult(Shown):
    topic: str
    params: dict
    threshold: float
    chance_prefix: float  # a head attending uniformly: mean of 1/(i+1) over the queries of the second half
    chance_previous: float
    n_params: int  # the 2-layer model's parameters (sum of p.numel())
    steps: list[int]  # the logged steps
    prefix_matching: list[list[list[float]]]  # [step][layer][head], the 2-layer model
    previous_token: list[list[list[float]]]
    icl_score: list[float]  # per step: mean loss in the second half minus the first (nats)
    loss: list[float]  # per step: the training batch's cross-entropy
    eval_loss: list[float]
    one_layer: runs.Curves  # the 1-layer control, read the same way at the same steps
    unrepeated: list[list[float]]  # [layer][head]: the 2-layer model's prefix-matching on [r π(r)] once trained
    phase_step: dict  # {"two_layer": step or None, "one_layer": step or None}
    icl_bump: float | None  # the highest ICL score logged before the phase change (a bump above 0), None without one
    pm_rows: Matrix  # [step][head]: the 2-layer's heads then the 1-layer's, as the page's table lists them
    pm_cols: list[str]
    icl_rows: Matrix  # [step][ICL 2-layer, ICL 1-layer, loss 2-layer, loss 1-layer]
    icl_cols: list[str]
    text: Text
    note: str
    claims: list[Claim] = field(default_factory=list)


def cost(p: dict) -> Cost:
    """Trains two small models (stoppable at every step), then reads them on the evaluation sequences."""
    if p["d_model"] % 2:
        raise ParamError(
            f"d_model must be even (2 heads), got {p['d_model']}",
            "d_model",
            "explain.induction.error.even",
            d=p["d_model"],
        )
    if p["vocab"] < p["n"]:
        raise ParamError(
            f"vocab must be at least n ({p['n']}): a half is n distinct tokens; got {p['vocab']}",
            "vocab",
            "explain.induction.error.vocab",
            n=p["n"],
            vocab=p["vocab"],
        )
    # the largest pass: the N_EVAL evaluation sequences of 2n tokens, every site recorded (the logits over vocab,
    # about 20 numbers per unit of width, the 2 heads' (2n, 2n) weights), measured at 2.5 copies of that at once
    # at the largest sizes (tests/cost_peaks.py), beside a fixed 20 MiB for the two models and their training
    tokens, per = runs.N_EVAL * 2 * p["n"], p["vocab"] + 20 * p["d_model"] + 4 * 2 * p["n"] * 2
    return Cost.of_bytes(2.5 * tokens * per * 4, trains=True, extra_mb=20.0)


def best(layers: list[list[float]], layer: int) -> tuple[int, float]:
    """The head of `layer` with the highest score: (head, score)."""
    scores_ = layers[layer]
    head = max(range(len(scores_)), key=scores_.__getitem__)
    return head, scores_[head]


def read_text(model, k_max: int) -> Text:
    """The trained model on the first characters of 静夜思, twice; each distinct character one token id."""
    import torch

    from attnlab.inspect import run_with
    from attnlab.text.builtin import BUILTIN_TEXTS

    chars = list(BUILTIN_TEXTS[TEXT])[:k_max]
    ids = {c: i for i, c in enumerate(dict.fromkeys(chars))}  # at most k_max <= n <= vocab ids
    k = len(chars)
    x = torch.tensor([[ids[c] for c in chars + chars]])  # (1, 2k)
    logits, tr = run_with(model, x)  # (1, 2k, V)
    losses = torch.nn.functional.cross_entropy(logits[0, :-1], x[0, 1:], reduction="none")[None]  # (1, 2k - 1)
    pm, prev, maps = [], [], []
    for layer in range(model.config.n_layers):
        w = tr[f"layers.{layer}.attn.weights"]  # (1, H, 2k, 2k)
        pm.append(scores.prefix_matching(w, k).tolist())
        prev.append(scores.previous_token(w).tolist())
        maps.append(w[0])
    ph, ps = best(prev, 0)
    ih, is_ = best(pm, len(pm) - 1)
    return Text(
        chars + chars,
        k,
        pm,
        prev,
        scores.icl_score(losses, k),
        HeadMap(1, ph + 1, ps, maps[0][ph].tolist()),
        HeadMap(len(pm), ih + 1, is_, maps[-1][ih].tolist()),
    )


def final_best(curves_pm: list[list[list[float]]]) -> float:
    """The highest prefix-matching score of any head at the last logged step."""
    return max(max(heads) for heads in curves_pm[-1])


def by_content(pm: list[list[float]], unrepeated: list[list[float]]) -> tuple[int, int, float, float]:
    """(layer, head, its score on [r r], its score on [r π(r)]) of the head whose score on the repeat leads its score
    on the unrepeated copy most: an induction head's lead, where a head that looks a fixed distance back has none."""
    cells = [(i, h) for i in range(len(pm)) for h in range(len(pm[i]))]
    i, h = max(cells, key=lambda c: pm[c[0]][c[1]] - unrepeated[c[0]][c[1]])
    return i, h, pm[i][h], unrepeated[i][h]


def content(pm: list[list[float]], unrepeated: list[list[float]]) -> float:
    """The largest lead of a head's score on the repeat over its score on the unrepeated copy (by_content)."""
    _, _, a, b = by_content(pm, unrepeated)
    return a - b


def claims_of(r: InductionResult, lang: str) -> list[Claim]:
    """An induction head forms (its score clears THRESHOLD, i.e. chance by THRESHOLD - chance); it is the second layer
    that makes it (the 2-layer model leads the 1-layer control); in-context learning follows (the ICL score falls
    below the control's); and a previous-token head in layer 1. Untrained (steps = 0) shows none of them."""

    def c(name: str) -> str:
        return t(f"explain.induction.control.{name}", lang)

    layer, head, pm, unrep = by_content(r.prefix_matching[-1], r.unrepeated)
    two, one = (
        content(r.prefix_matching[-1], r.unrepeated),
        content(r.one_layer.prefix_matching[-1], r.one_layer.unrepeated),
    )
    prev_head, prev = best(r.previous_token[-1], 0)
    icl2, icl1 = r.icl_score[-1], r.one_layer.icl_score[-1]
    step = r.steps[-1]
    return [
        lead(
            "induction_forms",
            t(
                "explain.induction.claim.forms",
                lang,
                layer=layer + 1,
                head=head + 1,
                pm=pm,
                unrepeated=unrep,
                margin=THRESHOLD - r.chance_prefix,
                threshold=THRESHOLD,
                step=step,
                chance=r.chance_prefix,
            ),
            lang,
            measured=pm,
            baseline=unrep,
            margin=THRESHOLD - r.chance_prefix,
            control=c("unrepeated"),
            values={"two_layer": pm, "unrepeated": unrep, "chance": r.chance_prefix, "threshold": THRESHOLD},
            hint=t("explain.induction.hint.steps", lang),
        ),
        lead(
            "needs_two_layers",
            t("explain.induction.claim.two_layers", lang, two=two, one=one, margin=PM_MARGIN),
            lang,
            measured=two,
            baseline=one,
            margin=PM_MARGIN,
            control=c("one_layer"),
            values={"two_layer": two, "one_layer": one},
            hint=t("explain.induction.hint.steps", lang),
        ),
        lead(
            "icl_drops",
            t("explain.induction.claim.icl", lang, two=icl2, one=icl1, margin=ICL_MARGIN),
            lang,
            measured=icl2,
            baseline=icl1,
            margin=ICL_MARGIN,
            lower=True,
            control=c("one_layer_icl"),
            values={"two_layer": icl2, "one_layer": icl1},
            hint=t("explain.induction.hint.steps", lang),
        ),
        lead(
            "previous_token",
            t(
                "explain.induction.claim.previous",
                lang,
                head=prev_head + 1,
                prev=prev,
                chance=r.chance_previous,
                margin=PREV_MARGIN,
            ),
            lang,
            measured=prev,
            baseline=r.chance_previous,
            margin=PREV_MARGIN,
            control=c("uniform_previous"),
            values={"layer_1_best": prev, "chance": r.chance_previous},
            hint=t("explain.induction.hint.previous", lang),
        ),
    ]


def tables(two: runs.Curves, one: runs.Curves, lang: str) -> tuple[Matrix, list[str], Matrix, list[str]]:
    """The page's two tables: prefix-matching per head and step, and the ICL scores and losses per step."""
    pm = [
        [s for layer in a for s in layer] + [s for layer in b for s in layer]
        for a, b in zip(two.prefix_matching, one.prefix_matching)
    ]
    pm_cols = [f"L{li + 1}H{h + 1}" for li in range(two.n_layers) for h in range(len(two.prefix_matching[0][li]))]
    pm_cols += [t("explain.induction.col.control", lang, h=h + 1) for h in range(len(one.prefix_matching[0][0]))]
    icl = [[a, b, la, lb] for a, b, la, lb in zip(two.icl_score, one.icl_score, two.loss, one.loss)]
    icl_cols = [t(f"explain.induction.col.{c}", lang) for c in ("icl_two", "icl_one", "loss_two", "loss_one")]
    return pm, pm_cols, icl, icl_cols


@lesson
@lru_cache(maxsize=4)
def trained(steps: int, seed: int, d_model: int, n: int, vocab: int, positions: str, shuffle: bool = False):
    """(the 2-layer model, its curves, the 1-layer control's curves), trained once for both languages."""
    kw = dict(steps=steps, seed=seed, n=n, vocab=vocab, d_model=d_model, positions=positions, shuffle=shuffle)
    x_eval = runs.eval_sequences(seed, n, vocab)  # (N_EVAL, 2n)
    kw["x_unrepeated"] = runs.unrepeated(x_eval, seed)  # (N_EVAL, 2n)
    for name in ("two_layer", "one_layer"):
        progress.report(name, 0, steps)  # both listed from the start
    model, two = runs.train("two_layer", 2, x_eval=x_eval, **kw)
    _, one = runs.train("one_layer", 1, x_eval=x_eval, **kw)
    return model, two, one


def induction(
    steps: int = 1000,
    seed: int = 0,
    d_model: int = 32,
    n: int = 16,
    vocab: int = 32,
    positions: str = "sinusoidal",
    shuffle: bool = False,
    *,
    lang: str = "zh",
) -> InductionResult:
    """A 2-layer and a 1-layer attention-only GPT trained alike on repeats; their heads read as they learn."""
    p = check(
        PARAMS,
        dict(steps=steps, seed=seed, d_model=d_model, n=n, vocab=vocab, positions=positions, shuffle=shuffle),
    )
    cost(p)
    model, two, one = trained(p["steps"], p["seed"], p["d_model"], p["n"], p["vocab"], p["positions"], p["shuffle"])
    logged = runs.log_steps(p["steps"])
    phase = {
        "two_layer": runs.first_crossing(logged, two.prefix_matching, THRESHOLD),
        "one_layer": runs.first_crossing(logged, one.prefix_matching, THRESHOLD),
    }
    bump = None
    if phase["two_layer"] is not None:
        before = [icl for s, icl in zip(logged, two.icl_score) if s < phase["two_layer"]]
        bump = max(before) if before else None
    pm_rows, pm_cols, icl_rows, icl_cols = tables(two, one, lang)
    text = read_text(model, p["n"])
    crossing = phase["two_layer"]
    note = t(
        "explain.induction.note",
        lang,
        two=two.n_params,
        one=one.n_params,
        batch=runs.BATCH,
        lr=runs.LR,
        n_eval=runs.N_EVAL,
        step="—" if crossing is None else crossing,
    )
    r = InductionResult(
        "induction",
        p,
        THRESHOLD,
        scores.chance_prefix(p["n"]),
        scores.chance_previous(2 * p["n"]),
        two.n_params,
        logged,
        two.prefix_matching,
        two.previous_token,
        two.icl_score,
        two.loss,
        two.eval_loss,
        one,
        two.unrepeated,
        phase,
        bump,
        pm_rows,
        pm_cols,
        icl_rows,
        icl_cols,
        text,
        note,
    )
    r.claims = claims_of(r, lang)
    return r

"""Break it: switch one part of a small GPT off, train it beside the intact model, and measure what goes wrong.

The pair shares everything but the part: the same seed, the same initial weights wherever both models have
the parameter (the ablated model starts from the intact one's copy), the same batches in the same order and
the same optimizer. Each model's "train loss" is measured the way it trains (an ablated model with its part
off); its "causal loss" the way any decoder is used, with the causal mask on and no future to read: on the
held-out end of a corpus file or of the lesson's essay, or on the whole poem when the text is the poem itself
(nothing is held out of 24 characters). The default text is 静夜思, and for ffn-first the essay (its cost is a
question about text the models never saw). Greedy continues the text's first character as far as the text goes.
Runs are cached per (ablation, corpus, train_steps, seed), so the page, its figure and the API share them.

The training run itself lives in runs.py; this file turns runs into the table, the chart and the claims
(claims.py).
"""

from __future__ import annotations

import math
import statistics
import threading
from dataclasses import dataclass

from attnlab.display.fmt import num
from attnlab.i18n import t
from attnlab.lessons.break_it import checks
from attnlab.lessons.break_it import runs as runs_
from attnlab.lessons.common.claims import Claim, status_of
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.nn.ablations import ABLATIONS

PARAMS = (
    Param("ablate", "choice", "no-causal-mask", choices=tuple(ABLATIONS), help="the part to switch off"),
    Param("seeds", "int", 3, 3, 5, step=1, help="seeds 0..N-1: one intact and one ablated run each"),
    Param(
        "train_steps", "int", runs_.STEPS, runs_.MIN_STEPS, runs_.MAX_STEPS, step=10, help="training steps of each run"
    ),
    Param(
        "shuffle",
        "bool",
        False,
        help="train both models on the same characters shuffled (the null: order says nothing)",
    ),
    Param(
        "corpus",
        "str",
        "",
        max_len=400,
        cli_only=True,
        help="empty: the ablation's own text (jingyesi; for ffn-first the lesson's English essay, its last tenth "
        "held out); or jingyesi, poem, essay, or a .txt / .json corpus file (a slice of it; CLI and Python only)",
    ),
)
QUICK = {"train_steps": 40}
# Each claim's strongest null (lessons/common/nulls.py). What the part does is compared, seed by seed, with the
# intact model trained alike (the same start, the same batches): the part not removed, in the same run. "Still
# learns" is about what training learned: both models trained alike on the characters shuffled, a second run.
NULLS = {
    **{c: Null("intact") for c in ("leak", "fails_causal", "worse", "saturates", "slower", "costs")},
    "still_learns": Null("shuffled", shuffle=True),
}
COURSE = ("lecture06", 140)  # the course map's section (web/course_map.py) and place in it
HEAVY = True

CHART_W, CHART_H, PAD = 480, 260, 48  # the page's SVG chart, in its own units


@dataclass
class RunOut:
    seed: int
    model: str  # "intact" | "ablated"
    label: str  # the model's name in the page's language
    train_loss: list[float]  # at each of BreakResult.steps_at, measured as the model trains
    causal_loss: list[float]  # the same points, with the causal mask on (how a decoder generates)
    final_train: float
    final_causal: float
    greedy: str  # what greedy decoding writes after the prompt
    seconds: float
    attn_peak: list[float]  # at each of BreakResult.steps_at: the mean largest attention weight ([]: no attention)
    agrees: str = ""  # the start of `greedy` that the intact model of the same seed writes too
    departs: str = ""  # the rest, from the first character where the two differ ("" for the intact model)


@dataclass
class Row:
    model: str
    label: str
    train_mean: float
    train_std: float
    causal_mean: float
    causal_std: float
    causal_min: float
    causal_max: float


@dataclass
class Line:
    name: str  # intact_train | intact_causal | ablated_train | ablated_causal
    label: str
    points: str  # SVG polyline points in the chart's units (the mean over seeds)


@dataclass
class BreakResult(Shown):
    topic: str
    params: dict
    ablation: str
    description: str  # what the ablation switches off, in the page's language
    setup: dict  # the model both runs build (the ablation's own sizes: a deeper stack for no-residual ...)
    corpus: str
    causal_on: str  # "held_out" (the end of a corpus file) | "same_text" (the poem itself)
    n_tokens: int
    seeds: list[int]
    steps_at: list[int]
    runs: list[RunOut]
    table: list[Row]
    prompt: str
    reference: str  # what the text says after the prompt
    check: dict  # the structural measurement that the ablation changes what it names
    chart: dict  # the SVG chart: width, height, y_max, lines
    finding: str  # one sentence of what this experiment shows
    seconds: float  # training time of all the runs (cached runs count what they took when trained)
    claims: list[Claim]
    greedy_same: int = 0  # seeds at which the broken model writes exactly what the intact one writes
    greedy_note: str = ""  # that count in words: where the two differ, or that they do not


_lock = threading.Lock()


def cost(p: dict) -> Cost:
    """Trains the intact and the ablated model over every seed (stoppable at every step)."""
    return Cost(48.0, trains=True)


@lesson
def break_it(
    ablate: str = "no-causal-mask",
    seeds: int = 3,
    train_steps: int = runs_.STEPS,
    shuffle: bool = False,
    corpus: str = "",
    *,
    lang: str = "zh",
) -> BreakResult:
    """Train the intact and the ablated model over `seeds` seeds and measure the difference."""
    p = check(PARAMS, dict(ablate=ablate, seeds=seeds, train_steps=train_steps, shuffle=shuffle, corpus=corpus))
    try:
        data = runs_.corpus_data(p["corpus"].strip() or runs_.DEFAULT_CORPUS.get(p["ablate"], "jingyesi"))
    except ValueError as err:
        raise ParamError(f"corpus: {err}", "corpus", "explain.break_it.error.corpus", got=repr(p["corpus"])) from None
    with _lock:  # one training at a time: two visits with the same settings share the cached runs
        pairs = runs_.pairs(p["ablate"], data.name, p["train_steps"], p["seeds"], shuffle=p["shuffle"])
    check_ = checks.check(p["ablate"], data)
    runs = [
        RunOut(pr.seed, which, t(f"explain.break_it.{which}", lang), *_numbers(getattr(pr, which)))
        for pr in pairs
        for which in ("intact", "ablated")
    ]
    same = _compare_greedy(runs)
    table = [_row(m, [r for r in runs if r.model == m], lang) for m in ("intact", "ablated")]
    result = BreakResult(
        "break",
        p,
        p["ablate"],
        t(f"explain.break_it.what.{p['ablate']}", lang),
        runs_.setup_of(p["ablate"], data),
        data.name,
        "held_out" if data.held_out else "same_text",
        len(data.train),
        list(range(p["seeds"])),
        list(pairs[0].intact.steps_at),
        runs,
        table,
        data.prompt,
        data.reference,
        check_,
        _chart(runs, pairs[0].intact.steps_at, lang),
        "",
        sum(r.seconds for r in runs),
        [],
    )
    result.claims = claims_of(result, lang)
    result.finding = _finding(result, lang)
    result.greedy_same = same
    which = "all" if same == len(pairs) else "none" if same == 0 else "some"
    result.greedy_note = t(f"explain.break_it.greedy_same.{which}", lang, same=same, n=len(pairs))
    return result


def _compare_greedy(runs: list[RunOut]) -> int:
    """Split each broken model's text where it departs from the intact model's of the same seed (RunOut.agrees,
    .departs); the number of seeds at which the two write the same text."""
    intact = {r.seed: r.greedy for r in runs if r.model == "intact"}
    same = 0
    for r in runs:
        if r.model == "intact":
            r.agrees = r.greedy
            continue
        ref = intact[r.seed]
        k = next((i for i, (a, b) in enumerate(zip(r.greedy, ref)) if a != b), min(len(r.greedy), len(ref)))
        r.agrees, r.departs = r.greedy[:k], r.greedy[k:]
        same += r.greedy == ref
    return same


def _numbers(h) -> tuple:
    return (h.train_loss, h.causal_loss, h.train_loss[-1], h.causal_loss[-1], h.greedy, h.seconds, h.attn_peak)


def _row(model: str, rs: list[RunOut], lang: str) -> Row:
    train = [r.final_train for r in rs]
    causal = [r.final_causal for r in rs]
    return Row(
        model,
        t(f"explain.break_it.{model}", lang),
        statistics.fmean(train),
        statistics.pstdev(train),
        statistics.fmean(causal),
        statistics.pstdev(causal),
        min(causal),
        max(causal),
    )


def _chart(runs: list[RunOut], steps_at: list[int], lang: str) -> dict:
    """The mean over seeds of each curve, as SVG points: x = step, y = log(loss), because the finding lives at the
    end of training, among small losses, and a linear axis from 0 to the untrained loss squeezes it into a few
    pixels. The ticks (1-2-5 steps) and their heights are computed here too: the page only draws them."""
    curves = {}
    for model in ("intact", "ablated"):
        rs = [r for r in runs if r.model == model]
        for kind in ("train", "causal"):
            series = [getattr(r, f"{kind}_loss") for r in rs]
            curves[f"{model}_{kind}"] = [statistics.fmean(col) for col in zip(*series)]
    values = [v for c in curves.values() for v in c if v > 0] or [1.0]
    y_min, y_max = min(values) / 1.25, max(values) * 1.25
    lo, hi = math.log(y_min), math.log(y_max)
    x_max = steps_at[-1] or 1

    def y_of(loss: float) -> float:
        share = (math.log(min(max(loss, y_min), y_max)) - lo) / (hi - lo) if hi > lo else 0.5
        return CHART_H - PAD - (CHART_H - 2 * PAD) * share

    def point(step: int, loss: float) -> str:
        return f"{PAD + (CHART_W - 2 * PAD) * step / x_max:.1f},{y_of(loss):.1f}"

    lines = [
        Line(name, t(f"explain.break_it.line.{name}", lang), " ".join(point(s, v) for s, v in zip(steps_at, c)))
        for name, c in curves.items()
    ]
    ticks = [{"y": round(y_of(v), 1), "label": num(v)} for v in _ticks(y_min, y_max)]
    ends = [{"name": n, "y": round(y_of(c[-1]), 1), "label": num(c[-1])} for n, c in curves.items()]
    return {
        "width": CHART_W,
        "height": CHART_H,
        "pad": PAD,
        "y_max": y_max,
        "y_min": y_min,
        "x_max": x_max,
        "lines": lines,
        "y_ticks": ticks,
        "ends": ends,
        "y_top": PAD,
        "y_bottom": CHART_H - PAD,
        "x_left": PAD,
        "x_right": CHART_W - PAD,
    }


def _ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 steps between lo and hi (at most ~8; only powers of ten when the range spans many decades)."""
    steps = (1, 2, 5) if math.log10(hi / lo) <= 3 else (1,)
    out = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        out += [m * 10.0**e for m in steps if lo <= m * 10.0**e <= hi]
    return out


def claims_of(r: BreakResult, lang: str) -> list[Claim]:
    from attnlab.lessons.break_it.claims import claims

    return claims(r, lang)


# Ablations whose final loss on the poem is within noise of the intact model's, and ffn-first: a second sentence
# says what their own setting measures instead (claims.measured), or where the effect does show.
NOTED = ("no-positions", "no-scale", "no-layernorm", "ffn-first", "one-head", "attention-only")


def _finding(r: BreakResult, lang: str) -> str:
    """The final causal losses, and whether the ablated model's is higher, lower or within the seeds' noise of the
    intact model's (the same paired margin as the claims: a tie is said as one)."""
    from attnlab.lessons.break_it.claims import compare, measured

    intact, ablated = r.table
    cmp = compare(r, lambda x: x.final_causal)
    way = {"shown": "higher", "contradicted": "lower", "not_shown": "tie"}[
        status_of("above", cmp["a"], cmp["i"], cmp["margin"])
    ]
    out = t(
        f"explain.break_it.finding.{way}",
        lang,
        ablation=r.ablation,
        n=len(r.seeds),
        a=ablated.causal_mean,
        a_sd=ablated.causal_std,
        i=intact.causal_mean,
        i_sd=intact.causal_std,
        a_train=ablated.train_mean,
        i_train=intact.train_mean,
        d=abs(cmp["d"]),
        m=cmp["margin"],
    )
    if r.ablation in NOTED:
        out += (" " if lang == "en" else "") + t(f"explain.break_it.note.{r.ablation}", lang, **measured(r))
    if r.ablation == "ffn-first" and r.causal_on == "same_text":
        out += (" " if lang == "en" else "") + t("explain.break_it.note.ffn-first.same_text", lang)
    if r.params["shuffle"]:
        out += (" " if lang == "en" else "") + t("explain.break_it.note.shuffled", lang)
    return out


__all__ = ["break_it", "BreakResult", "PARAMS"]

"""Step ⑤'s first update and step ③'s 月 on /pipeline, checked (lessons.first_step, lessons.focus), and their
APIs: GET /api/pipeline/neg-log, first-step and focus. Each builds or trains models in a lane of web/budget.py.
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Request

from attnlab.i18n import t
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.pipeline.first_step import COUNT_LIMIT, FirstStep, NegLog, can_count, first_step, neg_log
from attnlab.lessons.pipeline.focus import (
    COUNT_WORK_LIMIT,
    DEFAULT_EXPECTED,
    DEFAULT_QUERY,
    Focus,
    count_work,
    focus,
    focus_over_seeds,
)
from attnlab.models import preset as model_preset
from attnlab.text import BUILTIN_TEXTS
from attnlab.train import TrainConfig, new_run
from attnlab.train.run import MAX_STEPS, corpus_defaults
from attnlab.train.size import estimate_size
from attnlab.web import budget, lesson_cache, runs
from attnlab.web.errors import unprocessable
from attnlab.web.pages.train_api import SHARED_CHARS, TEXT_DOC, model_for
from attnlab.web.responses import answers
from attnlab.web.runs import run_or_404

router = APIRouter()


def settings_cost(corpus: str, sizes: dict, *, counts: bool = False) -> Cost:
    """What building this model and taking its first training steps costs (twice the estimate of one training
    step: the plain step works on a copy), known before anything is built; counting over seeds trains models."""
    preset_name, train_defaults = corpus_defaults(corpus)
    over = {
        k: v
        for k, v in dict(n_layers=sizes.get("layers"), n_heads=sizes.get("heads"), d_model=sizes.get("d_model")).items()
        if v is not None
    }
    try:
        cfg = model_preset(preset_name, vocab_size=len(set(BUILTIN_TEXTS[corpus])) + 2, **over)
    except ValueError:  # d_model not divisible by heads: the page says so, nothing big is built
        return Cost(16.0, trains=counts)
    size = estimate_size(cfg, TrainConfig(**train_defaults).batch_size)
    return Cost.of_bytes(2 * size.train_bytes, trains=counts, extra_mb=16)


# ---- step ⑤'s first update and step ③'s 月, checked (lessons.first_step, lessons.focus) -------------------

SETTING_FIELDS = ("layers", "heads", "d_model", "steps", "lr")


MAX_COUNT_SEEDS = 10


def _first_step_for(corpus: str, settings: tuple, seed: int, lang: str, seeds: int = 0) -> FirstStep:
    """The first update of the untrained model these settings build (deterministic, so kept, on disk too: its
    first computation in a process makes torch's first optimizer, which imports torch._dynamo); with `seeds`,
    also counted over seeds 0 .. seeds-1 (a second or more, so only when asked, in one of the lab's few heavy
    slots: budget.Busy when they are all taken)."""

    def compute() -> FirstStep:
        run = new_run(corpus, **dict(settings), seed=seed, device="cpu")
        with _counting(seeds):
            return first_step(run, seeds=seeds, lang=lang)

    return lesson_cache.remembered(
        "pipeline.first-step",
        {"corpus": corpus, **dict(settings), "seed": seed, "seeds": seeds},
        compute,
        lang=lang,
        source="pipeline",
        min_s=0.0,
    )


def _counting(seeds: int):
    """Counting over seeds trains up to ten models: it takes a slot of web/budget.py, like a heavy lesson."""
    return budget.heavy() if seeds else contextlib.nullcontext()


def _busy(busy: budget.Busy) -> HTTPException:
    return HTTPException(503, str(busy), headers={"Retry-After": str(busy.retry_after)})


def _settings_of(run_id: str | None, corpus: str, seed: int, sizes: dict) -> tuple[str, tuple, int]:
    """(corpus, settings, seed) of a run, or of the query's settings; settings as a hashable tuple."""
    if run_id:
        bg = run_or_404(run_id)
        s = bg.settings
        return bg.run.corpus, tuple((k, s[k]) for k in SETTING_FIELDS if s.get(k) is not None), int(s["seed"])
    return corpus, tuple((k, v) for k, v in sizes.items() if v is not None), seed


@router.get("/api/pipeline/neg-log", tags=["pipeline"])
def api_neg_log(p: Annotated[float, Query(gt=0, le=1, description="a probability, 0 < p ≤ 1")] = 0.12) -> NegLog:
    """The text's arithmetic in step ⑤: the loss −log p (natural log) of a probability, e.g. −log 0.12 ≈ 2.12."""
    return neg_log(p)


@router.get("/api/pipeline/first-step", tags=["pipeline"], responses=answers(403, 404, 503))
async def api_first_step(
    request: Request,
    run: Annotated[
        str | None, Query(description="a training run's id: its settings and seed (its model before training)")
    ] = None,
    corpus: Annotated[Literal["poem", "jingyesi"], Query()] = "poem",
    seed: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    layers: Annotated[int | None, Query(ge=1, le=8)] = None,
    heads: Annotated[int | None, Query(ge=1, le=8, description="a divisor of d_model (default: the corpus's)")] = None,
    d_model: Annotated[int | None, Query(ge=2, le=256)] = None,
    steps: Annotated[int | None, Query(ge=1, le=MAX_STEPS)] = None,
    lr: Annotated[float | None, Query(gt=0, le=1)] = None,
    seeds: Annotated[
        int,
        Query(
            ge=0,
            le=MAX_COUNT_SEEDS,
            description="also count over seeds 0 .. seeds-1 (slower); "
            f"only for a model of at most {COUNT_LIMIT:,} parameters",
        ),
    ] = 0,
    lang: Annotated[Literal["zh", "en"], Query()] = "en",
) -> FirstStep:
    """Step ⑤'s first update on the untrained model: the text's plain gradient step on −log p(光) (lr halved
    until p rises) beside the real training's first AdamW step, with claims that carry `holds`."""
    corpus, settings, seed = _settings_of(
        run, corpus, seed, dict(layers=layers, heads=heads, d_model=d_model, steps=steps, lr=lr)
    )
    try:
        return await budget.run(
            lambda: _first_step_for(corpus, settings, seed, lang, seeds),
            settings_cost(corpus, dict(settings), counts=seeds > 0),
            request=request,
        )
    except budget.Busy as busy:
        raise _busy(busy) from None
    except ValueError as err:
        field = "heads" if "divisible" in str(err) else "seeds" if "seeds" in str(err) else "d_model"
        raise unprocessable(("query", field), err, seeds if field == "seeds" else dict(settings).get(field)) from None


@router.get("/api/pipeline/focus", tags=["pipeline"], responses=answers(403, 404, 503))
async def api_focus(
    request: Request,
    run: Annotated[
        str | None, Query(description="a finished run's id; none = the untrained model of corpus and seed")
    ] = None,
    corpus: Annotated[Literal["poem", "jingyesi"], Query()] = "poem",
    seed: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    text: Annotated[
        str | None, Query(max_length=200, description=TEXT_DOC, json_schema_extra={"pattern": f"^[{SHARED_CHARS}]*$"})
    ] = None,
    query: Annotated[
        str,
        Query(
            min_length=1,
            max_length=8,
            description="one character of the text",
            json_schema_extra={"pattern": f"^[{SHARED_CHARS}]$"},
        ),
    ] = DEFAULT_QUERY,
    expected: Annotated[str, Query(min_length=1, max_length=8)] = DEFAULT_EXPECTED,
    seeds: Annotated[
        int, Query(ge=0, le=10, description="also train seeds 0 .. seeds-1 with the run's settings and count (slow)")
    ] = 0,
    lang: Annotated[Literal["zh", "en"], Query()] = "en",
) -> Focus:
    """Step ③ checked: the weights from `query` (月) to every character it sees, per layer and head, and how
    many heads give `expected` (明) the largest; with `seeds`, the same count over freshly trained models."""
    _, settings, _ = _settings_of(run, corpus, seed, {})
    real_corpus = runs.RUNS.get(run).run.corpus if run and runs.RUNS.get(run) else corpus
    try:
        return await budget.run(
            lambda: _focus(run, corpus, seed, text, query, expected, seeds, lang),
            settings_cost(real_corpus, dict(settings), counts=seeds > 0),
            request=request,
        )
    except budget.Busy as busy:
        raise _busy(busy) from None


def _focus(run, corpus, seed, text, query, expected, seeds, lang) -> Focus:
    model, tok, corpus = model_for(run, corpus, seed)
    _, settings, _ = _settings_of(run, corpus, seed, {})
    text = text or BUILTIN_TEXTS[corpus]
    try:
        with _counting(seeds):
            counted = focus_over_seeds(corpus, dict(settings), text, query, expected, seeds) if seeds else None
    except ValueError as err:
        raise unprocessable(("query", "seeds" if "seeds" in str(err) else "text"), err, seeds) from None
    try:
        return focus(model, tok, text, query, expected, over_seeds=counted, lang=lang)
    except ValueError as err:
        raise unprocessable(("query", "text"), err, text) from None


def _asked_seeds(params, name: str) -> int:
    """How many seeds a page form asked to count over (0: none, or not a number from 1 to MAX_COUNT_SEEDS)."""
    raw = (params.get(name) or "").strip()
    return int(raw) if raw.isdigit() and 1 <= int(raw) <= MAX_COUNT_SEEDS else 0


def checked_steps(params, bg, req, corpus: str, run, settings_problem, lang: str) -> dict:
    """What the page shows for ⑤'s first update (with the −log p form) and ③'s 月, from the lessons above."""
    raw_p = (params.get("p") or "").strip() or "0.12"
    out: dict = {
        "neglog_p": raw_p,
        "neglog": None,
        "neglog_problem": None,
        "first": None,
        "focus": None,
        "first_busy": False,
        "focus_busy": False,
    }
    try:
        out["neglog"] = neg_log(float(raw_p))
    except ValueError:
        out["neglog_problem"] = t("pipeline.step5.neglog.error", lang, got=raw_p)
    if bg is not None:
        corpus_, settings, seed = _settings_of(bg.id, corpus, 0, {})
    elif settings_problem:
        corpus_, settings, seed = corpus, (), req.seed
    else:
        corpus_, settings, seed = (
            corpus,
            tuple((k, getattr(req, k)) for k in SETTING_FIELDS if getattr(req, k) is not None),
            req.seed,
        )
    # Counting over seeds trains or steps ten fresh models: offered only where that takes seconds, not minutes.
    out["first_countable"] = can_count(run.model)
    want = _asked_seeds(params, "step5_seeds") if out["first_countable"] else 0
    try:
        out["first"] = _first_step_for(corpus_, settings, seed, lang, want)
    except budget.Busy:  # the count waits for a free slot: the page shows the step itself and says so
        out["first_busy"] = True
        out["first"] = _first_step_for(corpus_, settings, seed, lang, 0)
    text = BUILTIN_TEXTS[corpus_]
    n_params = sum(p.numel() for p in run.model.parameters())
    out["focus_countable"] = count_work(n_params, run.config.steps, MAX_COUNT_SEEDS) <= COUNT_WORK_LIMIT
    if DEFAULT_QUERY in text:
        want = _asked_seeds(params, "focus_seeds") if out["focus_countable"] else 0
        try:
            with _counting(want):
                counted = focus_over_seeds(corpus_, dict(settings), text, seeds=want) if want else None
        except budget.Busy:
            out["focus_busy"], counted = True, None
        out["focus"] = focus(run.model, run.tokenizer, text, over_seeds=counted, lang=lang)
    return out

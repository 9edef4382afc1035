"""The whole pipeline page (/pipeline): ① ids ② embeddings ③ attention ④ next-token probabilities, ⑤ train
live, ⑥ generate token by token (5 samples side by side, counted: lessons.pipeline.samples); and the
first-step and focus APIs (GET /api/pipeline/neg-log, first-step, focus). The training API is
attnlab.web.pages.train_api, the runs the service attnlab.web.runs.

Runs live in this server's memory (a few at a time) and train in a background thread; the page follows one
by SSE. Without JavaScript the settings form posts to /pipeline/train, which starts the run the same way
(the same limit) and redirects to the run's page; that page reloads itself until the run is done.
"""

from __future__ import annotations

import math
from typing import Annotated

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import AfterValidator, ValidationError

from attnlab.i18n import t
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.pipeline.lens import lens_view
from attnlab.lessons.pipeline.lesson import pipeline
from attnlab.lessons.pipeline.samples import (
    HINT_CORPUS,
    HINT_STEPS,
    HINT_TEMPERATURE,
    N_SAMPLES,
    Samples,
    draw_seed,
    sample_texts,
)
from attnlab.models import preset as model_preset
from attnlab.sampling import Generation, prob_text
from attnlab.text import BUILTIN_TEXTS
from attnlab.train import TrainConfig, new_run
from attnlab.train.run import corpus_defaults
from attnlab.web import budget, runs
from attnlab.web.errors import describe
from attnlab.web.pages.pipeline_checks import checked_steps, settings_cost
from attnlab.web.pages.train_api import GenerateRequest, TrainRequest, generate_for
from attnlab.web.render import lang_of, make_url, render
from attnlab.web.responses import form_lang
from attnlab.web.runs import start_run, status_of

router = APIRouter()
CORPORA = ("poem", "jingyesi")  # the web lab trains only on the built-in texts (it never reads files)
PROMPTS = {"poem": "床前", "jingyesi": "床"}
SHOWN_DIMS = 8  # embedding columns shown on the page (the API has them all)


# ---- the page -----------------------------------------------------------------------------------------

PAGE_FIELDS = ("corpus", "layers", "heads", "d_model", "steps", "lr", "seed")
GEN_FIELDS = {
    "prompt": "",
    "max_new_tokens": "30",
    "temperature": "1",
    "top_k": "",
    "top_p": "",
    "greedy": "",
    "gseed": "",
}
TRUE = {"1", "true", "on", "yes"}


def _settings_from(params) -> dict:
    """The settings form's values, as strings ('' = the corpus's default)."""
    raw = {k: (params.get(k) or "").strip() for k in PAGE_FIELDS}
    if raw["corpus"] not in CORPORA:
        raw["corpus"] = "poem"
    return raw


# What the learner sees each field called on the page (API names -> catalog keys or literal labels).
FIELD_LABELS = {
    **{k: f"pipeline.train.field.{k}" for k in ("layers", "heads", "d_model", "steps", "lr")},
    "prompt": "pipeline.step6.prompt",
    "max_new_tokens": "pipeline.step6.max_new",
    "gseed": "pipeline.step6.seed",
    "temperature": None,
    "top_k": None,
    "top_p": None,
}
BOUNDS = {"greater_than_equal": "ge", "greater_than": "gt", "less_than_equal": "le", "less_than": "lt"}
KINDS = {
    "int_parsing": "int",
    "int_from_float": "int",
    "float_parsing": "number",
    "float_type": "number",
    "int_type": "int",
    "string_too_long": "too_long",
    "string_too_short": "empty",
    "missing": "empty",
}


def _label(name: str, lang: str, *, form: str = "gen") -> str:
    if name == "seed":  # the training form's seed and the generation form's sampling seed
        return t("pipeline.train.field.seed" if form == "train" else "pipeline.step6.seed", lang)
    key = FIELD_LABELS.get(name, "")
    return t(key, lang) if key else name.replace("_", "-")


def page_problems(errors: list[dict], lang: str, *, form: str) -> str:
    """Pydantic's errors as the page says them: the field as labelled on the page, in the page's language."""
    parts = []
    for err in errors:
        name = str(err.get("loc", ("",))[-1])
        field = _label(name, lang, form=form)
        kind, ctx = err.get("type", ""), err.get("ctx") or {}
        if kind in BOUNDS:
            bound = ctx.get(BOUNDS[kind])
            parts.append(t(f"pipeline.error.{BOUNDS[kind]}", lang, field=field, bound=bound))
        elif kind in KINDS:
            parts.append(t(f"pipeline.error.{KINDS[kind]}", lang, field=field, max=ctx.get("max_length", "")))
        else:
            parts.append(t("pipeline.error.other", lang, field=field, message=str(err.get("msg", ""))))
    return t("pipeline.error.sep", lang).join(parts)


def _size_problem(req: TrainRequest, corpus: str, lang: str) -> str | None:
    """d_model must split evenly into heads: said before building, in the page's words."""
    preset_name, _ = corpus_defaults(corpus)
    pc = model_preset(preset_name, vocab_size=2)
    d, h = req.d_model or pc.d_model, req.heads or pc.n_heads
    if d % h:
        return t(
            "pipeline.error.divisible", lang, d=d, h=h, d_label=_label("d_model", lang), h_label=_label("heads", lang)
        )
    return None


def _request_from(raw: dict) -> TrainRequest:
    data = {k: v for k, v in raw.items() if v != ""}
    return TrainRequest(**data)


# The loss chart's frame (viewBox units): two panels over one step axis, so loss (0 .. top) and p (0 .. 1)
# never share a scale. pipeline.js reads the same numbers from the <svg>'s data-* attributes.
CHART = {"width": 600, "height": 262, "left": 46, "right": 12, "loss_top": 24, "loss_h": 110, "p_top": 164, "p_h": 64}
TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)


def curve(history: list[dict], steps: int, vocab: int) -> dict:
    """The loss chart: polyline points and axis ticks for the loss panel (0 .. max(log|V|, largest loss)),
    the p(target) panel (0 .. 1) and the shared step axis (0 .. steps).

    pipeline.js draws live points with the same formula; this draws a finished run's chart without JS.
    """
    c = CHART
    top = max([math.log(vocab)] + [h["loss"] for h in history if h.get("loss") is not None])
    plot_w = c["width"] - c["left"] - c["right"]
    x = lambda step: round(c["left"] + plot_w * step / max(1, steps), 1)  # noqa: E731
    y_loss = lambda v: round(c["loss_top"] + c["loss_h"] * (1 - v / top), 1)  # noqa: E731
    y_p = lambda v: round(c["p_top"] + c["p_h"] * (1 - v), 1)  # noqa: E731
    loss = " ".join(f"{x(h['step'])},{y_loss(h['loss'])}" for h in history)
    prob = " ".join(f"{x(h['step'])},{y_p(h['p_probe'])}" for h in history if h.get("p_probe") is not None)
    return {
        **c,
        "loss": loss,
        "p": prob,
        "top": top,
        "steps": steps,
        "plot_w": plot_w,
        "x_ticks": [{"frac": f, "x": x(f * steps), "label": int(f * steps + 0.5)} for f in TICKS],
        "loss_ticks": [{"frac": f, "y": y_loss(f * top), "value": f * top} for f in (0.0, 0.5, 1.0)],
        "p_ticks": [{"frac": f, "y": y_p(f), "value": f} for f in (0.0, 0.5, 1.0)],
    }


def corpus_placeholders() -> dict[str, dict]:
    """Each textbook's own defaults (the settings a blank field gets), so the form shows the ones that will be
    used for the textbook chosen (pipeline.js swaps the grey placeholders; the note lists them without JS)."""
    out = {}
    for c in CORPORA:
        preset_name, train_defaults = corpus_defaults(c)
        pc, tc = model_preset(preset_name, vocab_size=2), TrainConfig(**train_defaults)
        out[c] = dict(layers=pc.n_layers, heads=pc.n_heads, d_model=pc.d_model, steps=tc.steps, lr=tc.lr, seed=0)
    return out


def _page_cost(params) -> Cost:
    raw = _settings_from(params)
    bg = runs.RUNS.get((params.get("run") or "").strip() or "-")
    sizes = (
        bg.settings
        if bg is not None
        else {k: int(raw[k]) if raw[k].isdigit() else None for k in ("layers", "heads", "d_model")}
    )
    # counts over seeds, when asked, take a heavy slot of their own inside (budget.heavy)
    return settings_cost(bg.run.corpus if bg is not None else raw["corpus"], sizes)


@router.get("/pipeline", response_class=HTMLResponse, include_in_schema=False)
async def pipeline_page(request: Request):
    """Built on a worker thread in the lane its model's size asks for (web/budget.py): a big model's page
    waits in the heavy lane, is refused to other websites, and counts against the memory budget."""
    return await budget.run(lambda: _pipeline_page(request), _page_cost(request.query_params), request=request)


def _pipeline_page(request: Request):
    params = request.query_params
    raw = _settings_from(params)
    problems = []
    gen_state = {k: (params.get(k) or v).strip() for k, v in GEN_FIELDS.items()}
    run_id = (params.get("run") or "").strip()
    bg = runs.RUNS.get(run_id) if run_id else None
    if run_id and bg is None:
        problems.append("pipeline.run.gone")
        run_id = ""
    if bg is not None:  # the form shows the run's own settings, ready to change and train again
        raw = {k: "" if bg.settings.get(k) is None else str(bg.settings[k]) for k in PAGE_FIELDS}

    lang = lang_of(request)
    settings_problem = None
    try:
        req = _request_from(raw)
    except ValidationError as err:
        settings_problem = page_problems(err.errors(), lang, form="train")
        req = TrainRequest(corpus=raw["corpus"])
    if bg is not None:
        corpus, run = bg.run.corpus, bg.run
    else:
        corpus = req.corpus
        settings_problem = settings_problem or _size_problem(req, corpus, lang)
        try:
            if settings_problem:
                raise ValueError(settings_problem)
            run = new_run(corpus, layers=req.layers, heads=req.heads, d_model=req.d_model, seed=req.seed, device="cpu")
        except ValueError as err:
            settings_problem = settings_problem or str(err)
            run = new_run(corpus, seed=req.seed, device="cpu")
    training = bg is not None and not bg.finished

    view = None if training else pipeline(run.model, run.tokenizer, text=BUILTIN_TEXTS[corpus])
    lens = (
        None if view is None else lens_view(run.model, run.tokenizer, view.next.context, lang)
    )  # how ④'s answer forms
    emb = None
    if view is not None:  # the page shows the first few columns of step ②; the API has them all
        e, k = view.embedding, min(SHOWN_DIMS, view.embedding.d_model)
        emb = {
            "shown": k,
            "token": [r[:k] for r in e.token_rows],
            "sum": [r[:k] for r in e.sums],
            "position": [r[:k] for r in e.position_rows] if e.position_rows is not None else None,
        }
    history = list(run.trainer.history)
    status = status_of(bg) if bg is not None else None

    generation, samples, gen_problem = None, None, None
    asked = bg is not None and bg.finished and "prompt" in params  # the ⑥ form was sent
    unseen = bg.run.tokenizer.unknown(gen_state["prompt"]) if asked else []
    if asked and not gen_state["prompt"]:
        gen_problem = t(
            "pipeline.error.empty_prompt", lang, field=_label("prompt", lang), example=PROMPTS[bg.run.corpus]
        )
    elif asked and unseen:
        gen_problem = t(
            "pipeline.error.unseen",
            lang,
            field=_label("prompt", lang),
            chars="".join(unseen),
            corpus=t("pipeline.corpus." + bg.run.corpus, lang),
        )
    elif asked:
        try:
            samples, generation = samples_for(
                bg,
                GenerateRequest(
                    run=bg.id,
                    prompt=gen_state["prompt"],
                    max_new_tokens=gen_state["max_new_tokens"] or 30,
                    temperature=gen_state["temperature"] or 1.0,
                    top_k=gen_state["top_k"] or None,
                    top_p=gen_state["top_p"] or None,
                    greedy=gen_state["greedy"].lower() in TRUE,
                    seed=gen_state["gseed"] or None,
                ),
            )
        except ValidationError as err:  # out of range, not a number
            gen_problem = page_problems(list(err.errors()), lang, form="gen")
        except RequestValidationError as err:
            gen_problem = describe(list(err.errors()))
        except HTTPException as err:
            gen_problem = str(err.detail)
    if not gen_state["prompt"]:
        gen_state["prompt"] = PROMPTS[corpus]

    preset_name, train_defaults = corpus_defaults(corpus)
    pc, tc = model_preset(preset_name, vocab_size=run.tokenizer.vocab_size), TrainConfig(**train_defaults)
    placeholders = dict(layers=pc.n_layers, heads=pc.n_heads, d_model=pc.d_model, steps=tc.steps, lr=tc.lr, seed=0)
    mc = run.model.config
    # While a run trains (view is None) the page shows its progress only: nothing checked, every key present.
    checked = (
        checked_steps(params, bg, req, corpus, run, settings_problem, lang)
        if view is not None
        else dict.fromkeys(
            (
                "first",
                "focus",
                "neglog",
                "neglog_problem",
                "first_countable",
                "focus_countable",
                "first_busy",
                "focus_busy",
            )
        )
    )
    return render(
        request,
        "pipeline/page.html",
        raw=raw,
        corpus=corpus,
        corpora=CORPORA,
        run_id=run_id,
        bg=bg,
        status=status,
        training=training,
        view=view,
        lens=lens,
        emb=emb,
        history=history,
        curve=curve(history, run.config.steps, run.tokenizer.vocab_size),
        model_config=mc,
        train_config=run.config,
        n_params=sum(p.numel() for p in run.model.parameters()),
        placeholders=placeholders,
        problems=problems,
        settings_problem=settings_problem,
        gen_state=gen_state,
        generation=generation,
        samples=samples,
        hint=dict(
            corpus=HINT_CORPUS,
            steps=HINT_STEPS,
            temperature=HINT_TEMPERATURE,
            # this run is the hint's model: the page says what to do with it instead of suggesting it again
            followed=bg is not None and bg.run.corpus == HINT_CORPUS and bg.run.config.steps == HINT_STEPS,
        ),
        gen_problem=gen_problem,
        uniform_loss=math.log(run.tokenizer.vocab_size),
        prob_text=prob_text,
        checked=checked,
        setting_fields=PAGE_FIELDS,
        probe_target=run.trainer.probe.target if run.trainer.probe else "?",
        corpus_placeholders=corpus_placeholders(),
    )


def samples_for(bg, req: GenerateRequest) -> tuple[Samples, Generation]:
    """⑥ on the page: N_SAMPLES draws side by side (seeds seed .. seed+4; a blank seed gets a random base,
    shown), and the first one step by step. The same checks as POST /api/generate (generate_for)."""
    seed = req.seed if req.seed is not None else draw_seed()
    first = generate_for(req.model_copy(update={"seed": seed}))  # 404 / 409 / 422 as the API says them
    summary, gens = sample_texts(
        bg.run.model,
        bg.run.tokenizer,
        req.prompt,
        n=N_SAMPLES,
        seed=seed,
        max_new_tokens=req.max_new_tokens,
        temperature=req.temperature,
        top_k=req.top_k,
        top_p=req.top_p,
        greedy=req.greedy,
        n_candidates=5,
        first=first,
    )
    return summary, gens[0]


@router.post("/pipeline/train", include_in_schema=False)
async def pipeline_train_form(
    request: Request,
    corpus: Annotated[str, Form()] = "poem",
    layers: Annotated[str, Form()] = "",
    heads: Annotated[str, Form()] = "",
    d_model: Annotated[str, Form()] = "",
    steps: Annotated[str, Form()] = "",
    lr: Annotated[str, Form()] = "",
    seed: Annotated[str, Form()] = "",
    lang: Annotated[str, Form(), AfterValidator(form_lang)] = "",  # zh or en; else '': the request's language
):
    """The no-JavaScript path: start the run like the API does, then show its page (which reloads itself
    while the run trains). All slots taken: 429 with Retry-After and the reason in the page's language."""
    raw = dict(corpus=corpus, layers=layers, heads=heads, d_model=d_model, steps=steps, lr=lr, seed=seed)
    raw = {k: (v or "").strip() for k, v in raw.items()}
    lang = lang or lang_of(request)
    try:
        bg = await start_run(_request_from(raw))
    except (ValidationError, RequestValidationError):
        # The page, given the same fields, finds and shows the same problem beside the form.
        kept = {k: v for k, v in raw.items() if v}
        return RedirectResponse(make_url("/pipeline", lang, **kept), status_code=303)
    except HTTPException as err:
        if err.status_code != 429:
            raise
        in_lang = Request({**request.scope, "query_string": make_url("", lang).lstrip("?").encode()})
        message = t("pipeline.busy", lang, n=runs.RUNS.max_training)
        page = render(in_lang, "error.html", status_code=429, code=429, message=message)
        page.headers.update(err.headers or {})
        return page
    return RedirectResponse(make_url("/pipeline", lang, run=bg.id), status_code=303)

"""The concept lessons on the web: /explain (the topics), /explain/{topic} (one topic's page and form),
/explain/{topic}/figure.png, and the JSON API /api/explain and /api/explain/{topic}.

A topic's parameters are its query parameters (d_k, or d-k), the same names as the CLI's options. The page
is complete without JavaScript (a GET form, numbers and tables rendered here); static/explain.js makes the
controls live by calling the API and writing its numbers into the elements marked data-bind / data-each /
data-heat / data-claims. Every number on the page is a lesson's, formatted by `sig` (explain.js formats
the same way).
"""

from __future__ import annotations

import io
import math
import re
import threading
from collections import OrderedDict
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response

from attnlab.display.fmt import fixed
from attnlab.i18n import catalog, t
from attnlab.lessons.common.ask import question
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import TOPICS, Topic, as_dict
from attnlab.web import budget, figure_store, lesson_cache, lesson_data
from attnlab.web.api_lang import ApiLang
from attnlab.web.render import lang_of, make_url, render
from attnlab.web.responses import answers

router = APIRouter()

PROGRESS_AFTER_S = 1.0  # a page whose lesson still trains after this long shows the training's progress instead
RESERVED = ("lang", "predict")  # query parameters of the page itself, never passed to a lesson
FORM_HIDDEN = {"quiz", "answer"}  # the glossary's quiz fields live in each quiz's own form


def sig(x: Any) -> str:
    """A number as the lab shows it (explain.js has the same rule): integers with thousands separators, three
    significant digits in plain notation between 0.0001 and 10^6 (the whole integer part above 100), else
    d.de±XX; None as —, booleans as ✓ / ✗."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "✓" if x else "✗"
    if isinstance(x, str):
        return x
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    a = abs(x)
    if 1e-4 <= a < 1e6:
        digits = max(0, 2 - math.floor(math.log10(a)))
        return fixed(x, digits) if digits else f"{x:.0f}"  # honest: 0.99998 is not shown as 1
    return f"{x:.1e}"


def measures_time(data: Any) -> bool:
    """Whether a lesson's result holds a measured time (a field named *seconds*): only then does the page say
    that the figure's times are measured again."""
    if isinstance(data, dict):
        return any("seconds" in str(k) or measures_time(v) for k, v in data.items())
    if isinstance(data, list):
        return any(measures_time(v) for v in data[:3])
    return False


def heat_style(x: float | None, top: float) -> str:
    """Inline style of a heatmap cell: its share of the colour scale (the cell prints the number too)."""
    a = 0.0 if x is None or top <= 0 else max(0.0, min(1.0, float(x) / top))
    return f"--a:{a:.3f}"


def _topic(name: str) -> Topic:
    topic = TOPICS.get(name.replace("_", "-"))
    if topic is None:
        raise HTTPException(404, f"no topic {name!r}; the topics are {', '.join(TOPICS)}")
    return topic


def _raw(request: Request) -> dict[str, str]:
    return {k.replace("-", "_"): v for k, v in request.query_params.items() if k not in RESERVED}


def ask(topic: Topic, lang: str) -> dict:
    """The question the topic asks before it shows anything: {"q", "options": [(id, words)]}."""
    return question(topic.slug, topic.options, lang)


def verdict_of(topic: Topic, result, request: Request, lang: str) -> dict | None:
    """Right or wrong for the page's ?predict=, read from this run's numbers; None before an answer (or for a
    value that is not one of the options: the question is asked again)."""
    predict = request.query_params.get("predict")
    if result is None or predict not in topic.options:
        return None
    return topic.verdict(result, predict, lang)


_SHELL_SAFE = re.compile(r"[^A-Za-z0-9_@%+=:,./-]")  # shlex.quote's rule; explain.js quotes the same way


def _shell(value: str) -> str:
    if value and not _SHELL_SAFE.search(value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


def cli_line(topic: Topic, raw: dict[str, str]) -> str:
    """`attnlab explain TOPIC` with the options whose values differ from the defaults (explain.js keeps it current
    as the controls move, by the same rule). Values that do not parse are shown as given."""
    words = ["attnlab", "explain", topic.name]
    for p in topic.params:
        if p.name not in raw or p.cli_only or p.name in FORM_HIDDEN:
            continue
        try:
            value = p.parse(raw[p.name])
        except ParamError:
            value = raw[p.name]
        if value == p.default:
            continue
        if p.kind == "bool" and isinstance(value, bool):
            words.append(p.option if value else "--no-" + p.option[2:])
        else:
            words += [p.option, _shell(str(raw[p.name]))]
    return " ".join(words)


def _controls(topic: Topic, raw: dict[str, str], lang: str, request: Request | None = None) -> list[dict]:
    """What the form shows for each parameter: its spec, its current value and its label; and, for a lesson
    that reads a corpus, the files of the lab's data folder it may read (web/lesson_data.py)."""
    out = lesson_data.control(topic, raw, lang, lesson_data.data_dir(request))  # [] or the data folder's files
    for p in topic.params:
        spec = p.spec()
        value = raw.get(p.name, p.default)
        if p.kind == "bool":
            value = str(value).strip().lower() in ("1", "true", "yes", "on")
        own = f"explain.{topic.slug}.param.{p.name}"  # a lesson may name a shared parameter its own way
        label = t(own if own in catalog() else f"explain.param.{p.name}", lang)
        spec.update(
            value=value,
            label=label,
            hidden=p.name in FORM_HIDDEN or p.cli_only,
            control=_control(p),
            option=p.option,
            note=t(f"{own}.note", lang) if f"{own}.note" in catalog() else "",
            default=str(p.default).lower() if p.kind == "bool" else str(p.default),
        )
        out.append(spec)
    return out


def _control(p) -> str:
    """A slider for a bounded number of modest range; a number field (with a log slider added by explain.js)
    for sizes spanning powers of two; a plain number field for seeds."""
    if p.kind == "float" or (p.kind == "int" and not p.log and p.hi - p.lo <= 5000):
        return "range"
    return p.kind


async def _lesson(
    topic: Topic, raw: dict[str, str], lang: str, progress_after: float | None = None, request=None, nulls: bool = True
):
    """(result, error message): the page shows the message instead of results when the input is bad.
    Computed through web/lesson_cache.py (cached, a few at once, off the event loop); budget.Busy and
    lesson_cache.Training (with progress_after) pass through."""
    try:
        values = lesson_data.resolved(topic, raw, lesson_data.data_dir(request))
        result = await lesson_cache.lesson(topic, values, lang, progress_after=progress_after, request=request)
    except ParamError as err:
        return None, err.localized(lang)  # the page speaks its own language; the API's message stays English
    if not nulls:  # a figure draws the run itself
        return result, None
    return await _with_nulls(topic, values, lang, result, progress_after, request, raw), None


async def _with_nulls(topic: Topic, values: dict, lang: str, result, progress_after=None, request=None, raw=None):
    """The result, its claims carrying their nulls (lessons/common/nulls.py): each null is the same lesson at
    other settings, computed and cached like any. A null still training raises lesson_cache.Training with its
    settings as `raw` (as the request spelled them: `raw`), so the progress the page follows is the null's."""
    done = []
    for settings in topic.null_settings(result, values):
        try:
            done.append(
                await lesson_cache.lesson(topic, settings, lang, progress_after=progress_after, request=request)
            )
        except ParamError:
            done.append(None)
        except lesson_cache.Training as training:
            training.raw = lesson_data.as_query(topic, settings, raw or values)
            training.null = _null_label(topic, settings, lang)
            raise
    return topic.with_nulls(result, values, lang, done)


def _null_label(topic: Topic, settings: dict, lang: str) -> str:
    """The name in words of the null these settings run (the first claim's that declares them)."""
    from attnlab.lessons.common import nulls

    for null in topic.nulls.values():
        if null.settings and all(settings.get(k) == v for k, v in null.settings.items()):
            return nulls.label(topic.slug, null, lang)
    return ""


def _busy_page(request: Request, busy: budget.Busy):
    """503 in the page's language, with Retry-After."""
    lang = lang_of(request)
    response = render(
        request,
        "error.html",
        status_code=503,
        code=503,
        message=t("explain.error.busy", lang, seconds=busy.retry_after),
    )
    response.headers["Retry-After"] = str(busy.retry_after)
    return response


@router.get("/explain", response_class=HTMLResponse, include_in_schema=False)
def explain_index(request: Request):
    return render(request, "explain.html", topics=list(TOPICS.values()))


@router.get("/explain/{topic}", response_class=HTMLResponse, include_in_schema=False)
async def explain_page(request: Request, topic: str):
    tp = _topic(topic)
    lang = lang_of(request)
    raw = _raw(request)
    query = {k: v for k, v in raw.items() if k not in FORM_HIDDEN}
    try:
        result, error = await _lesson(tp, raw, lang, progress_after=PROGRESS_AFTER_S, request=request)
    except budget.Busy as busy:
        return _busy_page(request, busy)
    except lesson_cache.Training as training:  # first visit: the models train in the background; 202 and their steps
        return render(
            request,
            "explain_topic.html",
            status_code=202,
            topic=tp,
            topics=list(TOPICS.values()),
            controls=_controls(tp, raw, lang, request),
            r=None,
            error=None,
            sig=sig,
            heat_style=heat_style,
            query=query,
            cli=cli_line(tp, raw),
            ask=None,
            verdict=None,
            training=_labelled(tp, training.models, lang),
            training_null=getattr(training, "null", ""),
            progress_url=f"/api/explain/{tp.name}/progress?"
            + urlencode({**getattr(training, "raw", raw), "lang": lang}),
        )
    return await run_in_threadpool(  # a big table takes a while to render: not on the event loop
        render,
        request,
        "explain_topic.html",
        status_code=200 if error is None else 422,
        topic=tp,
        topics=list(TOPICS.values()),
        controls=_controls(tp, raw, lang, request),
        r=result,
        error=error,
        sig=sig,
        heat_style=heat_style,
        query=query,
        timed=result is not None and measures_time(as_dict(result)),
        cli=cli_line(tp, raw),
        ask=ask(tp, lang),
        verdict=verdict_of(tp, result, request, lang),
        figure_url=make_url(f"/explain/{tp.name}/figure.png", lang, **query) if result is not None else None,
    )


def _labelled(tp: Topic, models: list[dict], lang: str) -> list[dict]:
    """The progress rows with each model's name in the page's language (the topic's own model names)."""
    keys = {m["name"]: f"explain.{tp.slug}.model.{m['name']}" for m in models}
    return [{**m, "label": t(keys[m["name"]], lang) if keys[m["name"]] in catalog() else m["name"]} for m in models]


@router.get("/explain/{topic}/figure.png", include_in_schema=False)
async def explain_figure(request: Request, topic: str):
    tp = _topic(topic)
    lang = lang_of(request)
    try:
        raw = _raw(request)
        result, error = await _lesson(tp, raw, lang, request=request, nulls=False)
        if error is not None:
            raise HTTPException(422, error)
        values = lesson_data.resolved(tp, raw, lesson_data.data_dir(request))
        key, on_disk = lesson_cache.lesson_key(tp, values, lang), not tp.names_a_file(values)  # as its result
        png = _figures.get(key) or (await run_in_threadpool(figure_store.stored, key) if on_disk else None)
        if png is None:  # drawn once per result, one figure at a time (matplotlib holds the interpreter)
            png = await budget.run(lambda: _png(tp, result, lang), DRAWING, request=request, lane=budget.DRAW)
            if on_disk:
                figure_store.store(key, png)
        _figures.put(key, png)
    except budget.Busy as busy:
        raise HTTPException(
            503, t("explain.error.busy", lang, seconds=busy.retry_after), headers={"Retry-After": str(busy.retry_after)}
        ) from None
    return Response(png, media_type="image/png", headers={"Cache-Control": "no-store"})


DRAWING = Cost(64.0)  # a figure: matplotlib's canvas and the PNG


class _Figures:
    """The last figures drawn, by lesson key, at most MAX_BYTES in all (the largest is a few MB)."""

    MAX_BYTES = 32 * 2**20

    def __init__(self):
        self._kept: OrderedDict[tuple, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> bytes | None:
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
            return self._kept.get(key)

    def put(self, key: tuple, png: bytes) -> None:
        with self._lock:
            self._kept[key] = png
            while len(self._kept) > 1 and sum(map(len, self._kept.values())) > self.MAX_BYTES:
                self._kept.popitem(last=False)


_figures = _Figures()


def _png(tp: Topic, result, lang: str) -> bytes:
    buffer = io.BytesIO()
    tp.plot(result, buffer, lang=lang)
    return buffer.getvalue()


@router.get("/api/explain", tags=["explain"])
def api_topics(lang: ApiLang = "zh") -> list[dict]:
    """The topics, each with its parameters (name, kind, default, range, choices): the query parameters of
    /api/explain/{topic} and the options of `attnlab explain TOPIC`."""
    return [
        {
            "topic": tp.name,
            "title": t(f"explain.{tp.slug}.title", lang),
            "summary": t(f"explain.{tp.slug}.summary", lang),
            "params": [p.spec() for p in tp.params],
        }
        for tp in TOPICS.values()
    ]


@router.get("/api/explain/{topic}/progress", tags=["explain"], responses=answers(404))
def api_explain_progress(
    request: Request, topic: Annotated[str, Path(json_schema_extra={"enum": [*TOPICS]})], lang: ApiLang = "zh"
) -> dict:
    """How far the lesson for these query parameters has got: {"status": "done" | "training" | "idle",
    "models": [{"name", "label", "step", "steps"}, ...]} (label: the model's name in `lang`). done: GET /api/explain/{topic} answers at once; training: it
    is training these models now; idle: not computed (GET /api/explain/{topic} or the page computes it).
    The lessons that train models (seq2seq, mlm, break, one-hot, multihead) report steps. A bad value: 422, as /api/explain/{topic}."""
    tp = _topic(topic)
    raw = _raw(request)
    try:
        found = lesson_cache.progress_of(tp, lesson_data.resolved(tp, raw, lesson_data.data_dir(request)), lang)
        return {**found, "models": _labelled(tp, found["models"], lang)}
    except ParamError as err:
        loc = ("query", err.name) if err.name else ("query",)
        raise RequestValidationError(
            [{"type": "value_error", "loc": loc, "msg": str(err), "input": raw.get(err.name) if err.name else None}]
        ) from None


@router.get("/api/explain/{topic}", tags=["explain"], responses=answers(404, 503))
async def api_explain(
    request: Request, topic: Annotated[str, Path(json_schema_extra={"enum": [*TOPICS]})], lang: ApiLang = "zh"
) -> JSONResponse:
    """One concept lesson's numbers. Query parameters: the topic's parameters (see GET /api/explain; d_k or
    d-k), plus lang=zh|en for the text, and predict=OPTION, the learner's answer to the topic's question: then
    "verdict" says whether it is right at these numbers (lessons/common/ask.py). Unknown topic: 404. A bad value: 422 naming the parameter (message in
    English; detail[0].ctx.localized in the requested language). Results are kept by parameters; when the
    server already computes as many lessons as it runs at once: 503 with Retry-After (and the sentence in
    `lang` at detail[0].ctx.localized)."""
    tp = _topic(topic)
    raw = _raw(request)
    predict = request.query_params.get("predict")
    if predict is not None and predict not in tp.options:  # before any computing: a typo costs nothing
        msg = f"predict must be one of {', '.join(tp.options)}, got {predict[:20]!r}"
        raise RequestValidationError(
            [{"type": "value_error", "loc": ("query", "predict"), "msg": msg, "input": predict}]
        )
    try:
        values = lesson_data.resolved(tp, raw, lesson_data.data_dir(request))
        result = await lesson_cache.lesson(tp, values, lang, request=request)
        result = await _with_nulls(tp, values, lang, result, request=request)
    except budget.Busy as busy:
        detail = [
            {
                "type": "busy",
                "loc": ["query"],
                "msg": str(busy),
                "ctx": {"localized": t("explain.error.busy", lang, seconds=busy.retry_after), "lang": lang},
            }
        ]
        return JSONResponse(
            {"message": str(busy), "detail": detail}, status_code=503, headers={"Retry-After": str(busy.retry_after)}
        )
    except ParamError as err:
        loc = ("query", err.name) if err.name else ("query",)
        # message: English; detail[0].ctx.localized: the same sentence in `lang`, for the live page (explain.js)
        raise RequestValidationError(
            [
                {
                    "type": "value_error",
                    "loc": loc,
                    "msg": str(err),
                    "input": raw.get(err.name) if err.name else None,
                    "ctx": {"localized": err.localized(lang), "lang": lang},
                }
            ]
        ) from None
    verdict = verdict_of(tp, result, request, lang)
    return await run_in_threadpool(
        lambda: JSONResponse(as_dict(result) if verdict is None else {**as_dict(result), "verdict": verdict})
    )

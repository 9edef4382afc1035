"""Checkpoints the CLI wrote, opened in the lab (/runs, /runs/{name}) and through the API (/api/runs...).

The server looks only inside the folder it was started with (`attnlab serve --runs DIR`, default runs/;
`create_app(runs_dir=...)`); `attnlab train --out DIR/NAME` writes checkpoint NAME there. /runs lists them;
/runs/{name} shows ① ids ② embeddings ③ every layer's and head's attention on a text the learner types, ④ the
next token's distribution, the logit lens and each head's effect on ④ when removed, where 月 looks in 床前明月光,
and ⑥ generation with its candidates. A name that leads outside the folder (a path, '..', a link elsewhere) is
refused: 403, and the page says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from attnlab.i18n import t
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.pipeline.heads import HOWS
from attnlab.lessons.pipeline.lesson import DEFAULT_TEXT
from attnlab.lessons.pipeline.open_model import MAX_TEXT, ModelView, focus_view, model_view, summary
from attnlab.sampling import Generation, generate_from, prob_text, starts_poems
from attnlab.train.storage.checkpoint import CheckpointError
from attnlab.train.storage.runs_dir import NoSuchRun, OutsideRuns, RunEntry, list_runs, open_run
from attnlab.web import budget
from attnlab.web.errors import describe, unprocessable
from attnlab.web.pages.pipeline import GEN_FIELDS, SHOWN_DIMS, TRUE, page_problems
from attnlab.web.pages.train_api import Flag, Int, Num, bounded
from attnlab.web.render import lang_of, render
from attnlab.web.responses import answers

router = APIRouter()
NAME = "a checkpoint folder's name inside the server's runs folder (`attnlab serve --runs DIR`)"


def runs_dir(request: Request) -> Path | None:
    """The folder this server opens checkpoints from (None: started without one, e.g. in-process)."""
    return getattr(request.app.state, "runs_dir", None)


@dataclass
class RunsListing:
    folder: str | None  # the runs folder, resolved; None when the server was started without one
    runs: list[RunEntry]


class RunGenerateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt: str = Field(..., max_length=200, description="empty = start a new text")
    max_new_tokens: Int = Field(30, ge=1, le=300)
    temperature: Num = Field(1.0, ge=0, le=10, description="0 = greedy")
    top_k: bounded(int, ge=1) | None = None
    top_p: bounded(float, gt=0, le=1) | None = None
    greedy: Flag = False
    seed: bounded(int, ge=0, le=2**31 - 1) | None = None
    poem_start: Flag | None = Field(
        None,
        description="read the end-of-text mark before the prompt, so it begins a "
        "poem; null: as the checkpoint was trained (on for a folder of poems)",
    )


def _open_cost(root: Path, name: str) -> Cost:
    """Opening a checkpoint holds its weights about twice while they load (the file's size; 0 when it is not
    there yet: open_run then says why)."""
    try:
        size = (root / name / "model.safetensors").stat().st_size
    except (OSError, ValueError):
        size = 0
    return Cost.of_bytes(2 * size, extra_mb=16)


def _open(request: Request, name: str):
    """The checkpoint, or the HTTPException the API answers (403 outside, 404 none, 422 damaged)."""
    root = runs_dir(request)
    if root is None:
        raise HTTPException(404, "this server was started without a runs folder (attnlab serve --runs DIR)")
    try:
        with budget.hold(_open_cost(root, name)):  # a model is built from the files: in a lane, like a lesson
            return open_run(root, name)
    except OutsideRuns as err:
        raise HTTPException(403, str(err)) from None
    except NoSuchRun as err:
        raise HTTPException(404, str(err)) from None
    except CheckpointError as err:
        raise unprocessable(("path", "name"), err, name) from None


# ---- JSON API -----------------------------------------------------------------------------------------


@router.get("/api/runs", tags=["runs"])
def api_runs(request: Request) -> RunsListing:
    """The checkpoints in the server's runs folder (read from each config.json; a damaged one says why)."""
    root = runs_dir(request)
    return RunsListing(folder=str(root) if root else None, runs=list_runs(root) if root else [])


@router.get("/api/runs/{name}", tags=["runs"], responses=answers(403, 404))
def api_run(
    request: Request,
    name: str,
    text: Annotated[
        str,
        Query(
            max_length=MAX_TEXT,
            description="the text for ① to ④, in characters the checkpoint's tokenizer knows",
            json_schema_extra={"minLength": 1},
        ),
    ] = DEFAULT_TEXT,
    lang: Annotated[Literal["zh", "en"], Query()] = "en",
    how: Annotated[
        Literal["zero", "mean"],
        Query(
            description="how `heads` removes a head: zero its output, or put in its mean output over windows of `text`"
        ),
    ] = "zero",
) -> ModelView:
    """A checkpoint opened: ① ids ② embeddings ③ every layer's and head's attention on `text`, ④ the next
    token's distribution after it, where 月 looks in 床前明月光 (per layer and head, with claims), the logit lens
    (`lens`: each layer's top token per position, and ④'s top token's rank and probability by layer) and `heads`:
    Δ log p of ④'s top token with each head removed (`lens_absent` / `heads_absent` say why one is null)."""
    ckpt = _open(request, name)
    try:
        return model_view(name, ckpt.model, ckpt.tokenizer, ckpt.meta, text, lang=lang, how=how)
    except ValueError as err:
        raise unprocessable(("query", "text"), err, text) from None


def _generate(ckpt, body: RunGenerateRequest) -> Generation:
    """A poem checkpoint starts the prompt as a poem unless asked not to (attnlab.sampling.starts_poems)."""
    return generate_from(
        ckpt,
        body.prompt,
        poem_start=body.poem_start,
        max_new_tokens=body.max_new_tokens,
        temperature=body.temperature,
        top_k=body.top_k,
        top_p=body.top_p,
        greedy=body.greedy,
        seed=body.seed,
        n_candidates=5,
    )


@router.post("/api/runs/{name}/generate", tags=["runs"], responses=answers(400, 403, 404))
def api_run_generate(request: Request, name: str, body: RunGenerateRequest) -> Generation:
    """⑥ Continue a prompt with the checkpoint's model, one token at a time: every step's top candidates, whether
    each survived temperature / top-k / top-p, and the one chosen."""
    ckpt = _open(request, name)
    unseen = ckpt.tokenizer.unknown(body.prompt)
    if unseen:
        raise unprocessable(
            ("body", "prompt"), f"not in this model's vocabulary: {''.join(unseen[:20])!r}", body.prompt
        )
    try:
        return _generate(ckpt, body)
    except ValueError as err:
        raise unprocessable(("body", "prompt"), err, body.prompt) from None


# ---- the pages ----------------------------------------------------------------------------------------


@router.get("/runs", response_class=HTMLResponse, include_in_schema=False)
def runs_page(request: Request):
    root = runs_dir(request)
    runs = list_runs(root) if root else []
    return render(
        request,
        "runs.html",
        folder=str(root) if root else None,
        runs=runs,
        links={r.name: page_path(r.name) for r in runs},
    )


def page_path(name: str) -> str:
    """/runs/{name}, the name quoted (a folder may be called anything printable)."""
    return "/runs/" + quote(name, safe="")


def _refused(request: Request, name: str, status: int, key: str, detail: str = ""):
    """The error page in the page's language; a damaged checkpoint's `detail` says what is wrong with it."""
    text = t(key, lang_of(request), name=name[:80], folder=str(runs_dir(request) or ""))
    return render(
        request, "error.html", status_code=status, code=status, message=f"{text} ({detail})" if detail else text
    )


def _page_generation(ckpt, params, lang: str) -> tuple[dict, Generation | None, str | None]:
    """⑥ on the page: the form's state, the generation (when the form was sent) or the problem, in `lang`."""
    state = {k: (params.get(k) or v).strip() for k, v in GEN_FIELDS.items()}
    opted_out = (params.get("no_poem_start") or "").strip().lower() in TRUE  # the box a poem model's form shows
    state["no_poem_start"] = "1" if opted_out else ""
    if "prompt" not in params:
        return state, None, None
    unseen = ckpt.tokenizer.unknown(state["prompt"])
    if unseen:
        return state, None, t("runs.error.unseen", lang, chars="".join(unseen[:20]))
    try:
        body = RunGenerateRequest(
            prompt=state["prompt"],
            max_new_tokens=state["max_new_tokens"] or 30,
            temperature=state["temperature"] or 1.0,
            top_k=state["top_k"] or None,
            top_p=state["top_p"] or None,
            greedy=state["greedy"].lower() in TRUE,
            seed=state["gseed"] or None,
            poem_start=False if opted_out else None,
        )
        return state, _generate(ckpt, body), None
    except ValidationError as err:
        return state, None, page_problems(list(err.errors()), lang, form="gen")
    except ValueError as err:  # from sampling.generate: said as it is
        return state, None, str(err)


@router.get("/runs/{name}", response_class=HTMLResponse, include_in_schema=False)
def run_page(request: Request, name: str):
    lang = lang_of(request)
    try:
        ckpt = _open(request, name)
    except HTTPException as err:
        key = {403: "runs.error.outside", 404: "runs.error.missing"}[err.status_code]
        return _refused(request, name, err.status_code, key)
    except RequestValidationError as err:
        return _refused(request, name, 422, "runs.error.damaged", describe(list(err.errors())))
    params = request.query_params
    default = DEFAULT_TEXT if not ckpt.tokenizer.unknown(DEFAULT_TEXT) else ""
    text = params["text"].strip() if "text" in params else default
    view, text_problem = None, None
    how = params.get("how", "").strip()
    how = how if how in HOWS else "zero"  # the card's select offers these two; anything else reads as zero
    try:
        if text or "text" in params:  # a model that cannot read 床前明月光 waits for a text, without a complaint
            view = model_view(name, ckpt.model, ckpt.tokenizer, ckpt.meta, text, lang=lang, how=how)
    except ValueError:
        unseen = ckpt.tokenizer.unknown(text)
        text_problem = (
            t("runs.error.empty", lang)
            if not text
            else t("runs.error.too_long", lang, n=len(text), max=MAX_TEXT)
            if len(text) > MAX_TEXT
            else t("runs.error.unseen", lang, chars="".join(unseen[:20]))
        )
    emb = None
    if view is not None:  # the first few columns of ②; the API has them all
        e, k = view.steps.embedding, min(SHOWN_DIMS, view.steps.embedding.d_model)
        emb = {
            "shown": k,
            "token": [r[:k] for r in e.token_rows],
            "sum": [r[:k] for r in e.sums],
            "position": [r[:k] for r in e.position_rows] if e.position_rows is not None else None,
        }
    gen_state, generation, gen_problem = _page_generation(ckpt, params, lang)
    if "prompt" not in params:
        gen_state["prompt"] = text[:2]
    return render(
        request,
        "run.html",
        name=name,
        page_path=page_path(name),
        text=text,
        text_problem=text_problem,
        max_text=MAX_TEXT,
        summary=view.summary if view else summary(name, ckpt.model, ckpt.tokenizer, ckpt.meta),
        steps=view.steps if view else None,
        emb=emb,
        view=view,
        how=how,
        hows=HOWS,
        fv=view.focus if view else focus_view(ckpt.model, ckpt.tokenizer, lang=lang),
        gen_state=gen_state,
        generation=generation,
        gen_problem=gen_problem,
        prob_text=prob_text,
        poem_model=starts_poems(ckpt.meta),
        warnings=ckpt.warnings,
    )

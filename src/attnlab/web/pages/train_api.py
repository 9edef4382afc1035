"""The training API: POST /api/train, GET /api/train/{id}, GET /api/train/{id}/events (server-sent events),
POST /api/train/{id}/stop (stop, keep the model), DELETE /api/train/{id} (stop and forget), POST
/api/generate, GET /api/pipeline. The runs themselves are the service in attnlab.web.runs.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from attnlab.lessons.pipeline.lesson import PipelineView, pipeline
from attnlab.sampling import Generation, generate
from attnlab.text import BUILTIN_TEXTS
from attnlab.train import new_run
from attnlab.train.run import MAX_STEPS
from attnlab.web import runs
from attnlab.web.budget import closing
from attnlab.web.errors import unprocessable
from attnlab.web.render import lang_of, make_url
from attnlab.web.responses import SSE, answers
from attnlab.web.runs import RunStatus, resume_index, run_or_404, sse, start_run, status_of

router = APIRouter()
EVENTS_PER_WRITE = 500  # a finished 5000-step run's stream: ten writes of about 100 kB


def _not_bool(value):
    # JSON true/false would pass as 1/0; a number field takes numbers (and the page's digit strings) only.
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {str(value).lower()}")
    return value


Int = Annotated[int, BeforeValidator(_not_bool)]
Num = Annotated[float, BeforeValidator(_not_bool)]


def bounded(kind: type, **bounds) -> Any:
    """`kind` (int or float) within `bounds` (ge, le, gt), refusing JSON booleans; `bounded(int, ge=1) | None`
    for an optional field. The bounds stand before the validator: after it, pydantic writes them into the
    OpenAPI document as "ge"/"le", words no JSON Schema reader knows, so a client saw no limit at all."""
    return Annotated[kind, Field(**bounds), BeforeValidator(_not_bool)]


# JSON true/false only: strict, so 0, 1 and "true" are refused (422) instead of read as booleans.
Flag = Annotated[bool, Field(strict=True)]


# A model knows the characters of the text it was built for (a run's, or `corpus`'s): the schema names the
# ones every built-in text has; each corpus's own are in the description.
SHARED_CHARS = "".join(sorted(set.intersection(*(set(text) for text in BUILTIN_TEXTS.values()))))
TEXT_DOC = "the text for ① to ③ (default: the corpus's text), in characters the model knows: " + "; ".join(
    f"{c}: {''.join(dict.fromkeys(text))}" for c, text in BUILTIN_TEXTS.items()
)


class TrainRequest(BaseModel):
    """A training run's settings; a field left out takes the corpus's default."""

    model_config = ConfigDict(extra="forbid")
    corpus: Literal["poem", "jingyesi"] = "poem"
    layers: bounded(int, ge=1, le=8) | None = Field(None, description="Transformer blocks")
    heads: bounded(int, ge=1, le=8) | None = Field(None, description="attention heads per block; must divide d_model")
    d_model: bounded(int, ge=2, le=256) | None = Field(None, description="width of every token vector")
    steps: bounded(int, ge=1, le=MAX_STEPS) | None = Field(None, description="optimizer steps")
    lr: bounded(float, gt=0, le=1) | None = Field(None, description="peak learning rate")
    seed: Int = Field(0, ge=0, le=2**31 - 1, description="seed of the initial weights and the batches")
    pace_ms: Int = Field(
        0,
        ge=0,
        le=200,
        description="pause after each step so the curve can be watched (ms); "
        "a run's pauses total at most 60 s, so long runs pause less",
    )


class GenerateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run: str = Field(..., description="id of a training run (from POST /api/train)")
    prompt: str = Field(
        ...,
        min_length=1,
        max_length=200,
        json_schema_extra={"pattern": f"^[{SHARED_CHARS}]+$"},
        description="characters of the run's text (every built-in text has the ones the "
        "pattern names; see GET /api/pipeline's `text` for each corpus's own)",
    )
    max_new_tokens: Int = Field(30, ge=1, le=300)
    temperature: Num = Field(1.0, ge=0, le=10, description="0 = greedy")
    top_k: bounded(int, ge=1) | None = None
    top_p: bounded(float, gt=0, le=1) | None = None
    greedy: Flag = False
    seed: bounded(int, ge=0, le=2**31 - 1) | None = None


class TrainStarted(BaseModel):
    id: str
    status: str
    steps: int
    events: str  # URL of the event stream
    page: str  # URL of the run's page


@router.post("/api/train", status_code=202, tags=["pipeline"], responses=answers(400, 429))
async def api_train(body: TrainRequest, request: Request) -> TrainStarted:
    """Start training a tiny GPT on a built-in poem in the background; follow it at `events`. A run stops
    itself after 10 minutes (as if stopped: the model keeps what it learned)."""
    bg = await start_run(body)
    return TrainStarted(
        id=bg.id,
        status=bg.status,
        steps=bg.run.config.steps,
        events=f"/api/train/{bg.id}/events",
        page=make_url("/pipeline", lang_of(request), run=bg.id),
    )


@router.get("/api/train/{run_id}", tags=["pipeline"], responses=answers(404))
def api_train_status(run_id: str) -> RunStatus:
    """A run's status, settings and loss history so far."""
    return status_of(run_or_404(run_id))


@router.post("/api/train/{run_id}/stop", tags=["pipeline"], responses=answers(404))
def api_train_stop(run_id: str) -> RunStatus:
    """Stop a run after its current step; the model keeps what it has learned (generate with it)."""
    bg = run_or_404(run_id)
    bg.stop()
    bg.wait(timeout=5)
    return status_of(bg)


@router.delete("/api/train/{run_id}", tags=["pipeline"], responses=answers(404))
def api_train_delete(run_id: str) -> RunStatus:
    """Stop a run and forget it: its last status is the answer; afterwards the run's URLs answer 404 (an
    event stream already open still ends with `done`)."""
    bg = run_or_404(run_id)
    bg.stop()
    bg.wait(timeout=5)
    runs.RUNS.remove(run_id)
    return status_of(bg)


@router.get(
    "/api/train/{run_id}/events", tags=["pipeline"], response_class=StreamingResponse, responses={**SSE, **answers(404)}
)
async def api_train_events(run_id: str, request: Request):
    """Server-sent events: `step` (step, loss, p_probe, val_loss, lr, seconds) for every step from the first,
    then `done` (or `failed`, with a message). A reconnecting client sends Last-Event-ID and continues after it."""
    bg = run_or_404(run_id)
    start = resume_index(request.headers.get("last-event-id"))
    shutting_down = closing(request.app)

    async def stream():
        i, quiet = start, 0.0
        yield "retry: 1000\n\n"
        while True:
            while i < len(bg.events):
                # The events so far in one write, then a pause for the server to read the socket: one write per
                # event, without a pause, went on into a socket the reader had left, one log line per failed
                # write ("socket.send() raised exception.", thousands for a finished run's stream).
                end = min(len(bg.events), i + EVENTS_PER_WRITE)
                yield "".join(sse(j, bg.events[j]) for j in range(i, end))
                i, quiet = end, 0.0
                await asyncio.sleep(0)
                if await request.is_disconnected():
                    return
            if bg.finished and i >= len(bg.events):
                return
            if await request.is_disconnected() or shutting_down.is_set():
                return  # the reader left, or the server is stopping (it stops the runs too)
            await asyncio.sleep(0.05)
            quiet += 0.05
            if quiet >= 15:  # a comment line keeps proxies from closing an idle stream
                yield ": still training\n\n"
                quiet = 0.0

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    )


def generate_for(req: GenerateRequest) -> Generation:
    bg = run_or_404(req.run)
    if not bg.finished:
        raise HTTPException(409, "this run is still training; wait for it to finish or stop it first")
    try:
        return generate(
            bg.run.model,
            bg.run.tokenizer,
            req.prompt,
            max_new_tokens=req.max_new_tokens,
            temperature=req.temperature,
            top_k=req.top_k,
            top_p=req.top_p,
            greedy=req.greedy,
            seed=req.seed,
            n_candidates=5,
        )
    except ValueError as err:
        raise unprocessable(("body", "prompt"), err, req.prompt) from None


@router.post("/api/generate", tags=["pipeline"], responses=answers(400, 404, 409))
def api_generate(body: GenerateRequest) -> Generation:
    """Continue a prompt with a trained run's model, one token at a time (KV cache); every step's top
    candidates, whether each survived temperature / top-k / top-p, and the one chosen."""
    return generate_for(body)


@router.get("/api/pipeline", tags=["pipeline"], responses=answers(404, 409))
def api_pipeline(
    run: Annotated[str | None, Query(description="a training run's id; none = an untrained model")] = None,
    corpus: Annotated[Literal["poem", "jingyesi"], Query()] = "poem",
    seed: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    text: Annotated[
        str | None, Query(max_length=200, description=TEXT_DOC, json_schema_extra={"pattern": f"^[{SHARED_CHARS}]*$"})
    ] = None,
) -> PipelineView:
    """Steps ① to ④ for a run's model (or the untrained model of `corpus` and `seed`)."""
    model, tok, corpus = model_for(run, corpus, seed)
    try:
        return pipeline(model, tok, text=text or BUILTIN_TEXTS[corpus])
    except ValueError as err:
        raise unprocessable(("query", "text"), err, text) from None


def model_for(run_id: str | None, corpus: str, seed: int):
    if run_id:
        bg = run_or_404(run_id)
        if not bg.finished:
            raise HTTPException(409, "this run is still training; its model is changing")
        return bg.run.model, bg.run.tokenizer, bg.run.corpus
    fresh = new_run(corpus, seed=seed, device="cpu")  # untrained: building it is cheap and deterministic
    return fresh.model, fresh.tokenizer, corpus

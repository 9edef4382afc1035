"""The training runs of this server process: a service the pages, the API, the budget and the shutdown path
all use. A run lives in memory (a few at a time) and trains in a background thread; `start_run` reserves a
slot on the event loop (a refusal costs no model), `build_run` builds the seeded model on a worker thread.
A run is followed by server-sent events (`sse`, `resume_index`); stopping keeps its model, removing forgets it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from fastapi import HTTPException
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel

from attnlab.lessons.pipeline.lesson import NextStep, next_step
from attnlab.train import new_run
from attnlab.train.background import BackgroundRun, Busy, Registry, Slot
from attnlab.web.errors import unprocessable

RUNS = Registry(max_runs=8, max_training=2)


@dataclass
class RunStatus:
    id: str
    status: str  # training | stopping | stopped | done | failed
    step: int
    steps: int
    settings: dict
    history: list[dict]  # per step: loss, p_probe (p of the target after the context), val_loss
    before: NextStep  # step ④ of the untrained model
    error: str | None


async def start_run(req: BaseModel) -> BackgroundRun:
    """Reserve a training slot, then build the seeded model and train it in a background thread. Every way to
    start a run (the API, the no-JS form) comes here. The reservation is a lock and a count, done on the event
    loop: a refusal (429 with Retry-After) costs no worker thread and no model. The build runs on a worker
    thread, never on the event loop, and training on the run's own thread."""
    try:
        slot = RUNS.reserve()
    except Busy as err:
        raise HTTPException(429, str(err), headers={"Retry-After": str(err.retry_after)}) from None
    try:
        return await run_in_threadpool(build_run, req, slot)
    finally:
        slot.release()  # if this request was cancelled before the build started; a no-op once a run holds it


def build_run(req: BaseModel, slot: Slot) -> BackgroundRun:
    with slot:  # given back if building fails
        try:
            run = new_run(
                req.corpus,
                layers=req.layers,
                heads=req.heads,
                d_model=req.d_model,
                steps=req.steps,
                lr=req.lr,
                seed=req.seed,
                device="auto",
            )
        except ValueError as err:
            field = "heads" if "divisible" in str(err) else "corpus"
            raise unprocessable(("body", field), err, getattr(req, field)) from None
        before = next_step(run.model, run.tokenizer)  # p(光 | 床前明月) before any training
        bg = BackgroundRun(id=RUNS.new_id(), run=run, settings=req.model_dump(), before=before, pace=req.pace_ms / 1000)
        return RUNS.add(bg, slot=slot)


def run_or_404(run_id: str) -> BackgroundRun:
    bg = RUNS.get(run_id)
    if bg is None:
        raise HTTPException(404, f"no training run {run_id!r} in this server (runs live in memory; train again)")
    return bg


def status_of(bg: BackgroundRun) -> RunStatus:
    t = bg.run.trainer
    return RunStatus(
        id=bg.id,
        status=bg.status,
        step=t.step,
        steps=t.cfg.steps,
        settings=bg.settings,
        history=list(t.history),
        before=bg.before,
        error=bg.error,
    )


def resume_index(last_event_id: str | None) -> int:
    """The first event to send to a reader that saw up to Last-Event-ID (event ids count 0, 1, 2 ...):
    anything that is not such an id (absent, negative, not a number) starts from the first event."""
    text = (last_event_id or "").strip()
    return int(text) + 1 if text.isascii() and text.isdigit() and len(text) <= 18 else 0


def sse(index: int, event: dict) -> str:
    return f"id: {index}\nevent: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"

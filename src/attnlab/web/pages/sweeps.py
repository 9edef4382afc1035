"""/scale: scaling sweeps in the lab (issue 24, item 3; the service is attnlab.web.sweeps).

The page lists the corpora of `attnlab serve --data DIR` by name, the sweeps running and finished in the runs
folder, and shows a finished one (?sweep=NAME) with the command that made it, as `attnlab explain scale --sweep`
shows it. Its form posts to /scale/start, which starts a small sweep; while one runs the page reloads itself
(with or without JavaScript) to show its progress. GET /api/scale/sweeps gives the same lists as JSON.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import AfterValidator, BaseModel

from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import explain
from attnlab.train.background import Busy
from attnlab.web import sweeps
from attnlab.web.pages.explain import sig
from attnlab.web.render import lang_of, make_url, render
from attnlab.web.responses import form_lang

router = APIRouter()


class SweepJob(BaseModel):
    name: str
    corpus: str
    minutes: float
    command: str
    status: str
    event: dict
    error: str | None


class SweepsListing(BaseModel):
    corpora: list[str]  # names, from the data folder
    finished: list[dict]  # {name, corpus, runs, command, shown, reason}
    jobs: list[SweepJob]  # started by this server, newest first
    max_minutes: float


def _dirs(request: Request):
    return getattr(request.app.state, "runs_dir", None), getattr(request.app.state, "data_dir", None)


def listing(request: Request) -> SweepsListing:
    runs_dir, data_dir = _dirs(request)
    jobs = [SweepJob(**{k: getattr(j, k) for k in SweepJob.model_fields}) for j in reversed(sweeps.JOBS.values())]
    return SweepsListing(
        corpora=sweeps.corpora(data_dir), finished=sweeps.finished(runs_dir), jobs=jobs, max_minutes=sweeps.MAX_MINUTES
    )


@router.get("/api/scale/sweeps", tags=["scale"])
def api_sweeps(request: Request) -> SweepsListing:
    """The corpora this lab offers by name (`attnlab serve --data DIR`), the finished sweeps in its runs folder, and
    the sweeps it started, with each one's latest progress event."""
    return listing(request)


@router.get("/scale", response_class=HTMLResponse, include_in_schema=False)
def scale_page(request: Request, sweep: str = "", error: str = ""):
    """`error` is a key of the form's refusals (corpus, minutes, runs, busy), never text from the request."""
    lang = lang_of(request)
    runs_dir, data_dir = _dirs(request)
    shown, problem = None, None
    if sweep:
        try:
            shown = explain("scale", sweep=str(sweeps.sweep_path(runs_dir, sweep)), lang=lang).sweep
        except (sweeps.NotFound, ParamError) as err:
            problem = err.args[0]
    data = listing(request)
    return render(
        request,
        "scale.html",
        status_code=404 if problem else 200,
        data=data,
        shown=shown,
        sig=sig,
        chosen=sweep,
        problem=problem or (error if error in ("corpus", "minutes", "runs", "busy") else None),
        has_data=data_dir is not None,
        has_runs=runs_dir is not None,
        refresh=any(j.status == "running" for j in data.jobs),
    )


@router.post("/scale/start", include_in_schema=False)
def scale_start(
    request: Request,
    corpus: Annotated[str, Form()] = "",
    minutes: Annotated[str, Form()] = "3",
    lang: Annotated[str, Form(), AfterValidator(form_lang)] = "",
) -> RedirectResponse:
    """Start a small sweep of a corpus named by the form, then show /scale, which follows it."""
    lang = lang or lang_of(request)
    runs_dir, data_dir = _dirs(request)
    problem = None
    try:
        if runs_dir is None:
            problem = "runs"
        else:
            sweeps.start(runs_dir, data_dir, corpus, float(minutes))
    except sweeps.NotFound:
        problem = "corpus"
    except ValueError:
        problem = "minutes"
    except Busy:
        problem = "busy"
    return RedirectResponse(make_url("/scale", lang, error=problem), status_code=303)

"""The home page: the lessons, in the order of web/nav.py."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from attnlab.lessons.explain import TOPICS
from attnlab.web.render import render

router = APIRouter()


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def home(request: Request):
    # Where to break things: /explain/break, linked once that topic is registered (export-site follows links).
    return render(request, "home.html", break_topic="break" in TOPICS)

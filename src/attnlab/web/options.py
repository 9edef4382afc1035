"""OPTIONS on any address the lab serves: 204 with an Allow header naming every method some route serves there.

Starlette answers a method a path lacks with the methods of the first route that matches the path only
(GET /api/train/{id} hid DELETE /api/train/{id}); `install` gathers them from all routes. An address no
route serves goes on to the usual 404.
"""

from __future__ import annotations

from fastapi import FastAPI, Response
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send


def _routes(routes):
    """Every route, also inside included routers (FastAPI keeps them nested, without prefixes here)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _routes(inner.routes)
        else:
            yield route


def allowed_methods(app, scope) -> set[str]:
    """The methods the app's routes serve at this request's path (mounts such as /static are left out)."""
    methods: set[str] = set()
    scope = {**scope, "method": "GET"}
    for route in _routes(app.routes):
        if getattr(route, "methods", None) is None:
            continue
        match, _ = route.matches(scope)
        if match != Match.NONE:
            methods |= set(route.methods)
    return methods


class Options:
    """Pure ASGI (no BaseHTTPMiddleware: that one wraps the body stream, and a 413 raised while the body streams
    in would come back as a 400): answer OPTIONS here, pass everything else through untouched."""

    def __init__(self, app: ASGIApp, lab: FastAPI):
        self.app, self.lab = app, lab

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "OPTIONS":
            methods = allowed_methods(self.lab, scope)
            if methods:
                response = Response(status_code=204, headers={"Allow": ", ".join(sorted(methods | {"OPTIONS"}))})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def install(app: FastAPI) -> None:
    app.add_middleware(Options, lab=app)

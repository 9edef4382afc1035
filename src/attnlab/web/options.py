"""OPTIONS on any address the lab serves: 204 with an Allow header naming every method some route serves there.

Starlette answers a method a path lacks with the methods of the first route that matches the path only
(GET /api/train/{id} hid DELETE /api/train/{id}); `install` gathers them from all routes. An address no
route serves goes on to the usual 404.
"""

from __future__ import annotations

from fastapi import FastAPI, Request, Response
from starlette.routing import Match


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


def install(app: FastAPI) -> None:
    @app.middleware("http")
    async def options(request: Request, call_next):
        if request.method == "OPTIONS":
            methods = allowed_methods(request.app, request.scope)
            if methods:
                return Response(status_code=204, headers={"Allow": ", ".join(sorted(methods | {"OPTIONS"}))})
        return await call_next(request)

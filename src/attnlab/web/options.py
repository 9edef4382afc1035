"""OPTIONS on any address: 204 with an Allow header naming every method some route serves there.

Starlette answers a method a path lacks with the methods of the first route that matches the path only
(GET /api/train/{id} hides DELETE /api/train/{id}); this route gathers them from all routes.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response
from starlette.routing import Match

router = APIRouter()


def _routes(routes):
    """Every route, also inside included routers (FastAPI keeps them nested, without prefixes here)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _routes(inner.routes)
        else:
            yield route


def allowed_methods(request: Request) -> list[str]:
    """The methods the app's routes serve at this request's path (HEAD with GET, OPTIONS always)."""
    methods: set[str] = set()
    scope = {**request.scope, "method": "GET"}
    for route in _routes(request.app.routes):
        if getattr(route, "methods", None) is None or route.path == "/{path:path}":
            continue  # mounts (static files) and this route itself
        match, _ = route.matches(scope)
        if match != Match.NONE:
            methods |= set(route.methods)
    return sorted(methods)


@router.options("/{path:path}", include_in_schema=False, status_code=204)
def options(request: Request, path: str) -> Response:
    methods = allowed_methods(request)
    if not methods:
        raise HTTPException(404, "Not Found")
    return Response(status_code=204, headers={"Allow": ", ".join(sorted(set(methods) | {"OPTIONS"}))})

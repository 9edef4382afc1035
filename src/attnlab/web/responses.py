"""What the JSON API answers besides success, for the OpenAPI document: `responses=answers(404, 409)` on a
route documents those codes with the body every error has ({"message": ..., "detail": ...}, see
web/errors.py). tests/test_openapi_schemathesis.py checks that no route answers a code it does not list.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class Problem(BaseModel):
    """Every error's body: a sentence a person can act on, and the details."""

    message: str
    detail: Any = None


WHY = {
    400: "the body could not be read as text (not UTF-8)",
    403: "the name leads outside the folder of checkpoints the server was started with (attnlab serve --runs)",
    404: "no such run or topic in this server",
    409: "the run is still training",
    429: "too many runs are training; stop one first",
    503: "the server is busy with as many of these computations as it runs at once; "
         "the Retry-After header says when to try again",
}


def answers(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route that may also answer `codes`."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        out[code] = {"model": Problem, "description": WHY[code]}
        if code in (429, 503):
            out[code]["headers"] = {"Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}}
    return out


SSE = {200: {"description": "server-sent events (text/event-stream)",
             "content": {"text/event-stream": {"schema": {"type": "string"}}}}}

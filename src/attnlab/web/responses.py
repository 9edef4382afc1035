"""What the JSON API answers besides success, for the OpenAPI document: `responses=answers(404, 409)` on a
route documents those codes with the body every error has ({"message": ..., "detail": ...}, see
web/errors.py). tests/test_openapi_schemathesis.py checks that no route answers a code it does not list.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from attnlab.i18n import LANGS


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


# A stream of events, not one JSON document: text/event-stream only (no application/json). The example is a
# real two-step run's stream (tests/test_openapi_exact.py checks its events against a run's).
SSE_EXAMPLE = (
    "retry: 1000\n\n"
    'id: 0\nevent: step\ndata: {"type": "step", "step": 1, "steps": 2, "loss": 1.7913, "lr": 0.01, "p_probe": 0.1637, '
    '"val_loss": null, "best_val_loss": null, "seconds": 0.0594}\n\n'
    'id: 1\nevent: step\ndata: {"type": "step", "step": 2, "steps": 2, "loss": 1.6369, "lr": 0.001, "p_probe": 0.1694, '
    '"val_loss": null, "best_val_loss": null, "seconds": 0.0819}\n\n'
    'id: 2\nevent: done\ndata: {"type": "done", "step": 2, "loss": 1.6369, "val_loss": null, "p_probe": 0.1694, '
    '"stopped": false, "seconds": 0.0887, "stop_reason": null, "best_val_loss": null, "best_step": null, '
    '"restored_best": false}\n\n'
)
# Under OpenAPI 3.1 the `schema` of text/event-stream describes one event, as an SSE reader parses it (3.2's
# itemSchema): {"id": "0", "event": "step", "data": "{...}"}. {"type": "string"} said every event was a string.
KINDS = ["step", "done", "failed"]
SSE_EVENT = {
    "type": "object",
    "required": ["id", "event", "data"],
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$"},
        "event": {"enum": KINDS},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"type": "object", "required": ["type"], "properties": {"type": {"enum": KINDS}}},
        },
        "retry": {"type": "integer", "minimum": 0},
    },
}
SSE = {
    200: {
        "description": "server-sent events: each has an `id:` (0, 1, 2 ...), an `event:` (step, done or failed) "
        "and one JSON `data:` line; a `: still training` comment keeps an idle stream open",
        "content": {"text/event-stream": {"schema": SSE_EVENT, "example": SSE_EXAMPLE}},
    }
}


def form_lang(value: str) -> str:
    """A form's `lang` field as a handler may use it: zh or en, else '' (the handler then takes the request's
    language), so no other text reaches a page or a redirect's Location header."""
    return value if value in LANGS else ""

"""The OpenAPI document is exact (issue 23): every request it allows is served, not refused with 422; booleans in
JSON bodies are true or false only; the event stream is documented as text/event-stream; the no-JS form's
`lang` never reaches a redirect unchecked. One regression test per defect the probe found; the random search
over the whole document is tests/test_openapi_schemathesis.py."""

from __future__ import annotations

import json
import re
import time
from urllib.parse import urlsplit

import pytest
from jsonschema import Draft202012Validator
from lab_client import serving

from attnlab.lessons.explain import TOPICS
from attnlab.web.app import create_app
from attnlab.web.responses import SSE_EXAMPLE

APP = create_app()
DOC = APP.openapi()


@pytest.fixture(scope="module")
def client():
    yield from serving(APP)


def _valid(schema: dict, value) -> bool:
    # The document's own $refs (#/components/...) resolve when its components sit beside the schema.
    return Draft202012Validator({**schema, "components": DOC["components"]}).is_valid(value)


def allowed(method: str, path: str, query: dict | None = None, body=None) -> bool:
    """Whether the document allows this request (query values as their JSON types)."""
    op = DOC["paths"][path][method.lower()]
    params = {p["name"]: p for p in op.get("parameters", []) if p["in"] == "query"}
    query = query or {}
    if set(query) - set(params) or any(p["required"] and n not in query for n, p in params.items()):
        return False
    if not all(_valid(params[n]["schema"], v) for n, v in query.items()):
        return False
    if body is not None:
        return _valid(op["requestBody"]["content"]["application/json"]["schema"], body)
    return True


def param_schema(path: str, name: str, where: str = "query") -> dict:
    op = DOC["paths"][path]["get"]
    return next(p["schema"] for p in op["parameters"] if p["name"] == name and p["in"] == where)


# Requests the first probe (and this repository's schemathesis run) found allowed by the document and refused
# with 422; each must now be outside the document.
REFUSED = [
    ("GET", "/api/lookup", {"head": 0}, None),
    ("GET", "/api/lookup", {"head": 100}, None),
    ("GET", "/api/toy", {"query": "\u00a0"}, None),
    ("GET", "/api/toy/check", {"question": "0.1.0", "answer": "0.1.0"}, None),
    ("POST", "/api/toy/mix", None, {"scores": [], "values": []}),
    ("POST", "/api/toy/mix", None, {"scores": [0], "values": [[1], [2]]}),
    ("POST", "/api/toy/mix", None, {"scores": [0, 1], "values": [[1], [2, 3]]}),
    ("POST", "/api/toy/mix", None, {"scores": ["e"], "values": [[1]]}),
    ("POST", "/api/toy/hand", None, {"scores": [], "values": []}),
    ("POST", "/api/toy/hand", None, {"scores": [0, 1, 2], "values": [[1, 0], [0, 1], [1, 1]]}),
    ("GET", "/api/ledger", {"d": 10**12}, None),
    ("GET", "/api/ledger", {"d": 8, "d_model": 4}, None),
    ("GET", "/api/pipeline", {"text": "title_key"}, None),
    ("GET", "/api/real", {"head": 10**12}, None),
    ("GET", "/api/real", {"text": "한국어" * 10}, None),  # 30 characters, 82 WordPiece tokens
    ("GET", "/api/real/embeddings", {"word": "v\u00caG\u00ff0"}, None),
    ("GET", "/api/pipeline/focus", {"text": "title_key"}, None),
    ("GET", "/api/runs/{name}", {"text": ""}, None),
    ("GET", "/api/runs/{name}", {"how": "resample"}, None),  # the page's heads card offers zero and mean only
    ("POST", "/api/generate", None, {"run": "x", "prompt": "zh"}),
    ("POST", "/api/generate", None, {"run": "x", "prompt": "床", "top_p": 413, "seed": -1646}),
    ("POST", "/api/runs/{name}/generate", None, {"prompt": "static", "top_p": 100}),
]


@pytest.mark.parametrize("method,path,query,body", REFUSED, ids=[f"{m} {p} {q or b}" for m, p, q, b in REFUSED])
def test_a_request_the_server_refuses_is_outside_the_document(method, path, query, body):
    assert not allowed(method, path, query, body)


def test_no_bound_is_written_in_words_no_client_reads():
    # pydantic wrote "ge"/"le" into the document for a bound after a validator: clients saw no limit at all.
    found = []

    def walk(node, where):
        if isinstance(node, dict):
            if "type" in node and {"ge", "le", "gt", "lt"} & set(node):
                found.append(where)
            for k, v in node.items():
                walk(v, f"{where}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}/{i}")

    walk(DOC, "#")
    assert not found


def test_lookup_documents_its_heads_and_serves_each(client):
    head = param_schema("/api/lookup", "head")
    assert (head["minimum"], head["maximum"]) == (1, 2)
    for h in range(head["minimum"], head["maximum"] + 1):
        for q in param_schema("/api/lookup", "query")["enum"]:
            assert client.get("/api/lookup", params={"query": q, "head": h}).status_code == 200


def test_pipeline_text_in_the_documented_characters_is_served(client):
    pattern = param_schema("/api/pipeline", "text")["pattern"]
    chars = pattern.removeprefix("^[").removesuffix("]*$")
    for corpus in ("poem", "jingyesi"):
        r = client.get("/api/pipeline", params={"corpus": corpus, "text": chars[::-1]})
        assert r.status_code == 200, r.text


@pytest.mark.parametrize("path", ["/api/generate", "/api/runs/x/generate"])
@pytest.mark.parametrize("greedy", [0, 1, "true", "false", None])
def test_greedy_is_true_or_false_only(client, path, greedy):
    body = {"prompt": "床", "greedy": greedy, **({"run": "x"} if path == "/api/generate" else {})}
    r = client.post(path, json=body)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "greedy"], r.text
    assert client.post(path, json={**body, "greedy": True}).status_code == 404  # valid; no such run


def test_the_event_stream_is_documented_as_text_event_stream():
    ok = DOC["paths"]["/api/train/{run_id}/events"]["get"]["responses"]["200"]
    assert list(ok["content"]) == ["text/event-stream"]
    assert ok["content"]["text/event-stream"]["example"] == SSE_EXAMPLE


def _events(text: str) -> list[tuple[str, list[str]]]:
    """(event, the keys of its data) of each event in an SSE text."""
    out = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "event" in fields:
            out.append((fields["event"], sorted(json.loads(fields["data"]))))
    return out


def test_the_documented_stream_is_what_a_run_sends(client):
    r = client.post("/api/train", json={"corpus": "poem", "steps": 2})
    assert r.status_code == 202, r.text
    with client.stream("GET", r.json()["events"]) as stream:  # ends when the run is done
        assert stream.headers["content-type"].split(";")[0] == "text/event-stream"
        sent = stream.read().decode()
    assert _events(sent) == _events(SSE_EXAMPLE)
    assert sent.startswith("retry: 1000\n\nid: 0\n")


def _finished_run(client) -> str:
    run_id = client.post("/api/train", json={"corpus": "poem", "steps": 2}).json()["id"]
    deadline = time.monotonic() + 120  # generous: a two-step run takes well under a second
    while client.get(f"/api/train/{run_id}").json()["status"] == "training" and time.monotonic() < deadline:
        time.sleep(0.05)
    return run_id


def test_the_stream_passes_schemathesis_content_type_and_schema_checks(client):
    # schemathesis reads each event ({"id", "event", "data"}) against the schema: {"type": "string"} failed (issue 37)
    schemathesis = pytest.importorskip("schemathesis")
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    run_id = _finished_run(client)
    schema = schemathesis.openapi.from_asgi("/openapi.json", APP)
    case = schema["/api/train/{run_id}/events"]["GET"].Case(path_parameters={"run_id": run_id})
    checks = [content_type_conformance, status_code_conformance, response_schema_conformance]
    case.call_and_validate(checks=checks)


def _schemas(schema: dict):
    yield schema
    for inner in schema.get("anyOf", []):
        yield from _schemas(inner)


def just_outside(schema: dict) -> list[tuple[str, object]]:
    """(bound, value) for each bound a query parameter's schema publishes: a value just past it that keeps the
    others (a string one character too long in characters its pattern allows; one outside its pattern)."""
    patterns = [s["pattern"] for s in _schemas(schema) if "pattern" in s]
    fits = lambda v: all(re.search(p, v) for p in patterns)  # noqa: E731
    out: list[tuple[str, object]] = []
    for s in _schemas(schema):
        out += [("enum", "-1")] if "enum" in s and "-1" not in map(str, s["enum"]) else []
        out += [("maximum", s["maximum"] + 1)] if "maximum" in s else []
        out += [("minimum", s["minimum"] - 1)] if "minimum" in s else []
        if "maxLength" in s:
            out += [("maxLength", c * (s["maxLength"] + 1)) for c in "0a月" if fits(c * (s["maxLength"] + 1))][:1]
    out += [("pattern", c) for c in ("한", "é", "0", "月") if patterns and not fits(c)]
    return out


def test_every_bound_the_document_publishes_is_checked(client):
    # issue 37: /api/real published maxLength and pattern for `text` (json_schema_extra) and served text past both
    sent = []
    for path, ops in DOC["paths"].items():
        op = ops.get("get")
        params = op.get("parameters", []) if op else []
        url = path
        for p in params:
            if p["in"] == "path":
                url = url.replace("{" + p["name"] + "}", "forms" if "forms" in p["schema"].get("enum", []) else "x")
        for p in (p for p in params if p["in"] == "query"):
            for bound, value in just_outside(p["schema"]):
                r = client.get(url, params={p["name"]: value})
                assert r.status_code in (404, 422), (path, p["name"], bound, value, r.status_code, r.text[:120])
                sent.append((path, p["name"], bound))
    assert ("/api/real", "text", "maxLength") in sent and ("/api/real", "text", "pattern") in sent
    assert len(sent) > 60  # every parameter with a bound, not a few


def test_a_runs_generate_serves_every_body_the_document_allows(client):
    # Past the 404 of an unknown run: with a real run's id, generated bodies reach the generation itself.
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, given, settings

    run_id = _finished_run(client)
    op = schemathesis.openapi.from_asgi("/openapi.json", APP)["/api/generate"]["POST"]

    @given(case=op.as_strategy())
    @settings(max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    def served(case):
        body = {**case.body, "run": run_id}
        r = client.post("/api/generate", json=body)
        assert r.status_code == 200, (body, r.text[:300])

    served()


def test_explain_documents_its_topics():
    for path in ("/api/explain/{topic}", "/api/explain/{topic}/progress"):
        assert param_schema(path, "topic", "path")["enum"] == list(TOPICS)


@pytest.mark.parametrize(
    "sent,asked,kept",
    [("evil", "", None), ("evil", "en", "en"), ("zh-CN\r\nX: 1", "en", "en"), ("en", "", "en"), ("zh", "en", None)],
)
def test_the_forms_lang_reaches_the_redirect_only_as_zh_or_en(client, sent, asked, kept):
    # layers=x is refused, so the form redirects to the page with what was typed (no run starts).
    url = "/pipeline/train" + (f"?lang={asked}" if asked else "")
    r = client.post(url, data={"lang": sent, "layers": "x"}, follow_redirects=False)
    assert r.status_code == 303
    query = urlsplit(r.headers["location"]).query
    assert "evil" not in query and "X" not in query
    assert (f"lang={kept}" in query) if kept else "lang=" not in query

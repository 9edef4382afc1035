"""The web app through HTTP (FastAPI's TestClient): the JSON API equals the Python calls and independent
recomputation, bad input gets a readable 422, and the server-rendered pages show the API's numbers."""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from html.parser import HTMLParser

import numpy as np
import pytest
from fastapi.testclient import TestClient

from attnlab.i18n import t
from attnlab.lessons.ledger.lesson import shape_ledger
from attnlab.lessons.toy.hand_calc import hand_calc, mix
from attnlab.lessons.toy.lesson import TOKENS, toy_lab
from attnlab.lessons.toy.soft_lookup import soft_lookup, weights_vs_contributions
from attnlab.web.app import create_app
from attnlab.web.nav import LESSONS

HTML = {"accept": "text/html"}


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def roundtrip(obj):
    return json.loads(json.dumps(asdict(obj)))


class Tables(HTMLParser):
    """Collects <table id=...>: per row, the data-value and the text of each <td> that has a data-value."""

    def __init__(self, html: str):
        super().__init__()
        self.tables: dict[str, dict[str, list]] = {}
        self.current = None
        self.cell = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("id"):
            self.current = self.tables.setdefault(a["id"], {"values": [], "texts": []})
        elif tag == "tr" and self.current is not None:
            self.current["values"].append([])
            self.current["texts"].append([])
        elif tag == "td" and self.current is not None and self.current["values"] and "data-value" in a:
            self.cell = []
            self.current["values"][-1].append(a["data-value"])

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.current["texts"][-1].append("".join(self.cell).strip())
            self.cell = None
        elif tag == "table":
            self.current = None

    def values(self, table_id):
        rows = [r for r in self.tables[table_id]["values"] if r]
        return [[None if x == "null" else float(x) for x in r] for r in rows]

    def texts(self, table_id):
        return [r for r in self.tables[table_id]["texts"] if r]


def shown(text: str) -> float:
    """A number as the page prints it ('−0.5', '−∞') -> float."""
    return float(text.replace("\u2212", "-").replace("∞", "inf"))


# ---- GET /api/toy ----------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("query", [*TOKENS, "1", "4"])
def test_api_toy_equals_the_python_call(client, query, causal):
    r = client.get("/api/toy", params={"query": query, "causal": str(causal).lower()})
    assert r.status_code == 200
    assert r.json() == roundtrip(toy_lab(query, causal=causal))


def test_api_toy_carries_what_it_takes_to_recompute_it(client):
    """From the answer's own X and weights, numpy recomputes every derived matrix."""
    lab = client.get("/api/toy", params={"query": "它", "causal": "true"}).json()
    X = np.array(lab["X"])
    allowed = np.array(lab["mask"])
    concat = []
    for head in lab["heads"]:
        Q, K, V = X @ np.array(head["W_Q"]), X @ np.array(head["W_K"]), X @ np.array(head["W_V"])
        S = Q @ K.T / np.sqrt(lab["d_k"])
        E = np.where(allowed, np.exp(S), 0)
        A = E / E.sum(1, keepdims=True)
        for name, ref in (("Q", Q), ("K", K), ("V", V), ("scores", S), ("weights", A), ("output", A @ V)):
            np.testing.assert_allclose(head[name], ref, atol=1e-12, err_msg=name)
        concat.append(A @ V)
    np.testing.assert_allclose(lab["concat"], np.concatenate(concat, 1), atol=1e-12)
    assert lab["heads"][0]["masked_scores"][2][3] is None and lab["heads"][0]["weights"][2][3] == 0.0


@pytest.mark.parametrize(
    "params, where, got",
    [
        ({"query": "狗"}, "query parameter 'query'", "'狗'"),
        ({"query": "0"}, "query parameter 'query'", "'0'"),
        ({"query": "5"}, "query parameter 'query'", "'5'"),
        ({"causal": "maybe"}, "query parameter 'causal'", "'maybe'"),
    ],
)
def test_api_toy_bad_parameters_get_a_readable_422(client, params, where, got):
    r = client.get("/api/toy", params=params)
    assert r.status_code == 422
    body = r.json()
    assert body["message"].startswith(where) and got in body["message"]
    assert "Value error," not in body["message"]
    assert body["detail"] and body["detail"][0]["loc"][0] == "query"  # FastAPI's detail list is kept


# ---- POST /api/toy/mix and /api/toy/hand ----------------------------------------------------------


def test_api_mix_textbook_is_exact(client):
    r = client.post("/api/toy/mix", json={"scores": [0, "ln 3"], "values": [[2, 0], [0, 2]]})
    assert r.status_code == 200
    body = r.json()
    assert body["exact"]["weights"] == ["1/4", "3/4"] and body["exact"]["output"] == ["1/2", "3/2"]
    assert body["weights"] == pytest.approx([0.25, 0.75]) and body["output"] == pytest.approx([0.5, 1.5])
    assert body == roundtrip(mix([0, "ln 3"], [[2, 0], [0, 2]]))


def test_api_mix_floats_equal_numpy(client):
    scores, values = [0.3, -1.2, 2.5], [[1, 2, 3], [-4, 0.5, 6], [7, -8, 9.25]]
    body = client.post("/api/toy/mix", json={"scores": scores, "values": values}).json()
    a = np.exp(scores) / np.exp(scores).sum()
    np.testing.assert_allclose(body["weights"], a, rtol=1e-12)
    np.testing.assert_allclose(body["output"], a @ np.array(values), rtol=1e-12)
    assert body["exact"] is None


def test_api_hand_v2_edit(client):
    body = client.post("/api/toy/hand", json={"scores": ["0", "ln 3"], "values": [[2, 0], [0, 4]]}).json()
    assert body == roundtrip(hand_calc(["0", "ln 3"], [[2, 0], [0, 4]]))
    assert body["now"]["exact"]["output"] == ["1/2", "3"] and body["exact_delta_output"] == ["0", "3/2"]


@pytest.mark.parametrize(
    "raw, where",
    [
        (b'{"scores": [NaN, 0], "values": [[1], [2]]}', "body field 'scores[0]'"),
        (b'{"scores": [Infinity, 0], "values": [[1], [2]]}', "body field 'scores[0]'"),
        (b'{"scores": [0, 1], "values": [[1], [-Infinity]]}', "body field 'values[1][0]'"),
        (b'{"scores": [1e999, 0], "values": [[1], [2]]}', "body field 'scores[0]'"),
        (b'{"scores": ["inf", 0], "values": [[1], [2]]}', "finite"),
        (b'{"scores": ["ln -1", 0], "values": [[1], [2]]}', "ln"),
        (b'{"scores": [0, 1], "values": [[1], [2], [3]]}', "one vector per score (2), got 3"),
        (b'{"scores": [0, 1], "values": [[1, 2], [3]]}', "share one length"),
        (b'{"scores": [], "values": []}', "1..16"),
        (b'{"scores": [true, 1], "values": [[1], [2]]}', "body field 'scores[0]'"),
        (b'{"scores": [null, 1], "values": [[1], [2]]}', "body field 'scores[0]'"),
        (b'{"scores": [0, 1]}', "body field 'values'"),
        (b'{"scores": [0, 1], "values": [[1], [2]], "extra": 1}', "body field 'extra'"),
        (b'{"scores": [0, 1], ', "body"),
    ],
)
def test_api_mix_bad_input_gets_a_readable_422(client, raw, where):
    r = client.post("/api/toy/mix", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    body = r.json()
    assert where in body["message"], body["message"]
    assert isinstance(body["detail"], list) and body["detail"]


HUGE = ("1e-5000", "1e-30000000", "1e999999999", "9" * 5000)


@pytest.mark.parametrize("text", HUGE)
def test_huge_number_strings_get_a_422_and_a_page_message(client, text):
    """These once took the server 91 s (every other request waited) or gave a 500 from int-to-str limits."""
    for path in ("/api/toy/mix", "/api/toy/hand"):
        r = client.post(path, json={"scores": [0, "ln 3"], "values": [[2, 0], [0, text]]})
        assert r.status_code == 422, r.text
        message = r.json()["message"]
        assert message.startswith("body field: values[1][1] ") and ("exponent" in message or "too long" in message)
        assert "4300" not in message and len(message) < 300
        r = client.post(path, json={"scores": [0, text], "values": [[2, 0], [0, 2]]})
        assert r.status_code == 422 and "scores[1]" in r.json()["message"]
    for lang in ("zh", "en"):
        page = client.get("/toy", params={"v2y": text, "lang": lang}, headers=HTML)
        assert page.status_code == 200
        assert 'id="in-v2y"' in page.text and re.search(r'id="in-v2y"[^>]*aria-invalid="true"', page.text)
        label = t("toy.hand.component", lang, j=2, c=2)
        assert re.search(rf'id="hand-error-v2y">{re.escape(label)}[^<]*(300|40)', page.text), lang


def test_big_exact_fractions_fall_back_to_floats(client):
    body = client.post("/api/toy/mix", json={"scores": [0, "ln 3"], "values": [[2, 0], [0, "1e-300"]]}).json()
    assert body["exact"] is None and body["output"] == pytest.approx([0.5, 0.75e-300], rel=1e-12)
    page = client.get("/toy", params={"v2y": "1e-300"}, headers=HTML)
    assert page.status_code == 200 and 'id="hand-output"' in page.text


@pytest.mark.parametrize(
    "path, params, key",
    [
        ("/toy", {"query": "zz"}, "toy.err.query"),
        ("/toy", {"ans_keys": "9"}, "toy.err.answer"),
        ("/toy", {"s1": "abc"}, "toy.err.score"),
        ("/lookup", {"query": "zz"}, "toy.err.query"),
        ("/lookup", {"head": "9"}, "toy.err.head"),
        ("/ledger", {"n": "-5"}, "toy.err.whole"),
    ],
)
def test_page_messages_speak_the_page_language(client, path, params, key):
    for lang in ("zh", "en"):
        html = client.get(path, params={**params, "lang": lang}, headers=HTML).text
        found = re.findall(r'<(div|p)\b[^>]*role="alert"[^>]*>(.*?)</\1>', html, re.S)
        alerts = " ".join(re.sub(r"<[^>]+>", " ", body) for _, body in found)
        prefix = t(
            key,
            lang,
            **{f: "\x00" for f in ("what", "got", "tokens", "n", "question", "options", "name", "lo", "hi", "ids")},
        ).split("\x00")[1][:3]
        assert prefix and prefix in alerts, (lang, alerts)
        if lang == "zh":
            assert not re.search(r"\b(must|got|one of|default)\b", alerts), alerts
        else:
            assert "must" in alerts, alerts


def test_api_hand_wants_two_scores(client):
    r = client.post("/api/toy/hand", json={"scores": [0, 1, 2], "values": [[1, 0], [0, 1], [1, 1]]})
    assert r.status_code == 422 and "2 scores and 2 two-dim values" in r.json()["message"]


def test_api_check(client):
    assert client.get("/api/toy/check", params={"question": "future", "answer": "no"}).json()["correct"] is True
    assert client.get("/api/toy/check", params={"question": "keys", "answer": "1"}).json()["correct"] is False
    r = client.get("/api/toy/check", params={"question": "keys", "answer": "9"})
    assert r.status_code == 422 and r.json()["message"].startswith("query parameter 'answer'")
    r = client.get("/api/toy/check", params={"question": "nope", "answer": "1"})
    assert r.status_code == 422 and r.json()["message"].startswith("query parameter 'question'")


# ---- the other lessons' API -----------------------------------------------------------------------


def test_api_lookup_importance_ledger(client):
    assert client.get("/api/lookup", params={"query": "2", "head": 2}).json() == roundtrip(soft_lookup("2", 2))
    assert client.get("/api/lookup/importance").json() == roundtrip(weights_vs_contributions())
    assert client.get("/api/ledger", params={"n": 1024, "d_model": 768, "heads": 12}).json() == roundtrip(
        shape_ledger(1024, 768, 12)
    )
    r = client.get("/api/ledger", params={"heads": 3})
    assert r.status_code == 422 and r.json()["message"].startswith("query parameter 'heads': heads must divide")
    r = client.get("/api/ledger", params={"n": "lots"})
    assert r.status_code == 422 and "query parameter 'n'" in r.json()["message"]
    r = client.get("/api/lookup", params={"head": 9})
    assert r.status_code == 422 and "head must be 1..2, got 9" in r.json()["message"]


def test_api_ledger_takes_the_page_names_and_the_old_ones(client):
    new = client.get("/api/ledger", params={"n": 1024, "d": 768, "h": 12}).json()
    assert new == client.get("/api/ledger", params={"n": 1024, "d_model": 768, "heads": 12}).json()
    assert new == roundtrip(shape_ledger(1024, 768, 12))
    r = client.get("/api/ledger", params={"h": 3})
    assert r.status_code == 422 and r.json()["message"].startswith("query parameter 'h': h must divide d (4)")
    assert r.json()["detail"][0]["loc"] == ["query", "h"]
    r = client.get("/api/ledger", params={"d": 0})
    assert r.status_code == 422 and r.json()["message"].startswith("query parameter 'd': d must be a whole number")
    r = client.get("/api/ledger", params={"d": 8, "d_model": 4})
    assert r.status_code == 422 and "d_model is the older name of d" in r.json()["message"]


def test_ledger_page_with_bad_input_shows_the_defaults_and_names_its_fields(client):
    default = client.get("/api/ledger").json()["cost"]
    for params, field in (({"n": "-5"}, "n"), ({"d": "x"}, "d"), ({"h": "3"}, "h"), ({"n": "9" * 5000}, "n")):
        for lang in ("zh", "en"):
            html = client.get("/ledger", params={**params, "lang": lang}, headers=HTML).text
            tables = Tables(html)
            assert [r[0] for r in tables.values("cost-table")][-1] == default["total"], params  # n=4, d=4, h=2
            error = re.search(r'id="ledger-error">([^<]*)</p>', html)[1]
            assert error.startswith(t("toy.ledger.problem", lang, n=4, d=4, h=2)), error
            assert "d_model" not in error and "heads" not in error and f" {field} " in f" {error} ".replace("（", " ")
            assert re.search(rf'id="in-{field}"[^>]*aria-invalid="true"', html)
            assert f'value="{params[field]}"' in html  # the form keeps what was typed


def test_openapi_lists_the_api_and_no_cdn_docs(client):
    paths = client.get("/openapi.json").json()["paths"]
    for p in ("/api/toy", "/api/toy/mix", "/api/toy/hand", "/api/toy/check", "/api/lookup", "/api/ledger"):
        assert p in paths
    assert client.get("/docs").status_code == 404  # Swagger UI would load its scripts from a CDN


# ---- pages ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("path", ["/", *[lesson.path for lesson in LESSONS]])
def test_pages_render_and_ask_for_nothing_outside(client, path, lang):
    r = client.get(path, params={"lang": lang}, headers=HTML)
    assert r.status_code == 200
    html = r.text
    assert f'<html lang="{"zh-CN" if lang == "zh" else "en"}"' in html
    refs = re.findall(r'(?:src|href|action)="([^"]*)"', html)
    assert refs and all(ref.startswith(("/", "#", "?")) for ref in refs), refs
    if lang == "en":  # links keep the language, except the switch back to Chinese
        links = re.findall(
            r'<a [^>]*href="(/[^"]*)"', html.replace(re.search(r'<a [^>]*id="lang-switch"', html)[0], "")
        )
        assert links and all("lang=en" in link for link in links), links
    assert "default-src 'self'" in r.headers["content-security-policy"]


def test_static_assets_and_favicon(client):
    for path in ("/static/lab.css", "/static/lab.js", "/static/favicon.svg", "/favicon.ico"):
        r = client.get(path)
        assert r.status_code == 200 and r.content
        assert not re.search(rb"https?://(?!www\.w3\.org/2000/svg)", r.content), path  # no URL but SVG's namespace


@pytest.mark.parametrize("query, causal", [("它", ""), ("1", "1"), ("老鼠", "1"), ("追", "")])
def test_toy_page_shows_the_api_numbers(client, query, causal):
    html = client.get("/toy", params={"query": query, "causal": causal}, headers=HTML).text
    api = client.get("/api/toy", params={"query": query, "causal": "true" if causal else "false"}).json()
    t = Tables(html)
    for h, head in enumerate(api["heads"], start=1):
        assert t.values(f"h{h}-A") == head["weights"]
        assert t.values(f"h{h}-S") == head["masked_scores"]
        assert t.values(f"h{h}-Q") == head["Q"] and t.values(f"h{h}-O") == head["output"]
        assert t.values(f"cmp-h{h}") == head["weights"]
        for row_text, row in zip(t.texts(f"h{h}-A"), head["weights"]):
            assert [shown(x) for x in row_text] == pytest.approx([round(x, 3) for x in row], abs=1e-9)
        for row_text, row in zip(t.texts(f"h{h}-S"), head["masked_scores"]):
            assert [shown(x) for x in row_text] == pytest.approx(
                [float("-inf") if x is None else round(x, 3) for x in row], abs=1e-9
            )
    assert t.values("concat") == api["concat"]
    assert re.search(rf'id="q-{api["query_position"]}" class="tok-btn"\s+aria-pressed="true"', html)


def test_toy_page_without_js_forms(client):
    """The forms are plain GETs: a query, the mask, answers and the hand calculation all work by URL."""
    html = client.get("/toy", params={"ans_keys": "4", "ans_future": "yes", "v2y": "4"}, headers=HTML).text
    assert 'id="verdict-keys"' in html and 'class="verdict right"' in html and 'class="verdict wrong"' in html
    assert 'data-exact="3/4"' in html and "(1/2, 3)" in html
    r = client.get(
        "/toy", params={"preset": "v2_04", "query": "猫", "lang": "en"}, headers=HTML, follow_redirects=False
    )
    assert r.status_code == 303 and r.headers["location"] == "/toy?query=%E7%8C%AB&v2y=4&lang=en"
    bad = client.get("/toy", params={"s2": "ln(-3)", "query": "狗"}, headers=HTML)
    assert bad.status_code == 200 and 'aria-invalid="true"' in bad.text and 'id="hand-error"' in bad.text
    assert t("toy.err.query", "zh", tokens="猫, 追, 老鼠, 它", n=4, got="&#39;狗&#39;") in bad.text  # Chinese page
    assert "must be one of" not in bad.text and "must be a finite" not in bad.text


def test_page_errors_are_pages(client):
    r = client.get("/nowhere", headers=HTML)
    assert r.status_code == 404 and "<main" in r.text
    assert client.get("/api/nowhere").json()["message"] == "Not Found"


@pytest.mark.parametrize("headers", [{}, {"accept": "application/json"}, {"accept": "*/*"}, HTML])
def test_unknown_paths_404_as_a_page_and_api_paths_as_json(client, headers):
    """What answers depends on the address, not on the Accept header (curl sends */*)."""
    for lang in ("zh", "en"):
        r = client.get("/nope", params={"lang": lang}, headers=headers)
        assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
        assert f'<html lang="{"zh-CN" if lang == "zh" else "en"}"' in r.text
        assert (
            t("web.error.404", lang).replace("'", "&#39;") in r.text
            and t("web.error.home", lang).replace("'", "&#39;") in r.text
        )
    r = client.get("/api/nope", headers=headers)
    assert r.status_code == 404 and r.headers["content-type"] == "application/json"
    assert r.json()["message"] == "Not Found"
    r = client.get("/api/toy", params={"query": "zz"}, headers=headers)
    assert r.status_code == 422 and r.json()["message"].startswith("query parameter 'query': query must be one of")


def test_ledger_and_lookup_pages_show_the_api_numbers(client):
    t = Tables(client.get("/lookup", params={"query": "它", "head": "2"}, headers=HTML).text)
    look = client.get("/api/lookup", params={"query": "它", "head": 2}).json()
    assert [r[0] for r in t.values("soft-table")] == look["soft_weights"]
    assert [r[0] for r in t.values("hard-table")] == look["hard_weights"]
    t = Tables(client.get("/ledger", params={"n": 1024, "d": 768, "h": 12}, headers=HTML).text)
    cost = client.get("/api/ledger", params={"n": 1024, "d_model": 768, "heads": 12}).json()["cost"]
    assert [r[0] for r in t.values("cost-table")][-3:] == [cost["attention_matrix"], cost["dense"], cost["total"]]


@pytest.mark.slow  # starts attnlab serve
def test_attnlab_serve_prints_its_url_and_serves_the_lab():
    import subprocess
    import sys
    import urllib.request

    proc = subprocess.Popen(
        [sys.executable, "-m", "attnlab", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, line
        with urllib.request.urlopen(url[0] + "toy", timeout=300) as resp:  # noqa: S310 - loopback
            assert resp.status == 200 and "猫" in resp.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=120)


@pytest.mark.slow  # starts attnlab serve
def test_attnlab_serve_says_why_when_the_port_is_taken():
    import subprocess
    import sys

    from attnlab.web.server import bind

    sock = bind("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        r = subprocess.run(
            [sys.executable, "-m", "attnlab", "serve", "--port", str(port)], capture_output=True, text=True, timeout=60
        )
    finally:
        sock.close()
    assert r.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in r.stderr and "Traceback" not in r.stderr

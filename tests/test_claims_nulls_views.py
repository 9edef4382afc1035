"""A claim's null reaches every view: the API's JSON carries it, the page (without JS) prints its line on the
claim's line, the terminal prints it under the claim, and the library's explain() returns it. On sqrt-dk, whose
saturation claim's null is the same lesson at d_k = 1 (there dividing by sqrt(d_k) changes nothing), the null's
numbers must be that run's numbers."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient
from results import quick_flags, quick_query, result
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.explain import explain, get_topic
from attnlab.web.app import create_app

TOPIC = "sqrt-dk"


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def the_null_run(lang: str):
    """The saturation claim of the run at d_k = 1, everything else as QUICK."""
    run = result(TOPIC, lang, **{**get_topic(TOPIC).quick, "d_k": 1})
    return next(c for c in run.claims if c.id == "saturation")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_api_carries_each_claims_null(client, lang):
    body = client.get(f"/api/explain/{TOPIC}", params={**quick_query(TOPIC), "lang": lang}).json()
    claims = {c["id"]: c for c in body["claims"]}
    twin = the_null_run(lang)
    null = claims["saturation"]["null"]
    assert null["settings"] == {"d_k": 1} and null["status"] == twin.status == "not_shown"
    assert null["measured"] == pytest.approx(twin.measured) and null["baseline"] == pytest.approx(twin.baseline)
    assert claims["variance"]["null"] is None  # an identity has no null


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_page_prints_the_null_on_the_claims_line(client, lang):
    page = client.get(f"/explain/{TOPIC}", params={**quick_query(TOPIC), "lang": lang, "predict": "a"}).text
    item = re.search(r'<li class="claim[^"]*" data-id="saturation".*?</li>', page, re.S).group(0)
    null = re.search(r'<span class="null" data-null="d_k_1" data-null-status="not_shown">(.*?)</span>', item, re.S)
    api = client.get(f"/api/explain/{TOPIC}", params={**quick_query(TOPIC), "lang": lang}).json()
    line = next(c for c in api["claims"] if c["id"] == "saturation")["null"]["line"]
    assert null is not None and html.unescape(null.group(1)) == line


def test_the_terminal_prints_the_null_under_the_claim():
    out = CliRunner().invoke(app, ["explain", TOPIC, *quick_flags(TOPIC), "--lang", "en"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "d_k = 1 (dividing by √1 changes nothing): ○" in out.output


def test_the_library_returns_claims_with_their_nulls():
    r = explain(TOPIC, lang="en", **get_topic(TOPIC).quick)
    sat = next(c for c in r.claims if c.id == "saturation")
    assert sat.null["status"] == "not_shown" and sat.null["measured"] == pytest.approx(the_null_run("en").measured)

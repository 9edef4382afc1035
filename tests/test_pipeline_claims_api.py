"""Step ⑤'s first update, the −log p arithmetic and step ③'s 月 through the API and the page (no JavaScript):
the same numbers as the lessons, in both languages."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from attnlab.lessons.explain import as_dict
from attnlab.lessons.pipeline.first_step import first_step
from attnlab.lessons.pipeline.focus import focus
from attnlab.text import POEM
from attnlab.train import new_run
from attnlab.web import runs as runs_service
from attnlab.web.app import create_app

pytestmark = pytest.mark.slow  # trains models


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app()) as c:
        yield c


def trained(client, **settings) -> str:
    """A finished run's id (the stream ends when the run does)."""
    response = client.post("/api/train", json=settings)
    assert response.status_code == 202, response.text
    run_id = response.json()["id"]
    with client.stream("GET", f"/api/train/{run_id}/events") as stream:
        for _ in stream.iter_lines():
            pass
    assert client.get(f"/api/train/{run_id}").json()["status"] == "done"
    return run_id


def value(html: str, element_id: str) -> float:
    return float(re.search(rf'id="{element_id}"[^>]*data-value="([^"]+)"', html).group(1))


def test_neg_log_api_is_the_closed_form_and_checks_p(client):
    assert client.get("/api/pipeline/neg-log", params={"p": 0.12}).json()["neg_log"] == pytest.approx(2.1202635362)
    assert client.get("/api/pipeline/neg-log", params={"p": 1}).json()["neg_log"] == 0
    for bad in ("0", "-1", "1.5", "x"):
        assert client.get("/api/pipeline/neg-log", params={"p": bad}).status_code == 422


def test_first_step_api_equals_the_lesson(client):
    api = client.get("/api/pipeline/first-step", params={"seed": 3, "lang": "en", "seeds": 3}).json()
    direct = as_dict(first_step(new_run("poem", seed=3, device="cpu"), seeds=3, lang="en"))
    assert api["over_seeds"]["seeds"] == 3
    for part in ("plain", "adamw", "over_seeds"):
        assert api[part] == pytest.approx(direct[part])
    assert [c["text"] for c in api["claims"]] == [c["text"] for c in direct["claims"]]
    assert [(c["status"], c["control"], c["margin"]) for c in api["claims"]] == [
        (c["status"], c["control"], c["margin"]) for c in direct["claims"]
    ]
    assert {c["id"]: c["status"] for c in api["claims"]}["plain_raises"] == "shown"
    assert api["plain"]["p_after"] > api["plain"]["p_before"]
    assert client.get("/api/pipeline/first-step", params={"d_model": 30, "heads": 4}).status_code == 422


def test_a_runs_first_step_is_its_untrained_model_and_focus_is_its_trained_one(client):
    run_id = trained(client, corpus="poem", steps=20, seed=2)
    status = client.get(f"/api/train/{run_id}").json()
    api = client.get("/api/pipeline/first-step", params={"run": run_id}).json()
    same = client.get("/api/pipeline/first-step", params={"steps": 20, "seed": 2}).json()
    assert api == same
    assert api["adamw"]["p_before"] == pytest.approx(
        status["before"]["p_target"], rel=1e-6
    )  # ④ traces; this is the plain forward
    assert api["adamw"]["p_after"] == pytest.approx(status["history"][0]["p_probe"], rel=1e-5)

    got = client.get("/api/pipeline/focus", params={"run": run_id, "seeds": 2, "lang": "zh"}).json()
    bg = runs_service.RUNS.get(run_id)
    direct = as_dict(focus(bg.run.model, bg.run.tokenizer, POEM, lang="zh"))
    assert got["heads"] == direct["heads"] and got["expected_top"] == direct["expected_top"]
    assert got["over_seeds"]["seeds"] == 2 and got["over_seeds"]["heads"] == 4
    assert [c["status"] for c in got["claims"][:-1]] == [c["status"] for c in direct["claims"]]
    assert got["claims"][-1]["id"] == "expected_seeds" and got["claims"][-1]["baseline"] == 8 * 0.25  # 8 heads, 1 in 4
    assert client.get("/api/pipeline/focus", params={"text": "床前"}).status_code == 422


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_page_shows_the_same_numbers_without_javascript(client, lang):
    html = client.get("/pipeline", params={"lang": lang, "seed": 3, "p": "0.5"}).text
    assert value(html, "neglog-value") == pytest.approx(0.6931471805599453)
    api = client.get("/api/pipeline/first-step", params={"seed": 3, "lang": lang}).json()
    row = re.search(r'id="first-plain".*?</tr>', html, re.S).group(0)
    assert [float(v) for v in re.findall(r'data-value="([^"]+)"', row)] == [
        api["plain"]["lr"],
        api["plain"]["p_before"],
        api["plain"]["p_after"],
    ]
    row = re.search(r'id="first-adamw".*?</tr>', html, re.S).group(0)
    assert [float(v) for v in re.findall(r'data-value="([^"]+)"', row)] == [
        api["adamw"]["lr"],
        api["adamw"]["p_before"],
        api["adamw"]["p_after"],
    ]
    claims = re.search(r'id="first-step-claims".*?</ul>', html, re.S).group(0)
    assert re.findall(r'data-status="(\w+)"', claims) == [c["status"] for c in api["claims"]]
    counted = client.get("/pipeline", params={"lang": lang, "seed": 3, "step5_seeds": "3"}).text
    claims = re.search(r'id="first-step-claims".*?</ul>', counted, re.S).group(0)
    api = client.get("/api/pipeline/first-step", params={"seed": 3, "lang": lang, "seeds": 3}).json()
    for c in api["claims"]:
        assert c["text"].replace("'", "&#39;") in claims
    assert 'data-id="adamw_over_seeds"' in claims and 'id="first-seeds-form"' not in counted
    assert 'id="focus-table"' in html and 'id="focus-honest"' in html
    bad = client.get("/pipeline", params={"lang": lang, "p": "2"}).text
    assert 'id="neglog-problem"' in bad and 'id="neglog-value"' not in bad


def test_the_page_counts_over_seeds_when_asked(client):
    run_id = trained(client, corpus="poem", steps=20, seed=0)
    html = client.get("/pipeline", params={"run": run_id, "focus_seeds": "2", "lang": "en"}).text
    focus_part = re.search(r'id="focus".*?</ul>', html, re.S).group(0)
    api = client.get("/api/pipeline/focus", params={"run": run_id, "seeds": 2, "lang": "en"}).json()
    assert 'data-id="expected_seeds"' in focus_part and 'id="focus-seeds-form"' not in html
    for c in api["claims"]:
        assert c["text"].replace("'", "&#39;") in focus_part
    for h in api["heads"]:
        row = re.search(rf'id="focus-{h["layer"] + 1}-{h["head"] + 1}".*?</tr>', html, re.S).group(0)
        assert [float(v) for v in re.findall(r'data-value="([^"]+)"', row)] == h["weights"]


def test_counting_over_seeds_is_refused_where_it_would_take_minutes(client):
    big = {"d_model": 128, "layers": 2}  # 400k parameters: over the 250k that counting allows
    refused = client.get("/api/pipeline/first-step", params={**big, "seeds": 2})
    assert refused.status_code == 422 and "too large to count" in refused.text
    html = client.get("/pipeline", params={**big, "step5_seeds": "2", "lang": "en"}).text
    assert 'id="first-seeds-too-big"' in html and 'id="first-seeds-form"' not in html
    assert 'data-id="adamw_over_seeds"' not in html
    assert 'id="focus-seeds-too-big"' in html  # 400k parameters × 60 steps × 10 seeds is over the limit too


def test_counts_over_seeds_take_a_heavy_slot_and_are_refused_while_every_slot_is_taken(client, monkeypatch):
    from attnlab.web import budget

    monkeypatch.setattr(budget, "LESSON_WAIT_S", 0.0)  # refuse at once rather than wait for a slot
    taken = [budget.SLOTS.try_take() for _ in range(budget.LESSON_SLOTS)]  # as if heavy lessons were computing
    assert all(taken)
    try:
        for path, seeds in (
            ("/api/pipeline/first-step", {"seed": 11, "seeds": 2}),
            ("/api/pipeline/focus", {"seeds": 2}),
        ):
            r = client.get(path, params={"lang": "en", **seeds})
            assert r.status_code == 503 and int(r.headers["retry-after"]) > 0, (path, r.text)
        assert client.get("/api/pipeline/first-step", params={"seed": 11}).status_code == 200  # no count: no slot
        page = client.get("/pipeline", params={"lang": "en", "seed": 11, "step5_seeds": "2", "focus_seeds": "2"})
        assert page.status_code == 200
        assert 'id="first-seeds-busy"' in page.text and 'id="focus-seeds-busy"' in page.text
    finally:
        for _ in taken:
            budget.SLOTS.give_back()
    assert budget.SLOTS.used == 0  # every slot a count took was given back
    assert client.get("/api/pipeline/first-step", params={"seed": 11, "seeds": 2}).json()["over_seeds"]["seeds"] == 2

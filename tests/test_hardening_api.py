"""Issue 14, the server's part: allowed input never ends in a 500, the event stream resumes only from real
event ids, DELETE forgets a run, OPTIONS names every method, a bool is not a number, expensive lessons are
cached and limited, training pauses are capped (SIGTERM and Ctrl+C: tests/test_hardening_stop.py)."""

from __future__ import annotations

import threading

import pytest
from lab_client import read_events, serving

from attnlab.train import new_run
from attnlab.train.background import BackgroundRun
from attnlab.web import budget as limits
from attnlab.web import lesson_cache


@pytest.fixture(scope="module")
def client():
    yield from serving()


def trained(client, **settings) -> str:
    response = client.post("/api/train", json={"corpus": "jingyesi", "steps": 8, **settings})
    assert response.status_code == 202, response.text
    run_id = response.json()["id"]
    read_events(client, run_id)  # returns when the run has finished
    return run_id


# ---- 3: every allowed sampling option works ----------------------------------------------------------


@pytest.mark.parametrize(
    "options", [{"temperature": 1e-39}, {"temperature": 5e-324}, {"top_p": 1e-46}, {"top_p": 5e-324, "temperature": 10}]
)
def test_smallest_temperature_and_top_p_generate_like_greedy(client, options):
    run_id = trained(client)
    body = {"run": run_id, "prompt": "床", "max_new_tokens": 8, "seed": 3}
    greedy = client.post("/api/generate", json={**body, "greedy": True})
    response = client.post("/api/generate", json={**body, **options})
    assert response.status_code == 200, response.text
    assert response.json()["new_ids"] == greedy.json()["new_ids"]  # the limit T -> 0 / p -> 0 is the argmax


# ---- 7: the event stream, DELETE, OPTIONS, strict numbers -------------------------------------------------


@pytest.mark.parametrize(
    "last_id, first",
    [("-1000", 0), ("-3", 0), ("-1", 0), ("junk", 0), ("", 0), ("2", 3), ("1e3", 0), ("99999999999999999999999", 0)],
)
def test_last_event_id_resumes_only_after_a_real_event(client, last_id, first):
    run_id = trained(client, steps=5)
    everything = read_events(client, run_id)
    assert [i for i, _, _ in everything] == list(range(len(everything)))
    again = read_events(client, run_id, headers={"Last-Event-ID": last_id})
    assert again == everything[first:]  # no event twice, none raised


def test_delete_forgets_the_run(client):
    run_id = trained(client)
    last = client.delete(f"/api/train/{run_id}")
    assert last.status_code == 200 and last.json()["id"] == run_id and last.json()["status"] == "done"
    assert client.get(f"/api/train/{run_id}").status_code == 404
    assert client.get(f"/api/train/{run_id}/events").status_code == 404
    assert client.post("/api/generate", json={"run": run_id, "prompt": "床"}).status_code == 404
    assert client.post(f"/api/train/{run_id}/stop").status_code == 404
    assert client.delete(f"/api/train/{run_id}").status_code == 404


def test_delete_stops_a_training_run(client):
    started = client.post("/api/train", json={"corpus": "poem", "steps": 5000, "pace_ms": 20}).json()
    last = client.delete(f"/api/train/{started['id']}").json()
    assert last["status"] == "stopped" and last["step"] < 5000
    assert client.get(f"/api/train/{started['id']}").status_code == 404


def test_options_names_every_method_of_the_address(client):
    response = client.options("/api/train/some-run")
    assert response.status_code == 204
    assert set(response.headers["allow"].split(", ")) == {"GET", "DELETE", "OPTIONS"}
    assert set(client.options("/api/train").headers["allow"].split(", ")) == {"POST", "OPTIONS"}
    assert client.options("/no/such/page").status_code == 404


@pytest.mark.parametrize(
    "path, body",
    [
        ("/api/train", {"pace_ms": False}),
        ("/api/train", {"steps": True}),
        ("/api/train", {"lr": True}),
        ("/api/train", {"seed": False}),
        ("/api/generate", {"run": "x", "prompt": "床", "temperature": True}),
        ("/api/generate", {"run": "x", "prompt": "床", "top_k": True}),
    ],
)
def test_a_bool_is_not_a_number(client, path, body):
    response = client.post(path, json=body)
    assert response.status_code == 422, response.text
    assert "expected a number" in response.json()["message"]


def test_openapi_documents_the_error_answers(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert {"404"} <= set(paths["/api/train/{run_id}"]["get"]["responses"])
    assert {"404"} <= set(paths["/api/train/{run_id}"]["delete"]["responses"])
    assert {"400", "429"} <= set(paths["/api/train"]["post"]["responses"])
    assert {"404", "409"} <= set(paths["/api/generate"]["post"]["responses"])
    assert {"404", "503"} <= set(paths["/api/explain/{topic}"]["get"]["responses"])
    events = paths["/api/train/{run_id}/events"]["get"]["responses"]["200"]["content"]
    assert "text/event-stream" in events


# ---- 6: SIGTERM stops a server that streams events: tests/test_hardening_stop.py (with Ctrl+C, lessons, runs)

# ---- 5: expensive requests are bounded ---------------------------------------------------------------------


class RecordingEvent(threading.Event):
    """A stop switch that writes down every pause it is asked for."""

    def __init__(self):
        super().__init__()
        self.pauses: list[float] = []

    def wait(self, timeout=None):
        if timeout is not None:
            self.pauses.append(timeout)
        return super().wait(timeout)


def test_a_runs_pauses_share_one_budget():
    run = new_run("poem", steps=50, seed=0, device="cpu")
    stop = RecordingEvent()
    bg = BackgroundRun(id="paced", run=run, settings={}, pace=0.2, pace_budget=1.0, _stop=stop).start()
    assert bg.wait(timeout=300) and bg.status == "done"
    assert len(stop.pauses) == 50 and sum(stop.pauses) == pytest.approx(1.0)  # not 50 x 0.2 s = 10 s
    assert max(stop.pauses) <= 0.2


def test_a_run_stops_itself_after_its_time_limit():
    run = new_run("poem", steps=5000, seed=0, device="cpu")
    bg = BackgroundRun(id="capped", run=run, settings={}, pace=0.2, max_seconds=0.5).start()  # >= 60 s of pauses
    assert bg.wait(timeout=300) and bg.status == "stopped"
    assert bg.run.trainer.step < 5000 and bg.events[-1]["type"] == "done" and bg.events[-1]["stopped"]


@pytest.fixture
def counted_lesson(monkeypatch):
    """The forms lesson, counting its calls (a cheap topic stands in for the heavy ones)."""
    import attnlab.lessons.forms.lesson as forms_module

    calls = []
    real = forms_module.forms

    def counting(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(forms_module, "forms", counting)
    monkeypatch.setattr(lesson_cache, "CACHE_MIN_S", 0.0)  # keep even quick results, for the test
    monkeypatch.setattr(lesson_cache, "_cache", type(lesson_cache._cache)())
    return calls


def test_lesson_results_are_kept_by_parameters(client, counted_lesson):
    first = client.get("/api/explain/forms", params={"n_tgt": 7})
    again = client.get("/api/explain/forms", params={"n-tgt": "7", "n_src": 5})  # n_src=5 is the default
    assert first.status_code == again.status_code == 200 and first.json() == again.json()
    assert len(counted_lesson) == 1
    client.get("/explain/forms", params={"n_tgt": 7})  # the page shares the result too
    assert len(counted_lesson) == 1
    client.get("/api/explain/forms", params={"n_tgt": 7, "lang": "en"})  # another language is another result
    client.get("/api/explain/forms", params={"n_tgt": 8})
    assert len(counted_lesson) == 3


def test_busy_lessons_get_503_with_retry_after(client, counted_lesson, monkeypatch):
    monkeypatch.setattr(limits, "LESSON_WAIT_S", 0.0)
    taken = [limits.LIGHT.try_take() for _ in range(limits.LIGHT_SLOTS)]  # as if light lessons were computing
    try:
        assert all(taken)
        api = client.get("/api/explain/forms", params={"n_tgt": 9, "lang": "en"})
        assert api.status_code == 503 and int(api.headers["retry-after"]) > 0
        assert "try again" in api.json()["message"] and api.json()["detail"][0]["ctx"]["lang"] == "en"
        page = client.get("/explain/forms", params={"n_tgt": 9})
        assert page.status_code == 503 and "秒后再试" in page.text and int(page.headers["retry-after"]) > 0
        assert client.get("/explain/forms/figure.png", params={"n_tgt": 9}).status_code == 503
        assert client.get("/api/explain/forms", params={"n_tgt": "x"}).status_code == 422  # bad input: still 422
        assert client.get("/api/toy").status_code == 200  # the rest of the lab keeps answering
        assert counted_lesson == []
    finally:
        for _ in taken:
            limits.LIGHT.give_back()
    assert client.get("/api/explain/forms", params={"n_tgt": 9}).status_code == 200


def test_a_long_lesson_does_not_hold_up_other_requests(client, monkeypatch):
    import attnlab.lessons.forms.lesson as forms_module

    release, entered = threading.Event(), threading.Event()
    real = forms_module.forms

    def slow(**kwargs):
        if kwargs.get("n_tgt") == 11:  # only this question takes long
            entered.set()
            release.wait(120)
        return real(**kwargs)

    monkeypatch.setattr(forms_module, "forms", slow)
    answers = []
    waiting = [
        threading.Thread(target=lambda: answers.append(client.get("/api/explain/forms", params={"n_tgt": 11})))
        for _ in range(3)
    ]  # the same question three times: computed once, shared
    for thread in waiting:
        thread.start()
    try:
        assert entered.wait(120)
        assert client.get("/api/toy").status_code == 200  # answered while the lesson computes
        assert client.get("/api/explain/forms", params={"n_tgt": 12}).status_code == 200  # a free slot is used
        assert answers == []
    finally:
        release.set()
        for thread in waiting:
            thread.join(120)
    assert [a.status_code for a in answers] == [200] * 3 and answers[0].json() == answers[2].json()


# ---- issue 37: lang is zh or en on every API address; a page falls back to Chinese and says so ------------


def _filled(path: str, op: dict) -> str:
    """`path` with each path parameter set to a value its schema allows (a cheap topic for /api/explain)."""
    for p in op.get("parameters", []):
        if p["in"] == "path":
            enum = p["schema"].get("enum") or ["x"]
            path = path.replace("{" + p["name"] + "}", "forms" if "forms" in enum else str(enum[0]))
    return path


@pytest.mark.parametrize("asked", ["-1", "fr", "en-US", "ZH", ""])
def test_every_api_address_refuses_an_unknown_lang_as_fastapi_refuses_a_declared_one(client, asked):
    from typing import Literal

    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    probe = FastAPI()  # FastAPI's own answer for a declared lang: the standard the lab's 422 must match

    @probe.get("/p")
    def p(lang: Literal["zh", "en"] = "zh") -> None: ...

    expected = TestClient(probe).get("/p", params={"lang": asked}).json()["detail"]
    doc = client.get("/openapi.json").json()
    sent = 0
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            url = _filled(path, op)
            response = client.request(method.upper(), url, params=[("lang", "en"), ("lang", asked)])
            assert response.status_code == 422, (method, url, response.status_code, response.text[:200])
            assert response.json()["detail"] == expected, (method, url)
            assert response.json()["message"].startswith("query parameter 'lang'")
            sent += 1
    assert sent >= 25  # every operation of the document, not a few


def test_the_api_addresses_that_speak_a_language_publish_zh_and_en(client):
    doc = client.get("/openapi.json").json()
    speaking = ["/api/explain", "/api/explain/{topic}", "/api/explain/{topic}/progress", "/api/real/coreference"]
    speaking += ["/api/real/embeddings", "/api/runs/{name}", "/api/pipeline/first-step", "/api/pipeline/focus"]
    for path in speaking:
        (lang,) = [p for p in doc["paths"][path]["get"]["parameters"] if p["name"] == "lang"]
        assert lang["in"] == "query" and lang["schema"]["enum"] == ["zh", "en"], path
    words = {x: client.get("/api/explain", params={"lang": x}).json()[0]["title"] for x in ("zh", "en")}
    assert words["zh"] != words["en"] and client.get("/api/explain").json()[0]["title"] == words["zh"]


@pytest.mark.parametrize("path", ["/toy", "/explain/forms"])
def test_a_page_with_an_unknown_lang_falls_back_to_chinese_and_says_so(client, path):
    page = client.get(path, params={"lang": "-1"})
    assert page.status_code == 200 and 'lang="zh-CN"' in page.text and 'id="lang-note"' in page.text
    assert "「-1」" in page.text
    for fine, html_lang in (({}, "zh-CN"), ({"lang": "zh"}, "zh-CN"), ({"lang": "en"}, "en")):
        page = client.get(path, params=fine)
        assert page.status_code == 200 and f'<html lang="{html_lang}">' in page.text
        assert 'id="lang-note"' not in page.text

"""Issue 23, the budget's part: everything a GET computes with a model waits in a lane (cheap lessons in their
own, so they never wait behind heavy ones), bad values are refused before any wait, heavy work that another
website asks for is refused, a figure is drawn once, and a lesson whose client went away stops at its next step."""

from __future__ import annotations

import socket
import time
from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient

from attnlab.train import progress as progress_module
from attnlab.web import budget, lesson_cache
from attnlab.web.app import create_app

pytestmark = pytest.mark.slow  # starts processes

CROSS = {"Sec-Fetch-Site": "cross-site"}
BIG = {"layers": "8", "heads": "8", "d_model": "256"}  # the pipeline's largest model: about 230 MiB to check


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app()) as c:
        yield c


@contextmanager
def full(lane: budget.Lane, monkeypatch):
    """Every slot of `lane` taken, as if other requests computed; no waiting for a free one."""
    monkeypatch.setattr(budget, "LESSON_WAIT_S", 0.0)
    taken = [lane.try_take() for _ in range(lane.size)]
    assert all(taken)
    try:
        yield
    finally:
        for _ in taken:
            lane.give_back()


def test_cheap_lessons_answer_while_the_heavy_lane_is_full(client, monkeypatch):
    with full(budget.HEAVY, monkeypatch):
        assert client.get("/api/explain/sqrt-dk", params={"n_samples": 500, "seed": 3}).status_code == 200
        assert client.get("/explain/sqrt-dk", params={"n_samples": 500, "seed": 3}).status_code == 200
        assert client.get("/pipeline", params={"seed": 5}).status_code == 200  # the default model is small
        heavy = client.get("/api/explain/mlm", params={"steps": 20, "seed": 7})  # trains: waits in the heavy lane
        assert heavy.status_code == 503 and int(heavy.headers["retry-after"]) > 0


def test_a_big_pipeline_model_is_built_in_the_heavy_lane(client, monkeypatch):
    with full(budget.HEAVY, monkeypatch):
        page = client.get("/pipeline", params={**BIG, "seed": 12, "lang": "en"})
        assert page.status_code == 503 and int(page.headers["retry-after"]) > 0
        api = client.get("/api/pipeline/first-step", params={"layers": 8, "heads": 8, "d_model": 256, "seed": 12})
        assert api.status_code == 503
        assert client.get("/api/pipeline/focus", params={"seed": 12, "seeds": 2}).status_code == 503
    assert budget.HEAVY.used == 0 and budget.HEAVY.held_mb == 0


def test_bad_values_are_refused_before_waiting_for_a_slot(client, monkeypatch):
    with full(budget.HEAVY, monkeypatch):
        r = client.get("/api/explain/seq2seq", params={"text": "abc", "lang": "en"})
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "text"]
        assert client.get("/api/explain/mlm", params={"d_model": 9}).status_code == 422
        assert client.get("/api/explain/multihead", params={"d_model": 10, "n_heads": 3}).status_code == 422


def test_a_computation_over_the_memory_bound_is_refused_with_its_estimate(client):
    est = budget.lane_for  # the same rule the server applies
    from attnlab.lessons.explain import TOPICS

    cost = TOPICS["sqrt-dk"].cost(n_keys=512, d_k=1024)
    assert cost.mb > budget.MAX_MB  # measured: about 730 MiB at its peak
    with pytest.raises(budget.TooLarge):
        est(cost)
    r = client.get("/api/explain/sqrt-dk", params={"n_keys": 512, "d_k": 1024, "lang": "en"})
    assert r.status_code == 422 and "MiB" in r.json()["message"]
    page = client.get("/explain/sqrt-dk", params={"n_keys": 512, "d_k": 1024, "lang": "en"})
    assert page.status_code == 422 and "MiB" in page.text


def test_other_websites_cannot_start_heavy_work(client, monkeypatch):
    calls = []
    import attnlab.lessons.mlm.lesson as mlm_lesson

    monkeypatch.setattr(mlm_lesson, "mlm", lambda **kw: calls.append(kw))  # would train three models
    for path, params in (
        ("/api/explain/mlm", {"steps": 30}),
        ("/explain/mlm", {"steps": 30}),
        ("/explain/mlm/figure.png", {"steps": 30}),
        ("/pipeline", {**BIG, "seed": 4}),
        ("/api/pipeline/first-step", {"seed": 4, "seeds": 2}),
        ("/api/pipeline/focus", {"seed": 4, "seeds": 2}),
    ):
        r = client.get(path, params=params, headers=CROSS)
        assert r.status_code == 403, (path, r.status_code, r.text[:200])
    assert calls == []
    page = client.get("/explain/mlm", params={"steps": 30, "lang": "en"}, headers=CROSS)
    assert 'id="compute-here"' in page.text and "another website" in page.text
    same = client.get("/api/explain/mlm", params={"steps": 30}, headers={"Sec-Fetch-Site": "same-site"})
    assert same.status_code == 403  # another port of localhost is another site too


def test_other_websites_still_read_cheap_and_computed_results(client, monkeypatch):
    assert client.get("/api/explain/forms", params={"n_tgt": 5}, headers=CROSS).status_code == 200
    assert client.get("/pipeline", params={"seed": 2}, headers=CROSS).status_code == 200  # a small model: light
    assert client.get("/api/toy", headers=CROSS).status_code == 200
    monkeypatch.setattr(lesson_cache, "CACHE_MIN_S", 0.0)  # keep the result however quick
    params = {"train_steps": 2, "n": 8, "seed": 41}
    assert client.get("/api/explain/multihead", params=params, headers=CROSS).status_code == 403
    own = client.get("/api/explain/multihead", params=params, headers={"Sec-Fetch-Site": "same-origin"})
    assert own.status_code == 200
    again = client.get("/api/explain/multihead", params=params, headers=CROSS)  # computed: served to anyone
    assert again.status_code == 200 and again.json() == own.json()


def test_a_figure_is_drawn_once_per_result(client, monkeypatch):
    from attnlab.web.pages import explain as explain_page

    drawn = []
    real = explain_page._png
    monkeypatch.setattr(explain_page, "_png", lambda *a: drawn.append(1) or real(*a))
    params = {"n_positions": 16, "d_model": 8, "lang": "en"}
    first = client.get("/explain/positional/figure.png", params=params)
    second = client.get("/explain/positional/figure.png", params=params)
    assert first.status_code == second.status_code == 200 and first.content == second.content
    assert first.content.startswith(b"\x89PNG") and len(drawn) == 1


def test_a_lesson_whose_client_left_stops_at_its_next_step(monkeypatch):
    """A real server: ask for a lesson that trains for minutes, hang up, and it stops within a few steps."""
    from attnlab.web.server import background

    steps_seen = []
    real_update = progress_module.Progress.update
    monkeypatch.setattr(
        progress_module.Progress,
        "update",
        lambda self, name, step, steps: steps_seen.append((step, steps)) or real_update(self, name, step, steps),
    )
    monkeypatch.setattr(budget, "POLL_S", 0.05)
    query = "train_steps=1000&n_seeds=5&n_test=5&seed=31&lang=en"  # 15 models of 1000 steps: minutes of work
    with background() as url:
        host, port = url.removeprefix("http://").split(":")
        sock = socket.create_connection((host, int(port)))
        sock.sendall(f"GET /api/explain/seq2seq?{query} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        deadline = time.monotonic() + 300
        while not steps_seen and time.monotonic() < deadline:  # it has started training
            time.sleep(0.05)
        assert steps_seen, "the lesson never started"
        sock.close()  # the client goes away
        while lesson_cache._running and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not lesson_cache._running, "the lesson went on after its client left"
    last, total = max(steps_seen)
    assert last < total, "it ran to the end"
    assert not any(key[0] == "seq2seq" and ("seed", 31) in key[1] for key in lesson_cache._cache)  # nothing kept
    assert budget.HEAVY.used == 0


def test_stopping_the_server_cancels_lessons_at_their_next_step():
    """stop_everything (SIGTERM, Ctrl+C) reaches a lesson computing on its own thread."""
    p = budget.Progress()
    with lesson_cache._lock:
        lesson_cache._progress[("test",)] = p
    try:
        budget.stop_everything(type("App", (), {"state": type("S", (), {})()})())
        with progress_module.reporting(p), pytest.raises(progress_module.Cancelled):
            progress_module.report("model", 1, 10)
    finally:
        with lesson_cache._lock:
            lesson_cache._progress.pop(("test",), None)


def test_lanes_count_memory():
    lane = budget.Lane("t", 3, memory_mb=100)
    assert lane.try_take(60) and not lane.try_take(60) and lane.try_take(40)
    lane.give_back(60)
    assert lane.try_take(50) and not lane.try_take(20)  # 40 + 50 held: 20 more is over the lane's memory
    assert lane.try_take(10) and not lane.try_take(0)  # three slots taken
    lone = budget.Lane("t", 2, memory_mb=100)
    assert lone.try_take(300)  # alone, a computation under MAX_MB may take more than the lane's share


def test_a_process_that_exits_while_a_lesson_trains_exits_cleanly():
    """A page shown with its progress leaves its lesson training on a daemon thread; when the process then
    exits (a script, a test run), the lesson is stopped first: no abort in torch's threads."""
    import subprocess
    import sys

    script = (
        "from fastapi.testclient import TestClient\n"
        "from attnlab.web.app import create_app\n"
        "from attnlab.web import lesson_cache\n"
        "c = TestClient(create_app())\n"
        "r = c.get('/explain/seq2seq', params={'train_steps': 1000, 'n_seeds': 5, 'seed': 77})\n"
        "assert r.status_code == 202, r.status_code\n"
        "assert lesson_cache._running\n"
        "print('left while training', flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "left while training" in done.stdout and "terminate called" not in done.stderr


@pytest.mark.parametrize("lane,took_s,collects", [("HEAVY", 5.0, True), ("HEAVY", 0.1, False), ("LIGHT", 5.0, False)])
def test_a_collection_follows_seconds_of_heavy_work_only(monkeypatch, lane, took_s, collects):
    """A full garbage collection walks every live object: after a heavy computation that took seconds it frees
    what only a cycle held, cheaply beside the work; after a moment's training or a light page it would cost more
    than the work itself. Memory goes back to the system (malloc_trim) either way."""
    collected = []
    monkeypatch.setattr(budget, "trim", lambda collect=True: collected.append(collect))
    clock = iter([100.0, 100.0 + took_s])
    monkeypatch.setattr(budget, "_now", lambda: next(clock))
    chosen = getattr(budget, lane)
    assert chosen.try_take(0.0)
    assert budget.compute(lambda: "done", chosen, 0.0, None) == "done"
    assert collected == [collects]

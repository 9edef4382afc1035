"""Issue 14, server side: one training limit for every way to start a run (refused before a model is built),
Host and Origin checks, a body cap, short and UTF-8-safe 422s, and `serve`'s warning about authentication."""

from __future__ import annotations

import json
import logging
import socket
import struct
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from attnlab.cli import app as cli_app
from attnlab.train.background import Busy, Registry
from attnlab.web import runs as runs_service
from attnlab.web import server as server_module
from attnlab.web.app import create_app
from attnlab.web.limits import MAX_BODY, HostPolicy
from attnlab.web.server import background

HANG = 300  # seconds: only turns a hang into a failure; nothing here is timed
REAL_BIND = server_module.bind


@pytest.fixture
def client():
    with TestClient(create_app()) as c:
        yield c


def post(url: str, data: bytes, content_type: str, headers: dict | None = None) -> tuple[int, dict, str]:
    """A POST that does not follow redirects: (status, headers, body)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    request = urllib.request.Request(
        url, data=data, method="POST", headers={"content-type": content_type, **(headers or {})}
    )
    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=HANG) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read().decode()


# ---- 1. one training limit, checked before a model is built ---------------------------------------------


def test_registry_hands_out_at_most_max_training_slots_to_racing_threads():
    registry = Registry(max_training=2)
    barrier, got, refused = threading.Barrier(16), [], []

    def race():
        barrier.wait()
        try:
            got.append(registry.reserve())
        except Busy as err:
            refused.append(err)

    threads = [threading.Thread(target=race) for _ in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(got) == 2 and len(refused) == 14 and all(err.retry_after > 0 for err in refused)
    with got[0]:  # a slot given back unused frees its place
        pass
    with registry.reserve():
        pass


def test_concurrent_form_posts_beyond_the_limit_are_refused_before_any_model_is_built(monkeypatch):
    monkeypatch.setattr(runs_service, "RUNS", Registry(max_runs=8, max_training=2))
    real_new_run, builds, release = runs_service.new_run, [], threading.Event()
    both_building = threading.Semaphore(0)

    def slow_new_run(*args, **kwargs):  # the first builds hold their slots until the test lets them go
        builds.append(kwargs)
        both_building.release()
        assert release.wait(HANG)
        return real_new_run(*args, **kwargs)

    monkeypatch.setattr(runs_service, "new_run", slow_new_run)
    with background() as url, ThreadPoolExecutor(12) as pool:
        form = b"corpus=poem&steps=3&lang=en"
        kind = "application/x-www-form-urlencoded"
        first = [pool.submit(post, f"{url}/pipeline/train", form, kind) for _ in range(2)]
        try:
            for _ in range(2):
                assert both_building.acquire(timeout=HANG)  # two slots taken, their models being built
            more = [pool.submit(post, f"{url}/pipeline/train", form, kind) for _ in range(8)]
            api = pool.submit(post, f"{url}/api/train", b'{"corpus": "poem", "steps": 3}', "application/json")
            refused = [f.result(timeout=HANG) for f in more]  # answered while the two builds still wait
            api_status, api_headers, api_body = api.result(timeout=HANG)
        finally:
            release.set()
        accepted = [f.result(timeout=HANG) for f in first]
        finished = {}  # wait inside the block: a server that stops ends its runs (web/budget.stop_everything)
        for _, headers, _ in accepted:
            run_id = parse_qs(urlsplit(headers["location"]).query)["run"][0]
            bg = runs_service.RUNS.get(run_id)
            finished[run_id] = (bg.wait(HANG), bg.status, bg.run.trainer.step)

    assert len(builds) == 2  # no model was built for a refused run
    for status, headers, body in refused:
        assert status == 429 and int(headers["retry-after"]) > 0
        assert "The lab trains at most 2 runs at a time" in body  # the form's language (lang=en)
    assert api_status == 429 and int(api_headers["retry-after"]) > 0
    assert "already training" in json.loads(api_body)["message"]  # the API's JSON path: the same limit
    assert [status for status, _, _ in accepted] == [303, 303]
    # answered at once with the run's page; the run trains in the background
    assert list(finished.values()) == [(True, "done", 3), (True, "done", 3)]


def test_a_refused_form_post_is_in_chinese_by_default(client, monkeypatch):
    monkeypatch.setattr(runs_service, "RUNS", Registry(max_training=0))
    response = client.post("/pipeline/train", data={"corpus": "poem", "steps": "3"}, follow_redirects=False)
    assert response.status_code == 429 and int(response.headers["retry-after"]) > 0
    assert "实验室同时最多训练 0 次" in response.text


# ---- 2. Host and Origin ---------------------------------------------------------------------------------


def test_a_foreign_host_name_is_refused(client):
    for path in ("/api/toy", "/", "/static/lab.css"):
        response = client.get(path, headers={"host": "evil.example"})
        assert response.status_code == 400, path
    refused = client.get("/api/toy", headers={"host": "evil.example"})
    assert "evil.example" in refused.json()["message"]
    assert "default-src 'self'" in refused.headers["content-security-policy"]  # refusals carry the headers too
    assert refused.headers["referrer-policy"] == "same-origin"  # so the lab's own form posts carry their Origin
    for host in ("testserver", "localhost:8000", "127.0.0.1:1234", "[::1]:8000", "LOCALHOST."):
        assert client.get("/api/toy", headers={"host": host}).status_code == 200, host


def test_the_served_lab_answers_only_to_its_own_names():
    with background() as url:
        port = url.rsplit(":", 1)[1]

        def status(host):
            request = urllib.request.Request(f"{url}/api/toy", headers={"host": host})
            try:
                with urllib.request.urlopen(request, timeout=HANG) as response:
                    return response.status
            except urllib.error.HTTPError as err:
                return err.code

        assert status(f"127.0.0.1:{port}") == 200 and status(f"localhost:{port}") == 200
        assert status(f"evil.example:{port}") == 400 and status("testserver") == 400


def test_host_policy_for_a_named_or_wildcard_address():
    named = HostPolicy(["lab.example"])
    assert named.allows("lab.example:8000") and named.allows("localhost") and not named.allows("10.0.0.5")
    wildcard = HostPolicy(["0.0.0.0"])
    assert wildcard.allows("10.0.0.5:8000") and wildcard.allows("[fe80::1]:80") and not wildcard.allows("evil.example")


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://evil.example"},
        {"origin": "http://testserver:8080"},  # another port is another origin
        {"origin": "null"},
        {"referer": "http://evil.example/page"},
        {"sec-fetch-site": "cross-site", "origin": "http://testserver"},
    ],
)
def test_a_cross_site_post_is_refused(client, headers):
    response = client.post("/api/toy/mix", json={"scores": [0, 1], "values": [[1], [2]]}, headers=headers)
    assert response.status_code == 403 and "another site" in response.json()["message"]


def test_a_cross_site_form_post_starts_no_run(client, monkeypatch):
    monkeypatch.setattr(runs_service, "RUNS", Registry())
    response = client.post(
        "/pipeline/train",
        data={"corpus": "poem", "steps": "3"},
        headers={"origin": "http://evil.example"},
        follow_redirects=False,
    )
    assert response.status_code == 403 and "这个请求来自别的网站" in response.text
    assert not runs_service.RUNS._runs


@pytest.mark.parametrize(
    "headers",
    [
        {},  # curl, scripts
        {"origin": "http://testserver"},
        {"referer": "http://testserver/toy"},
        {"origin": "null", "sec-fetch-site": "same-origin"},
    ],
)
def test_same_origin_and_plain_posts_are_served(client, headers):
    response = client.post("/api/toy/mix", json={"scores": [0, 1], "values": [[1], [2]]}, headers=headers)
    assert response.status_code == 200


# ---- 3 (part). a lone surrogate in a refused field -------------------------------------------------------


@pytest.mark.parametrize(
    "path, body",
    [
        ("/api/train", '{"corpus": "\\ud800"}'),
        ("/api/toy/mix", '{"scores": ["\\ud800"], "values": [[1]]}'),
        ("/api/toy/hand", '{"query": "\\ud800"}'),
        ("/api/generate", '{"run": "x", "prompt": "\\ud800"}'),
    ],
)
def test_a_lone_surrogate_gets_a_json_422(client, path, body):
    response = client.post(path, content=body.encode(), headers={"content-type": "application/json"})
    assert response.status_code == 422
    answer = json.loads(response.content.decode("utf-8"))  # valid UTF-8 and valid JSON
    assert answer["message"] and isinstance(answer["detail"], list)


# ---- 4. the body cap and short echoes --------------------------------------------------------------------


def test_a_body_over_the_cap_gets_413(client):
    big = b"x" * (2 * MAX_BODY)
    response = client.post("/api/train", content=big, headers={"content-type": "application/json"})
    assert response.status_code == 413 and "too large" in response.json()["message"]

    def chunks():  # no Content-Length: counted as it streams in
        for _ in range(40):
            yield b"x" * (64 << 10)

    streamed = client.post("/api/toy/mix", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413
    page = client.post(
        "/pipeline/train?lang=en", content=big, headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert page.status_code == 413 and "too large" in page.text


def test_a_422_echoes_only_a_short_excerpt(client):
    long_text = "狗" * 300_000  # under the cap, far over any excerpt
    response = client.post("/api/train", json={"corpus": long_text})
    assert response.status_code == 422 and len(response.content) < 2000
    answer = response.json()
    assert "狗" * 20 in answer["message"] and len(answer["detail"][0]["input"]) <= 80
    listed = client.post("/api/train", json=list(range(100_000)))  # the whole body is the input here
    assert listed.status_code == 422 and len(listed.content) < 2000


# ---- 8. serve says the lab has no authentication ---------------------------------------------------------


def test_serve_on_a_public_address_warns_that_there_is_no_authentication(monkeypatch):
    served = []
    monkeypatch.setattr(server_module, "bind", lambda host, port: REAL_BIND("127.0.0.1", 0))  # never 0.0.0.0
    monkeypatch.setattr(server_module, "serve", lambda sock, **kw: (served.append(kw), sock.close()))
    result = CliRunner().invoke(cli_app, ["serve", "--host", "0.0.0.0", "--port", "0"])
    assert result.exit_code == 0, result.output
    assert "no authentication" in result.output and "anyone who can reach this port" in result.output
    assert [kw["hosts"] for kw in served] == [("0.0.0.0",)]  # the lab then answers to the address it was asked for
    quiet = CliRunner().invoke(cli_app, ["serve", "--port", "0"])
    assert quiet.exit_code == 0 and "authentication" not in quiet.output


class Lines(logging.Handler):
    """The asyncio log's lines, counted (the server's event loop runs in another thread: a handler, not caplog)."""

    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_a_reader_that_hangs_up_on_the_event_stream_costs_at_most_one_log_line():
    # issue 37: under schemathesis the server logged ~9,600 "socket.send() raised exception." lines; the stream
    # wrote one event at a time, without a pause, into a socket whose reader had left
    lines = Lines()
    logging.getLogger("asyncio").addHandler(lines)
    try:
        with background() as url:
            host, port = urlsplit(url).hostname, urlsplit(url).port
            started = json.loads(post(url + "/api/train", b'{"corpus": "poem", "steps": 1500}', "application/json")[2])
            status = f"{url}/api/train/{started['id']}"
            while json.loads(urllib.request.urlopen(status, timeout=HANG).read())["status"] == "training":
                time.sleep(0.1)
            for _ in range(3):  # a finished run: its whole stream is ready at once
                reader = socket.create_connection((host, port), timeout=HANG)
                reader.sendall(f"GET /api/train/{started['id']}/events HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
                assert reader.recv(100).startswith(b"HTTP/1.1 200")
                reader.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # hang up: RST
                reader.close()
            assert urllib.request.urlopen(status, timeout=HANG).status == 200  # the server still answers
    finally:
        logging.getLogger("asyncio").removeHandler(lines)
    assert len([line for line in lines.lines if "socket.send" in line]) <= 1, len(lines.lines)

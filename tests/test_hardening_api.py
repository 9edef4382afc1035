"""Issue 14, the server's part: allowed input never ends in a 500, the event stream resumes only from real
event ids, DELETE forgets a run, OPTIONS names every method, a bool is not a number, expensive lessons are
cached and limited, training pauses are capped, and SIGTERM stops a server that is streaming events."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from attnlab.web.app import create_app
from attnlab.web.pages import pipeline as page_module


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app()) as c:
        yield c
    for bg in list(page_module.RUNS._runs.values()):
        bg.stop()
        bg.wait(10)


def read_events(client, run_id: str, headers=None) -> list[tuple[int, str, dict]]:
    """(id, event, data) of every event on the run's stream, until the server ends it."""
    events, current = [], {}
    with client.stream("GET", f"/api/train/{run_id}/events", headers=headers or {}) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if not line:
                if "data" in current:
                    events.append((int(current["id"]), current["event"], json.loads(current["data"])))
                current = {}
                continue
            key, _, value = line.partition(": ")
            current[key] = value
    return events


def trained(client, **settings) -> str:
    response = client.post("/api/train", json={"corpus": "jingyesi", "steps": 8, **settings})
    assert response.status_code == 202, response.text
    run_id = response.json()["id"]
    read_events(client, run_id)  # returns when the run has finished
    return run_id


# ---- 3: every allowed sampling option works ----------------------------------------------------------

@pytest.mark.parametrize("options", [{"temperature": 1e-39}, {"temperature": 5e-324}, {"top_p": 1e-46},
                                     {"top_p": 5e-324, "temperature": 10}])
def test_smallest_temperature_and_top_p_generate_like_greedy(client, options):
    run_id = trained(client)
    body = {"run": run_id, "prompt": "床", "max_new_tokens": 8, "seed": 3}
    greedy = client.post("/api/generate", json={**body, "greedy": True})
    response = client.post("/api/generate", json={**body, **options})
    assert response.status_code == 200, response.text
    assert response.json()["new_ids"] == greedy.json()["new_ids"]  # the limit T -> 0 / p -> 0 is the argmax


# ---- 7: the event stream, DELETE, OPTIONS, strict numbers -------------------------------------------------

@pytest.mark.parametrize("last_id, first", [("-1000", 0), ("-3", 0), ("-1", 0), ("junk", 0), ("", 0), ("2", 3),
                                            ("1e3", 0), ("99999999999999999999999", 0)])
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


@pytest.mark.parametrize("path, body", [
    ("/api/train", {"pace_ms": False}), ("/api/train", {"steps": True}), ("/api/train", {"lr": True}),
    ("/api/train", {"seed": False}), ("/api/generate", {"run": "x", "prompt": "床", "temperature": True}),
    ("/api/generate", {"run": "x", "prompt": "床", "top_k": True}),
])
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


# ---- 6: SIGTERM stops a server that streams events --------------------------------------------------------

def test_sigterm_stops_the_server_while_a_client_follows_a_run(tmp_path):
    import http.client
    import os
    import re
    import signal
    import subprocess
    import sys
    import urllib.request
    from pathlib import Path

    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    server = subprocess.Popen([sys.executable, "-m", "attnlab", "serve", "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
    try:
        line = server.stdout.readline()
        found = re.search(r"http://([\d.]+):(\d+)", line)
        assert found, f"no URL in {line!r}"
        host, port = found.group(1), int(found.group(2))
        request = urllib.request.Request(
            f"http://{host}:{port}/api/train", headers={"Content-Type": "application/json"},
            data=json.dumps({"corpus": "poem", "steps": 5000, "pace_ms": 200}).encode())
        run = json.load(urllib.request.urlopen(request, timeout=120))
        stream = http.client.HTTPConnection(host, port, timeout=120)
        stream.request("GET", run["events"])
        response = stream.getresponse()
        assert response.status == 200 and response.read1(64).startswith(b"retry:")  # the stream is open

        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)  # generous: the claim is that it exits, not how fast
        assert server.returncode is not None
        response.read()  # and the stream was ended, not left hanging (this returns at the end of the stream)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        server.stdout.close()

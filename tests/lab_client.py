"""A lab in the test process for the API and page tests that train runs: `serving()` yields a TestClient and,
after the module's tests, stops every run they left training; `read_events` follows a run's event stream."""

from __future__ import annotations

import json
from collections.abc import Iterator

from fastapi.testclient import TestClient

from attnlab.web import runs as runs_service
from attnlab.web.app import create_app


def serving(app=None) -> Iterator[TestClient]:
    with TestClient(app or create_app()) as client:
        yield client
    for bg in list(runs_service.RUNS._runs.values()):
        bg.stop()
        bg.wait(10)


def read_events(client, run_id: str, headers=None) -> list[tuple[int, str, dict]]:
    """(id, event, data) of every event on the run's stream, until the server ends it."""
    events, current = [], {}
    with client.stream("GET", f"/api/train/{run_id}/events", headers=headers or {}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line:
                if "data" in current:
                    events.append((int(current["id"]), current["event"], json.loads(current["data"])))
                current = {}
                continue
            key, _, value = line.partition(": ")
            current[key] = value
    return events

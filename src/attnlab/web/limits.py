"""Bounds on what one request may cost the server, and a clean stop.

- `closing(app)`: set when the server shuts down (SIGTERM, Ctrl+C); event streams end at once and training
  runs stop, so the process exits in seconds even while a page follows a run.
- Training pauses (`pace_ms`, so a learner can watch the curve) add at most PACE_BUDGET_S to a run.
"""

from __future__ import annotations

import threading

PACE_BUDGET_S = 60.0  # seconds of pauses one run may add in all (5000 steps at 200 ms would be 17 minutes)


def closing(app) -> threading.Event:
    """The app's shutdown switch (created on first use)."""
    event = getattr(app.state, "closing", None)
    if event is None:
        event = app.state.closing = threading.Event()
    return event


def stop_everything(app) -> None:
    """Shutting down: end the event streams and ask every training run to stop after its current step."""
    closing(app).set()
    from attnlab.web.pages.pipeline import RUNS  # the runs of this server process

    for bg in list(RUNS.training()):
        bg.stop()

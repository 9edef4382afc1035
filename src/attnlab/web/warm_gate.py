"""How the background warm-up (web/warm.py) stays out of the learner's way.

`attnlab serve` visits the default pages itself, so that a learner's first visit finds them computed. Those
visits carry `warming`: InFlight does not count them, web/budget.py computes their lessons in its WARM lane (one
at a time, never a user's slot) with a WarmProgress, which at every training step waits while any user's
request is in flight, unless that request waits for this very lesson (then the work is the user's and goes
on). Between two pages the warm-up waits until no user's request has run for a moment (`users_busy`).
"""

from __future__ import annotations

import contextvars
import threading
import time
import weakref
from collections.abc import Callable

from attnlab.train.progress import Progress

PAUSE_S = 0.02  # how often a paused warm-up looks again whether the users' requests are done
warming: contextvars.ContextVar[bool] = contextvars.ContextVar("attnlab_warming", default=False)
_users = {"in_flight": 0, "last": 0.0}  # the users' requests now running; when the last one ended (monotonic)
_lock = threading.Lock()
_lessons: weakref.WeakSet = weakref.WeakSet()  # the warm-up's lessons (one, or none, at a time)


class InFlight:
    """ASGI middleware counting the users' requests in flight (the warm-up's own are not counted)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or warming.get():
            await self.app(scope, receive, send)
            return
        with _lock:
            _users["in_flight"] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            with _lock:
                _users["in_flight"] -= 1
                _users["last"] = time.monotonic()


def users_busy(quiet_s: float = 0.0, joined: int = 0) -> bool:
    """Whether users' requests are in flight (beyond `joined` of them, which wait for the warm-up's own
    lesson), or one ended less than `quiet_s` ago (a page's figure and scripts follow it)."""
    with _lock:
        return _users["in_flight"] > joined or time.monotonic() - _users["last"] < quiet_s


class WarmProgress(Progress):
    """A warm-up lesson's progress: at each training step it waits while users' requests run that do not wait
    for it (`joined()`: how many do); cancel() ends the wait at once."""

    def __init__(self, joined: Callable[[], int]):
        super().__init__()
        self.joined = joined
        with _lock:
            _lessons.add(self)

    def update(self, name: str, step: int, steps: int) -> None:
        super().update(name, step, steps)
        while not self.cancelled.is_set() and users_busy(joined=self.joined()):
            self.cancelled.wait(PAUSE_S)


def cancel_warm_lessons(why: str) -> None:
    """Stop the warm-up's lessons at their next step (the warm-up was stopped)."""
    with _lock:
        lessons = list(_lessons)
    for progress in lessons:
        progress.cancel(why)

"""Bounds on what one request may cost the server, and a clean stop.

- `closing(app)`: set when the server shuts down (SIGTERM, Ctrl+C); event streams end at once and training
  runs stop, so the process exits in seconds even while a page follows a run.
- Training runs: their pauses (`pace_ms`) add at most a minute, and a run stops itself after ten
  (train/background.py: PACE_BUDGET_S, MAX_RUN_S).
- Everything a GET computes with a model (the concept lessons, the pipeline page and its checks) runs here:
  in one of two lanes, with its memory counted (below). The concept lessons' results are shared, kept, and
  stopped when nobody waits for them any more in web/lesson_cache.py, which computes them in these lanes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from attnlab.train.progress import Cancelled, Progress, reporting
from attnlab.web.lanes import Lane
from attnlab.web.memory import trim
from attnlab.web.warm_gate import warming


def closing(app) -> threading.Event:
    """The app's shutdown switch (created on first use)."""
    event = getattr(app.state, "closing", None)
    if event is None:
        event = app.state.closing = threading.Event()
    return event


_stops: list[Callable[[str], None]] = []  # what else stops with the lab (web/lesson_cache.py: its lessons)


def on_stop(stop: Callable[[str], None]) -> None:
    """stop_everything calls stop(reason) too: for computations kept by a module above this one, which this one
    cannot import (web/lesson_cache.py registers its lessons)."""
    _stops.append(stop)


def stop_everything(app) -> None:
    """Shutting down: end the event streams, ask every training run to stop after its current step, and
    every lesson still computing to stop at its next one."""
    closing(app).set()
    from attnlab.web import runs  # the runs of this server process (a module below the pages)

    for bg in list(runs.RUNS.training()):
        bg.stop()
    for stop in list(_stops):
        stop("the lab is shutting down")


# ---- lanes and the memory budget -----------------------------------------------------------------------------
#
# A computation's cost (lessons/common/cost.py) is known from its settings before anything is allocated. One that
# trains models or needs more than LIGHT_MB waits in the heavy lane: at most HEAVY_SLOTS at once, holding at most
# HEAVY_MB between them. Everything else takes the light lane, so a cheap lesson never waits behind a heavy one.
# A computation above MAX_MB is refused with the reason (422). A request that finds its lane full waits up to
# LESSON_WAIT_S, then gets 503 with Retry-After. Heavy work that another website asks for (the browser says
# `Sec-Fetch-Site: cross-site` or `same-site`, e.g. an <img> on some page pointing here) is refused with 403;
# what is already computed is served to anyone.

LESSON_SLOTS = HEAVY_SLOTS = 2  # heavy computations at once
LIGHT_SLOTS = 4  # light computations at once
LIGHT_MB = 128.0  # a computation that trains nothing and needs at most this much is light
HEAVY_MB = 768.0  # the memory the heavy lane's computations may hold together
MAX_MB = 512.0  # one computation: above, refused
LESSON_WAIT_S = 2.0  # how long a request waits for room in its lane before its 503
FIGURE_WAIT_S = 120.0  # ... and for its turn to draw a figure
RETRY_AFTER_S = 10  # what the 503 tells the client to wait
POLL_S = 0.25  # how often a waiting request checks that its client is still there


class Busy(Exception):
    """The lane is full; try again in `retry_after` seconds."""

    def __init__(self, retry_after: int = RETRY_AFTER_S, lane: str = "heavy"):
        super().__init__(
            f"the lab is computing as many {lane} lessons as it runs at once; try again in {retry_after} s"
        )
        self.retry_after = retry_after


class Foreign(Exception):
    """Another website asked for heavy work (403)."""

    def __init__(self, why: str):
        super().__init__(
            f"refused: another website asked this lab to start a heavy computation ({why}); open the "
            "lab's own page and ask there"
        )
        self.why = why


class TooLarge(ValueError):
    """One computation would need more memory than the lab gives one request (422)."""

    def __init__(self, mb: float):
        super().__init__(
            f"these settings would need about {mb:,.0f} MiB, more than the lab gives one computation "
            f"({MAX_MB:,.0f} MiB); choose smaller sizes"
        )
        self.mb = mb


SLOTS = HEAVY = Lane("heavy", HEAVY_SLOTS, HEAVY_MB)
LIGHT = Lane("light", LIGHT_SLOTS)
# matplotlib holds the interpreter while it draws: one figure at a time. A figure takes seconds at most, so a
# request waits for its turn longer than for a lesson's lane (a page's <img> then never breaks on a busy machine).
DRAW = Lane("figure", 1, wait_s=FIGURE_WAIT_S)
# The background warm-up (web/warm.py, web/warm_gate.py) computes in a lane of its own, one lesson at a time,
# beside the users' lanes; its lessons wait at each training step while users' requests run.
WARM = Lane("warm", 1)

# Set by web/limits.py for each GET from another site (what the browser said); None for the lab's own pages,
# typed addresses and scripts that say nothing.
asked_from: contextvars.ContextVar[str | None] = contextvars.ContextVar("attnlab_asked_from", default=None)


def lane_for(cost) -> Lane:
    """The lane of a computation of this cost (TooLarge above MAX_MB)."""
    if cost.mb > MAX_MB:
        raise TooLarge(cost.mb)
    return HEAVY if cost.trains or cost.mb > LIGHT_MB else LIGHT


def admit(lane: Lane) -> None:
    """Foreign when another website asks for heavy work."""
    why = asked_from.get()
    if lane is HEAVY and why:
        raise Foreign(why)


COLLECT_AFTER_S = 1.0  # a garbage collection walks every live object: worth it after seconds of heavy work only


def _worth_collecting(lane: Lane, start: float) -> bool:
    """After heavy work that took seconds a full collection is cheap beside it and frees what only a cycle held; a
    light page, or a lesson that trained for a moment, would spend more on the walk than on its own work."""
    return lane is HEAVY and _now() - start >= COLLECT_AFTER_S


_now = time.monotonic  # the clock the collection's rule reads (a test sets its own)


_held = threading.local()  # the lane this thread's computation holds: nested work does not take a second slot


def compute(fn: Callable, lane: Lane, mb: float, progress: Progress | None):
    """fn() on this thread, holding `mb` of `lane` (already taken), its training steps reported to `progress`;
    then the room is given back."""
    _held.lane = lane
    start = _now()
    try:
        if progress is None:
            return fn()
        with reporting(progress):
            return fn()
    finally:
        _held.lane = None
        lane.give_back(mb)  # before the answer, so a client that got its answer finds the room free
        trim(collect=_worth_collecting(lane, start))


async def _take(lane: Lane, mb: float) -> None:
    deadline = time.monotonic() + (LESSON_WAIT_S if lane.wait_s is None else lane.wait_s)  # DRAW waits longer
    while not lane.try_take(mb):
        if time.monotonic() >= deadline:
            raise Busy(lane=lane.name)
        await asyncio.sleep(0.05)


async def run(fn: Callable, cost, *, request=None, lane: Lane | None = None):
    """fn() on a worker thread in the lane its cost asks for, or in `lane` (TooLarge, Foreign, Busy before
    anything runs). For work that is not shared between requests (a page built from its settings, a figure)."""
    lane = lane or lane_for(cost)
    admit(lane)
    await _take(lane, cost.mb)
    future: concurrent.futures.Future = concurrent.futures.Future()
    future.set_running_or_notify_cancel()

    def work():
        try:
            future.set_result(compute(fn, lane, cost.mb, None))
        except BaseException as err:  # noqa: BLE001 - handed to the request
            future.set_exception(err)

    # in the request's context: the counts it may start inside know who asked (asked_from)
    threading.Thread(target=contextvars.copy_context().run, args=(work,), daemon=True, name="attnlab-work").start()
    return await wait_for(future, request)


@contextmanager
def hold(cost) -> Iterator[None]:
    """Room in the lane `cost` asks for, for work a request does on its own worker thread (opening a
    checkpoint, the pipeline's counts over seeds): TooLarge, Foreign from another site, Busy when the lane
    stays full for LESSON_WAIT_S. Inside work that already holds a heavy slot it takes nothing more."""
    lane = WARM if warming.get() else lane_for(cost)  # the warm-up's own requests never take a user's slot
    if getattr(_held, "lane", None) is HEAVY:
        yield
        return
    admit(lane)
    deadline = time.monotonic() + LESSON_WAIT_S
    while not lane.try_take(cost.mb):
        if time.monotonic() >= deadline:
            raise Busy(lane=lane.name)
        time.sleep(0.05)
    start = _now()
    try:
        yield
    finally:
        lane.give_back(cost.mb)
        trim(collect=_worth_collecting(lane, start))


def heavy(mb: float = 0.0):
    """hold() for work that trains models (the pipeline's counts over seeds): the heavy lane."""
    from attnlab.lessons.common.cost import Cost

    return hold(Cost(mb, trains=True))


async def wait_for(future: concurrent.futures.Future, request, on_gone: Callable[[], None] | None = None):
    """The future's result; while waiting, checks every POLL_S that the client is still there. A client that
    went away stops the wait (on_gone() is called; the computation may be cancelled by it)."""
    waiting = asyncio.wrap_future(future)
    try:
        while True:
            done, _ = await asyncio.wait({waiting}, timeout=POLL_S)
            if done:
                return waiting.result()
            if request is not None and await request.is_disconnected():
                raise Cancelled("the client went away")
    finally:
        if not waiting.done():
            waiting.add_done_callback(quietly)  # its end (Cancelled, most likely) concerns nobody now
            if on_gone is not None:
                on_gone()


def quietly(future: asyncio.Future) -> None:
    """A done callback for a future nobody waits for: its exception is read, so asyncio does not log it."""
    if not future.cancelled():
        future.exception()

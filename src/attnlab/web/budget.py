"""Bounds on what one request may cost the server, and a clean stop.

- `closing(app)`: set when the server shuts down (SIGTERM, Ctrl+C); event streams end at once and training
  runs stop, so the process exits in seconds even while a page follows a run.
- Training runs: their pauses (`pace_ms`) add at most a minute, and a run stops itself after ten
  (train/background.py: PACE_BUDGET_S, MAX_RUN_S).
- Everything a GET computes with a model (the concept lessons, the pipeline page and its checks) runs here:
  in one of two lanes, with its memory counted, and stopped when nobody waits for it any more (below).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextvars
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from attnlab.lessons.common import disk_cache
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import TOPICS
from attnlab.train.progress import Cancelled, Progress, reporting
from attnlab.web.lanes import Lane
from attnlab.web.memory import trim
from attnlab.web.warm_gate import WarmProgress, warming


def closing(app) -> threading.Event:
    """The app's shutdown switch (created on first use)."""
    event = getattr(app.state, "closing", None)
    if event is None:
        event = app.state.closing = threading.Event()
    return event


def stop_everything(app) -> None:
    """Shutting down: end the event streams, ask every training run to stop after its current step, and
    every lesson still computing to stop at its next one."""
    closing(app).set()
    from attnlab.web import runs  # the runs of this server process (a module below the pages)

    for bg in list(runs.RUNS.training()):
        bg.stop()
    with _lock:
        for progress in _progress.values():
            progress.cancel("the lab is shutting down")


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
CACHE_SIZE = 32  # lesson results kept
CACHE_MIN_S = 0.2  # only results that took at least this long are kept (the quick ones are recomputed)
POLL_S = 0.25  # how often a waiting request checks that its client is still there


class Busy(Exception):
    """The lane is full; try again in `retry_after` seconds."""

    def __init__(self, retry_after: int = RETRY_AFTER_S, lane: str = "heavy"):
        super().__init__(f"the lab is computing as many {lane} lessons as it runs at once; try again in {retry_after} s")
        self.retry_after = retry_after


class Foreign(Exception):
    """Another website asked for heavy work (403)."""

    def __init__(self, why: str):
        super().__init__(f"refused: another website asked this lab to start a heavy computation ({why}); open the "
                         "lab's own page and ask there")
        self.why = why


class TooLarge(ValueError):
    """One computation would need more memory than the lab gives one request (422)."""

    def __init__(self, mb: float):
        super().__init__(f"these settings would need about {mb:,.0f} MiB, more than the lab gives one computation "
                         f"({MAX_MB:,.0f} MiB); choose smaller sizes")
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


def _admit(lane: Lane) -> None:
    why = asked_from.get()
    if lane is HEAVY and why:
        raise Foreign(why)


_held = threading.local()  # the lane this thread's computation holds: nested work does not take a second slot


def _stop_at_exit(wait_s: float = 20.0) -> None:
    """At interpreter exit, ask the computations still running to stop, and wait for them a while: a daemon
    thread inside torch while Python finalizes aborts the process ("terminate called ...")."""
    with _lock:
        for progress in _progress.values():
            progress.cancel("the process is exiting")
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        with _lock:
            if not _running:
                return
        time.sleep(0.05)


atexit.register(_stop_at_exit)


def _compute(fn: Callable, lane: Lane, mb: float, progress: Progress | None):
    _held.lane = lane
    try:
        if progress is None:
            return fn()
        with reporting(progress):
            return fn()
    finally:
        _held.lane = None
        lane.give_back(mb)  # before the answer, so a client that got its answer finds the room free
        trim(collect=lane is HEAVY)  # seconds of work: a collection is cheap beside it (a light page's is not)


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
    _admit(lane)
    await _take(lane, cost.mb)
    future: concurrent.futures.Future = concurrent.futures.Future()
    future.set_running_or_notify_cancel()

    def work():
        try:
            future.set_result(_compute(fn, lane, cost.mb, None))
        except BaseException as err:  # noqa: BLE001 - handed to the request
            future.set_exception(err)

    # in the request's context: the counts it may start inside know who asked (asked_from)
    threading.Thread(target=contextvars.copy_context().run, args=(work,), daemon=True, name="attnlab-work").start()
    return await _wait(future, request)


@contextmanager
def hold(cost) -> Iterator[None]:
    """Room in the lane `cost` asks for, for work a request does on its own worker thread (opening a
    checkpoint, the pipeline's counts over seeds): TooLarge, Foreign from another site, Busy when the lane
    stays full for LESSON_WAIT_S. Inside work that already holds a heavy slot it takes nothing more."""
    lane = WARM if warming.get() else lane_for(cost)  # the warm-up's own requests never take a user's slot
    if getattr(_held, "lane", None) is HEAVY:
        yield
        return
    _admit(lane)
    deadline = time.monotonic() + LESSON_WAIT_S
    while not lane.try_take(cost.mb):
        if time.monotonic() >= deadline:
            raise Busy(lane=lane.name)
        time.sleep(0.05)
    try:
        yield
    finally:
        lane.give_back(cost.mb)
        trim(collect=lane is HEAVY)


def heavy(mb: float = 0.0):
    """hold() for work that trains models (the pipeline's counts over seeds): the heavy lane."""
    from attnlab.lessons.common.cost import Cost

    return hold(Cost(mb, trains=True))


async def _wait(future: concurrent.futures.Future, request, on_gone: Callable[[], None] | None = None):
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
            waiting.add_done_callback(_quietly)  # its end (Cancelled, most likely) concerns nobody now
            if on_gone is not None:
                on_gone()


def _quietly(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()


# ---- the concept lessons (/explain/{topic}, /api/explain/{topic}) -------------------------------------------
#
# A lesson's numbers depend only on its topic, parameters and language, so a result is kept (LRU) and the
# same question is answered from memory, and after a restart from disk (lessons/common/disk_cache.py). Each
# lesson computes on its own thread (never on the event loop or the request thread pool, so /api/toy and the
# other pages keep answering). A request for a lesson already being computed waits for that computation, not a
# second one; when every request waiting for it has gone, it stops at its next training step
# (train/progress.py: Cancelled) and nothing is kept.

_cache: OrderedDict[tuple, object] = OrderedDict()
_running: dict[tuple, concurrent.futures.Future] = {}
_progress: dict[tuple, Progress] = {}  # the running computations' training steps (train/progress.py)
_waiters: dict[tuple, int] = {}  # requests waiting for each running computation
_lock = threading.Lock()


class Training(Exception):
    """The lesson is still training its models after the page's wait: show `models` (name, step, steps)."""

    def __init__(self, models: list[dict]):
        super().__init__("the lesson is still training")
        self.models = models


def lesson_key(topic, raw: dict, lang: str) -> tuple:
    """(topic, every parameter's value with defaults filled in, lang); ParamError for a bad value."""
    return topic.key(raw, lang)


def _keep(key: tuple, result, seconds: float, min_s: float | None = None) -> None:
    if seconds < (CACHE_MIN_S if min_s is None else min_s):
        return
    with _lock:
        _cache[key] = result
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)


def _on_disk(key: tuple) -> dict:
    """The disk cache's key of a lesson's result (lessons/common/disk_cache.py)."""
    return TOPICS[key[0]].stored_key(key)


def _from_disk(key: tuple):
    """The result kept on disk by an earlier run of the lab (now kept in memory too), or MISS."""
    result = disk_cache.load(_on_disk(key))
    if result is not disk_cache.MISS:
        _keep(key, result, float("inf"))
    return result


def _work(topic, raw: dict, lang: str, key: tuple, lane: Lane, mb: float, future: concurrent.futures.Future) -> None:
    """On a worker thread: compute, keep, free the room, then answer everyone waiting (even if they all left),
    then write the result to disk (after answering: a large result takes a moment to write)."""
    result, error = None, None
    start = time.perf_counter()
    try:
        result = _compute(lambda: topic.run(lang=lang, **raw), lane, mb, _progress[key])
        seconds = time.perf_counter() - start
        _keep(key, result, seconds)
    except BaseException as err:  # noqa: BLE001 - handed to the requests waiting for it
        error = err
    with _lock:
        _running.pop(key, None)
        _progress.pop(key, None)
        _waiters.pop(key, None)
    if error is not None:
        future.set_exception(error)
        return
    future.set_result(result)
    if seconds >= CACHE_MIN_S:
        disk_cache.store(_on_disk(key), result)


def _leave(key: tuple) -> None:
    """A request stopped waiting: the last one to leave cancels the computation."""
    with _lock:
        if key not in _waiters:
            return
        _waiters[key] -= 1
        if _waiters[key] <= 0 and key in _progress:
            _progress[key].cancel()


async def lesson(topic, raw: dict, lang: str, *, progress_after: float | None = None, request=None):
    """The lesson's result (its dataclass; never mutate it, it may be shared). Before anything waits:
    ParamError for bad values (and values too large for the lesson), TooLarge, Foreign. Busy when its lane
    stays full for LESSON_WAIT_S. With progress_after (seconds): Training, carrying the steps done so far, when
    the lesson is still training models after that long (it goes on in the background; a later call with the
    same values finds it running or done). With request: stops waiting (Cancelled) when its client has gone."""
    key = lesson_key(topic, raw, lang)  # bad values are refused here, before any slot is taken
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    cost = topic.cost(**raw)
    try:
        lane = lane_for(cost)
    except TooLarge as err:  # said beside the lesson's form, like the lesson's own limits
        raise ParamError(str(err), None, "web.error.too_large", need=f"{err.mb:,.0f}") from None
    stored = await asyncio.to_thread(_from_disk, key)  # computed by an earlier run: served to anyone
    if stored is not disk_cache.MISS:
        return stored
    if warming.get():  # the background warm-up (web/warm.py): its own lane, and it yields to requests
        lane = WARM
    deadline = time.monotonic() + LESSON_WAIT_S
    while True:
        with _lock:
            if key in _cache:
                _cache.move_to_end(key)
                return _cache[key]
            future, mine = _running.get(key), False
            if future is None:
                _admit(lane)
                if lane.try_take(cost.mb):
                    future, mine = concurrent.futures.Future(), True
                    future.set_running_or_notify_cancel()  # a waiter that leaves cannot cancel it for the others
                    progress = WarmProgress(lambda: _waiters.get(key, 0)) if lane is WARM else Progress()
                    _running[key], _progress[key], _waiters[key] = future, progress, 0
            if future is not None:
                _waiters[key] = _waiters.get(key, 0) + 1
        if mine:
            threading.Thread(target=_work, args=(topic, raw, lang, key, lane, cost.mb, future), daemon=True,
                             name=f"attnlab-lesson-{topic.name}").start()
        if future is not None:  # ours, or the same lesson being computed for someone else: share it
            if progress_after is None:
                return await _wait(future, request, on_gone=lambda: _leave(key))
            return await _or_progress(key, future, progress_after, request)
        if time.monotonic() >= deadline:
            raise Busy(lane=lane.name)
        await asyncio.sleep(0.05)


async def _or_progress(key: tuple, future: concurrent.futures.Future, after: float, request):
    """The result if it comes within `after` seconds, or while nothing trains (a quick lesson, models already
    trained and cached: it would come soon); else Training with the steps so far (the computation goes on for
    the page's progress requests, which find it running)."""
    waiting = asyncio.wrap_future(future)
    deadline = time.monotonic() + after
    try:
        while True:
            done, _ = await asyncio.wait({waiting}, timeout=0.05)
            if done:
                return waiting.result()
            with _lock:
                progress = _progress.get(key)
            if progress is not None and progress.started and time.monotonic() >= deadline:
                raise Training(progress.snapshot())
            if request is not None and await request.is_disconnected():
                _leave(key)
                raise Cancelled("the client went away")
    finally:
        if not waiting.done():
            waiting.add_done_callback(_quietly)


def progress_of(topic, raw: dict, lang: str) -> dict:
    """{"status": "done" | "training" | "idle", "models": [{"name", "step", "steps"}, ...]} for these values:
    done = kept and ready; training = being computed now; idle = neither (a request computes it)."""
    key = lesson_key(topic, raw, lang)
    with _lock:
        if key in _cache:
            return {"status": "done", "models": []}
        progress = _progress.get(key)
        if key in _running and progress is not None:
            return {"status": "training", "models": progress.snapshot()}
    return {"status": "idle", "models": []}


def remembered(name: str, settings: dict, compute: Callable, *, lang: str | None = None, source: str | None = None,
               min_s: float | None = None):
    """compute()'s result for a page's computation that is not a concept lesson (/real's sentence, its
    coreference and embeddings), kept like a lesson's: in memory, and on disk when it took CACHE_MIN_S or more
    (written on another thread, so the page does not wait for it). `settings` (plain values) and `lang` must
    say everything the result depends on; `source`, the lesson folder whose code computes it. The caller holds
    its lane (hold()); compute's errors pass through. `min_s` replaces CACHE_MIN_S for a result whose first
    computation in a process costs more than later ones (an import on first use), so it is kept whatever it took."""
    key = ("page", name, tuple(settings.items()), lang)
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    on_disk = disk_cache.make_key("page", name, settings.items(), lang, source=source)
    result = disk_cache.load(on_disk)
    if result is not disk_cache.MISS:
        _keep(key, result, float("inf"))
        return result
    start = time.perf_counter()
    result = compute()
    seconds = time.perf_counter() - start
    _keep(key, result, seconds, min_s)
    if seconds >= (CACHE_MIN_S if min_s is None else min_s):
        threading.Thread(target=disk_cache.store, args=(on_disk, result), daemon=True, name="attnlab-store").start()
    return result

"""Bounds on what one request may cost the server, and a clean stop.

- `closing(app)`: set when the server shuts down (SIGTERM, Ctrl+C); event streams end at once and training
  runs stop, so the process exits in seconds even while a page follows a run.
- Training runs: their pauses (`pace_ms`) add at most a minute, and a run stops itself after ten
  (train/background.py: PACE_BUDGET_S, MAX_RUN_S).
- Concept lessons: results cached by parameters, a few computed at once, the rest refused with 503 (below).
  A lesson that trains models reports its steps (train/progress.py); a page can show them while it trains.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from attnlab.train.progress import Progress, reporting

def closing(app) -> threading.Event:
    """The app's shutdown switch (created on first use)."""
    event = getattr(app.state, "closing", None)
    if event is None:
        event = app.state.closing = threading.Event()
    return event


def stop_everything(app) -> None:
    """Shutting down: end the event streams and ask every training run to stop after its current step."""
    closing(app).set()
    from attnlab.web import runs  # the runs of this server process (a module below the pages)

    for bg in list(runs.RUNS.training()):
        bg.stop()


# ---- the concept lessons (/explain/{topic}, /api/explain/{topic}) -------------------------------------------
#
# A lesson's numbers depend only on its topic, parameters and language, so a result is kept (LRU) and the
# same question is answered from memory. A lesson that times attention (complexity) or trains a model
# (multihead) may take a minute at its largest settings: at most LESSON_SLOTS lessons compute at once, each
# on its own thread (never on the event loop or the request thread pool, so /api/toy and the other pages
# keep answering); a request that finds every slot taken waits up to LESSON_WAIT_S, then gets 503 with
# Retry-After. A request for a lesson already being computed waits for that computation, not a second one.

LESSON_SLOTS = 2  # lessons computed at once (the others wait, then are refused)
LESSON_WAIT_S = 2.0  # how long a request waits for a free slot before its 503
RETRY_AFTER_S = 10  # what the 503 tells the client to wait
CACHE_SIZE = 32  # lesson results kept
CACHE_MIN_S = 0.2  # only results that took at least this long are kept (the quick ones are recomputed)


class Busy(Exception):
    """Every lesson slot is taken; try again in `retry_after` seconds."""

    def __init__(self, retry_after: int = RETRY_AFTER_S):
        super().__init__(f"the lab is computing {LESSON_SLOTS} other lessons; try again in {retry_after} s")
        self.retry_after = retry_after


class _Slots:
    """A counting gate that works from any event loop or thread (tests run several servers in one process)."""

    def __init__(self, size: int):
        self.size, self.used = size, 0
        self._lock = threading.Lock()

    def try_take(self) -> bool:
        with self._lock:
            if self.used >= self.size:
                return False
            self.used += 1
            return True

    def give_back(self) -> None:
        with self._lock:
            self.used -= 1


SLOTS = _Slots(LESSON_SLOTS)
_cache: OrderedDict[tuple, object] = OrderedDict()
_running: dict[tuple, concurrent.futures.Future] = {}
_progress: dict[tuple, Progress] = {}  # the running computations' training steps (train/progress.py)
_lock = threading.Lock()


class Training(Exception):
    """The lesson is still training its models after the page's wait: show `models` (name, step, steps)."""

    def __init__(self, models: list[dict]):
        super().__init__("the lesson is still training")
        self.models = models


def lesson_key(topic, raw: dict, lang: str) -> tuple:
    """(topic, every parameter's value with defaults filled in, lang); ParamError for a bad value."""
    given = topic.parse(**raw)
    return (topic.name, tuple((p.name, given.get(p.name, p.default)) for p in topic.params), lang)


def _keep(key: tuple, result, seconds: float) -> None:
    if seconds < CACHE_MIN_S:
        return
    with _lock:
        _cache[key] = result
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)


def _work(topic, raw: dict, lang: str, key: tuple, future: concurrent.futures.Future) -> None:
    """On a worker thread: compute, keep, free the slot, then answer everyone waiting (even if they all left)."""
    result, error = None, None
    try:
        start = time.perf_counter()
        with reporting(_progress[key]):
            result = topic.run(lang=lang, **raw)
        _keep(key, result, time.perf_counter() - start)
    except BaseException as err:  # noqa: BLE001 - handed to the requests waiting for it
        error = err
    with _lock:
        _running.pop(key, None)
        _progress.pop(key, None)
    SLOTS.give_back()  # before the answer, so a client that got its answer finds the slot free
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


async def lesson(topic, raw: dict, lang: str, *, progress_after: float | None = None):
    """The lesson's result (its dataclass; never mutate it, it may be shared). ParamError for bad values,
    Busy when every slot stays taken for LESSON_WAIT_S. With progress_after (seconds): Training, carrying the
    steps done so far, when the lesson is still training models after that long (it goes on in the background;
    a later call with the same values finds it running or done)."""
    key = lesson_key(topic, raw, lang)  # bad values are refused here, before any slot is taken
    deadline = time.monotonic() + LESSON_WAIT_S
    while True:
        with _lock:
            if key in _cache:
                _cache.move_to_end(key)
                return _cache[key]
            future, mine = _running.get(key), False
            if future is None and SLOTS.try_take():
                future, mine = concurrent.futures.Future(), True
                future.set_running_or_notify_cancel()  # a waiter that leaves cannot cancel it for the others
                _running[key] = future
                _progress[key] = Progress()
        if mine:
            threading.Thread(target=_work, args=(topic, raw, lang, key, future), daemon=True,
                             name=f"attnlab-lesson-{topic.name}").start()
        if future is not None:  # ours, or the same lesson being computed for someone else: share it
            if progress_after is None:
                return await asyncio.wrap_future(future)
            return await _or_progress(key, future, progress_after)
        if time.monotonic() >= deadline:
            raise Busy()
        await asyncio.sleep(0.05)


async def _or_progress(key: tuple, future: concurrent.futures.Future, after: float):
    """The result if it comes within `after` seconds, or while nothing trains (a quick lesson, models already
    trained and cached: it would come soon); else Training with the steps so far."""
    waiting = asyncio.wrap_future(future)
    deadline = time.monotonic() + after
    while True:
        done, _ = await asyncio.wait({waiting}, timeout=0.05)
        if done:
            return waiting.result()
        with _lock:
            progress = _progress.get(key)
        if progress is not None and progress.started and time.monotonic() >= deadline:
            raise Training(progress.snapshot())


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


@contextmanager
def heavy() -> Iterator[None]:
    """One of the same slots, for heavy work a request does on its own worker thread (the pipeline's counts
    over seeds, which train up to ten models): Busy when every slot stays taken for LESSON_WAIT_S."""
    deadline = time.monotonic() + LESSON_WAIT_S
    while not SLOTS.try_take():
        if time.monotonic() >= deadline:
            raise Busy()
        time.sleep(0.05)
    try:
        yield
    finally:
        SLOTS.give_back()

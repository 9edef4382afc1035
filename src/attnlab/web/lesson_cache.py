"""The concept lessons' results (/explain/{topic}, /api/explain/{topic}), and the pages' computations kept like them.

A lesson's numbers depend only on its topic, parameters and language, so a result is kept (LRU) and the same
question is answered from memory, and after a restart from disk (lessons/common/disk_cache.py). Each lesson
computes on its own thread, in a lane of web/budget.py (never on the event loop or the request thread pool, so
/api/toy and the other pages keep answering). A request for a lesson already being computed waits for that
computation, not a second one; when every request waiting for it has gone, it stops at its next training step
(train/progress.py: Cancelled) and nothing is kept; a request for it that comes meanwhile waits for it to stop,
then computes it afresh. The lab's shutdown (budget.stop_everything) and the
interpreter's exit stop every lesson still computing.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from attnlab.lessons.common import disk_cache
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import TOPICS
from attnlab.train.progress import Cancelled, Progress
from attnlab.web import budget
from attnlab.web.lanes import Lane
from attnlab.web.warm_gate import WarmProgress, warming

CACHE_SIZE = 32  # lesson results kept
CACHE_MIN_S = 0.2  # only results that took at least this long are kept (the quick ones are recomputed)
# ... or that train: a lesson's second language, or a null read from models trained a moment ago, comes back
# quickly from the models kept in memory, but a fresh process would train them again to compute it

_cache: OrderedDict[tuple, object] = OrderedDict()
_running: dict[tuple, concurrent.futures.Future] = {}
_progress: dict[tuple, Progress] = {}  # the running lessons' training steps (train/progress.py)
_waiters: dict[tuple, int] = {}  # requests waiting for each running computation
_lock = threading.Lock()


def cancel_all(reason: str) -> None:
    """Every lesson still computing stops at its next training step."""
    with _lock:
        for progress in _progress.values():
            progress.cancel(reason)


budget.on_stop(cancel_all)  # the lab's shutdown


def _stop_at_exit(wait_s: float = 20.0) -> None:
    """At interpreter exit, ask the lessons still computing to stop, and wait for them a while: a daemon
    thread inside torch while Python finalizes aborts the process ("terminate called ...")."""
    cancel_all("the process is exiting")
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        with _lock:
            if not _running:
                return
        time.sleep(0.05)


atexit.register(_stop_at_exit)


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


def _work(
    topic,
    raw: dict,
    lang: str,
    key: tuple,
    lane: Lane,
    cost: Cost,
    future: concurrent.futures.Future,
    on_disk: bool,
) -> None:
    """On a worker thread: compute, keep, free the room, then answer everyone waiting (even if they all left),
    then write the result to disk (after answering: a large result takes a moment to write)."""
    result, error = None, None
    start = time.perf_counter()
    try:
        result = budget.compute(lambda: topic.run(lang=lang, **raw), lane, cost.mb, _progress[key])
        seconds = float("inf") if cost.trains else time.perf_counter() - start  # (CACHE_MIN_S)
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
    # decided and located before anyone is answered: what happens next (a test's settings, a folder chosen
    # anew) must not redirect a write that comes after the answer
    root = disk_cache.folder() if on_disk and seconds >= CACHE_MIN_S else None
    future.set_result(result)
    if root is not None:
        disk_cache.store(_on_disk(key), result, root)


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
    stays full for budget.LESSON_WAIT_S. With progress_after (seconds): Training, carrying the steps done so
    far, when the lesson is still training models after that long (it goes on in the background; a later call
    with the same values finds it running or done). With request: stops waiting (Cancelled) when its client has gone."""
    key = lesson_key(topic, raw, lang)  # bad values are refused here, before any slot is taken
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    cost = topic.cost(**raw)
    try:
        lane = budget.lane_for(cost)
    except budget.TooLarge as err:  # said beside the lesson's form, like the lesson's own limits
        raise ParamError(str(err), None, "web.error.too_large", need=f"{err.mb:,.0f}") from None
    on_disk = not topic.names_a_file(raw)  # a file's result is kept in memory only: the file may change
    stored = await asyncio.to_thread(_from_disk, key) if on_disk else disk_cache.MISS  # an earlier run's
    if stored is not disk_cache.MISS:
        return stored
    if warming.get():  # the background warm-up (web/warm.py): its own lane, and it yields to requests
        lane = budget.WARM
    deadline = time.monotonic() + budget.LESSON_WAIT_S
    while True:
        with _lock:
            if key in _cache:
                _cache.move_to_end(key)
                return _cache[key]
            future, mine = _running.get(key), False
            if future is not None and _progress[key].cancelled.is_set():
                # everyone waiting for it left and it stops at its next step: joining it would end in Cancelled
                # (a 503 for a request that does wait), so wait for it to go, then compute afresh
                future = None
            elif future is None:
                budget.admit(lane)
                if lane.try_take(cost.mb):
                    future, mine = concurrent.futures.Future(), True
                    future.set_running_or_notify_cancel()  # a waiter that leaves cannot cancel it for the others
                    progress = WarmProgress(lambda: _waiters.get(key, 0)) if lane is budget.WARM else Progress()
                    _running[key], _progress[key], _waiters[key] = future, progress, 0
            if future is not None:
                _waiters[key] = _waiters.get(key, 0) + 1
        if mine:
            threading.Thread(
                target=_work,
                args=(topic, raw, lang, key, lane, cost, future, on_disk),
                daemon=True,
                name=f"attnlab-lesson-{topic.name}",
            ).start()
        if future is not None:  # ours, or the same lesson being computed for someone else: share it
            if progress_after is None:
                return await budget.wait_for(future, request, on_gone=lambda: _leave(key))
            return await _or_progress(key, future, progress_after, request)
        if time.monotonic() >= deadline:
            raise budget.Busy(lane=lane.name)
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
            waiting.add_done_callback(budget.quietly)


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


def remembered(
    name: str,
    settings: dict,
    compute: Callable,
    *,
    lang: str | None = None,
    source: str | None = None,
    min_s: float | None = None,
):
    """compute()'s result for a page's computation that is not a concept lesson (/real's sentence, its
    coreference and embeddings), kept like a lesson's: in memory, and on disk when it took CACHE_MIN_S or more
    (written on another thread, so the page does not wait for it). `settings` (plain values) and `lang` must
    say everything the result depends on; `source`, the lesson folder whose code computes it. The caller holds
    its lane (budget.hold()); compute's errors pass through. `min_s` replaces CACHE_MIN_S for a result whose first
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
        where = disk_cache.folder()  # now, not when the thread runs
        threading.Thread(
            target=disk_cache.store, args=(on_disk, result, where), daemon=True, name="attnlab-store"
        ).start()
    return result

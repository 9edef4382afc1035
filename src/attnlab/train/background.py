"""Training in a background thread, for the web lab: events kept in order, a stop switch, a status.

The web page starts a run, then reads its events (server-sent events) from any point, as often as it
likes; a late reader gets the whole curve. Only finished runs are evicted when too many are kept.

One limit for every way to start a run: `reserve()` a slot first (cheap; raises `Busy` when `max_training`
runs are training or being built), build the model, then `add(bg, slot=slot)`. A refusal costs no model.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

from attnlab.train.run import Run

STATUSES = ("training", "stopping", "stopped", "done", "failed")
PACE_BUDGET_S = 60.0  # all of a run's pauses together (5000 steps at 200 ms would hold a slot for 17 minutes)
MAX_RUN_S = 600.0  # a run stops itself after this long, like a stop request (the largest model is slow on a CPU)


@dataclass
class BackgroundRun:
    id: str
    run: Run
    settings: dict  # what was asked for (corpus, sizes, steps, lr, seed ...)
    before: object = None  # the untrained model's step ④ (a lesson dataclass), computed before step 1
    pace: float = 0.0  # seconds to wait after each step, so a learner can watch a tiny model learn
    pace_budget: float = PACE_BUDGET_S  # longer runs pause less per step: pace * steps <= this
    max_seconds: float | None = MAX_RUN_S  # then the run stops as if asked (None: no limit)
    events: list[dict] = field(default_factory=list)
    status: str = "training"
    error: str | None = None
    result: object = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _timer: threading.Timer | None = None

    @property
    def finished(self) -> bool:
        return self.status in ("stopped", "done", "failed")

    def start(self) -> BackgroundRun:
        if self.max_seconds is not None:
            self._timer = threading.Timer(self.max_seconds, self.stop)
            self._timer.daemon = True
            self._timer.start()
        self._thread = threading.Thread(target=self._work, name=f"attnlab-train-{self.id}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the loop to end after its current step (the model keeps what it learned so far)."""
        if not self.finished:
            self.status = "stopping"
            self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
        return self.finished

    def _emit(self, event: dict) -> None:
        self.events.append(event)  # list.append is atomic: readers see whole events, in order
        if event["type"] == "step" and self.pace:
            pause = min(self.pace, self.pace_budget / max(1, self.run.trainer.cfg.steps))
            self._stop.wait(pause)  # a stop request cuts the pause short

    def _work(self) -> None:
        try:
            self.result = self.run.trainer.run(callback=self._emit, should_stop=self._stop.is_set)
            self.status = "stopped" if self.result.stopped else "done"
        except Exception as err:  # noqa: BLE001 - reported to the page, not lost in a thread
            self.error = f"{type(err).__name__}: {err}"
            self.events.append({"type": "failed", "message": self.error})
            self.status = "failed"
        finally:
            if self._timer is not None:
                self._timer.cancel()


class Busy(RuntimeError):
    """Every training slot is taken; try again in about `retry_after` seconds."""

    def __init__(self, message: str, retry_after: int = 5):
        super().__init__(message)
        self.retry_after = retry_after


class Slot:
    """A reserved training slot: handed to `Registry.add`, or given back when the `with` block ends unused."""

    def __init__(self, registry: Registry):
        self._registry, self.used = registry, False

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def release(self) -> None:
        """Give the slot back unless a run holds it (then nothing happens; the run frees it when it ends)."""
        self._registry._release(self)


class Registry:
    """The runs of one server, by id; at most `max_runs` kept (finished ones are dropped oldest first)."""

    def __init__(self, max_runs: int = 8, max_training: int = 2):
        self.max_runs, self.max_training = max_runs, max_training
        self._runs: OrderedDict[str, BackgroundRun] = OrderedDict()
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        self._reserved = 0  # slots handed out whose model is still being built

    def new_id(self) -> str:
        return f"{next(self._counter)}-{uuid.uuid4().hex[:8]}"

    def training(self) -> list[BackgroundRun]:
        return [r for r in self._runs.values() if not r.finished]

    def reserve(self) -> Slot:
        """A training slot, or `Busy` at once when runs training plus slots reserved reach `max_training`."""
        with self._lock:
            if len(self.training()) + self._reserved >= self.max_training:
                raise Busy(f"{self.max_training} runs are already training; wait for one to finish or stop one")
            self._reserved += 1
            return Slot(self)

    def _release(self, slot: Slot) -> None:
        with self._lock:
            if not slot.used:
                slot.used = True
                self._reserved -= 1

    def add(self, bg: BackgroundRun, *, slot: Slot | None = None) -> BackgroundRun:
        """Keep `bg` and start it, in `slot` (from `reserve()`) or in a free slot (else `Busy`)."""
        with self._lock:
            if slot is not None and not slot.used:
                slot.used = True  # the run takes the slot's place in the count, under the same lock
                self._reserved -= 1
            elif len(self.training()) + self._reserved >= self.max_training:
                raise Busy(f"{self.max_training} runs are already training; wait for one to finish or stop one")
            self._runs[bg.id] = bg
            while len(self._runs) > self.max_runs:
                oldest = next((k for k, r in self._runs.items() if r.finished), None)
                if oldest is None:
                    break
                del self._runs[oldest]
            return bg.start()  # under the lock, so the run counts as training before the next reserve()

    def get(self, run_id: str) -> BackgroundRun | None:
        return self._runs.get(run_id)

    def remove(self, run_id: str) -> BackgroundRun | None:
        """Forget a run (DELETE): its id no longer answers. Stop it first; a running thread is not killed."""
        with self._lock:
            return self._runs.pop(run_id, None)


def wait_all(registry: Registry, timeout: float = 30.0) -> None:
    """Stop and join every run (used when the server shuts down, and by tests)."""
    deadline = time.monotonic() + timeout
    for bg in list(registry._runs.values()):
        bg.stop()
        bg.wait(max(0.0, deadline - time.monotonic()))

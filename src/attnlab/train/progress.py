"""How far a long computation has got (models trained step by step), for a page that shows it while it runs.

A lesson's training loop calls `report(name, step, steps)`. The web's lesson worker thread hands a `Progress`
to receive the reports (`reporting(p)`); anywhere else (the CLI, tests, a notebook) they go nowhere and cost
one attribute lookup. Thread-local, because the web computes several lessons at once, each on its own thread.

The same reports are where a computation nobody waits for any more stops: the web calls `Progress.cancel()`
when every client that asked for it has gone, and the next `report()` (or `check()`, in a loop that reports
nothing) raises `Cancelled` on the computing thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_here = threading.local()


class Cancelled(Exception):
    """Raised inside a computation at its next step once nobody waits for its result."""


class Progress:
    """Steps done of each model a computation trains, in the order the models were first reported."""

    def __init__(self) -> None:
        self._models: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()
        self.cancelled = threading.Event()
        self.why = "nobody waits for this computation any more"

    def cancel(self, why: str | None = None) -> None:
        """Stop the computation at its next report() or check(), saying `why`."""
        self.why = why or self.why
        self.cancelled.set()

    def update(self, name: str, step: int, steps: int) -> None:
        with self._lock:
            self._models[name] = (step, steps)

    def snapshot(self) -> list[dict]:
        """[{"name", "step", "steps"}, ...]: what the page shows."""
        with self._lock:
            return [{"name": n, "step": s, "steps": total} for n, (s, total) in self._models.items()]

    @property
    def started(self) -> bool:
        with self._lock:
            return bool(self._models)


@contextmanager
def reporting(progress: Progress) -> Iterator[Progress]:
    """Within the block, this thread's report() calls update `progress`."""
    before = getattr(_here, "progress", None)
    _here.progress = progress
    try:
        yield progress
    finally:
        _here.progress = before


def report(name: str, step: int, steps: int) -> None:
    """Model `name` has done `step` of its `steps` training steps (0 before the first). Cancelled when the
    computation was cancelled."""
    progress = getattr(_here, "progress", None)
    if progress is not None:
        check()
        progress.update(name, step, steps)


def check() -> None:
    """A point where this thread's computation may stop: Cancelled once it was cancelled (no-op elsewhere)."""
    progress = getattr(_here, "progress", None)
    if progress is not None and progress.cancelled.is_set():
        raise Cancelled(progress.why)


__all__ = ["Cancelled", "Progress", "check", "reporting", "report"]

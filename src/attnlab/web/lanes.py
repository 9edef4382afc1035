"""A lane of the budget (web/budget.py): a counting gate with a memory allowance."""

from __future__ import annotations

import threading


class Lane:
    """A counting gate with a memory allowance that works from any event loop or thread (tests run several
    servers in one process)."""

    def __init__(self, name: str, size: int, memory_mb: float = float("inf"), wait_s: float | None = None):
        self.name, self.size, self.memory_mb, self.wait_s = name, size, memory_mb, wait_s
        self.used, self.held_mb = 0, 0.0
        self._lock = threading.Lock()

    def try_take(self, mb: float = 0.0) -> bool:
        with self._lock:
            if self.used >= self.size or (self.used and self.held_mb + mb > self.memory_mb):
                return False
            self.used, self.held_mb = self.used + 1, self.held_mb + mb
            return True

    def give_back(self, mb: float = 0.0) -> None:
        with self._lock:
            self.used, self.held_mb = self.used - 1, max(0.0, self.held_mb - mb)

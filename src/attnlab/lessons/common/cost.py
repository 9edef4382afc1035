"""What a lesson will cost at given values, known before it allocates anything: the web uses it to pick the
lane a computation waits in and to count its memory against the server's budget (web/budget.py).

A lesson's lesson.py may define `cost(p) -> Cost` (p: every parameter, parsed, defaults filled in). It does the
checks the lesson would do before allocating (a value too large for memory, a bad text) and raises the same
ParamError, so a bad request is refused before it waits for anything. A lesson without one costs DEFAULT.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 2**20


@dataclass(frozen=True)
class Cost:
    mb: float  # the memory it allocates at its peak, MiB (an estimate from the values, erring high)
    trains: bool = False  # it trains models: seconds to minutes, and stoppable at every step

    @classmethod
    def of_bytes(cls, n_bytes: float, *, trains: bool = False, extra_mb: float = 0.0) -> Cost:
        return cls(round(n_bytes / MIB + extra_mb, 1), trains)


DEFAULT = Cost(16.0)  # a lesson of a few small tensors (the toy sizes every page starts with)

__all__ = ["Cost", "DEFAULT", "MIB"]

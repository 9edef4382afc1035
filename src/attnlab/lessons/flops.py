"""torch's FlopCounterMode, one count at a time.

FlopCounterMode attributes FLOPs to modules through module hooks that torch registers process-wide, so two
counts running at once on the web app's threads can read each other's modules (a lesson's "formula equals
counter" check then fails for no reason of its own). Every count in the lab goes through `flop_counter()`.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

_LOCK = threading.Lock()


@contextmanager
def flop_counter():
    """`with flop_counter() as counter:` a FlopCounterMode(display=False) that no other thread shares."""
    from torch.utils.flop_counter import FlopCounterMode

    with _LOCK, FlopCounterMode(display=False) as counter:
        yield counter

"""torch's FlopCounterMode, one count at a time.

FlopCounterMode attributes FLOPs to modules through module hooks that torch registers process-wide, so two
counts running at once on the web app's threads read each other's modules (a lesson's "formula equals
counter" check then failed for no reason of its own), and so can any other thread's forward pass. The lab
therefore reads only totals and op names (thread-local), and counts one at a time through `flop_counter()`.
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

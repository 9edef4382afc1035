"""SIGTERM stops a long command as Ctrl+C does: `kill`, `timeout` and systemd send it, and a command that ended
silently on it would lose what Ctrl+C keeps. Inside `terminating()`, SIGTERM raises Terminated, a
KeyboardInterrupt, so the command's one `except KeyboardInterrupt` keeps what is done, says so, and exits with
`exit_code(err)`: 130 after Ctrl+C, 143 after SIGTERM (128 + the signal's number, as a shell reports it)."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived."""


def _raise(signum, frame):
    raise Terminated


@contextmanager
def terminating():
    """SIGTERM raises Terminated inside the block (signals are caught on the main thread only; elsewhere this
    changes nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def exit_code(err: KeyboardInterrupt) -> int:
    return 128 + (signal.SIGTERM if isinstance(err, Terminated) else signal.SIGINT)

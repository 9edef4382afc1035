"""Running the lab with uvicorn: in the foreground (`attnlab serve`) or in a background thread (tests, benchmarks)."""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from attnlab.lessons.common.disk_cache import lab_version
from attnlab.train.background import wait_all
from attnlab.web.app import create_app
from attnlab.web.budget import stop_everything
from attnlab.web.protocol import LabH11Protocol


def bind(host: str = "127.0.0.1", port: int = 8000) -> socket.socket:
    """A listening socket on host:port (port 0 = any free port); OSError with the reason when it is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


GRACE_S = 5  # after a shutdown signal, requests still running get this long before they are cancelled


class LabServer(uvicorn.Server):
    """uvicorn's server that, on SIGTERM or Ctrl+C, first ends the event streams and stops training runs:
    uvicorn alone waits for every open connection, and an event stream stays open as long as its run."""

    def handle_exit(self, sig, frame) -> None:
        try:
            stop_everything(self.config.app)
        finally:  # whatever happens there, the server still stops
            super().handle_exit(sig, frame)


def _config(app, log_level: str = "warning", grace: float | None = GRACE_S) -> uvicorn.Config:
    return uvicorn.Config(
        app, log_level=log_level, lifespan="off", timeout_graceful_shutdown=grace, http=LabH11Protocol
    )


STOP_S = 4.5  # `attnlab serve` is gone this long after SIGTERM or Ctrl+C, done or not (5 s promised; a margin)


def leave(code: int) -> None:
    """End the process now with `code`, after flushing what it printed. os._exit, not sys.exit: lessons
    compute on daemon threads inside torch, and Python finalizing under them aborts the process
    ("terminate called without an active exception", exit 134)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, RuntimeError):  # a closed pipe; or a signal came in mid-write (reentrant)
            pass
    os._exit(code)


class Foreground(LabServer):
    """`attnlab serve`'s server. After SIGTERM (exit 0) or Ctrl+C (exit 130) it stops as LabServer does, and the
    process leaves within STOP_S even if a request still computes; a second signal leaves at once.
    uvicorn itself would re-raise the signal once shut down: a KeyboardInterrupt traceback for Ctrl+C."""

    exit_code = 0
    _deadline: float | None = None

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        # kept until the process leaves (serve below), so a signal during the last wait is handled too
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self.handle_exit)
        yield

    def handle_exit(self, sig, frame) -> None:
        if self._deadline is not None:
            leave(self.exit_code)
        self.exit_code = 130 if sig == signal.SIGINT else 0
        self._deadline = time.monotonic() + STOP_S
        watchdog = threading.Timer(STOP_S, self._give_up)
        watchdog.daemon = True
        watchdog.start()
        super().handle_exit(sig, frame)

    def _give_up(self) -> None:
        busy = len(self.server_state.tasks)
        if busy:
            print(f"attnlab serve: stopped; {busy} request(s) still running were dropped", file=sys.stderr)
        leave(self.exit_code)

    def time_left(self) -> float:
        return GRACE_S if self._deadline is None else max(0.0, self._deadline - time.monotonic())


def serve(
    sock: socket.socket,
    log_level: str = "warning",
    hosts: tuple[str, ...] = (),
    runs_dir=None,
    warm: bool = False,
    data_dir=None,
) -> None:
    """Serve the lab on an already bound socket until SIGTERM or Ctrl+C; then streams end, runs stop, and the
    process leaves (exit 0 or 130; this function does not return).
    It answers to the socket's address, the localhost names, and `hosts` (the name it was asked to listen on,
    e.g. `attnlab serve --host lab.local`). `runs_dir`: the checkpoints /runs opens (`attnlab serve --runs`);
    `data_dir`: the corpora /scale offers by name (`attnlab serve --data`).
    `warm`: compute the default pages in the background, yielding to every request (web/warm.py)."""
    app = create_app(allowed_hosts=(sock.getsockname()[0], *hosts), runs_dir=runs_dir, data_dir=data_dir)
    server = Foreground(_config(app, log_level, grace=None))  # no cancelling: the deadline ends what is left
    if warm:
        from attnlab.web.warm import start

        start(app)  # stopped with everything else (stop_everything)
    else:  # the disk cache's version digest, read once, before the first visit needs it
        threading.Thread(target=lab_version, daemon=True, name="attnlab-version").start()
    try:
        server.run(sockets=[sock])
        stop_everything(app)
        from attnlab.web import runs

        wait_all(runs.RUNS, timeout=server.time_left())
    except Exception as err:  # noqa: BLE001 - said in one line, then the same clean exit
        print(f"attnlab serve: stopped by an error: {type(err).__name__}: {err}", file=sys.stderr)
        leave(1)
    leave(server.exit_code)  # never a Python shutdown under torch's threads


@contextmanager
def background(app=None, host: str = "127.0.0.1") -> Iterator[str]:
    """Run the lab on a free loopback port in a daemon thread; yields its base URL, stops it on exit."""
    sock = bind(host, 0)
    app = app or create_app(allowed_hosts=(host, sock.getsockname()[0]))
    server = LabServer(_config(app))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="attnlab-server")
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the lab's server did not start")
        time.sleep(0.02)
    try:
        yield url_of(sock)
    finally:
        stop_everything(app)
        server.should_exit = True
        thread.join(timeout=5)
        sock.close()

"""Running the lab with uvicorn: in the foreground (`attnlab serve`) or in a background thread (tests, benchmarks)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from attnlab.train.background import wait_all
from attnlab.web.app import create_app
from attnlab.web.budget import stop_everything


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
        stop_everything(self.config.app)
        super().handle_exit(sig, frame)


def _config(app, log_level: str = "warning") -> uvicorn.Config:
    return uvicorn.Config(app, log_level=log_level, lifespan="off", timeout_graceful_shutdown=GRACE_S)


def serve(sock: socket.socket, log_level: str = "warning", hosts: tuple[str, ...] = (), runs_dir=None) -> None:
    """Serve the lab on an already bound socket until interrupted (SIGINT or SIGTERM): streams end, runs stop.
    It answers to the socket's address, the localhost names, and `hosts` (the name it was asked to listen on,
    e.g. `attnlab serve --host lab.local`). `runs_dir`: the checkpoints /runs opens (`attnlab serve --runs`)."""
    app = create_app(allowed_hosts=(sock.getsockname()[0], *hosts), runs_dir=runs_dir)
    LabServer(_config(app, log_level)).run(sockets=[sock])
    # Reached when the server was told to exit; after a signal uvicorn raises it again once it has shut
    # down (exit status 128 + signal), and handle_exit has already stopped the runs.
    stop_everything(app)
    from attnlab.web import runs

    wait_all(runs.RUNS, timeout=GRACE_S)


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

"""Running the lab with uvicorn: in the foreground (`attnlab serve`) or in a background thread (tests, benchmarks)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from attnlab.web.app import create_app


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


def serve(sock: socket.socket, log_level: str = "warning", hosts: tuple[str, ...] = ()) -> None:
    """Serve the lab on an already bound socket until interrupted; it answers to the socket's address, the
    localhost names, and `hosts` (the name it was asked to listen on, e.g. `attnlab serve --host lab.local`)."""
    app = create_app(allowed_hosts=(sock.getsockname()[0], *hosts))
    config = uvicorn.Config(app, log_level=log_level, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


@contextmanager
def background(app=None, host: str = "127.0.0.1") -> Iterator[str]:
    """Run the lab on a free loopback port in a daemon thread; yields its base URL, stops it on exit."""
    sock = bind(host, 0)
    app = app or create_app(allowed_hosts=(host, sock.getsockname()[0]))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
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
        server.should_exit = True
        thread.join(timeout=5)
        sock.close()

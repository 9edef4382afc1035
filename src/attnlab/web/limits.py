"""What a request must satisfy before the lab reads it: a Host the server answers to, a same-site origin for
anything that changes state, and a body of at most MAX_BODY bytes. Pure ASGI middleware, so nothing is read
(or buffered) before the checks.

- Host: only the names the server was bound to plus localhost, 127.0.0.1 and [::1], with any port; else 400.
  A web page cannot then reach the lab through a DNS name of its own that points at 127.0.0.1 (DNS
  rebinding). Bound to a wildcard address (0.0.0.0, ::), any IP address and this machine's name are accepted.
- Origin: POST, PUT, PATCH and DELETE from another site (Sec-Fetch-Site, Origin or Referer says so) get 403,
  so another website cannot start training. Clients that send none of them (curl, scripts) are served.
- Heavy work: a GET from another site (Sec-Fetch-Site: cross-site or same-site) is marked, and web/budget.py
  refuses to start heavy computations for it (403); everything else it may read.
- Body: Content-Length over MAX_BODY gets 413 before anything is read; a body without one is counted as it
  streams in and refused with 413 the moment it passes MAX_BODY.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from attnlab.web.budget import asked_from
from attnlab.web.errors import error_response

MAX_BODY = 1 << 20  # 1 MiB: the largest honest request (a toy matrix, a form) is a few kB
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
TEST_HOSTS = ("testserver",)  # the name Starlette's TestClient sends (in-process apps only; see create_app)
WILDCARDS = ("", "0.0.0.0", "::")
UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def split_host(value: str) -> tuple[str, int | None]:
    """'Example.com:8000' -> ('example.com', 8000); '[::1]:8000' -> ('::1', 8000); a bad port -> None."""
    value = value.strip().lower()
    if value.startswith("["):  # [IPv6]:port
        name, _, rest = value[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif value.count(":") == 1:
        name, _, port_text = value.partition(":")
    else:  # a bare name, or a bare IPv6 address
        name, port_text = value, ""
    port = int(port_text) if port_text.isdigit() else None
    return name.rstrip("."), port


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostPolicy:
    """Which Host names the lab answers to."""

    def __init__(self, hosts: Iterable[str]):
        hosts = [h.strip().lower().strip("[]").rstrip(".") for h in hosts]
        self.any_ip = any(h in WILDCARDS for h in hosts)
        self.names = set(LOCAL_HOSTS) | {h for h in hosts if h not in WILDCARDS}
        if self.any_ip:  # reachable from the network: its addresses, and the name this machine goes by
            self.names |= {socket.gethostname().lower(), socket.getfqdn().lower()}

    def allows(self, host_header: str) -> bool:
        name, _ = split_host(host_header)
        return name in self.names or (self.any_ip and _is_ip(name))


def _origin_of(url: str, default_scheme: str) -> tuple[str, int | None]:
    parts = urlsplit(url)
    name, port = split_host(parts.netloc.rpartition("@")[2])
    return name, port or DEFAULT_PORTS.get(parts.scheme or default_scheme)


def cross_site(headers: Headers, scheme: str) -> str | None:
    """Why this request comes from another site, or None when it is same-origin or says nothing (curl)."""
    host = headers.get("host", "")
    own = split_host(host)
    own = (own[0], own[1] or DEFAULT_PORTS.get(scheme))
    fetch_site = headers.get("sec-fetch-site", "").lower()
    if fetch_site in ("cross-site", "same-site"):
        return f"Sec-Fetch-Site: {fetch_site}"
    origin = headers.get("origin")
    if origin is not None:
        if origin.strip().lower() == "null":  # sandboxed or privacy-stripped: only the browser's own word counts
            return None if fetch_site == "same-origin" else "Origin: null"
        return None if _origin_of(origin, scheme) == own else f"Origin: {origin[:100]}"
    referer = headers.get("referer")
    if referer:
        return None if _origin_of(referer, scheme) == own else f"Referer: {referer[:100]}"
    return None


async def _answer(scope: Scope, receive: Receive, send: Send, status: int, message: str, key: str) -> None:
    response = error_response(Request(scope), status, message, key=key)
    await response(scope, receive, send)


class RequestLimits:
    """The checks in this module's docstring, in that order, around `app`."""

    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str], max_body: int = MAX_BODY):
        self.app, self.hosts, self.max_body = app, HostPolicy(allowed_hosts), max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host")
        if host is not None and not self.hosts.allows(host):
            shown = host[:100].encode("ascii", "backslashreplace").decode()
            await _answer(
                scope,
                receive,
                send,
                400,
                f"this lab does not answer to the host name {shown!r}; open it at http://127.0.0.1:PORT/ "
                "(or the address `attnlab serve` printed)",
                "web.error.host",
            )
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Reading is allowed from anywhere, but web/budget.py refuses heavy work that another site asks for.
        site = headers.get("sec-fetch-site", "").lower()
        asked_from.set(f"Sec-Fetch-Site: {site}" if site in ("cross-site", "same-site") else None)
        if scope["method"] in UNSAFE_METHODS:
            why = cross_site(headers, scope.get("scheme", "http"))
            if why:
                await _answer(
                    scope,
                    receive,
                    send,
                    403,
                    f"refused: this request comes from another site ({why}); the lab only accepts "
                    "changes sent from its own pages",
                    "web.error.cross_site",
                )
                return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            await _answer(scope, receive, send, 413, self.too_large, "web.error.413")
            return
        await self.app(scope, self._counted(receive), send)

    @property
    def too_large(self) -> str:
        return f"request body too large: the lab accepts at most {self.max_body} bytes ({self.max_body >> 10} KiB)"

    def _counted(self, receive: Receive) -> Receive:
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:
                    # An HTTPException: FastAPI's body reading passes it on, and the lab's handler answers 413.
                    raise HTTPException(413, self.too_large)
            return message

        return counted

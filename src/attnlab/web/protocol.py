"""The lab's HTTP/1.1 connections: uvicorn's h11 protocol, plus a deadline on the request headers.

uvicorn times out only idle keep-alive connections. A client that connects and sends nothing, or half a
request line and then stalls, would keep its connection (and a slot of the server) forever. Here a connection
whose request headers are not complete HEADER_TIMEOUT_S after it opened (or after the first bytes of a later
request) is closed. Once the headers are in, the clock stops: slow bodies (bounded by limits.py) and long
responses such as the event streams are not timed here.

The lab pins h11 (what uvicorn's "auto" picks when httptools is not installed, as in the lab's dependencies).
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 30.0  # generous: a slow link sends a request's headers in well under a second


class LabH11Protocol(H11Protocol):
    """H11Protocol that closes a connection whose request headers take longer than HEADER_TIMEOUT_S."""

    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch_headers()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        super().connection_lost(exc)

    def _waiting_for_headers(self) -> bool:
        # h11 leaves IDLE when a whole request line and headers have arrived (a partial one stays buffered)
        return self.conn.their_state is h11.IDLE and not self.transport.is_closing()

    def _watch_headers(self) -> None:
        """Run the clock while a request's headers are incomplete, stop it once they are in."""
        if not self._waiting_for_headers():
            self._stop_header_timer()
        elif self._header_timer is None and self.timeout_keep_alive_task is None:
            # between requests, uvicorn's keep-alive timeout closes an idle connection; the headers' clock
            # starts with the connection, or with the first bytes of the next request (they stop keep-alive)
            self._header_timer = self.loop.call_later(HEADER_TIMEOUT_S, self._headers_too_slow)

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self._waiting_for_headers():
            self.transport.close()

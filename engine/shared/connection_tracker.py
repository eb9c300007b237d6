"""Every connection a control server has open, from the moment its transport exists.

A connection accepted in a server's last moments may never reach the coroutine that serves
it; the server still has to close it on stop, or its client waits for good. The set is
locked so that stop() can end the connections from the main thread when the server's loop
is stuck.

Tested in: tests/engine/runtime/test_control_server_shutdown.py"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable


class ConnectionTracker:
    def __init__(self):
        self._transports: set[asyncio.BaseTransport] = set()
        self._lock = threading.Lock()

    def add(self, transport: asyncio.BaseTransport) -> None:
        with self._lock:
            self._transports.add(transport)

    def discard(self, transport: asyncio.BaseTransport) -> None:
        with self._lock:
            self._transports.discard(transport)

    def open_transports(self) -> list[asyncio.BaseTransport]:
        with self._lock:
            return list(self._transports)

    def abort_all(self) -> None:
        """On the loop's thread: close every connection still open; each transport closes
        its socket a loop turn later."""
        for transport in self.open_transports():
            transport.abort()

    def shut_down_all(self) -> None:
        """From any thread: end every open connection (its client sees the end of the
        stream); the sockets themselves close with their transports or the process."""
        for transport in self.open_transports():
            sock = transport.get_extra_info("socket")
            try:
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class TrackedStreamProtocol(asyncio.StreamReaderProtocol):
    """A stream protocol that puts its transport in `tracker` from connection_made, before
    `serve` (the client's coroutine) first runs, until the connection is lost."""

    def __init__(self, tracker: ConnectionTracker, serve: Callable):
        super().__init__(asyncio.StreamReader(limit=1 << 16), serve)
        self._tracker = tracker
        self._tracked: asyncio.BaseTransport | None = None

    def connection_made(self, transport) -> None:
        self._tracked = transport
        self._tracker.add(transport)
        super().connection_made(transport)

    def connection_lost(self, exc) -> None:
        if self._tracked is not None:
            self._tracker.discard(self._tracked)
        super().connection_lost(exc)

"""The app's side of one engine connection, shaped for a UI that must never wait.

A reader thread owns the socket's input: pushes (telemetry, events, frames) go into `inbox`,
which the UI drains on its own clock; replies wake the thread that sent the request.
Requests block only their caller, which in the app is always a worker thread.
"""

from __future__ import annotations

import itertools
import json
import queue
import socket
import threading
import time
from pathlib import Path

MAX_LINE = 1 << 20


class LinkError(RuntimeError):
    """The engine could not be reached, hung up, or did not reply in time."""


class EngineLink:
    def __init__(self, socket_path: str | Path):
        self.socket_path = Path(socket_path)
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.last_heard = 0.0  # time.monotonic() of the last line from the engine
        self.closed_reason: str | None = None
        self._sock: socket.socket | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, list] = {}  # id -> [threading.Event, reply]
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def connect(self, timeout: float = 5.0) -> dict:
        """Connect, start the reader and return the engine's `hello` reply."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(str(self.socket_path))
        except OSError as e:
            sock.close()
            raise LinkError(f"cannot connect to {self.socket_path}: {e.strerror or e}") from None
        sock.settimeout(None)
        self._sock = sock
        self.last_heard = time.monotonic()
        self._reader = threading.Thread(target=self._read_loop, name="engine-link", daemon=True)
        self._reader.start()
        return self.request("hello", {"client": "puffer-tui app"}, timeout=timeout)

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    @property
    def connected(self) -> bool:
        return self._sock is not None and self.closed_reason is None

    # -- requests -------------------------------------------------------------------------

    def request(self, cmd: str, args: dict | None = None, timeout: float = 3.0) -> dict:
        """Send one request and wait for its reply ({"ok": ..., ...}); LinkError if none."""
        sock = self._sock
        if sock is None or self.closed_reason:
            raise LinkError(self.closed_reason or "not connected")
        rid = next(self._ids)
        waiter = [threading.Event(), None]
        with self._lock:
            self._pending[rid] = waiter
        line = json.dumps({"id": rid, "cmd": cmd, "args": args or {}}) + "\n"
        try:
            with self._lock:
                sock.sendall(line.encode())
            if not waiter[0].wait(timeout):
                raise LinkError(f"no reply to {cmd!r} within {timeout:g} s")
        except OSError as e:
            raise LinkError(f"engine connection lost: {e.strerror or e}") from None
        finally:
            with self._lock:
                self._pending.pop(rid, None)
        if waiter[1] is None:
            raise LinkError(self.closed_reason or "engine connection lost")
        return waiter[1]

    # -- reader ---------------------------------------------------------------------------

    def _read_loop(self) -> None:
        buffer = b""
        reason = "the engine closed the connection"
        try:
            while True:
                sock = self._sock
                if sock is None:
                    reason = "disconnected"
                    break
                chunk = sock.recv(1 << 16)
                if not chunk:
                    break
                self.last_heard = time.monotonic()
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    self._dispatch(line)
                if len(buffer) > MAX_LINE:
                    reason = "the engine sent an oversized line"
                    break
        except OSError as e:
            reason = f"engine connection lost: {e.strerror or e}"
        self.closed_reason = reason
        with self._lock:
            for waiter in self._pending.values():
                waiter[0].set()  # wake requesters; their reply stays None
        self.inbox.put({"type": "link_closed", "reason": reason})

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        if "id" in message and "type" not in message:
            with self._lock:
                waiter = self._pending.get(message["id"])
            if waiter is not None:
                waiter[1] = message
                waiter[0].set()
            return
        self.inbox.put(message)

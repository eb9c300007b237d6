"""A small client for the engine's control socket (docs/protocol.md).

From a thread (blocking calls):

    with EngineClient.connect(run_dir) as client:      # a run dir or a control.sock path
        hello = client.hello                           # the engine's hello reply
        client.call("pause")                           # -> reply dict; EngineCommandError if ok is false
        reply = client.request("set", key="train.learning_rate", value=1e-3)   # reply, ok or not
        for push in client.pushes(timeout=1.0):        # telemetry / event / frame dicts
            ...

Callbacks: `client.on_push(fn)` calls `fn(push)` on the reader thread for every push (a Textual
app would hop back with `app.call_from_thread`). When the engine goes away, pending requests
fail with EngineDisconnected, `pushes()` ends and `client.closed` is set.

Tested in: tests/engine/runtime/test_control_server.py (against the engine's server),
tests/engine/runtime/test_control_server_shutdown.py, tests/app/test_app_engine.py
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from puffer_tui.engine.shared.protocol import MAX_MESSAGE, MessageType, encode_request, split_lines
from puffer_tui.engine.shared.run_dir import SOCKET_FILE, unix_address

DEFAULT_TIMEOUT = 30.0  # seconds for a reply (a checkpoint waits for the end of an epoch)
PUSH_QUEUE_LIMIT = 10_000  # unread pushes kept for pushes(); older ones are dropped
_END = object()


class EngineClientError(RuntimeError):
    """The engine could not be reached or did not answer in time."""


class EngineDisconnected(EngineClientError):
    """The connection closed (the engine exited or crashed)."""


class EngineCommandError(EngineClientError):
    """The engine answered `ok: false`; the text is its error."""

    def __init__(self, cmd: str, reply: dict):
        super().__init__(f"{cmd}: {reply.get('error', 'failed')}")
        self.reply = reply


def resolve_socket(target: str | os.PathLike) -> Path:
    path = Path(target)
    return path / SOCKET_FILE if path.is_dir() else path


class EngineClient:
    """One connection to an engine; thread-safe. Use `EngineClient.connect(...)`."""

    def __init__(self, sock: socket.socket, path: Path):
        self.path = path
        self.hello: dict = {}
        self.closed = threading.Event()
        self.close_reason: str | None = None
        self._sock = sock
        self._ids = itertools.count(1)
        self._send_lock = threading.Lock()
        self._pending: dict[int, list] = {}  # id -> [threading.Event, reply or None]
        self._pending_lock = threading.Lock()
        self._callbacks: list[Callable[[dict], None]] = []
        self._pushes: queue.Queue = queue.Queue()
        self._push_lock = threading.Lock()  # orders subscribe() against the reader's pushes
        self._subscriber: tuple | None = None  # (on_push, on_close) once subscribed
        self._reader = threading.Thread(target=self._read_loop, name="engine-client",
                                        daemon=True)

    @classmethod
    def connect(cls, target: str | os.PathLike, timeout: float = 5.0,
                hello: bool = True) -> EngineClient:
        """Connect to a run dir's (or a socket path's) engine and, by default, say hello."""
        path = resolve_socket(target)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        address, fd = unix_address(path)
        try:
            sock.connect(address)
        except OSError as e:
            sock.close()
            raise EngineClientError(f"cannot connect to the engine at {path}: "
                                    f"{e.strerror or e}") from None
        finally:
            if fd is not None:
                os.close(fd)
        sock.settimeout(None)
        client = cls(sock, path)
        client._reader.start()
        if hello:
            try:
                client.hello = client.call("hello", timeout=timeout, client="puffer-tui")
            except BaseException:
                client.close()
                raise
        return client

    # -- requests -----------------------------------------------------------------------------

    def request(self, cmd: str, timeout: float | None = DEFAULT_TIMEOUT, **args) -> dict:
        """Send `cmd` with `args`, wait for its reply and return it (ok or not)."""
        request_id, waiter = self.send(cmd, **args)
        if not waiter[0].wait(timeout):
            with self._pending_lock:
                self._pending.pop(request_id, None)
            raise EngineClientError(f"{cmd}: no reply from the engine within {timeout:g} s")
        reply = waiter[1]
        if reply is None:
            raise EngineDisconnected(f"{cmd}: the engine disconnected ({self.close_reason})")
        return reply

    def call(self, cmd: str, timeout: float | None = DEFAULT_TIMEOUT, **args) -> dict:
        """Like `request`, but raises EngineCommandError when the engine says ok: false."""
        reply = self.request(cmd, timeout=timeout, **args)
        if not reply.get("ok"):
            raise EngineCommandError(cmd, reply)
        return reply

    def send(self, cmd: str, **args) -> tuple[int, list]:
        """Send without waiting; returns (id, waiter) where waiter[0] is a threading.Event set
        when the reply (waiter[1]) arrives. Most callers want `request` or `call`."""
        if self.closed.is_set():
            raise EngineDisconnected(f"{cmd}: the connection is closed ({self.close_reason})")
        request_id = next(self._ids)
        waiter = [threading.Event(), None]
        with self._pending_lock:
            self._pending[request_id] = waiter
        self.send_raw(encode_request(request_id, cmd, args))
        return request_id, waiter

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (tests use it to send malformed messages)."""
        try:
            with self._send_lock:
                self._sock.sendall(data)
        except OSError as e:
            self._finish(f"send failed: {e}")
            raise EngineDisconnected(f"the engine is gone: {e}") from None

    # -- pushes -----------------------------------------------------------------------------

    def on_push(self, callback: Callable[[dict], None]) -> None:
        """Call `callback(push)` on the reader thread for every push from now on."""
        self._callbacks.append(callback)

    def subscribe(self, on_push: Callable[[dict], None],
                  on_close: Callable[[str], None]) -> None:
        """Hand every push to `on_push` and the end of the connection to `on_close(reason)`,
        on the reader thread, instead of queueing them for `pushes()`. Pushes already queued
        (they arrived since connecting) are handed over first, in order, so none is lost."""
        ended = False  # the end is queued, so the reader will not call on_close: we do
        with self._push_lock:
            while True:
                try:
                    item = self._pushes.get_nowait()
                except queue.Empty:
                    break
                if item is _END:
                    ended = True
                else:
                    on_push(item)
            if ended:
                self._pushes.put(_END)
            self._subscriber = (on_push, on_close)
        if ended:
            on_close(self.close_reason or "connection closed")

    def pushes(self, timeout: float | None = None) -> Iterator[dict]:
        """Pushes in arrival order; ends when the connection closes, or after `timeout` seconds
        without one."""
        while True:
            try:
                item = self._pushes.get(timeout=timeout)
            except queue.Empty:
                return
            if item is _END:
                self._pushes.put(_END)  # let other iterators end too
                return
            yield item

    # -- reader -----------------------------------------------------------------------------

    def _read_loop(self) -> None:
        buffer = b""
        reason = "closed by the engine"
        try:
            while True:
                chunk = self._sock.recv(1 << 16)
                if not chunk:
                    break
                lines, buffer = split_lines(buffer + chunk)
                for line in lines:
                    self._dispatch(json.loads(line))
                if len(buffer) > MAX_MESSAGE:  # the protocol's limit holds both ways
                    reason = f"the engine sent a message over {MAX_MESSAGE} bytes"
                    break
        except (OSError, ValueError) as e:
            reason = f"connection error: {e}"
        self._finish(reason)

    def _dispatch(self, message: dict) -> None:
        if "type" in message and "id" not in message:
            for callback in list(self._callbacks):
                callback(message)
            with self._push_lock:
                if self._subscriber is not None:
                    self._subscriber[0](message)
                    return
                if self._pushes.qsize() >= PUSH_QUEUE_LIMIT:
                    try:
                        self._pushes.get_nowait()  # nobody is reading: keep the newest
                    except queue.Empty:
                        pass
                self._pushes.put(message)
            return
        with self._pending_lock:
            waiter = self._pending.pop(message.get("id"), None)
        if waiter is not None:
            waiter[1] = message
            waiter[0].set()
        else:  # an error about a line we could not attribute (malformed, oversized)
            self._pushes.put({"type": MessageType.REPLY, **message})

    def _finish(self, reason: str) -> None:
        if self.closed.is_set():
            return
        self.close_reason = reason
        self.closed.set()
        with self._pending_lock:
            waiting, self._pending = list(self._pending.values()), {}
        for waiter in waiting:
            waiter[0].set()  # reply stays None: EngineDisconnected in request()
        with self._push_lock:
            subscriber = self._subscriber
            self._pushes.put(_END)
        if subscriber is not None:
            subscriber[1](reason)

    def close(self) -> None:
        # The reason first: the reader, woken by the shutdown, would say "closed by the engine".
        self._finish("closed by the client")
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        if self._reader.is_alive() and threading.current_thread() is not self._reader:
            self._reader.join(2.0)

    def __enter__(self) -> EngineClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

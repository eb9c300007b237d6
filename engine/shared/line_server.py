"""The control protocol's server: an asyncio unix-socket server of JSON lines on its own thread.

Both sockets of the project are one of these: an engine's (engine/runtime/control_server.py:
telemetry, frames, commands queued for the trainer) and a sweep driver's
(engine/sweep/server.py: the trial table, steering). A subclass says what a request does
(`answer`) and, when it pushes on a clock, what each tick sends (`on_tick`); this class does
the rest, the same for both:

- the socket: bound under a temporary name, restricted to 0600, renamed into place; refused
  while another server answers on it; removed on stop;
- the clients: at most MAX_CLIENTS, each line at most MAX_MESSAGE bytes (an oversized one is
  answered and dropped up to its newline), every bad line answered with an error;
- pushes: to every client, or to those subscribed to a topic (`subscribe`); a client that
  falls PUSH_BACKLOG_LIMIT behind misses droppable pushes, one CLIENT_BACKLOG_LIMIT behind is
  disconnected; replies are never dropped;
- replies that come later, from another thread (`defer`); on stop, those still owed are
  answered with an error, and every connection is ended, even when the loop is stuck.

Nothing a client sends can stall the process that owns the server: the loop never waits on
another thread.

Tested in: tests/engine/runtime/test_control_server.py,
tests/engine/runtime/test_control_server_shutdown.py, tests/engine/sweep/test_sweep_server.py
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from puffer_tui.engine.shared.connection_tracker import ConnectionTracker, TrackedStreamProtocol
from puffer_tui.engine.shared.protocol import (
    MAX_MESSAGE,
    RequestError,
    encode,
    error_reply,
    oversized_reply,
    parse_request,
)
from puffer_tui.engine.shared.run_dir import socket_answers, unix_address

PUSH_BACKLOG_LIMIT = 4 << 20  # a client this far behind misses pushes (replies still go)
CLIENT_BACKLOG_LIMIT = 16 << 20  # ...and this far behind is disconnected
MAX_CLIENTS = 32  # more are refused: with the limit above, at most 512 MiB of send buffers


class ServerError(RuntimeError):
    """The server could not start (e.g. another process already serves this socket)."""


class Client:
    """One connection. Subclasses of LineServer keep their own per-client state in a subclass
    of this (`new_client`)."""

    def __init__(self, writer: asyncio.StreamWriter):
        self.writer = writer
        self.topics: set[str] = set()  # the pushes it subscribed to (besides those to all)
        self.pending: dict[object, int] = {}  # deferred replies still owed: token -> request id
        self.closed = False


class LineServer:
    """Serve the protocol on `path`. `known_commands` ({cmd: argument names}) is what requests
    are parsed against; `who` names the serving process in the errors clients read ("engine",
    "sweep driver"); `tick` (seconds) runs `on_tick` that often while clients are connected
    (None: no clock)."""

    def __init__(self, path: str | os.PathLike, known_commands: dict, who: str,
                 tick: float | None = None):
        self.path = Path(path)
        self.known_commands = known_commands
        self.who = who
        self.tick = tick
        self._clients: set[Client] = set()
        self._connections = ConnectionTracker()  # some never reach _serve_client
        self._closing = False  # set by _shutdown: a connection served from now on is closed
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None
        self._main_task: asyncio.Task | None = None
        self._server: asyncio.AbstractServer | None = None
        self._listener: socket.socket | None = None
        self._error: BaseException | None = None

    # -- what a subclass says (on the server's thread) ----------------------------------------

    def answer(self, client: Client, request_id: int, cmd: str, args: dict) -> None:
        """Act on one parsed request and reply (`send`, or `defer` for a later reply); a
        RequestError raised here is sent back as the error reply."""
        raise NotImplementedError

    def on_tick(self) -> None:
        """Every `tick` seconds while a client is connected."""

    def new_client(self, writer: asyncio.StreamWriter) -> Client:
        return Client(writer)

    def client_closed(self, client: Client) -> None:
        """A client is gone (whatever it had asked for can be forgotten)."""

    # -- lifecycle (the owner's thread) -------------------------------------------------------

    def start(self, timeout: float = 10.0) -> None:
        sock = self._bind()
        self._thread = threading.Thread(target=self._run, args=(sock,),
                                        name=f"{self.who.replace(' ', '-')}-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise ServerError(f"the {self.who}'s control server did not start")
        if self._error is not None:
            raise ServerError(f"the {self.who}'s control server failed to start: {self._error}")

    def stop(self, final: dict | None = None, timeout: float = 2.0) -> None:
        """Push `final` to everyone, answer what is still owed, flush, close, remove the socket."""
        loop = self._loop
        if loop is not None and self._thread is not None and self._thread.is_alive():
            future = asyncio.run_coroutine_threadsafe(self._shutdown(final, timeout), loop)
            try:
                future.result(timeout + 1.0)
            except Exception:
                pass
            self._thread.join(timeout)
            if self._thread.is_alive():
                # The loop is stuck (an `answer` that blocks): end the connections from here,
                # so no client waits on a process that is going away.
                self._connections.shut_down_all()
        try:
            if self.path.is_socket():
                self.path.unlink()
        except OSError:
            pass

    def _bind(self) -> socket.socket:
        if self.path.exists():
            if socket_answers(self.path):
                raise ServerError(f"another {self.who} is already serving {self.path}")
        # Bind under a temporary name, restrict it to the owner, then rename it into place, so
        # the socket is never reachable with looser permissions.
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address, fd = unix_address(tmp)
        try:
            sock.bind(address)
        finally:
            if fd is not None:
                os.close(fd)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)
        sock.listen(16)
        sock.setblocking(False)
        return sock

    def _run(self, sock: socket.socket) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main(sock))
        except BaseException as e:  # surfaced by start() if it happens before ready
            self._error = e
            self._ready.set()
        finally:
            loop.close()

    async def _main(self, sock: socket.socket) -> None:
        self._stopping = asyncio.Event()
        self._main_task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        self._listener = sock
        self._server = await loop.create_unix_server(
            lambda: TrackedStreamProtocol(self._connections, self._serve_client), sock=sock)
        self._ready.set()
        try:
            if self.tick is None:
                await self._stopping.wait()
            while not self._stopping.is_set():
                # the stop wakes this at once: a sleep made every stop wait out the tick
                try:
                    async with asyncio.timeout(self.tick):
                        await self._stopping.wait()
                    break
                except TimeoutError:
                    pass
                if self._clients:
                    self.on_tick()
        finally:
            self._server.close()

    async def _shutdown(self, final: dict | None, timeout: float) -> None:
        # Stop accepting, but close the listener only once the connections asyncio already
        # accepted have their transports: asyncio cannot make one for a closed server, and
        # leaves that connection's socket open with nobody serving it (the client hangs).
        # Those connections reach _serve_client, which closes them at once from now on.
        self._closing = True
        asyncio.get_running_loop().remove_reader(self._listener.fileno())
        if final is not None:
            self.broadcast(final)
        for client in list(self._clients):
            for request_id in list(client.pending.values()):
                self.send(client, error_reply(
                    request_id, f"the {self.who} stopped before the command could run"))
            client.pending.clear()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        for client in list(self._clients):
            try:
                await asyncio.wait_for(client.writer.drain(), max(0.0, deadline - loop.time()))
            except (TimeoutError, ConnectionError, OSError):
                pass
            self._close(client)
        await self._finish_tasks(loop.time() + 1.0)
        self._server.close()  # the kernel resets the connections still in the backlog
        # Whatever is still open never reached _serve_client (or outlived it): close it, and
        # give the transports the loop turns in which they close their sockets.
        self._connections.abort_all()
        for _ in range(3):
            await asyncio.sleep(0)
        self._stopping.set()

    async def _finish_tasks(self, deadline: float) -> None:
        """Wait for the connection tasks (accepting, serving) to end, the ones they start
        included; cancel those still running at `deadline`, so nothing is left pending when
        the loop closes."""
        loop = asyncio.get_running_loop()
        skip = {asyncio.current_task(), self._main_task}
        while True:
            others = [t for t in asyncio.all_tasks() if t not in skip]
            if not others:
                return
            remaining = deadline - loop.time()
            if remaining <= 0:
                for task in others:
                    task.cancel()
                await asyncio.wait(others, timeout=0.5)
                return
            await asyncio.wait(others, timeout=remaining)

    # -- pushes (any thread) ------------------------------------------------------------------

    def publish(self, message: dict, droppable: bool = False, topic: str | None = None) -> None:
        """Push `message` to every client (`topic` None) or to those subscribed to `topic`."""
        self.call_soon(self.broadcast, message, droppable, topic)

    def call_soon(self, fn, *args) -> None:
        """Run `fn(*args)` on the server's thread (dropped once the server has stopped)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:  # the loop closed in between
                pass

    # -- the clients (the server's thread) ----------------------------------------------------

    @property
    def clients(self) -> list[Client]:
        return list(self._clients)

    def subscribe(self, client: Client, topic: str) -> None:
        """From now on `client` gets the pushes published to `topic`."""
        client.topics.add(topic)

    def broadcast(self, message: dict, droppable: bool = False, topic: str | None = None) -> None:
        data = encode(message)
        for client in list(self._clients):
            if topic is None or topic in client.topics:
                self.write(client, data, droppable)

    def send(self, client: Client, message: dict) -> None:
        self.write(client, encode(message), droppable=False)

    def defer(self, client: Client, request_id: int, within: float | None = None,
              late: str = "") -> Callable[[dict], None]:
        """A reply for later: `reply(result)`, callable from any thread, sends
        `{"id": request_id, **result}`. Only the first answer is sent: with `within`, the
        client gets the error `late` when no reply came in that many seconds; one still owed
        when the server stops is answered with an error."""
        token = object()
        client.pending[token] = request_id

        def deliver(result: dict) -> None:
            if client.pending.pop(token, None) is not None:
                self.send(client, {"id": request_id, **result})

        if within is not None:
            asyncio.get_running_loop().call_later(within, deliver,
                                                  {"ok": False, "error": late})
        return lambda result: self.call_soon(deliver, result)

    def write(self, client: Client, data: bytes, droppable: bool) -> None:
        if client.closed:
            return
        backlog = client.writer.transport.get_write_buffer_size()
        if backlog > CLIENT_BACKLOG_LIMIT:
            # abort, not close: close() would keep the backlog until the client reads it
            client.writer.transport.abort()
            self._close(client)
            return
        if droppable and backlog > PUSH_BACKLOG_LIMIT:
            return
        try:
            client.writer.write(data)
        except (ConnectionError, OSError, RuntimeError):
            self._close(client)

    def _close(self, client: Client) -> None:
        if not client.closed:
            client.closed = True
            client.writer.close()
        if client in self._clients:
            self._clients.discard(client)
            self.client_closed(client)

    # -- requests (the server's thread) -------------------------------------------------------

    async def _serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        if self._closing:  # accepted just before the stop: the client sees the end at once
            writer.transport.abort()
            return
        if len(self._clients) >= MAX_CLIENTS:
            writer.write(encode(error_reply(
                None, f"too many clients ({MAX_CLIENTS}) connected to this {self.who}; "
                "close one and connect again")))
            writer.close()
            return
        client = self.new_client(writer)
        self._clients.add(client)
        buffer = bytearray()
        discarding = False  # inside an oversized line: drop bytes up to its newline
        try:
            while not client.closed:
                chunk = await reader.read(1 << 16)
                if not chunk:
                    break
                buffer += chunk
                while True:
                    newline = buffer.find(b"\n")
                    if newline < 0:
                        break
                    line = bytes(buffer[:newline])
                    del buffer[: newline + 1]
                    if discarding:
                        discarding = False
                        continue
                    self._handle_line(client, line)
                if len(buffer) > MAX_MESSAGE:
                    if not discarding:
                        self.send(client, oversized_reply())
                    discarding = True
                    buffer.clear()
        except (ConnectionError, OSError):
            pass
        finally:
            self._close(client)

    def _handle_line(self, client: Client, line: bytes) -> None:
        if len(line) > MAX_MESSAGE:
            self.send(client, oversized_reply())
            return
        if not line.strip():
            return
        request_id = None
        try:
            request_id, cmd, args = parse_request(line, self.known_commands)
            self.answer(client, request_id, cmd, args)
        except RequestError as e:
            # id 0 is an id like any other: only None means "no id to answer"
            answer_id = e.request_id if e.request_id is not None else request_id
            self.send(client, error_reply(answer_id, str(e)))
        except Exception as e:  # a bug here must not take the serving process down
            self.send(client, error_reply(request_id,
                                          f"internal error: {type(e).__name__}: {e}"))

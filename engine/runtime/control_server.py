"""The control server: an asyncio unix-socket server running in its own thread.

It accepts up to MAX_CLIENTS clients on RUN_DIR/control.sock (mode 0600), reads newline-delimited
JSON requests (each at most 1 MiB), validates them, answers `hello`/`status`/`render` itself
and queues `pause`/`resume`/`set`/`checkpoint`/`stop` for the trainer (engine/runtime/commands.py),
whose replies it forwards. It pushes telemetry to every client at `rate_hz`, events as they
happen, and frames to the clients that asked. See docs/protocol.md.

Nothing a client sends can stall the trainer: the server never waits on the main thread, a
slow client gets pushes dropped rather than buffered without bound, and every bad message
gets an error reply.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

from puffer_tui.engine.runtime.commands import Command, CommandQueue
from puffer_tui.engine.runtime.connection_tracker import ConnectionTracker, TrackedStreamProtocol
from puffer_tui.engine.runtime.frame_source import FrameSource, frame_key
from puffer_tui.engine.runtime.run_control import RunControl
from puffer_tui.engine.shared.protocol import (
    MAX_MESSAGE,
    PROTOCOL_VERSION,
    MessageType,
    RequestError,
    check_render,
    check_render_fps,
    check_render_policy,
    check_render_view,
    check_set,
    encode,
    error_reply,
    frame_message,
    oversized_reply,
    parse_request,
)
from puffer_tui.engine.shared.run_dir import socket_answers, unix_address

__all__ = ["PROTOCOL_VERSION", "ControlServer", "ServerError"]

TICK = 1 / 15  # frame cadence; telemetry goes out every few ticks
PUSH_BACKLOG_LIMIT = 4 << 20  # a client this far behind misses pushes (replies still go)
CLIENT_BACKLOG_LIMIT = 16 << 20  # ...and this far behind is disconnected
MAX_CLIENTS = 32  # more are refused: with the limit above, at most 512 MiB of send buffers


class ServerError(RuntimeError):
    """The server could not start (e.g. another engine already serves this run)."""


class _Client:
    def __init__(self, writer: asyncio.StreamWriter):
        self.writer = writer
        self.render_env: int | None = None
        self.render_view = "env"  # "obs": the observation drawn as an image
        self.frame_interval = 0.0  # seconds between two frames sent to this client, at least
        self.frame_sent_at = 0.0
        self.frame_seq = 0
        self.policy = False  # frames carry the policy's view of the step
        self.saliency: str | None = None  # ...and its saliency ("action", "value")
        self.pending: set = set()  # ids of queued requests not yet answered
        self.closed = False


class ControlServer:
    """Serve the control protocol for one engine. Requests go to `commands`; `state` gives
    the run state for hello; `frames` is told which envs clients render and is read for the
    frames to push; `hello_fn()` -> the static hello fields; `telemetry_fn()` -> a telemetry
    snapshot (both called from the server thread)."""

    def __init__(
        self,
        path: str | os.PathLike,
        commands: CommandQueue,
        state: RunControl,
        frames: FrameSource,
        hello_fn: Callable[[], dict],
        telemetry_fn: Callable[[], dict],
        env_name: str,
        num_envs: int,
        rate_hz: float = 5.0,
    ):
        if not 4.0 <= rate_hz <= 10.0:
            raise ValueError(f"telemetry rate must be in [4, 10] Hz, got {rate_hz}")
        self.path = Path(path)
        self.commands = commands
        self.state = state
        self.frames = frames
        self.hello_fn = hello_fn
        self.telemetry_fn = telemetry_fn
        self.env_name = env_name
        self.num_envs = num_envs
        self.telemetry_every = max(1, round(1 / (rate_hz * TICK)))
        self._clients: set[_Client] = set()
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

    # -- lifecycle (main thread) -------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> None:
        sock = self._bind()
        self._thread = threading.Thread(target=self._run, args=(sock,), name="control-server",
                                        daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise ServerError("control server did not start")
        if self._error is not None:
            raise ServerError(f"control server failed to start: {self._error}")

    def stop(self, final: dict | None = None, timeout: float = 2.0) -> None:
        """Push `final` (e.g. the last telemetry) to everyone, flush, close, remove the socket."""
        loop = self._loop
        if loop is not None and self._thread is not None and self._thread.is_alive():
            future = asyncio.run_coroutine_threadsafe(self._shutdown(final, timeout), loop)
            try:
                future.result(timeout + 1.0)
            except Exception:
                pass
            self._thread.join(timeout)
            if self._thread.is_alive():
                # The loop is stuck (a hello_fn or telemetry_fn that blocks): end the
                # connections from here, so no client waits on an engine that is going away.
                self._connections.shut_down_all()
        try:
            if self.path.is_socket():
                self.path.unlink()
        except OSError:
            pass

    def _bind(self) -> socket.socket:
        if self.path.exists():
            if socket_answers(self.path):
                raise ServerError(f"another engine is already serving {self.path}")
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
        tick = 0
        try:
            while not self._stopping.is_set():
                # the stop wakes this at once: a sleep made every stop wait out the tick
                try:
                    async with asyncio.timeout(TICK):
                        await self._stopping.wait()
                    break
                except TimeoutError:
                    pass
                tick += 1
                if not self._clients:
                    continue
                if tick % self.telemetry_every == 0:
                    self.broadcast_telemetry()
                self._send_frames()
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
            self._broadcast(final)
        for client in list(self._clients):
            for request_id in list(client.pending):
                self._send(client, error_reply(
                    request_id, "the engine stopped before the command could run"))
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

    # -- pushes (any thread) -------------------------------------------------------------------

    def publish_event(self, event: dict) -> None:
        self._call_soon(self._broadcast, event)

    def publish_telemetry_now(self) -> None:
        self._call_soon(self.broadcast_telemetry)

    def _call_soon(self, fn, *args) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:  # the loop closed in between
                pass

    def broadcast_telemetry(self) -> None:
        if self._clients:
            self._broadcast({"type": MessageType.TELEMETRY, **self.telemetry_fn()}, droppable=True)

    def _broadcast(self, message: dict, droppable: bool = False) -> None:
        data = encode(message)
        for client in list(self._clients):
            self._write(client, data, droppable)

    def _send_frames(self) -> None:
        frames = self.frames.frames
        now = time.monotonic()
        for client in list(self._clients):
            env, view = client.render_env, client.render_view
            if env is None or frame_key(env, view) not in frames:
                continue
            seq, frame = frames[frame_key(env, view)]
            if seq == client.frame_seq or now - client.frame_sent_at < client.frame_interval:
                continue
            client.frame_seq, client.frame_sent_at = seq, now
            policy = None
            if client.policy and view == "env":
                # the latest view of the env: computed at the fastest viewer's rate, so a
                # frame between two views carries the one before (never one of another env)
                seen = self.frames.views.get(env)
                policy = seen[1] if seen is not None else None
                if policy is not None and client.saliency is None and "saliency" in policy:
                    policy = {k: v for k, v in policy.items() if k != "saliency"}
            self._write(client, encode(frame_message(env, frame, view, policy)), droppable=True)

    def _send(self, client: _Client, message: dict) -> None:
        self._write(client, encode(message), droppable=False)

    def _write(self, client: _Client, data: bytes, droppable: bool) -> None:
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

    def _close(self, client: _Client) -> None:
        if not client.closed:
            client.closed = True
            client.writer.close()
        self._clients.discard(client)
        self._update_render_wishes()

    # -- requests ---------------------------------------------------------------------------

    async def _serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        client = _Client(writer)
        if self._closing:  # accepted just before the stop: the client sees the end at once
            writer.transport.abort()
            return
        if len(self._clients) >= MAX_CLIENTS:
            writer.write(encode(error_reply(
                None, f"too many clients ({MAX_CLIENTS}) connected to this engine; "
                "close one and connect again")))
            writer.close()
            return
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
                        self._send(client, oversized_reply())
                    discarding = True
                    buffer.clear()
        except (ConnectionError, OSError):
            pass
        finally:
            self._close(client)

    def _handle_line(self, client: _Client, line: bytes) -> None:
        if len(line) > MAX_MESSAGE:
            self._send(client, oversized_reply())
            return
        if not line.strip():
            return
        request_id = None
        try:
            request_id, cmd, args = parse_request(line)
            self._dispatch(client, request_id, cmd, args)
        except RequestError as e:
            # id 0 is an id like any other: only None means "no id to answer"
            answer_id = e.request_id if e.request_id is not None else request_id
            self._send(client, error_reply(answer_id, str(e)))
        except Exception as e:  # a bug here must not take the engine down
            self._send(client, error_reply(request_id,
                                           f"internal error: {type(e).__name__}: {e}"))

    def _dispatch(self, client: _Client, request_id: int, cmd: str, args: dict) -> None:
        if cmd == "hello":
            self._send(client, {"id": request_id, "ok": True, **self.hello_fn(),
                                "state": self.state.run_state})
        elif cmd == "status":
            self._send(client, {"id": request_id, "ok": True, **self.telemetry_fn()})
        elif cmd == "render":
            env, view = check_render(args, self.num_envs), check_render_view(args)
            client.frame_interval = 1.0 / check_render_fps(args)
            client.policy, client.saliency = check_render_policy(args)
            client.render_env, client.render_view = env, view
            client.frame_seq, client.frame_sent_at = 0, 0.0  # the new choice's first frame at once
            self._update_render_wishes()
            self._send(client, {"id": request_id, "ok": True, "env": env, "view": view,
                                "policy": client.policy, "saliency": client.saliency})
        else:
            if cmd == "set":
                args = check_set(args, self.env_name)
            self._queue(client, request_id, cmd, args)

    def _queue(self, client: _Client, request_id: int, cmd: str, args: dict) -> None:
        loop = asyncio.get_running_loop()
        client.pending.add(request_id)

        def deliver(result: dict) -> None:
            client.pending.discard(request_id)
            self._send(client, {"id": request_id, **result})

        def reply(result: dict) -> None:  # called on the main thread
            try:
                loop.call_soon_threadsafe(deliver, result)
            except RuntimeError:  # the server already shut down
                pass

        self.commands.put(Command(cmd, args, reply))

    def _update_render_wishes(self) -> None:
        watching = [c for c in self._clients if c.render_env is not None]
        wanted = frozenset(frame_key(c.render_env, c.render_view) for c in watching)
        # the policy's view of an env, with the saliency one of its viewers asked for
        policy: dict[int, str | None] = {}
        for c in watching:
            if c.policy and c.render_view == "env":
                policy[c.render_env] = policy.get(c.render_env) or c.saliency
        intervals = [c.frame_interval for c in watching if c.policy]
        self.frames.policy_interval = max(min(intervals, default=0.0), TICK)
        if wanted != self.frames.wanted or policy != self.frames.policy_wanted:
            self.commands.want_frames(wanted, policy)

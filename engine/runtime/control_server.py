"""The engine's control server: the protocol's LineServer (engine/shared/line_server.py, its
own thread, the 0600 socket RUN_DIR/control.sock, limits, error replies) serving one engine.

It answers `hello`/`status`/`render` itself and queues `pause`/`resume`/`set`/`checkpoint`/
`stop`/`diagnosis` for the trainer (engine/runtime/commands.py), whose replies it forwards. It
pushes telemetry to every client at `rate_hz`, events as they happen, and frames to the
clients that asked. See docs/protocol.md.

Nothing a client sends can stall the trainer: the server never waits on the main thread, a
slow client gets pushes dropped rather than buffered without bound, and every bad message
gets an error reply.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

from puffer_tui.engine.runtime.commands import Command, CommandQueue
from puffer_tui.engine.runtime.frame_source import FrameSource, frame_key
from puffer_tui.engine.runtime.run_control import RunControl
from puffer_tui.engine.shared.line_server import MAX_CLIENTS, Client, LineServer, ServerError
from puffer_tui.engine.shared.protocol import (
    COMMANDS,
    MAX_MESSAGE,
    PROTOCOL_VERSION,
    MessageType,
    check_render,
    check_render_fps,
    check_render_policy,
    check_render_view,
    check_set,
    encode,
    frame_message,
)

__all__ = ["MAX_CLIENTS", "MAX_MESSAGE", "PROTOCOL_VERSION", "ControlServer", "ServerError"]

TICK = 1 / 15  # frame cadence; telemetry goes out every few ticks


class _Client(Client):
    def __init__(self, writer: asyncio.StreamWriter):
        super().__init__(writer)
        self.render_env: int | None = None
        self.render_view = "env"  # "obs": the observation drawn as an image
        self.frame_interval = 0.0  # seconds between two frames sent to this client, at least
        self.frame_sent_at = 0.0
        self.frame_seq = 0
        self.policy = False  # frames carry the policy's view of the step
        self.saliency: str | None = None  # ...and its saliency ("action", "value")


class ControlServer(LineServer):
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
        super().__init__(path, COMMANDS, "engine", tick=TICK)
        self.commands = commands
        self.state = state
        self.frames = frames
        self.hello_fn = hello_fn
        self.telemetry_fn = telemetry_fn
        self.env_name = env_name
        self.num_envs = num_envs
        self.telemetry_every = max(1, round(1 / (rate_hz * TICK)))
        self._ticks = 0

    def new_client(self, writer: asyncio.StreamWriter) -> _Client:
        return _Client(writer)

    def client_closed(self, client: _Client) -> None:
        self._update_render_wishes()

    def on_tick(self) -> None:
        self._ticks += 1
        if self._ticks % self.telemetry_every == 0:
            self.broadcast_telemetry()
        self._send_frames()

    # -- pushes (any thread) -------------------------------------------------------------------

    def publish_event(self, event: dict) -> None:
        self.publish(event)

    def publish_telemetry_now(self) -> None:
        self.call_soon(self.broadcast_telemetry)

    def broadcast_telemetry(self) -> None:
        if self._clients:
            self.broadcast({"type": MessageType.TELEMETRY, **self.telemetry_fn()}, droppable=True)

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
            self.write(client, encode(frame_message(env, frame, view, policy)), droppable=True)

    # -- requests (the server's thread) -------------------------------------------------------

    def answer(self, client: _Client, request_id: int, cmd: str, args: dict) -> None:
        if cmd == "hello":
            self.send(client, {"id": request_id, "ok": True, **self.hello_fn(),
                               "state": self.state.run_state})
        elif cmd == "status":
            self.send(client, {"id": request_id, "ok": True, **self.telemetry_fn()})
        elif cmd == "render":
            env, view = check_render(args, self.num_envs), check_render_view(args)
            client.frame_interval = 1.0 / check_render_fps(args)
            client.policy, client.saliency = check_render_policy(args)
            client.render_env, client.render_view = env, view
            client.frame_seq, client.frame_sent_at = 0, 0.0  # the new choice's first frame at once
            self._update_render_wishes()
            self.send(client, {"id": request_id, "ok": True, "env": env, "view": view,
                               "policy": client.policy, "saliency": client.saliency})
        else:
            if cmd == "set":
                args = check_set(args, self.env_name)
            self._queue(client, request_id, cmd, args)

    def _queue(self, client: _Client, request_id: int, cmd: str, args: dict) -> None:
        # the trainer's thread answers at its next safe point
        self.commands.put(Command(cmd, args, self.defer(client, request_id)))

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

"""The sweep driver's control socket: the protocol's LineServer (engine/shared/line_server.py,
the same server as an engine's: 0600 socket, limits, error replies) with the driver's commands,
SWEEP_COMMANDS of engine/shared/protocol.py:

- `hello`; `status` (the snapshot of engine/sweep/snapshot.py: the trial table);
- `subscribe`: the snapshot now, then every new one pushed as `{"type": "sweep", ...}` (the
  driver makes one as soon as a trial starts, reports or ends, or the pause state changes,
  and once a second for its clocks);
- `stop` (end the sweep; running trials are stopped and recorded as failed, so `--resume`
  runs them again);
- the steering commands of engine/sweep/steering.py: `pause`/`resume` (launching new
  trials), `prune {"trial": N}` and `add {"trials": K}`, answered by the driver's loop.

Answers come from the snapshot the driver's loop keeps fresh, so a client never touches the
database or waits on the loop.

Tested in: tests/engine/sweep/test_sweep_server.py, tests/screens/test_sweep_view_push.py
"""

from __future__ import annotations

import os
from collections.abc import Callable

from puffer_tui.engine.shared.line_server import Client, LineServer
from puffer_tui.engine.shared.protocol import (
    COMMANDS,
    PROTOCOL_VERSION,
    SWEEP_COMMANDS,
    MessageType,
    RequestError,
    RunState,
)
from puffer_tui.engine.sweep.steering import ANSWER_WITHIN_S, STEERING_COMMANDS


class SweepServer(LineServer):
    """`hello()` -> the driver's hello fields; `status()` -> its latest snapshot; `stop()` asks
    it to end the sweep; `steer(cmd, args, reply)` queues a steering command for its loop
    (all called on the server's thread)."""

    def __init__(self, path: str | os.PathLike, hello: Callable[[], dict],
                 status: Callable[[], dict], stop: Callable[[], None],
                 steer: Callable[[str, dict, Callable[[dict], None]], None]):
        # the engine's words too, so that one sent here gets the advice in `answer`
        super().__init__(path, {**COMMANDS, **SWEEP_COMMANDS}, "sweep driver")
        self.hello, self.status, self.stop_sweep, self.steer = hello, status, stop, steer

    def push_snapshot(self, snapshot: dict) -> None:
        """From any thread: the driver's new snapshot, to every subscribed client."""
        self.publish({"type": MessageType.SWEEP, **snapshot}, droppable=True,
                     topic=MessageType.SWEEP)

    def answer(self, client: Client, request_id: int, cmd: str, args: dict) -> None:
        if cmd not in SWEEP_COMMANDS:
            raise RequestError(f"{cmd} is an engine command; a sweep driver takes "
                               f"{', '.join(SWEEP_COMMANDS)} (steer a trial through its own "
                               f"run's socket)", request_id)
        if cmd == "hello":
            self.send(client, {"id": request_id, "ok": True, "protocol": PROTOCOL_VERSION,
                               "kind": "sweep", **self.hello()})
        elif cmd == "status":
            self.send(client, {"id": request_id, "ok": True, **self.status()})
        elif cmd == "subscribe":
            # the reply first: every push this client gets is newer than the snapshot in it
            self.send(client, {"id": request_id, "ok": True, **self.status()})
            self.subscribe(client, MessageType.SWEEP)
        elif cmd in STEERING_COMMANDS:
            self.steer(cmd, args, self.defer(
                client, request_id, within=ANSWER_WITHIN_S,
                late=f"{cmd}: the driver's loop did not take it within {ANSWER_WITHIN_S:g} s "
                     f"(busy with the database?)"))
        else:
            self.stop_sweep()
            self.send(client, {"id": request_id, "ok": True, "state": RunState.STOPPING})

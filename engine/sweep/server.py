"""The sweep driver's control socket: the engine's JSON-lines protocol (engine/shared/protocol.py),
commands `hello`, `status` (the trial table), `stop` (end the sweep; running trials are
stopped and recorded as failed, so `--resume` runs them again), and the steering commands of
engine/sweep/steering.py: `pause`/`resume` (launching new trials), `prune {"trial": N}` and
`add {"trials": K}`.

Answers come from a snapshot the driver's loop refreshes, so a client never touches the
database or waits on the loop. One thread per client; the socket is 0600 like the engine's.
"""

from __future__ import annotations

import os
import socketserver
import threading
from collections.abc import Callable
from pathlib import Path

from puffer_tui.engine.shared.protocol import (
    COMMANDS,
    MAX_MESSAGE,
    PROTOCOL_VERSION,
    SWEEP_COMMANDS,
    RequestError,
    RunState,
    encode,
    error_reply,
    oversized_reply,
    parse_request,
)
from puffer_tui.engine.shared.run_dir import unix_address
from puffer_tui.engine.sweep.steering import STEERING_COMMANDS


class SweepServer:
    def __init__(self, path: Path, hello: Callable[[], dict], status: Callable[[], dict],
                 stop: Callable[[], None],
                 steer: Callable[[str, dict], dict] | None = None):
        self.path = Path(path)
        self.hello, self.status, self.stop_sweep = hello, status, stop
        self.steer = steer
        self._server: socketserver.UnixStreamServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.path.exists():
            self.path.unlink()  # the caller checked that no live driver serves it
        owner = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                owner._serve(self.rfile, self.wfile)

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        address, fd = unix_address(self.path)
        old = os.umask(0o177)  # the socket file is created 0600
        try:
            self._server = Server(address, Handler)
        finally:
            os.umask(old)
            if fd is not None:
                os.close(fd)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="sweep-server")
        self._thread.start()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.path.unlink(missing_ok=True)

    def _serve(self, rfile, wfile) -> None:
        while True:
            try:
                line = rfile.readline(MAX_MESSAGE + 1)
                if not line:
                    return
                if len(line) > MAX_MESSAGE and not line.endswith(b"\n"):
                    while line and not line.endswith(b"\n"):  # drop the rest of that line
                        line = rfile.readline(MAX_MESSAGE)
                    line = None
            except OSError:
                return
            if line is None:
                reply = oversized_reply()
            else:
                reply = self.answer(line.rstrip(b"\n"))
            try:
                wfile.write(encode(reply))
                wfile.flush()
            except OSError:
                return

    def answer(self, line: bytes) -> dict:
        try:
            # the engine's words too, so that one sent here gets the advice below
            request_id, cmd, args = parse_request(line, {**COMMANDS, **SWEEP_COMMANDS})
        except RequestError as e:
            return error_reply(e.request_id, str(e))
        if cmd not in SWEEP_COMMANDS:
            return error_reply(request_id, f"{cmd} is an engine command; a sweep driver takes "
                                           f"{', '.join(SWEEP_COMMANDS)} (steer a trial through "
                                           f"its own run's socket)")
        if cmd == "hello":
            return {"id": request_id, "ok": True, "protocol": PROTOCOL_VERSION, "kind": "sweep",
                    **self.hello()}
        if cmd == "status":
            return {"id": request_id, "ok": True, **self.status()}
        if cmd in STEERING_COMMANDS:
            if self.steer is None:
                return error_reply(request_id, f"{cmd}: this driver takes no steering")
            return {"id": request_id, **self.steer(cmd, args or {})}
        self.stop_sweep()
        return {"id": request_id, "ok": True, "state": RunState.STOPPING}

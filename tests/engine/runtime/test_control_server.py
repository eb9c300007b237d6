"""The control server and command queue, in-process, with a stand-in trainer on a thread.

The real engine process is driven through the socket in test_process.py; here the
protocol's edges (validation, oversized lines, several clients, frames) are checked fast.
"""

import base64
import json
import socket
import stat
import threading
import time

import numpy as np
import pytest

from puffer_tui.app.engine_client import EngineClient, EngineCommandError
from puffer_tui.engine.runtime.commands import CommandQueue
from puffer_tui.engine.runtime.control_server import MAX_MESSAGE, ControlServer
from puffer_tui.engine.runtime.frame_source import FrameSource
from puffer_tui.engine.runtime.run_control import RunControl
from puffer_tui.engine.shared.config import apply, load_config
from puffer_tui.engine.shared.protocol import RunState


class StandInTrainer:
    """Counts steps between safe points the way the Trainer does; nothing is learned."""

    def __init__(self):
        self.config = load_config("squared", {"vec.num_envs": 8})
        self.global_step = 0
        self.epoch = 0
        self.progress = {"global_step": 0, "epoch": 0, "sps": 1000.0, "uptime": 0.0}
        self.worker_pids = []
        self.safe_point = None

    def apply_live(self, change):  # checked by the server already: the whole config only
        apply(self.config, {change.key: change.value})
        setattr(self.config.train, change.name, change.value)
        return change.value, "from the next minibatch"

    def frame(self, env, view="env"):
        return np.full((3, 4), env, dtype=np.uint8) if view == "env" else f"obs of {env}"


def first(client, kind, timeout=3.0):
    """The first push of `kind` within `timeout` seconds, or None."""
    deadline = time.monotonic() + timeout
    for push in client.pushes(timeout=timeout):
        if push["type"] == kind:
            return push
        if time.monotonic() > deadline:
            break
    return None


def parts():
    """A command queue, its state and frame source, with no trainer behind them."""
    state, frames = RunControl(), FrameSource(lambda env: None)
    return CommandQueue(state, frames), state, frames


@pytest.fixture
def server(tmp_path):
    trainer = StandInTrainer()
    state = RunControl()
    frames = FrameSource(trainer.frame)
    commands = CommandQueue(state, frames,
                            checkpoint=lambda: str(tmp_path / f"ckpt-{trainer.global_step}.pt"))
    commands.attach(trainer)
    trainer.safe_point = commands.safe_point
    state.enter(RunState.RUNNING)

    def telemetry():
        return {"state": state.run_state, "global_step": trainer.global_step}

    srv = ControlServer(tmp_path / "control.sock", commands, state, frames,
                        hello_fn=lambda: {"protocol": 1, "env": "squared"},
                        telemetry_fn=telemetry, env_name="squared", num_envs=8, rate_hz=10)
    srv.start()

    def train():
        while not state.stop_requested:
            for _ in range(20):
                trainer.safe_point()
                trainer.global_step += 1
                trainer.progress = {**trainer.progress, "global_step": trainer.global_step}
                time.sleep(0.001)
            trainer.epoch += 1
            commands.at_boundary()

    thread = threading.Thread(target=train, daemon=True)
    thread.start()
    srv.trainer, srv.train_thread = trainer, thread
    yield srv
    if not state.stop_requested:
        commands.put(__import__("puffer_tui.engine.runtime.commands", fromlist=["Command"]).Command("stop"))
    thread.join(5)
    srv.stop()


@pytest.fixture
def client(server):
    with EngineClient.connect(server.path) as c:
        yield c


def test_socket_is_private_and_hello_answers(server, client):
    assert stat.S_IMODE(server.path.stat().st_mode) == 0o600
    assert client.hello["ok"] and client.hello["protocol"] == 1
    assert client.hello["state"] == "running"


def test_telemetry_pushes_at_a_steady_rate(client):
    start = time.monotonic()
    telemetry = first(client, "telemetry")
    assert telemetry["state"] == "running"
    seen = 1
    for push in client.pushes(timeout=2):
        seen += push["type"] == "telemetry"
        if time.monotonic() - start > 1.0:
            break
    assert seen >= 3


@pytest.mark.parametrize("line, error", [
    (b"this is not json", "not a JSON object"),
    (b"[1, 2, 3]", "must be a JSON object"),
    (b'{"cmd": "status"}', "integer \\\"id\\\""),
    (b'{"id": true, "cmd": "status"}', "integer \\\"id\\\""),
    (b'{"id": 7, "cmd": "explode"}', "unknown command 'explode'"),
    (b'{"id": 7, "cmd": "pause", "args": [1]}', "must be a JSON object"),
    (b'{"id": 7, "cmd": "pause", "args": {"now": 1}}', "unknown argument 'now'"),
    (b'{"id": 7, "cmd": "render", "args": {"env": 99}}', "integer in \\[0, 7\\]"),
    (b'{"id": 7, "cmd": "stop", "args": {"checkpoint": "yes"}}', "true or false"),
    (b'\xff\xfe{"id": 1}', "not a JSON object"),
])
def test_malformed_messages_get_errors_and_the_connection_survives(client, line, error):
    client.send_raw(line + b"\n")
    reply = first(client, "reply")
    assert reply["ok"] is False
    assert __import__("re").search(error, reply["error"]), reply["error"]
    assert client.call("status")["ok"]


def test_oversized_message_is_discarded_up_to_its_newline(client):
    client.send_raw(b'{"id": 5, "cmd": "status", "pad": "' + b"x" * (MAX_MESSAGE + 10))
    client.send_raw(b'"}\n')
    reply = first(client, "reply")
    assert not reply["ok"] and "exceeds" in reply["error"]
    assert client.call("status", timeout=5)["ok"]


def test_pause_blocks_steps_and_resume_continues(server, client):
    assert client.call("pause")["state"] == "paused"
    step = server.trainer.global_step
    time.sleep(0.3)
    assert server.trainer.global_step == step
    assert client.call("status")["state"] == "paused"
    assert client.call("resume")["state"] == "running"
    time.sleep(0.2)
    assert server.trainer.global_step > step


def test_set_checks_live_bounds_and_type(server, client):
    reply = client.call("set", key="train.learning_rate", value="0.002")
    assert reply["value"] == 0.002 and "next" in reply["applies"]
    assert server.trainer.config.train.learning_rate == 0.002
    for key, value, error in [
        ("train.learning_rate", 5.0, "out of bounds"),
        ("train.learning_rate", "fast", "not a valid float"),
        ("vec.num_envs", 16, "applies on restart"),
        ("train.nope", 1, "unknown config key"),
        ("train.ent_coef", [1], "number, boolean or string"),
    ]:
        with pytest.raises(EngineCommandError, match=error):
            client.call("set", key=key, value=value)
    assert server.trainer.config.train.learning_rate == 0.002


def test_set_while_paused_applies(server, client):
    client.call("pause")
    assert client.call("set", key="train.ent_coef", value=0.02)["value"] == 0.02
    assert server.trainer.config.train.ent_coef == 0.02
    client.call("resume")


def test_checkpoint_replies_with_path_at_the_epoch_boundary(client):
    assert client.call("checkpoint")["path"].endswith(".pt")


def test_checkpoint_while_paused_mid_epoch_is_pending(client):
    client.call("pause")
    reply = client.call("checkpoint")
    assert reply["pending"] is True and reply["path"] is None
    client.call("resume")


def test_frames_for_the_clients_that_asked(server, client):
    with EngineClient.connect(server.path) as other:
        assert client.call("render", env=3)["env"] == 3
        frame = first(client, "frame")
        tiles = np.frombuffer(base64.b64decode(frame["tiles"]), np.uint8)
        assert (frame["env"], frame["height"], frame["width"]) == (3, 3, 4)
        assert (tiles == 3).all()
        assert first(other, "frame", timeout=0.5) is None
        client.call("render", env=None)


def test_several_clients_get_telemetry(server, client):
    with EngineClient.connect(server.path) as other:
        assert first(other, "telemetry") is not None
        assert first(client, "telemetry") is not None


def test_stop_replies_and_a_second_engine_cannot_take_the_socket(server, client, tmp_path):
    with pytest.raises(RuntimeError, match="already serving"):
        ControlServer(server.path, *parts(), dict, dict, "squared", 1).start()
    assert client.call("stop")["state"] == "stopping"
    server.train_thread.join(5)
    assert not server.train_thread.is_alive()


def test_pending_requests_fail_cleanly_when_the_engine_shuts_down(tmp_path):
    # no trainer drains this queue: requests stay pending
    srv = ControlServer(tmp_path / "c.sock", *parts(), dict, dict, "squared", 1)
    srv.start()
    client = EngineClient.connect(srv.path, hello=False)
    # One answered round trip first: the server has then registered this client (a connection
    # still in the listener's backlog when the server stops is a different case).
    assert client.request("status", timeout=10)["ok"]
    request_id, waiter = client.send("pause")
    srv.stop()
    assert waiter[0].wait(10)
    reply = waiter[1]
    assert reply is None or (reply["ok"] is False and "stopped" in reply["error"])
    assert client.closed.wait(10)
    assert not srv.path.exists()


def test_raw_socket_client_sees_json_lines(server):
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(server.path))
    sock.sendall(b'{"id": 1, "cmd": "status"}\n')
    data = b""
    while b"\n" not in data:
        data += sock.recv(65536)
    messages = [json.loads(line) for line in data.split(b"\n") if line]
    assert any(m.get("id") == 1 and m["ok"] for m in messages)
    sock.close()


def test_pushes_end_when_the_client_closes(server):
    client = EngineClient.connect(server.path)
    assert first(client, "telemetry") is not None
    client.close()
    assert client.closed.is_set() and client.close_reason == "closed by the client"
    left = []
    reader = threading.Thread(target=lambda: left.extend(client.pushes(timeout=None)),
                              daemon=True)  # no timeout: only the end of the stream stops it
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "pushes() went on after the client closed"
    assert all(p["type"] == "telemetry" for p in left)


# -- odd requests: id 0, deep nesting, clients that never read ------------------------------


def raw_reply(sock, timeout=5.0):
    """The first reply line on a raw socket (pushes skipped)."""
    sock.settimeout(timeout)
    data = b""
    while True:
        while b"\n" in data:
            line, data = data.split(b"\n", 1)
            message = json.loads(line)
            if message.get("type") in (None, "reply") and "ok" in message:
                return message
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk


def raw_socket(server):
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(server.path))
    return sock


@pytest.mark.parametrize("line", [
    b'{"id": 0, "cmd": "explode"}',
    b'{"id": 0, "cmd": "pause", "args": {"now": 1}}',
    b'{"id": 0, "cmd": "set", "args": {"key": "train.horizon", "value": 3}}',
])
def test_errors_to_request_id_0_carry_id_0(server, line):
    sock = raw_socket(server)
    try:
        sock.sendall(line + b"\n")
        reply = raw_reply(sock)
        assert reply["ok"] is False and reply["id"] == 0, reply
    finally:
        sock.close()


def test_deeply_nested_json_gets_a_clean_error(client):
    client.send_raw(b'{"id": 3, "cmd": "status", "args": ' + b"[" * 100_000
                    + b"]" * 100_000 + b"}\n")
    reply = first(client, "reply")
    assert reply["ok"] is False
    assert "nested too deeply" in reply["error"] and "internal error" not in reply["error"]
    assert client.call("status")["ok"]


def test_clients_beyond_the_cap_are_refused_and_the_others_served(server):
    from puffer_tui.engine.runtime.control_server import MAX_CLIENTS

    socks = [raw_socket(server) for _ in range(MAX_CLIENTS)]
    try:
        for sock in socks[:2]:  # the server registered them: they are answered
            sock.sendall(b'{"id": 1, "cmd": "status"}\n')
            assert raw_reply(sock)["ok"]
        extra = raw_socket(server)
        reply = raw_reply(extra)
        assert reply is not None and reply["ok"] is False and "too many clients" in reply["error"]
        assert extra.recv(1) == b""  # and closed
        extra.close()
        socks.pop().close()
        again = wait_for_slot(server)
        again.sendall(b'{"id": 2, "cmd": "status"}\n')
        assert raw_reply(again)["ok"]
        socks.append(again)
    finally:
        for sock in socks:
            sock.close()


def wait_for_slot(server, timeout=5.0):
    """Connect until the server has noticed a closed client and accepts a new one."""
    deadline = time.monotonic() + timeout
    while True:
        sock = raw_socket(server)
        sock.sendall(b'{"id": 9, "cmd": "status"}\n')
        reply = raw_reply(sock)
        if reply is not None and reply["ok"]:
            return sock
        sock.close()
        assert time.monotonic() < deadline, "no client slot freed"
        time.sleep(0.05)


def test_a_client_that_never_reads_is_dropped_once_its_queue_is_full(server, monkeypatch):
    from puffer_tui.engine.shared import line_server

    monkeypatch.setattr(line_server, "CLIENT_BACKLOG_LIMIT", 256 << 10)
    sock = raw_socket(server)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10.0)  # a server that keeps the client would block sendall: fail instead
    try:
        # every status reply must be queued (replies are never dropped) until the limit
        request = b'{"id": 1, "cmd": "hello"}\n' * 200
        for _ in range(100):
            try:
                sock.sendall(request)
            except (BrokenPipeError, ConnectionResetError):
                break  # the server dropped us
        with EngineClient.connect(server.path) as other:  # the engine still serves others
            assert other.call("status")["ok"]
        sock.settimeout(5.0)
        received = 0
        try:
            while chunk := sock.recv(1 << 16):
                received += len(chunk)
        except (ConnectionResetError, TimeoutError):
            pass
        # what was queued for it is bounded: the limit plus what the kernel buffers held
        assert received < (256 << 10) + (8 << 20)
    finally:
        sock.close()


def test_the_obs_view_streams_its_own_frames(server, client):
    reply = client.call("render", env=2, view="obs")
    assert (reply["env"], reply["view"]) == (2, "obs")
    frame = first(client, "frame")
    assert (frame["env"], frame.get("view"), frame.get("kind"), frame.get("text")) == (
        2, "obs", "text", "obs of 2")
    client.call("render", env=2)
    for _ in range(20):  # a frame already on its way may still say obs
        frame = first(client, "frame")
        if "view" not in frame:
            break
    assert "tiles" in frame and frame["env"] == 2
    client.call("render", env=None)


def test_a_client_gets_frames_no_faster_than_it_asked(server, client):
    def frames_in(seconds: float) -> int:
        start, count = time.monotonic(), 0
        while time.monotonic() - start < seconds:
            count += first(client, "frame", timeout=0.3) is not None
        return count

    client.call("render", env=1)
    assert first(client, "frame") is not None
    fast = frames_in(1.5)
    client.call("render", env=1, fps=2)
    assert first(client, "frame") is not None  # a new choice's first frame comes at once
    slow = frames_in(1.5)
    assert slow <= 4 < fast, (slow, fast)  # 2 a second, against up to 15
    with pytest.raises(EngineCommandError, match='"fps" must be a number'):
        client.call("render", env=1, fps=0)
    client.call("render", env=None)

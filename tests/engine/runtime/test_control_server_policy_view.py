"""The policy's view through the socket, on a real (small) trainer: only the client that
asks gets it with its frames, the saliency only when asked, and the trainer copies nothing
once nobody asks."""

import threading
import time

import pytest

from puffer_tui.app.engine_client import EngineClient
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.runtime.commands import Command, CommandQueue
from puffer_tui.engine.runtime.control_server import ControlServer
from puffer_tui.engine.runtime.frame_source import FrameSource
from puffer_tui.engine.runtime.run_control import RunControl
from puffer_tui.engine.shared.config import load_config
from puffer_tui.engine.shared.protocol import RunState, decode_frame


@pytest.fixture
def server(tmp_path):
    state = RunControl()
    holder = {}
    frames = FrameSource(lambda env, view="env": holder["trainer"].frame(env, view),
                         lambda: holder.get("trainer"))
    commands = CommandQueue(state, frames)
    config = load_config("squared", {"vec.num_envs": 4, "train.horizon": 16,
                                     "train.minibatch_size": 64, "env.size": 5,
                                     "train.total_timesteps": 10**9})
    trainer = holder["trainer"] = Trainer(config, safe_point=commands.safe_point)
    commands.attach(trainer)
    state.enter(RunState.RUNNING)
    srv = ControlServer(tmp_path / "control.sock", commands, state, frames,
                        hello_fn=lambda: {"protocol": 1, "env": "squared"},
                        telemetry_fn=lambda: {"state": state.run_state},
                        env_name="squared", num_envs=4, rate_hz=10)
    srv.start()

    def train():
        while not state.stop_requested:
            trainer.run_epoch()
            commands.at_boundary()

    thread = threading.Thread(target=train, daemon=True)
    thread.start()
    srv.trainer = trainer
    yield srv
    commands.put(Command("stop"))
    thread.join(10)
    srv.stop()
    trainer.close()


def frames_of(client, n, timeout=10.0):
    out, deadline = [], time.monotonic() + timeout
    for push in client.pushes(timeout=timeout):
        if push["type"] == "frame":
            out.append(push)
            if len(out) >= n:
                break
        if time.monotonic() > deadline:
            break
    return out


def test_only_the_client_that_asks_gets_the_policy_view(server):
    with EngineClient.connect(server.path) as plain, EngineClient.connect(server.path) as viewer:
        plain.call("render", env=1)
        assert all("policy" not in f for f in frames_of(plain, 3))
        assert server.trainer.step_watch is None  # frames alone copy nothing per step

        reply = viewer.call("render", env=2, policy=True)
        assert reply["policy"] is True and reply["saliency"] is None
        pushed = [f for f in frames_of(viewer, 6) if "policy" in f]
        assert pushed, "no frame carried the policy's view"
        view = decode_frame(pushed[-1]).policy
        assert view.env == 2 and view.kind == "discrete" and len(view.heads[0]) == 5
        assert view.saliency is None
        assert all("policy" not in f for f in frames_of(plain, 2))

        viewer.call("render", env=2, saliency="value")
        salient = [f for f in frames_of(viewer, 8) if "saliency" in f.get("policy", {})]
        assert salient and decode_frame(salient[-1]).policy.saliency.of == "value"

        viewer.call("render", env=2)  # frames only again: the trainer's hook goes
        deadline = time.monotonic() + 5
        while server.trainer.step_watch is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.trainer.step_watch is None

"""Fixed data for the app's snapshot and unit tests: a hello, telemetry, frames, a sample.

Deterministic on purpose (no clocks, no psutil), so a rendered dashboard is the same on every
machine. The Pilot tests that need a live engine use the real one, not this.
"""

from __future__ import annotations

import base64
import math

from puffer_tui.app.system_monitor import ProcessLoad, SystemSample
from puffer_tui.app.telemetry_store import TelemetryStore

FIXED_TIME = 1_790_000_000.0  # event timestamps (rendered in UTC by the tests' TZ)

HELLO = {
    "ok": True, "protocol": 1, "run": "squared-20261122-001400", "run_dir": "/tmp/runs/x",
    "env": "squared", "state": "running", "pid": 4242, "num_envs": 64, "frame_shape": [11, 11],
    "palette": {"0": ["·", "grey39"], "1": ["@", "bold bright_cyan"], "2": ["◆", "bold yellow"]},
    "config": {"env_name": "squared", "env": {"size": 11, "num_targets": 4, "max_ticks": 0},
               "vec": {"backend": "serial", "num_envs": 64},
               "train": {"learning_rate": 0.015, "total_timesteps": 2_000_000,
                         "hidden_size": 128}},
    "schema": [
        {"section": "train", "name": "learning_rate", "type": "float", "default": 0.015,
         "low": 0.0, "high": 1.0, "help": "Adam learning rate", "live": True, "choices": None},
        {"section": "train", "name": "update_epochs", "type": "int", "default": 1,
         "low": 1, "high": 64, "help": "passes over each batch", "live": True, "choices": None},
        {"section": "train", "name": "hidden_size", "type": "int", "default": 128,
         "low": 4, "high": 8192, "help": "width of the policy's hidden layers", "live": False,
         "choices": None},
    ],
}


def telemetry(epoch: int, state: str = "running") -> dict:
    """Telemetry of epoch `epoch` of a run that learns smoothly."""
    step = epoch * 4096
    progress = min(epoch / 60, 1.0)
    return {
        "type": "telemetry", "time": FIXED_TIME + epoch, "state": state, "env": "squared",
        "run": HELLO["run"], "global_step": step, "total_timesteps": 2_000_000, "epoch": epoch,
        "sps": 180_000 + 20_000 * math.sin(epoch / 3), "uptime": 12.5 + epoch * 0.02,
        "eta": 95.0 - epoch, "learning_rate": 0.015,
        "losses": {"policy_loss": -0.02 * math.exp(-epoch / 20), "value_loss": 0.5 / (1 + epoch),
                   "entropy": 1.6 - progress, "approx_kl": 0.01, "clipfrac": 0.1 - 0.05 * progress,
                   "explained_variance": progress * 0.9},
        "timing": {"env": 0.010, "forward": 0.006, "copy": 0.001, "learn": 0.012, "misc": 0.001},
        "timing_pct": {"env": 33.3, "forward": 20.0, "copy": 3.3, "learn": 40.0, "misc": 3.3},
        "stats": {"score": progress, "episode_return": 4 * progress,
                  "episode_length": 80 - 40 * progress, "targets_hit": 4 * progress},
        "hyperparameters": {"train.learning_rate": 0.015, "train.update_epochs": 1},
        "processes": [{"role": "engine", "pid": 4242}, {"role": "worker", "index": 0, "pid": 4243}],
        "device": "cpu", "gpu": None,
    }


def frame() -> dict:
    tiles = bytearray(11 * 11)
    tiles[5 * 11 + 5] = 1
    for r, c in ((0, 3), (10, 7), (4, 0), (8, 10)):
        tiles[r * 11 + c] = 2
    return {"type": "frame", "env": 0, "height": 11, "width": 11,
            "tiles": base64.b64encode(bytes(tiles)).decode()}


def filled_store(epochs: int = 40) -> TelemetryStore:
    store = TelemetryStore()
    store.set_hello(HELLO)
    for epoch in range(1, epochs + 1):
        store.ingest(telemetry(epoch), now=1.0)
    store.ingest(frame(), now=1.0)
    store.ingest({"type": "event", "time": FIXED_TIME, "level": "info",
                  "text": "checkpoint saved: checkpoints/000040.pt"}, now=1.0)
    store.ingest({"type": "event", "time": FIXED_TIME + 1, "level": "info",
                  "text": "train.learning_rate changed from 0.015 to 0.01 (from the next minibatch)"}, now=1.0)
    store.ingest({"type": "event", "time": FIXED_TIME + 2, "level": "warning",
                  "text": "episode stats are empty for this epoch"}, now=1.0)
    return store


def system_sample() -> SystemSample:
    return SystemSample(
        cores=[73.0, 41.5], app_cpu=3.0, ram_used=3 * 2**30, ram_total=8 * 2**30,
        processes=[ProcessLoad("engine", 4242, 96.0, 512 * 2**20),
                   ProcessLoad("worker 0", 4243, 55.0, 64 * 2**20)],
    )


def push(app, message: dict) -> None:
    """Hand the app one push from the engine as its link's reader thread does: a typed message."""
    from puffer_tui.app.link_messages import message_for_push

    app.post_message(message_for_push(app.link, message))


class QueuedClient:
    """An EngineClient for the headless display's tests: its hello, and the pushes queued in
    `queued`, handed over on the next pushes() call."""

    def __init__(self, hello: dict):
        self.hello = hello
        self.queued: list[dict] = []

    def pushes(self, timeout: float):
        out, self.queued = self.queued, []
        return out


class NullLive:
    """A rich Live that shows nothing (the display's _pump updates it)."""

    def update(self, renderable) -> None:
        self.shown = renderable

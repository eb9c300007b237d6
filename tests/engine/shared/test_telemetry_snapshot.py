"""Telemetry as one typed snapshot (engine/shared/protocol.py `TelemetrySnapshot`): the wire
round trip, what a client does with missing, unknown or malformed fields (docs/protocol.md),
the "now" rules decided once in the engine and shown as they are by the app, and a live `set`
checked once and handed on typed."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from app_fakes import telemetry

from puffer_tui.app.headless_display import render
from puffer_tui.app.telemetry_store import TelemetryStore
from puffer_tui.app.widgets.sps_history import SpsHistory
from puffer_tui.engine.runtime.commands import Command, CommandQueue
from puffer_tui.engine.runtime.frame_source import FrameSource
from puffer_tui.engine.runtime.run_control import RunControl
from puffer_tui.engine.runtime.telemetry import Telemetry, TrainerFeed
from puffer_tui.engine.shared import protocol
from puffer_tui.engine.shared.config import ConfigError, load_config
from puffer_tui.engine.shared.protocol import (
    LiveChange,
    RequestError,
    RunState,
    TelemetrySnapshot,
    check_set,
    encode,
)

FULL = TelemetrySnapshot(
    time=1_790_000_000.5, state=RunState.PAUSED, env="squared", run="squared-1", global_step=4096,
    total_timesteps=1_000_000, epoch=2, sps=0.0, sps_mean=1234.5, uptime=3.3, eta=None,
    learning_rate=0.015, losses={"policy_loss": -0.02}, timing={"env": 0.01},
    timing_pct={"env": 50.0}, stats={"score": 0.5}, eval={"score": 0.7, "epoch": 2},
    hyperparameters={"train.learning_rate": 0.015}, processes=[{"role": "engine", "pid": 7}],
    workers=[{"rank": 0, "node": "a", "sps": 9.0}], cluster={"cpus": 8.0, "cpus_reserved": 2.0},
    device="cuda:0 bf16", preset="MuJoCo preset", gpu={"name": "H100", "utilization": None},
    diagnoses=[{"rule": "plateau", "status": "fired"}])

# the fields every telemetry push carried before the snapshot was typed: old readers find them
WIRE_KEYS = {"time", "state", "env", "run", "global_step", "total_timesteps", "epoch", "sps",
             "uptime", "eta", "learning_rate", "losses", "timing", "timing_pct", "stats", "eval",
             "hyperparameters", "processes", "workers", "cluster", "device", "preset", "gpu",
             "diagnoses"}


def test_a_snapshot_survives_the_wire_whole():
    line = encode(FULL.push())
    message = json.loads(line)
    assert message["type"] == "telemetry" and WIRE_KEYS <= set(message)
    assert TelemetrySnapshot.from_wire(message) == FULL
    assert isinstance(TelemetrySnapshot.from_wire(message).state, RunState)


def test_unknown_missing_and_malformed_fields_read_as_the_protocol_says():
    got = TelemetrySnapshot.from_wire({
        "type": "telemetry", "future_field": {"x": 1},  # unknown: ignored
        "state": "warming", "epoch": "3", "sps": None, "global_step": True,  # wrong kinds
        "uptime": 2, "losses": [1, 2], "gpu": "none", "eta": 5})
    assert got.state == "warming"  # a state this client does not know stays as sent
    assert got.epoch == 0 and got.sps == 0.0 and got.global_step == 0  # defaults
    assert got.uptime == 2.0 and isinstance(got.uptime, float)  # an integer number is a float
    assert got.losses == {} and got.gpu is None and got.eta == 5.0
    empty = TelemetrySnapshot.from_wire({})
    assert empty == TelemetrySnapshot() and empty.learning_rate is None and empty.cluster is None
    assert not hasattr(got, "future_field")


def test_the_fixed_data_of_the_app_tests_reads_field_by_field():
    push = telemetry(41)
    got = TelemetrySnapshot.from_wire(push)
    assert (got.epoch, got.global_step, got.sps) == (41, 41 * 4096, push["sps"])
    assert got.losses == push["losses"] and got.preset == "" and got.workers == []


def _feed(progress: dict, config) -> TrainerFeed:
    trainer = SimpleNamespace(progress=progress, config=config, device="cpu", worker_pids=[],
                              vecenv=object())
    return TrainerFeed.of(trainer)


@pytest.mark.parametrize("state", [RunState.STARTING, RunState.PAUSED, RunState.STOPPING,
                                   RunState.FINISHED, RunState.STOPPED, RunState.ERROR])
def test_the_engine_reports_no_speed_and_no_eta_unless_running(state):
    config = load_config("squared", {"train.total_timesteps": 10_000})
    run_control = RunControl()
    telemetry_ = Telemetry(config, "run", run_control)
    # the trainer's last measured rate is still in its progress while it stands still
    telemetry_.attach(_feed({"global_step": 4000, "epoch": 2, "sps": 5000.0, "uptime": 2.0},
                            config))
    run_control.enter(RunState.RUNNING)
    running = telemetry_.snapshot()
    assert running.sps == 5000.0 and running.eta == pytest.approx(1.2)
    run_control.enter(state)
    still = telemetry_.snapshot()
    assert still.sps == 0.0 and still.eta is None
    assert still.sps_mean == 2000.0  # the run's mean over its training time stays


def test_a_paused_engine_shows_0_and_the_app_has_no_rule_of_its_own():
    config = load_config("squared")
    run_control = RunControl()
    telemetry_ = Telemetry(config, "run", run_control)
    telemetry_.attach(_feed({"global_step": 4096, "epoch": 1, "sps": 5000.0, "uptime": 1.0},
                            config))
    run_control.enter(RunState.RUNNING)
    run_control.pause()
    store = TelemetryStore()
    store.ingest(json.loads(encode(telemetry_.snapshot().push())))
    assert store.latest.sps == 0.0 and not store.sps  # no sample of a speed nobody runs at
    panel = SpsHistory()
    panel.samples, panel.now, panel.state = [5000.0], store.latest.sps, store.state
    assert "now 0 (paused)" in panel.summary().plain

    # The app shows the engine's number as it is: were a paused engine to report a speed,
    # the app would show it (the rule is the engine's alone).
    store.ingest({**telemetry(2, state="paused"), "sps": 1234.0})
    assert list(store.sps) == [1234.0]
    panel.now, panel.state = store.latest.sps, store.state
    assert "now 1.23k (paused)" in panel.summary().plain
    from rich.console import Console

    console = Console(width=120, record=True)
    console.print(render(store.latest))
    assert "1,234" in console.export_text()


# -- a live `set`: checked once by the schema, handed on typed ------------------------------


def test_set_is_checked_once_at_the_door_and_the_trainer_gets_the_typed_change(monkeypatch):
    checks = []
    check_live = protocol.check_live
    monkeypatch.setattr(protocol, "check_live", lambda *a: checks.append(a) or check_live(*a))
    args = check_set({"key": "train.learning-rate", "value": "0.002"}, "squared")
    change = args["change"]
    assert change == LiveChange("train.learning_rate", 0.002) and isinstance(change.value, float)

    applied = []
    trainer = SimpleNamespace(config=load_config("squared"), global_step=0,
                              apply_live=lambda c: applied.append(c) or (c.value, "now"))
    state = RunControl()
    queue = CommandQueue(state, FrameSource(lambda env: None))
    queue.attach(trainer)
    replies = []
    queue.put(Command("set", args, replies.append))
    queue.safe_point()
    assert applied == [change] and applied[0] is change  # the same object: not checked again
    assert replies == [{"ok": True, "key": "train.learning_rate", "value": 0.002,
                        "applies": "now"}]
    assert len(checks) == 1


@pytest.mark.parametrize("args, error", [
    ({"key": "train.hidden_size", "value": 64}, "applies on restart"),
    ({"key": "train.gamma", "value": 1.5}, "out of bounds"),
    ({"key": "train.nope", "value": 1}, "unknown config key"),
    ({"key": "train.gamma"}, "needs"),
])
def test_set_refusals_name_the_field(args, error):
    with pytest.raises(RequestError, match=error):
        check_set(args, "squared")


def test_the_trainer_checks_only_what_depends_on_its_run():
    from puffer_tui.engine.algo.trainer import Trainer

    config = load_config("squared", {"vec.num_envs": 8, "train.horizon": 8,
                                     "train.minibatch_size": 64, "train.shuffle_steps": True,
                                     "train.prio_alpha": 0.0, "train.hidden_size": 16})
    with Trainer(config) as trainer:
        # a value the schema accepts, which this run's fixed settings cannot take
        with pytest.raises(ConfigError, match="prio_alpha"):
            trainer.apply_live(protocol.check_live("train.prio_alpha", 0.5, "squared"))
        assert trainer.config.train.prio_alpha == 0.0
        value, applies = trainer.apply_live(LiveChange("train.ent_coef", 0.02))
        assert value == 0.02 == trainer.config.train.ent_coef and applies

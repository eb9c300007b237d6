"""W&B after poisoned weights are reloaded (engine/runtime/recovery.py): the metrics writer
is reopened as the engine first opened it, so the same W&B run (offline here) resumes and
keeps logging. Before, it was reopened with the run dir alone and W&B went quiet for the rest
of the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tree_paths import TESTS_DIR
from wandb_offline_reader import read_finished_run

from puffer_tui.engine.algo.distributed import World
from puffer_tui.engine.runtime import wandb_tracker as wt
from puffer_tui.engine.runtime.metrics import MetricsWriter, read_metrics
from puffer_tui.engine.runtime.recovery import Recovery
from puffer_tui.engine.runtime.run_control import RunControl
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.config import load_config
from puffer_tui.engine.shared.health import NonFiniteError
from puffer_tui.engine.shared.protocol import RunState

STEPS = 100


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """W&B offline, its config and caches in the test's tmp dir; its service stopped after."""
    wandb = pytest.importorskip("wandb", reason="the wandb extra is not installed")

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR"):
        monkeypatch.setenv(name, str(tmp_path / "wandb-home" / name.lower()))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    yield tmp_path
    wandb.teardown()


class Trainer:
    """What Recovery reads of the trainer: step, epoch, uptime, state in and out."""

    def __init__(self):
        self.global_step, self.epoch, self.uptime = 0, 0, 0.0
        self.weights = torch.zeros(3)

    def run_epoch(self) -> dict:
        self.global_step += STEPS
        self.epoch += 1
        self.uptime += 1.0
        self.weights = torch.full((3,), float(self.epoch))
        return {"epoch": self.epoch, "global_step": self.global_step, "uptime": self.uptime,
                "losses": {"policy_loss": 1.0 / self.epoch}}

    def state_dict(self, episodes_afresh=None) -> dict:
        return {"global_step": self.global_step, "epoch": self.epoch, "uptime": self.uptime,
                "weights": self.weights.clone()}

    def load_state_dict(self, state: dict) -> None:
        self.global_step, self.epoch = state["global_step"], state["epoch"]
        self.uptime, self.weights = state["uptime"], state["weights"].clone()


class Events:
    def __init__(self):
        self.said: list[tuple[str, str]] = []

    def info(self, text):
        self.said.append(("info", text))

    warning = error = info


class Commands:
    def __init__(self, state):
        self.state = state

    def pause_for(self, text):
        self.state.pause()


def logged_runs(run_dir: Path) -> list[dict]:
    """Every offline W&B run file of the run dir, oldest first, read once finished."""
    files = sorted(run_dir.glob("wandb/offline-run-*/run-*.wandb"), key=os.path.getmtime)
    return [{"file": f, **read_finished_run(f)} for f in files]


def epoch_steps(run: dict) -> list[int]:
    return [h["global_step"] for h in run["history"] if "losses/policy_loss" in h]


def test_a_reload_of_poisoned_weights_resumes_the_same_wandb_run(offline):
    run_dir = offline / "run"
    run_dir.mkdir()
    config = load_config("squared", {"train.wandb": True, "train.wandb_project": "tests"})
    trainer, events, state = Trainer(), Events(), RunControl()
    state.enter(RunState.RUNNING)
    warnings: list[str] = []
    recovery = Recovery(run_dir, World(), events, state, Commands(state),
                        trainer=lambda: trainer, write_status=lambda: None,
                        open_metrics=lambda path, **options: MetricsWriter(
                            path, tensorboard=False, **options))
    recovery.open_metrics_writer(config=config, warn=warnings.append)
    for interval in (2, 2, 0):  # a checkpoint at epoch 2; epoch 3's row written, none saved
        recovery.persist(trainer.run_epoch(), interval)
    trainer.weights[0] = float("nan")
    recovery.pause_for_non_finite(NonFiniteError("gradients are inf", weights_finite=False))
    state.resume()
    assert recovery.recover() and trainer.epoch == 2
    for _ in range(2):
        recovery.persist(trainer.run_epoch(), 0)
    recovery.close(exit_code=0)

    run_id = (run_dir / wt.WANDB_DIR / wt.RUN_ID_FILE).read_text().strip()
    runs = logged_runs(run_dir)
    assert [run["file"].name for run in runs] == [f"run-{run_id}.wandb"] * 2  # one W&B run
    assert epoch_steps(runs[0]) == [100, 200, 300]
    assert epoch_steps(runs[1]) == [300, 400]  # logging goes on after the reload
    assert runs[1]["config"]["train"]["wandb_project"] == "tests"
    assert [row["global_step"] for row in read_metrics(run_dir)] == [100, 200, 300, 400]
    assert warnings == []


def test_wandb_that_cannot_resume_after_a_reload_is_dropped_with_a_warning(tmp_path):
    """W&B gone at the reload (the network, a login): metrics.jsonl goes on, a warning says
    so, and the run is not lost to it."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    config = load_config("squared", {"train.wandb": True})
    trainer, events, state = Trainer(), Events(), RunControl()
    state.enter(RunState.RUNNING)
    opened: list[dict] = []

    def open_metrics(path, **options):
        opened.append(options)
        if options.get("config") is not None and len(opened) > 1:
            raise wt.TrackerError("Weights & Biases could not start (network down)")
        return MetricsWriter(path, tensorboard=False, config=None)

    recovery = Recovery(run_dir, World(), events, state, Commands(state),
                        trainer=lambda: trainer, write_status=lambda: None,
                        open_metrics=open_metrics)
    recovery.open_metrics_writer(config=config, warn=events.warning)
    for interval in (1, 0):
        recovery.persist(trainer.run_epoch(), interval)
    trainer.weights[0] = float("nan")
    recovery.pause_for_non_finite(NonFiniteError("value_loss is nan", weights_finite=False))
    state.resume()
    assert recovery.recover()
    assert [o.get("config") for o in opened] == [config, config, None]
    assert all(o.get("warn") == events.warning for o in opened)
    assert any("could not resume after the reload" in text and "network down" in text
               for _, text in events.said)
    recovery.persist(trainer.run_epoch(), 0)
    recovery.close(exit_code=0)
    assert [row["epoch"] for row in read_metrics(run_dir)] == [1, 2]


def test_a_real_engine_keeps_logging_to_wandb_after_a_nan_reload(offline):
    """The engine end to end: a NaN value loss poisons the weights in epoch 3, resume
    reloads epoch 2's checkpoint, and the epochs after it reach the same W&B run."""
    from engine_harness import kill_engine, make_run, wait_until

    from puffer_tui.app.engine_client import EngineClient

    steps = 64 * 16  # engine_harness.TINY: one epoch
    run = make_run(offline / "runs", **{"train.total_timesteps": 5 * steps,
                                        "train.checkpoint_interval": 1, "train.wandb": True})
    patches = TESTS_DIR / "fault_patches"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PUFFER_TEST_NAN_LOSS": str(2 * 4 + 2),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(patches),
                                                       os.environ.get("PYTHONPATH")]))}
    with (run / rd.ENGINE_OUT_FILE).open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "puffer_tui.engine", str(run)],
                                stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    try:
        events = run / rd.EVENTS_FILE
        wait_until(lambda: rd.socket_path(run).exists() or proc.poll() is not None, 120,
                   what="the engine's socket")
        with EngineClient.connect(run, timeout=30) as client:
            wait_until(lambda: events.exists() and "training paused" in events.read_text()
                       or proc.poll() is not None, 180, what="the NaN pause")
            assert proc.poll() is None, events.read_text()
            client.call("resume")
        assert proc.wait(180) == 0, events.read_text()
    finally:
        if proc.poll() is None:
            kill_engine(run)
            proc.kill()
            proc.wait(10)
    assert "reloaded step-000000002048-epoch-00000002.pt" in events.read_text()
    runs = logged_runs(run)
    run_id = (run / wt.WANDB_DIR / wt.RUN_ID_FILE).read_text().strip()
    assert [r["file"].name for r in runs] == [f"run-{run_id}.wandb"] * 2
    assert epoch_steps(runs[0]) == [steps, 2 * steps]  # the poisoned epoch wrote no row
    assert epoch_steps(runs[1]) == [3 * steps, 4 * steps, 5 * steps]
    assert [r["global_step"] for r in read_metrics(run)] == [steps * k for k in range(1, 6)]

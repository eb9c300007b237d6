"""Resume: a stopped run continues from its checkpoint with the same step, optimizer state,
schedule and RNG streams, and its metrics continue without gaps or duplicates."""

import math
import subprocess
import sys

import torch
from engine_harness import TINY, make_run, wait_until

from puffer_tui.app.engine_client import EngineClient
from puffer_tui.app.engine_launcher import launch_engine
from puffer_tui.engine import checkpoint as ckpt
from puffer_tui.engine import run_dir as rd
from puffer_tui.engine.config import load_config
from puffer_tui.engine.learner import learning_rate
from puffer_tui.engine.metrics import read_metrics
from puffer_tui.engine.trainer import Trainer

STEPS_PER_EPOCH = 64 * 16  # num_envs * horizon in TINY


def assert_same_tensors(a, b, where="state"):
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            assert_same_tensors(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_tensors(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def test_checkpoint_restores_the_whole_trainer_state(tmp_path):
    config = load_config("squared", {**TINY, "train.total_timesteps": 20 * STEPS_PER_EPOCH,
                                     "train.learning_rate": 0.01})
    first = Trainer(config)
    try:
        for _ in range(3):
            first.run_epoch()
        first.set_hyperparameter("train.ent_coef", 0.03)
        path = ckpt.save_checkpoint(tmp_path, first.state_dict())
        saved = first.state_dict()
    finally:
        first.close()
    _, state = ckpt.load_latest(tmp_path)
    assert ckpt.latest_checkpoint(tmp_path) == path
    second = Trainer(load_config("squared", {**TINY, "train.total_timesteps": 20 * STEPS_PER_EPOCH,
                                             "train.learning_rate": 0.01}))
    try:
        second.load_state_dict(state)
        assert (second.global_step, second.epoch) == (3 * STEPS_PER_EPOCH, 3)
        assert second.config.train.ent_coef == 0.03  # a live change survives the restart
        restored = second.state_dict()
        for key in ("policy", "optimizer", "rng", "global_step", "epoch", "lr_schedule"):
            assert_same_tensors(saved[key], restored[key], key)
        row = second.run_epoch()
        assert (row["epoch"], row["global_step"]) == (4, 4 * STEPS_PER_EPOCH)
        assert math.isclose(row["learning_rate"], learning_rate(second.config.train,
                                                                row["global_step"]))
    finally:
        second.close()


def test_stop_then_resume_continues_the_run(tmp_path):
    epochs = 14
    run = make_run(tmp_path, **{"train.total_timesteps": epochs * STEPS_PER_EPOCH})
    handle = launch_engine(run)
    with EngineClient.connect(run) as client:
        wait_until(lambda: client.call("status")["epoch"] >= 3, 60, what="three epochs")
        client.call("stop")
    assert handle.wait(30) == 0
    stopped = ckpt.load_checkpoint(ckpt.latest_checkpoint(run))
    stop_epoch, stop_step = stopped["epoch"], stopped["global_step"]
    assert stop_epoch < epochs
    rows_before = read_metrics(run)
    assert rows_before[-1]["epoch"] == stop_epoch

    result = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", "--resume", str(run), "--headless"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "finished" in result.stdout

    rows = read_metrics(run)
    assert [r["epoch"] for r in rows] == list(range(1, epochs + 1))
    assert [r["global_step"] for r in rows] == [STEPS_PER_EPOCH * e for e in range(1, epochs + 1)]
    resumed = rows[stop_epoch]
    assert resumed["global_step"] == stop_step + STEPS_PER_EPOCH
    assert resumed["uptime"] > rows[stop_epoch - 1]["uptime"]  # training time carries on
    train = load_config("squared", {**TINY, "train.total_timesteps": epochs * STEPS_PER_EPOCH}).train
    for row in rows:  # one cosine schedule across the restart
        assert math.isclose(row["learning_rate"], learning_rate(train, row["global_step"]),
                            rel_tol=1e-6, abs_tol=1e-12)
    events = (run / rd.EVENTS_FILE).read_text()
    assert f"at step {stop_step}, epoch {stop_epoch}" in events
    assert rd.run_state(run) == "finished"


def test_resume_drops_metric_rows_written_after_the_checkpoint(tmp_path):
    from puffer_tui.engine.metrics import MetricsWriter, truncate_after

    writer = MetricsWriter(tmp_path, tensorboard=False)
    for epoch in range(1, 6):
        writer.write({"epoch": epoch, "global_step": epoch * 10, "score": float("nan")})
    writer.close()
    assert truncate_after(tmp_path, 3) == 2
    rows = read_metrics(tmp_path)
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    assert rows[0]["score"] is None  # NaN is not JSON: written as null

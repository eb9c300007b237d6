"""Resume: a stopped run continues from its checkpoint with the same step, optimizer state,
schedule and RNG streams, and its metrics continue without gaps or duplicates."""

import io
import math
import signal
import subprocess
import sys

import pytest
import torch
from engine_harness import TINY, kill_engine, wait_until

from puffer_tui.engine.algo.schedule import Anchor, learning_rate
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.runtime.metrics import flatten, read_metrics
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import exit_codes
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.config import load_config

STEPS_PER_EPOCH = 64 * 16  # num_envs * horizon in TINY
CLI = [sys.executable, "-m", "puffer_tui.app.cli"]


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


EXACT = {"vec.num_envs": 8, "vec.backend": "serial", "train.horizon": 8,
         "train.minibatch_size": 16, "train.hidden_size": 16, "train.total_timesteps": 10_000,
         "train.torch_threads": 1}
# What an epoch computes: it must be the same, bit for bit, with or without a stop in between.
RESULTS = ("global_step", "epoch", "learning_rate", "policy_loss", "value_loss", "entropy",
           "approx_kl", "clipfrac", "explained_variance", "episodes")


def _roundtrip(state):
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.parametrize("policy", ["mlp", "lstm"])
def test_stop_and_resume_reproduces_the_uninterrupted_run(policy):
    overrides = {**EXACT, "train.policy": policy}
    epochs, cut = 6, 3
    with Trainer(load_config("squared", overrides)) as straight:
        expected = [straight.run_epoch() for _ in range(epochs)]
        expected_weights = straight.policy.state_dict()

    with Trainer(load_config("squared", overrides)) as first:
        got = [first.run_epoch() for _ in range(cut)]
        state = _roundtrip(first.state_dict())
        saved_lr = first.optimizer.param_groups[0]["lr"]
    with Trainer(load_config("squared", overrides)) as resumed:
        resumed.load_state_dict(state)
        assert (resumed.global_step, resumed.epoch) == (cut * 64, cut)
        assert resumed.optimizer.param_groups[0]["lr"] == saved_lr
        assert_same_tensors(resumed.optimizer.state_dict()["state"], state["optimizer"]["state"])
        assert_same_tensors(resumed.policy.state_dict(), state["policy"])
        got += [resumed.run_epoch() for _ in range(epochs - cut)]
        weights = resumed.policy.state_dict()

    for want, have in zip(expected, got):
        for key in RESULTS:
            assert flatten(have)[key] == flatten(want)[key], f"epoch {want['epoch']}: {key}"
    assert_same_tensors(weights, expected_weights, "policy")


@pytest.mark.slow
def test_ctrl_c_then_resume_continues_the_run(tmp_path):
    """Ctrl-C in `train --headless` checkpoints and stops; `train --resume` carries on (here
    with a smaller budget, so that it ends soon)."""
    runs = tmp_path / "runs"
    flags = [f"--{k.replace('_', '-')}" if i == 0 else str(v)
             for k, v in TINY.items() for i in (0, 1)]
    train = subprocess.Popen(
        [*CLI, "train", "squared", "--headless", "--runs-dir", str(runs), *flags,
         "--train.total-timesteps", str(10**9)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run = None
    try:
        run = wait_until(lambda: rd.list_runs(runs) and rd.list_runs(runs)[0], 60,
                         what="the run directory")
        wait_until(lambda: rd.read_status(run).get("epoch", 0) >= 3, 60, interval=0.2,
                   what="three epochs")
        train.send_signal(signal.SIGINT)
        output, _ = train.communicate(timeout=60)
    finally:
        if train.poll() is None:
            train.kill()
            train.wait()
        if run is not None:
            kill_engine(run)  # only does something if the test failed midway
    assert train.returncode == exit_codes.STOPPED, output  # stopped, resumable: not finished
    assert "checkpoint and stop" in output and "stopped" in output
    assert rd.run_state(run) == "stopped"
    stopped = ckpt.load_checkpoint(ckpt.latest_checkpoint(run))
    stop_epoch, stop_step = stopped["epoch"], stopped["global_step"]
    assert stop_epoch >= 3
    assert read_metrics(run)[-1]["epoch"] == stop_epoch

    epochs = stop_epoch + 5
    result = subprocess.run([*CLI, "train", "--resume", str(run), "--headless",
                             "--train.total-timesteps", str(epochs * STEPS_PER_EPOCH)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "finished" in result.stdout

    rows = read_metrics(run)
    assert [r["epoch"] for r in rows] == list(range(1, epochs + 1))
    assert [r["global_step"] for r in rows] == [STEPS_PER_EPOCH * e for e in range(1, epochs + 1)]
    resumed = rows[stop_epoch]
    assert resumed["global_step"] == stop_step + STEPS_PER_EPOCH
    assert resumed["uptime"] > rows[stop_epoch - 1]["uptime"]  # training time carries on
    # the schedule continues from where it stopped, over the new (smaller) budget: no jump at
    # the resume, and the rate reaches 0 at the new end
    train = load_config("squared", {**TINY, "train.total_timesteps": epochs * STEPS_PER_EPOCH}).train
    anchor = Anchor(stop_step, stop_step / 10**9)
    for row in rows[stop_epoch:]:
        assert math.isclose(row["learning_rate"], learning_rate(train, row["global_step"], anchor),
                            rel_tol=1e-6, abs_tol=1e-12)
    assert rows[-1]["learning_rate"] < 0.1 * rows[0]["learning_rate"]
    events = (run / rd.EVENTS_FILE).read_text()
    assert f"at step {stop_step}, epoch {stop_epoch}" in events
    assert rd.run_state(run) == "finished"


def test_resume_drops_metric_rows_written_after_the_checkpoint(tmp_path):
    from puffer_tui.engine.runtime.metrics import MetricsWriter, truncate_after

    writer = MetricsWriter(tmp_path, tensorboard=False)
    for epoch in range(1, 6):
        writer.write({"epoch": epoch, "global_step": epoch * 10, "score": float("nan")})
    writer.close()
    assert truncate_after(tmp_path, 3) == 2
    rows = read_metrics(tmp_path)
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    assert rows[0]["score"] is None  # NaN is not JSON: written as null


def test_corrupt_latest_checkpoint_fails_resume_unless_fallback_is_asked(tmp_path):
    from engine_harness import make_run

    from puffer_tui.app.engine_launcher import launch_engine
    from puffer_tui.engine.shared.config import load

    run = make_run(tmp_path, **{"train.total_timesteps": 3 * STEPS_PER_EPOCH})
    trainer = Trainer(load(run / rd.CONFIG_FILE))
    try:
        for _ in range(2):
            trainer.run_epoch()
            ckpt.save_checkpoint(run, trainer.state_dict())
    finally:
        trainer.close()
    older, newest = ckpt.list_checkpoints(run)
    newest.write_bytes(newest.read_bytes()[:1000])  # as if the disk filled up mid-write

    from puffer_tui.engine.runtime.process import main as engine_main

    assert engine_main([str(run), "--resume"]) == 1  # in-process: the same code, faster
    log = (run / rd.EVENTS_FILE).read_text()
    assert f"checkpoint {newest} is corrupt or truncated" in log
    assert "--fallback-checkpoint" in log
    assert rd.run_state(run) == "error" and newest.name in rd.read_status(run)["error"]

    handle = launch_engine(run, resume=True, fallback_checkpoint=True)
    assert handle.wait(60) == 0
    log = (run / rd.EVENTS_FILE).read_text()
    assert "falling back to the previous checkpoint" in log
    assert f"resumed from {older.name}" in log
    assert rd.run_state(run) == "finished"
    assert [r["epoch"] for r in read_metrics(run)] == [2, 3]  # epoch 1 was in-process

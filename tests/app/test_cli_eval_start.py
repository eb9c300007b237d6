"""`eval` at its start and end: torch's threads set as training sets them (not torch's one per
core, which crawls on a busy box), a first line at once saying what it plays, `--render
window` without a display refused before anything plays, and SIGTERM / SIGHUP ending it as
Ctrl-C does (the score so far, exit status "stopped")."""

import os
import signal
import subprocess
import sys

import pytest
import torch

from puffer_tui.app.cli import main
from puffer_tui.engine.algo import trainer_setup
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import exit_codes
from puffer_tui.engine.shared.checkpoint import save_checkpoint


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    run = tmp_path_factory.mktemp("runs") / "squared-eval"
    (run / "checkpoints").mkdir(parents=True)
    config = cfg.load_config("squared", {
        "vec.num_envs": 16, "train.horizon": 16, "train.minibatch_size": 256,
        "train.hidden_size": 32, "env.size": 7,  # torch_threads 0: chosen from the box
    })
    trainer = Trainer(config)
    try:
        save_checkpoint(run, trainer.state_dict())
    finally:
        trainer.close()
    return run


@pytest.fixture
def threads_restored():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_eval_uses_the_threads_training_would(run_dir, capsys, monkeypatch, threads_restored):
    chosen = []

    def auto_threads(config, phase="collect"):
        chosen.append(phase)
        return 1

    monkeypatch.setattr(trainer_setup, "auto_threads", auto_threads)
    torch.set_num_threads(2)  # torch's own default on a 2-core box
    assert main(["eval", str(run_dir), "--episodes", "2"]) == exit_codes.FINISHED
    assert chosen and torch.get_num_threads() == 1


def test_eval_says_what_it_plays_before_it_plays(run_dir, capsys, threads_restored):
    assert main(["eval", str(run_dir), "--episodes", "2", "--json"]) == exit_codes.FINISHED
    err = capsys.readouterr().err
    assert "playing 2 episodes of squared with step-" in err.splitlines()[0]


def test_render_window_without_a_display_is_refused_first(run_dir, capsys, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert main(["eval", str(run_dir), "--render", "window"]) == exit_codes.USAGE
    err = capsys.readouterr().err
    assert err.startswith("puffer-tui eval: error: no display") and "playing" not in err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_stop_eval_with_the_score_so_far(run_dir, sig):
    player = subprocess.Popen(
        [sys.executable, "-m", "puffer_tui.app.cli", "eval", str(run_dir), "--episodes",
         "1000000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        first = player.stderr.readline()  # said before it plays
        assert first.startswith("playing 1000000 episodes of squared"), first
        player.send_signal(sig)
        out, err = player.communicate(timeout=120)
    finally:
        if player.poll() is None:
            player.kill()
    assert player.returncode == exit_codes.STOPPED, err
    assert "interrupted after" in out and "Traceback" not in err, (out, err)

"""`eval` at its start: torch's threads set as training sets them (not torch's one per core,
which crawls on a busy box), a first line at once saying what it plays, and `--render window`
without a display refused before anything plays."""

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

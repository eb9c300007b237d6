"""`puffer-tui eval --render window`: the raylib window renderer driven by a trained policy."""

import shutil
import subprocess
import sys

import numpy as np
import pytest

from puffer_tui.app.render_window import tile_rgb
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared.checkpoint import save_checkpoint
from puffer_tui.envs.squared import Squared
from tests.app.test_render_window import read_png

CLI = [sys.executable, "-m", "puffer_tui.app.cli"]


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """A run directory holding one checkpoint of a briefly trained squared policy."""
    run = tmp_path_factory.mktemp("runs") / "squared-test"
    (run / "checkpoints").mkdir(parents=True)
    config = cfg.load_config("squared", {
        "vec.num_envs": 64, "train.horizon": 16, "train.minibatch_size": 256,
        "train.hidden_size": 32, "train.torch_threads": 1, "env.size": 7,
    })
    trainer = Trainer(config)
    try:
        trainer.run_epoch()
        save_checkpoint(run, trainer.state_dict())
    finally:
        trainer.close()
    return run


def test_without_a_display_it_says_what_to_do(trained_run):
    env = {"PATH": "/usr/bin:/bin"}
    result = subprocess.run([*CLI, "eval", str(trained_run), "--render", "window"],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 2
    assert "no display" in result.stderr and "--render ascii" in result.stderr
    assert "xvfb-run" in result.stderr


def test_screenshot_needs_the_window(trained_run, tmp_path):
    result = subprocess.run([*CLI, "eval", str(trained_run), "--screenshot",
                             str(tmp_path / "x.png")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "--screenshot needs --render window" in result.stderr


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="xvfb-run is not installed")
def test_window_screenshot_under_xvfb_shows_the_env(trained_run, tmp_path):
    shot = tmp_path / "eval.png"
    result = subprocess.run(
        ["xvfb-run", "-a", *CLI, "eval", str(trained_run), "--render", "window",
         "--screenshot", str(shot), "--screenshot-after", "5", "--fps", "60"],
        capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"screenshot saved to {shot}" in result.stdout
    pixels = read_png(shot)[..., :3].reshape(-1, 3)
    colours = {tuple(int(c) for c in p) for p in np.unique(pixels, axis=0)}
    palette = Squared.palette
    expected = {tile_rgb(*palette[1]), tile_rgb(*palette[2])}  # the agent and a target
    assert expected <= colours, f"agent/target colours {expected} not in {colours}"


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="xvfb-run is not installed")
def test_window_screenshot_under_xvfb_shows_a_gym_rgb_env(tmp_path_factory, tmp_path):
    from tests.app.test_cli_eval import gym_run

    run = gym_run(tmp_path_factory, "gym:CartPole-v1", native="false")  # Gymnasium's RGB
    shot = tmp_path / "cartpole.png"
    result = subprocess.run(
        ["xvfb-run", "-a", *CLI, "eval", str(run), "--render", "window",
         "--screenshot", str(shot), "--screenshot-after", "3", "--fps", "60"],
        capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    pixels = read_png(shot)[..., :3]
    assert pixels.shape[:2] == (100 * 8, 150 * 8), "the 100 x 150 frame at 8 pixels a pixel"
    colours = {tuple(int(c) for c in p) for p in np.unique(pixels.reshape(-1, 3), axis=0)}
    assert (255, 255, 255) in colours and (0, 0, 0) in colours, "white sky, black cart"


def test_overlay_window_draws_the_policys_view_and_g_turns_the_heat(trained_run, monkeypatch):
    """--render window --overlay: each frame is the recording's overlay image (the frame and
    the policy's panel beside it); g turns the saliency to V(s)'s, then off, then back."""
    pytest.importorskip("PIL")
    from puffer_tui.app import render_window
    from puffer_tui.app.commands import eval as eval_command
    from puffer_tui.engine.evaluation.evaluate import load_evaluator
    from puffer_tui.engine.evaluation.recording_overlay import PANEL_WIDTH
    from puffer_tui.engine.shared.protocol import FrameKind

    seen = {"titles": [], "frames": []}

    def fake_window(next_frame, palette, title, fps, screenshot, screenshot_after, on_key):
        seen["titles"].append(title)
        for key in ("x", "g", "g", "g"):
            seen["frames"].append(next_frame())
            seen["titles"].append(on_key(key))
        return len(seen["frames"])

    monkeypatch.setattr(render_window, "run_window", fake_window)
    evaluator = load_evaluator(str(trained_run), None, 1, 3, False, 1)
    try:
        eval_command.play_in_window(evaluator, 10.0, None, 30, overlay=True)
    finally:
        evaluator.close()
    assert [t.rsplit("saliency: ", 1)[-1] if t else t for t in seen["titles"]] == \
        ["action", None, "value", "off", "action"]
    frame = seen["frames"][0]
    assert frame.kind == FrameKind.RGB and frame.width >= 7 + PANEL_WIDTH
    assert len(frame.data) == frame.height * frame.width * 3


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="xvfb-run is not installed")
def test_overlay_window_screenshot_under_xvfb_has_the_panel(trained_run, tmp_path):
    pytest.importorskip("PIL")
    from puffer_tui.engine.evaluation.recording_overlay import PANEL_WIDTH

    shots = {}
    for overlay in (False, True):
        shots[overlay] = tmp_path / f"overlay-{overlay}.png"
        result = subprocess.run(
            ["xvfb-run", "-a", *CLI, "eval", str(trained_run), "--render", "window",
             *(["--overlay"] if overlay else []), "--screenshot", str(shots[overlay]),
             "--screenshot-after", "5", "--fps", "60"],
            capture_output=True, text=True, timeout=180,
        )
        assert result.returncode == 0, result.stdout + result.stderr
    bare, drawn = read_png(shots[False]), read_png(shots[True])
    assert drawn.shape[1] > bare.shape[1], "no panel beside the frame"
    panel = drawn[:, -PANEL_WIDTH:, :3]
    assert len(np.unique(panel.reshape(-1, 3), axis=0)) > 3, "an empty panel"

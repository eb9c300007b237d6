"""Atari with the standard preprocessing (envs/atari_preprocessing.py) and envs/gym_presets/ALE.toml."""

import os

import numpy as np
import pytest

pytest.importorskip("ale_py", reason="ale-py not installed (pip install 'puffer-tui[atari]')")
pytest.importorskip("cv2", reason="AtariPreprocessing needs opencv (pip install "
                    "opencv-python-headless)")

from tree_paths import REPO_ROOT

from puffer_tui.envs.atari_preprocessing import atari_env  # noqa: E402

PRESET = os.path.join(str(REPO_ROOT),
                      "envs", "gym_presets", "ALE.toml")


def _chain(env):
    chain = [env]
    while hasattr(env, "env"):
        env = env.env
        chain.append(env)
    return chain


def _wrappers(env):
    return [type(layer).__name__ for layer in _chain(env)[:-1]]  # the last is the game


def test_observations_are_four_stacked_84x84_gray_frames():
    env = atari_env("ALE/Pong-v5")
    try:
        assert env.observation_space.shape == (4, 84, 84)
        assert env.observation_space.dtype == np.uint8
        obs, _ = env.reset(seed=0)
        assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
        obs, *_ = env.step(0)
        assert obs.shape == (4, 84, 84)
        names = _wrappers(env)
        assert "FrameStackObservation" in names and "AtariPreprocessing" in names
        assert names[:3] == ["LifeLossEndsEpisode", "FrameStackObservation", "FireAtGameStart"]
        pre = env.env.env.env
        assert type(pre).__name__ == "AtariPreprocessing"
        assert pre.frame_skip == 4 and pre.noop_max == 30
        # the emulator skips nothing itself: the wrapper skips, with max-pooling
        assert env.unwrapped._frameskip == 1
    finally:
        env.close()


def test_life_loss_ends_episodes_only_while_training():
    # (what a lost life does: tests/envs/test_atari_lives.py)
    train_env, eval_env = atari_env("ALE/Breakout-v5"), atari_env("ALE/Breakout-v5", training=False)
    try:
        assert "LifeLossEndsEpisode" in _wrappers(train_env)
        assert "LifeLossEndsEpisode" not in _wrappers(eval_env)
        # Gymnasium's own life loss would start a new game at every lost life
        assert all(getattr(layer, "terminal_on_life_loss", False) is False
                   for env in (train_env, eval_env) for layer in _chain(env))
    finally:
        train_env.close()
        eval_env.close()


def test_options_reach_the_preprocessing_and_gymnasium_make():
    env = atari_env("ALE/Pong-v5", frame_stack=2, screen_size=64, repeat_action_probability=0.0)
    try:
        assert env.observation_space.shape == (2, 64, 64)
        assert env.spec.kwargs["repeat_action_probability"] == 0.0
    finally:
        env.close()
    with pytest.raises(ValueError, match="pass frame_skip instead"):
        atari_env("ALE/Pong-v5", frameskip=4)


def test_the_preset_is_a_valid_config_with_the_cnn():
    from puffer_tui.engine.shared.config import load_config
    from puffer_tui.engine.shared.presets import preset_overrides, read_preset

    config = load_config("cartpole", preset_overrides(read_preset(PRESET), "cartpole", PRESET))
    assert config.train.policy == "cnn" and config.train.reward_clamp == 1.0
    assert config.vec.backend == "multiprocessing"
    assert config.vec.num_envs * config.train.horizon == 1024


@pytest.mark.parametrize("mode", [[], ["--collect-only"]], ids=["train", "collect"])
def test_the_benchmark_runs_both_sides_with_tiny_sizes(mode):
    from puffer_tui.benchmarks.atari_vs_plain_loop import main

    result = main(["--rounds", "1", "--batches", "1", "--num-envs", "2", "--workers", "1",
                   "--horizon", "4", "--minibatch", "8", "--update-epochs", "1", "--json", *mode])
    assert result["ours"] > 0 and result["plain"] > 0
    assert result["ratio"] == pytest.approx(result["ours"] / result["plain"])
    # CPU time per step is counted (workers' in 10 ms clock ticks: may read 0 in so short a run)
    assert result["cpu"]["ours"]["main_cpu_us"] > 0 and result["cpu"]["ours"]["worker_cpu_us"] >= 0
    assert result["cpu"]["plain"]["worker_cpu_us"] == 0  # a sync vector env has no workers
    assert result["idle_ratio"] > 0

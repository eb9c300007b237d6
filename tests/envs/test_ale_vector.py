"""gym:ALE/* ids step through ale-py's C++ vector env (envs/ale_vector.py) behind the vec API:
the same spaces as the Gymnasium preprocessing, truncated episodes' last observations, episode
logs, the opt-out, and a real training run."""

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("ale_py.vector_env", reason="needs ale-py >= 0.11 (the atari extra)")

from puffer_tui.envs import env_class  # noqa: E402
from puffer_tui.envs.ale_vector import AleVectorBlock  # noqa: E402

PONG = "gym:ALE/Pong-v5"


def test_an_ale_id_builds_the_vector_block_with_the_preprocessed_spaces():
    creator = env_class(PONG).make_creator({})
    assert creator.func is AleVectorBlock
    layout = creator.layout
    assert layout.observation_space.shape == (4, 84, 84)
    assert layout.observation_space.dtype == np.uint8 and layout.action_space.n == 6
    gym_path = env_class(PONG).make_creator({"ale_vector": False})
    assert gym_path.func is not AleVectorBlock
    assert gym_path.layout.observation_space == layout.observation_space  # the same contract


def test_a_truncated_episode_hands_over_its_last_observation_and_is_logged():
    # 100 emulator frames = 25 agent steps: every game is cut by the time limit
    creator = env_class(PONG).make_creator({"max_num_frames_per_episode": 100})
    block = creator(num_envs=3, seed=1, log_interval=1)
    try:
        observations, _ = block.reset(1)
        assert observations.any() and observations.shape == (3, 4, 84, 84)
        logs = []
        for steps in range(1, 41):  # noqa: B007 (read after the loop)
            block.final_observations[:] = 0
            _, _, terminals, truncations, infos = block.step(np.zeros(3, np.int32))
            logs += infos
            if truncations.any():
                cut = np.flatnonzero(truncations & ~terminals)
                assert len(cut) and block.final_observations[cut].any()
                # the observation returned is the new episode's, not the one that ended
                assert not np.array_equal(block.final_observations[cut], observations[cut])
                break
        else:
            pytest.fail("no episode was truncated in 40 steps")
        assert logs and logs[-1]["n"] >= 1 and logs[-1]["episode_length"] == steps
    finally:
        block.close()


def test_wrong_actions_are_refused_before_any_game_steps():
    block = env_class(PONG).make_creator({})(num_envs=2, seed=0)
    try:
        block.reset(0)
        with pytest.raises(Exception, match="action"):
            block.step(np.array([0, 99]))
    finally:
        block.close()


def test_training_pong_through_the_vector_env_runs(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", PONG, "--headless",
         "--runs-dir", str(tmp_path), "--vec.num-envs", "4", "--train.horizon", "16",
         "--train.minibatch-size", "32", "--train.total-timesteps", "128",
         "--train.hidden-size", "32", "--train.cnn-channels", "8"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "finished" in result.stdout + result.stderr


def test_seeds_past_a_c_int_are_taken():
    # eval draws its env seeds from SeedSequence, all 32 bits: ALE takes only C ints
    block = env_class(PONG).make_creator({})(num_envs=2, seed=0)
    try:
        observations, _ = block.reset(2**32 - 1)
        assert observations.shape == (2, 4, 84, 84)
    finally:
        block.close()


def test_a_trained_atari_run_plays_in_eval(tmp_path):
    cli = [sys.executable, "-m", "puffer_tui.app.cli"]
    trained = subprocess.run(
        [*cli, "train", "gym:ALE/Breakout-v5", "--headless", "--runs-dir", str(tmp_path),
         "--vec.num-envs", "2", "--train.horizon", "16", "--train.minibatch-size", "32",
         "--train.total-timesteps", "64", "--train.hidden-size", "32",
         "--train.cnn-channels", "8"], capture_output=True, text=True, timeout=300)
    assert trained.returncode == 0, trained.stdout[-2000:] + trained.stderr[-2000:]
    (run,) = tmp_path.iterdir()
    played = subprocess.run(
        [*cli, "eval", str(run), "--episodes", "2", "--num-envs", "2"],
        capture_output=True, text=True, timeout=300)
    assert played.returncode == 0, played.stdout[-2000:] + played.stderr[-2000:]
    assert "2 episodes" in played.stdout
